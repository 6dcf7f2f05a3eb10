//! The quest engine: what an accepted dialogue action does to the player's quests and profile.
//!
//! The walk has already proved the action was put in front of the player with its authored
//! payload. The engine then checks that the quest's state still allows it at this moment (no
//! completing a quest that is not active, no accepting one whose prerequisites are not met), and
//! commits through the store, which makes each reward exactly-once in the database.
//!
//! Every change of a player's state is a store *step* ([`crate::store::Step`]): the change and
//! its audit row in one transaction, under an idempotency key. That is what lets the engine tell
//! the truth when a COMMIT's outcome is unknown (the connection dropped while it was in
//! flight): it asks the store whether the key landed ([`Store::step_applied`], which waits for a
//! transaction still holding it) and answers with the effect if it did, the refusal only if it
//! did not, and `outcome_unknown` only if the database cannot be asked within
//! [`FIND_OUT_PATIENCE`]. A retry under the same key (the same arming, sent again) answers with
//! what the first attempt did.

use std::collections::BTreeSet;
use std::str::FromStr;
use std::time::Duration;

use banter_dialogue::condition::{Reference, VarRef, VarType};
use banter_dialogue::content::{Content, QuestDef};
use banter_dialogue::{Counter, DialogueGraph, Facts};
use banter_player::{Fact, PlayerStateMachine};
use banter_protocol::{Action, Effect, ErrorCode, FactSheet, Profile, QuestStatus};

use crate::store::{
    Change, ObjectiveAdvance, PlayerRecord, Step, Stepped, Store, StoreError, StoredQuestStatus,
    TutorialMove,
};

/// How long the engine keeps asking whether a step whose COMMIT was lost took effect, before it
/// answers `outcome_unknown` (the database is still unreachable).
pub const FIND_OUT_PATIENCE: Duration = Duration::from_secs(5);

/// Who takes a step that may change the player's state: its idempotency key and what its audit
/// row says.
#[derive(Clone, Copy, Debug)]
pub struct StepContext<'a> {
    /// Unique per player for each arming of an action (the session builds it from the
    /// conversation, the action and how often it was spent): the same arming sent again carries
    /// the same key, so it is applied at most once.
    pub key: &'a str,
    /// The conversation the step belongs to.
    pub conversation: Option<&'a str>,
    /// The client message (`action`, `talk`, `cutscene_done`).
    pub message: &'a str,
    /// What support reads: the action and its payload.
    pub detail: Option<&'a str>,
}

impl<'a> StepContext<'a> {
    fn step(
        &self,
        player: &'a str,
        change: Change<'a>,
        tutorial: Option<TutorialMove>,
    ) -> Step<'a> {
        Step {
            player,
            key: self.key,
            conversation: self.conversation,
            message: self.message,
            detail: self.detail,
            recorded_us: crate::clock::stamp(),
            change,
            tutorial,
        }
    }
}

/// Why a step did not apply now.
enum NotNow {
    /// An earlier attempt under the same key applied it (a retry, or a COMMIT whose answer was
    /// lost): the answer is what it did, from the player read back ([`reload`]).
    Earlier,
    /// Refused; nothing applied.
    Refused(EngineError),
}

impl<E: Into<EngineError>> From<E> for NotNow {
    fn from(e: E) -> NotNow {
        NotNow::Refused(e.into())
    }
}

/// Applies `step`, and finds out before answering when its COMMIT's outcome is unknown. The
/// player after the step comes back with it, read in its transaction.
async fn land(store: &dyn Store, step: &Step<'_>) -> Result<Stepped, NotNow> {
    match store.apply_step(step).await {
        Ok(stepped) => Ok(stepped),
        Err(StoreError::StepApplied { .. }) => Err(NotNow::Earlier),
        Err(StoreError::OutcomeUnknown(reason)) => {
            match find_out(store, step.player, step.key).await {
                Some(true) => Err(NotNow::Earlier),
                // Final: the store waited for any transaction holding the key.
                Some(false) => Err(StoreError::Unavailable(reason).into()),
                None => Err(StoreError::OutcomeUnknown(reason).into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Asks the store whether the step with `key` landed, with backoff, for up to
/// [`FIND_OUT_PATIENCE`]; `None` if it could not be asked.
async fn find_out(store: &dyn Store, player: &str, key: &str) -> Option<bool> {
    let deadline = tokio::time::Instant::now() + FIND_OUT_PATIENCE;
    let mut pause = Duration::from_millis(50);
    loop {
        match store.step_applied(player, key).await {
            Ok(applied) => return Some(applied),
            Err(e) => {
                tracing::warn!(%player, key, error = %e, "cannot yet learn whether a step landed")
            }
        }
        if tokio::time::Instant::now() + pause > deadline {
            return None;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}

/// What an action did.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub effect: Effect,
    /// A server-decided jump (a quest check's result), by node name.
    pub jump: Option<String>,
    /// The action started a cutscene the client will report as done.
    pub cutscene: Option<String>,
}

/// Why an action's effect was refused. Nothing was applied.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    QuestState(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl EngineError {
    pub fn code(&self) -> ErrorCode {
        match self {
            EngineError::QuestState(_) => ErrorCode::QuestState,
            EngineError::Store(StoreError::OutcomeUnknown(_)) => ErrorCode::OutcomeUnknown,
            EngineError::Store(e) if e.retryable() => ErrorCode::StoreUnavailable,
            EngineError::Store(StoreError::QuestState { .. } | StoreError::AlreadyPaid { .. }) => {
                ErrorCode::QuestState
            }
            EngineError::Store(_) => ErrorCode::Internal,
        }
    }
}

/// What the server holds true of a player, for conditions and the resolver: the stored profile
/// and quests, and the session's state machine. (A client's belief about its player is
/// `banter_sim::facts::ClientFacts`.)
pub struct ServerFacts<'a> {
    pub record: &'a PlayerRecord,
    pub machine: &'a PlayerStateMachine,
    pub content: &'a Content,
    /// The conversation being walked: whose visit counts and `opens` conditions read.
    pub conversation: &'a str,
}

impl ServerFacts<'_> {
    /// The wire form a client evaluates the same conditions against.
    ///
    /// The sheet of an `opened` for `graph`: the status of every quest the player holds (active
    /// or completed) and of every quest the conversation's conditions name, when it is not
    /// `available`. Its size follows the player and the conversation, never the world: a
    /// studio's world has tens of thousands of quests, most of them unavailable to a new player,
    /// and listing them all made every `opened` hundreds of kilobytes.
    pub fn sheet(&self, graph: &DialogueGraph) -> FactSheet {
        let mut sheet = FactSheet {
            coins: self.record.profile.coins,
            experience: self.record.profile.experience,
            tutorial_stage: self.record.profile.tutorial_stage,
            ..FactSheet::default()
        };
        let mut named: BTreeSet<&str> = self.record.quests.keys().map(String::as_str).collect();
        for (vertex, _) in graph.vertices() {
            if let Some(condition) = graph.condition(vertex) {
                condition.visit_references(&mut |reference| match reference {
                    Reference::Quest(quest) => {
                        named.insert(quest);
                    }
                    Reference::Variable(name) if !sheet.vars.contains_key(name) => {
                        if let Some(value) = self.variable(name) {
                            sheet.vars.insert(name.to_owned(), value.to_value());
                        }
                    }
                    _ => {}
                });
            }
        }
        for quest in named {
            let status = self.quest_status(quest);
            if status != QuestStatus::Available {
                sheet.quests.insert(quest.to_owned(), status);
            }
        }
        for (quest, record) in &self.record.quests {
            for (objective, progress) in &record.progress {
                sheet
                    .progress
                    .insert(format!("{quest}/{objective}"), *progress);
            }
        }
        sheet.has = Fact::ALL
            .iter()
            .filter(|f| self.machine.has(**f))
            .map(|f| f.name().to_string())
            .collect();
        self.writing_facts(graph, &mut sheet);
        sheet
    }

    /// The sheet's visits and `opens` (PROTOCOL.md 10.1): only what `graph` reads. (Its
    /// variables are found with the quests, in the one pass over the conditions.)
    fn writing_facts(&self, graph: &DialogueGraph, sheet: &mut FactSheet) {
        let stored = self.record.visits.get(self.conversation);
        for &(vertex, recency) in graph.visit_reads() {
            let Some(v) = graph.vertex(vertex) else {
                continue;
            };
            if let Some(visit) = stored.and_then(|s| s.nodes.get(&*v.name))
                && visit.count > 0
            {
                sheet.visits.insert(v.name.to_string(), visit.count);
                if recency {
                    sheet.last_seen.insert(v.name.to_string(), visit.last);
                }
            }
        }
        sheet.opens = stored.map_or(0, |s| s.opens);
    }
}

impl Facts for ServerFacts<'_> {
    fn quest_status(&self, quest: &str) -> QuestStatus {
        quest_status(self.record, self.content, quest)
    }
    fn objective_progress(&self, quest: &str, objective: &str) -> u32 {
        self.record
            .quests
            .get(quest)
            .and_then(|q| q.progress.get(objective))
            .copied()
            .unwrap_or(0)
    }
    fn has(&self, name: &str) -> bool {
        Fact::from_str(name).is_ok_and(|f| self.machine.has(f))
    }
    fn counter(&self, counter: Counter) -> i64 {
        match counter {
            Counter::Coins => self.record.profile.coins,
            Counter::Experience => self.record.profile.experience,
            Counter::TutorialStage => self.record.profile.tutorial_stage,
            Counter::Opens => i64::from(
                self.record
                    .visits
                    .get(self.conversation)
                    .map_or(0, |s| s.opens),
            ),
        }
    }
    /// The stored value, read as the declared type, else the declared default; an undeclared
    /// variable has none.
    fn variable(&self, name: &str) -> Option<VarRef<'_>> {
        let declared = self.content.variables.declared.get(name)?;
        self.record
            .variables
            .get(name)
            .and_then(|text| VarRef::parse(declared.ty, text))
            .or_else(|| Some(VarRef::of(&declared.default)))
    }
    fn visits(&self, vertex: &str) -> u32 {
        self.record
            .visits
            .get(self.conversation)
            .and_then(|s| s.nodes.get(vertex))
            .map_or(0, |v| v.count)
    }
    fn last_seen(&self, vertex: &str) -> Option<u64> {
        self.record
            .visits
            .get(self.conversation)
            .and_then(|s| s.nodes.get(vertex))
            .filter(|v| v.count > 0)
            .map(|v| v.last)
    }
}

/// A quest's status for a player: stored if accepted, otherwise derived from prerequisites
/// (the shared rule, [`banter_rules::quest_status`]).
pub fn quest_status(record: &PlayerRecord, content: &Content, quest: &str) -> QuestStatus {
    banter_rules::quest_status(content, quest, |q| {
        record.quests.get(q).map(|state| match state.status {
            StoredQuestStatus::Active => banter_rules::Accepted::Active,
            StoredQuestStatus::Completed => banter_rules::Accepted::Completed,
        })
    })
}

/// The player's active quests, in content order: what a login or a game event reads, so it
/// costs the player's quests, never a scan of the world's.
pub fn active_quests<'c>(record: &PlayerRecord, content: &'c Content) -> Vec<&'c QuestDef> {
    let mut active: Vec<usize> = record
        .quests
        .keys()
        .filter(|id| quest_status(record, content, id) == QuestStatus::Active)
        .filter_map(|id| content.quest_index(id))
        .collect();
    active.sort_unstable();
    active
        .into_iter()
        .filter_map(|at| content.quests.get(at))
        .collect()
}

/// True if every objective of an active quest has reached its target.
pub fn objectives_done(record: &PlayerRecord, def: &QuestDef) -> bool {
    let Some(state) = record.quests.get(&def.id) else {
        return false;
    };
    banter_rules::objectives_done(def, |o| state.progress.get(o).copied().unwrap_or(0))
}

pub fn profile(record: &PlayerRecord) -> Profile {
    Profile {
        coins: record.profile.coins,
        experience: record.profile.experience,
        tutorial_stage: record.profile.tutorial_stage,
        tracked_quest: record.profile.tracked_quest.clone(),
    }
}

/// A story variable's declared type, or the refusal of a step that names an undeclared one.
fn declared_variable(content: &Content, variable: &str) -> Result<VarType, EngineError> {
    content
        .variables
        .declared
        .get(variable)
        .map(|d| d.ty)
        .ok_or_else(|| EngineError::QuestState(format!("no story variable `{variable}`")))
}

fn quest_def<'c>(content: &'c Content, quest: &str) -> Result<&'c QuestDef, EngineError> {
    content
        .quest(quest)
        .ok_or_else(|| EngineError::QuestState(format!("no quest `{quest}`")))
}

/// Where the tutorial moves when `quest` (if any) becomes `after` (`None`: not accepted, as
/// after an abandon) and the player's other quests stay as `record` holds them: the move the
/// step makes in its own transaction, or `None`.
fn tutorial_move(
    content: &Content,
    record: &PlayerRecord,
    changed: Option<(&str, Option<banter_rules::Accepted>)>,
) -> Option<TutorialMove> {
    let accepted = |q: &str| match changed {
        Some((quest, after)) if quest == q => after,
        _ => record.quests.get(q).map(|state| match state.status {
            StoredQuestStatus::Active => banter_rules::Accepted::Active,
            StoredQuestStatus::Completed => banter_rules::Accepted::Completed,
        }),
    };
    let from = record.profile.tutorial_stage;
    banter_dialogue::tutorial::stage_after(content, from, |quest| {
        banter_rules::quest_status(content, quest, accepted)
    })
    .map(|to| TutorialMove { from, to })
}

/// Reads the player again after a step an earlier attempt applied (the fresh path gets the
/// record from the step itself). The change stands whatever happens here and its effect must
/// reach the client: refusing it now would tell the player `store_unavailable` for a quest
/// already accepted or paid (found by the abuse run, where a starved pool timed this read out).
/// So a failed read is logged and the session's facts stay as they were until the next read;
/// the store, not this copy, decides every write.
async fn reload(store: &dyn Store, player: &str, record: &mut PlayerRecord) {
    match store.load_player(player).await {
        Ok(fresh) => *record = fresh,
        Err(e) => tracing::warn!(
            %player,
            error = %e,
            "cannot read the player after a committed change; facts stale until the next read"
        ),
    }
}

/// Runs an accepted action against the player's quests as the step `context` names. On success
/// the store has committed the change (now, or an earlier attempt under the same key did) and
/// `record` is the player after it; on error nothing was applied, except for `outcome_unknown`,
/// after which sending the same step again says what happened.
pub async fn execute(
    store: &dyn Store,
    content: &Content,
    player: &str,
    record: &mut PlayerRecord,
    action: &Action,
    context: &StepContext<'_>,
) -> Result<Outcome, EngineError> {
    match execute_once(store, content, player, record, action, context).await {
        Ok(outcome) => return Ok(outcome),
        Err(NotNow::Earlier) => {}
        // The state refuses it now; but if that state is this very step's doing (its answer
        // lost, the same arming sent again), the answer is what the step did.
        Err(NotNow::Refused(EngineError::QuestState(reason))) if mutates_store(action) => {
            if store.step_applied(player, context.key).await != Ok(true) {
                return Err(EngineError::QuestState(reason));
            }
        }
        Err(NotNow::Refused(e)) => return Err(e),
    }
    reload(store, player, record).await;
    after_commit(content, record, action)
}

/// What a store-changing action did, from `record`, the player after its step committed: the
/// one answer of the fresh path (the record its step read back) and of a retry whose step an
/// earlier attempt applied (the record read again).
fn after_commit(
    content: &Content,
    record: &PlayerRecord,
    action: &Action,
) -> Result<Outcome, EngineError> {
    let plain = |effect: Effect| Outcome {
        effect,
        jump: None,
        cutscene: None,
    };
    Ok(match action {
        Action::AcceptQuest { quest_id } => {
            let def = quest_def(content, quest_id)?;
            plain(Effect::QuestAccepted {
                quest: quest_id.clone(),
                objectives: def.objectives.iter().map(|o| o.id.clone()).collect(),
            })
        }
        Action::CompleteQuest { quest_id } => plain(completed(quest_def(content, quest_id)?)),
        Action::AdvanceObjective {
            quest_id,
            objective_id,
            ..
        } => {
            let def = quest_def(content, quest_id)?;
            let target = def
                .objectives
                .iter()
                .find(|o| o.id == *objective_id)
                .map_or(1, |o| o.target);
            let progress = record
                .quests
                .get(quest_id)
                .and_then(|q| q.progress.get(objective_id))
                .copied()
                .unwrap_or(0);
            plain(Effect::ObjectiveAdvanced {
                quest: quest_id.clone(),
                objective: objective_id.clone(),
                progress,
                target,
            })
        }
        Action::TrackQuest { quest_id } => plain(Effect::QuestTracked {
            quest: quest_id.clone(),
        }),
        Action::SetVariable { variable, .. } => {
            let declared = declared_variable(content, variable)?;
            let value = record
                .variables
                .get(variable)
                .and_then(|text| VarRef::parse(declared, text))
                .map(VarRef::to_value)
                .ok_or_else(|| {
                    EngineError::QuestState(format!(
                        "variable `{variable}` holds no {}",
                        declared.name()
                    ))
                })?;
            plain(Effect::VariableSet {
                variable: variable.clone(),
                value,
            })
        }
        other => {
            return Err(EngineError::QuestState(format!(
                "{} changes no stored state",
                other.action_type().name()
            )));
        }
    })
}

/// A quest's completion as the client is told it: the reward its content pays.
fn completed(def: &QuestDef) -> Effect {
    Effect::QuestCompleted {
        quest: def.id.clone(),
        coins: i64::from(def.rewards.coins),
        experience: i64::from(def.rewards.experience),
    }
}

/// What an action that neither reads nor writes the store does (a shop, the sell menu, a
/// cutscene, the boat): the session runs these at once, without a store step; `None` for the
/// others, which [`execute`] runs.
pub fn execute_local(action: &Action) -> Option<Outcome> {
    let plain = |effect: Effect| Outcome {
        effect,
        jump: None,
        cutscene: None,
    };
    Some(match action {
        Action::OpenShop { shop } => plain(Effect::OpenShop { shop: shop.clone() }),
        Action::OpenSellMenu => plain(Effect::OpenSellMenu {}),
        Action::PlayCutscene { scene, .. } => Outcome {
            effect: Effect::PlayCutscene {
                scene: scene.clone(),
            },
            jump: None,
            cutscene: Some(scene.clone()),
        },
        Action::ChooseRideBoat { quest_id } => plain(Effect::ChooseRideBoat {
            quest: quest_id.clone(),
        }),
        Action::AcceptQuest { .. }
        | Action::CheckQuest { .. }
        | Action::CompleteQuest { .. }
        | Action::AdvanceObjective { .. }
        | Action::TrackQuest { .. }
        | Action::SetVariable { .. } => return None,
    })
}

async fn execute_once(
    store: &dyn Store,
    content: &Content,
    player: &str,
    record: &mut PlayerRecord,
    action: &Action,
    context: &StepContext<'_>,
) -> Result<Outcome, NotNow> {
    // Objectives also advance outside this session (game events, another server instance):
    // a check or a completion reads the store's current progress, never a stale copy.
    if matches!(
        action,
        Action::CheckQuest { .. } | Action::CompleteQuest { .. }
    ) {
        *record = store.load_player(player).await?;
    }
    // The stored actions each land one step: the arms say which change, and the quest state it
    // leaves for the tutorial's next move. Their buffers live out here, borrowed by the change.
    let objectives: Vec<String>;
    let advances: [ObjectiveAdvance; 1];
    let (change, after) = match action {
        Action::AcceptQuest { quest_id } => {
            let def = quest_def(content, quest_id)?;
            match quest_status(record, content, quest_id) {
                QuestStatus::Available => {}
                other => {
                    return Err(EngineError::QuestState(format!(
                        "quest `{quest_id}` is {}, not available",
                        other.name()
                    ))
                    .into());
                }
            }
            objectives = def.objectives.iter().map(|o| o.id.clone()).collect();
            let change = Change::Accept {
                quest: quest_id,
                objectives: &objectives,
            };
            let after = Some((quest_id.as_str(), Some(banter_rules::Accepted::Active)));
            (change, after)
        }
        Action::CheckQuest {
            quest_id,
            success_node,
            failure_node,
        } => {
            let def = quest_def(content, quest_id)?;
            require_active(record, content, quest_id)?;
            let done = objectives_done(record, def);
            return Ok(Outcome {
                effect: Effect::QuestChecked {
                    quest: quest_id.clone(),
                    done,
                },
                jump: Some(if done { success_node } else { failure_node }.clone()),
                cutscene: None,
            });
        }
        Action::CompleteQuest { quest_id } => {
            let def = quest_def(content, quest_id)?;
            require_active(record, content, quest_id)?;
            if !objectives_done(record, def) {
                return Err(EngineError::QuestState(format!(
                    "quest `{quest_id}` has objectives left"
                ))
                .into());
            }
            let change = Change::Complete {
                quest: quest_id,
                coins: i64::from(def.rewards.coins),
                experience: i64::from(def.rewards.experience),
                advances: &[],
            };
            let after = Some((quest_id.as_str(), Some(banter_rules::Accepted::Completed)));
            (change, after)
        }
        Action::AdvanceObjective {
            quest_id,
            objective_id,
            amount,
        } => {
            let def = quest_def(content, quest_id)?;
            require_active(record, content, quest_id)?;
            let objective = def
                .objectives
                .iter()
                .find(|o| o.id == *objective_id)
                .ok_or_else(|| {
                    EngineError::QuestState(format!(
                        "quest `{quest_id}` has no objective `{objective_id}`"
                    ))
                })?;
            advances = [ObjectiveAdvance {
                quest: quest_id.clone(),
                objective: objective_id.clone(),
                amount: amount.as_ref().map_or(1, |a| a.amount),
                target: objective.target,
            }];
            let change = Change::Advance {
                event_id: None,
                advances: &advances,
            };
            (change, None)
        }
        Action::TrackQuest { quest_id } => {
            quest_def(content, quest_id)?;
            let change = Change::Track {
                quest: Some(quest_id),
            };
            (change, None)
        }
        Action::OpenShop { .. }
        | Action::OpenSellMenu
        | Action::PlayCutscene { .. }
        | Action::ChooseRideBoat { .. } => {
            return execute_local(action).ok_or_else(|| {
                NotNow::Refused(EngineError::QuestState(format!(
                    "`{}` runs without the store",
                    action.action_type().name()
                )))
            });
        }
        Action::SetVariable { variable, value } => {
            // check-content refuses a set of an undeclared variable or of a wrong value; content
            // built by hand may still hold one: refused, nothing stored.
            let declared = declared_variable(content, variable)?;
            if declared.parse(value).is_none() {
                return Err(EngineError::QuestState(format!(
                    "`{value}` is not a {} for variable `{variable}`",
                    declared.name()
                ))
                .into());
            }
            let change = Change::SetVariable {
                name: variable,
                value,
            };
            (change, None)
        }
    };
    let tutorial = tutorial_move(content, record, after);
    let stepped = land(store, &context.step(player, change, tutorial)).await?;
    *record = stepped.record;
    Ok(after_commit(content, record, action)?)
}

/// True if the action changes the player's stored state (it is a store step with its own
/// audit row): `changes_store` in the action's declaration (banter-protocol's action.rs).
pub fn mutates_store(action: &Action) -> bool {
    action.changes_store()
}

fn require_active(
    record: &PlayerRecord,
    content: &Content,
    quest: &str,
) -> Result<(), EngineError> {
    match quest_status(record, content, quest) {
        QuestStatus::Active => Ok(()),
        other => Err(EngineError::QuestState(format!(
            "quest `{quest}` is {}, not active",
            other.name()
        ))),
    }
}

/// The QuestlineResolver (article section 5): where a conversation with `npc` opens for this
/// player. The logic lives in [`banter_dialogue::resolver::resolve_entry`], the same function
/// `check-content` proves total; this feeds it the player's quest states and tracked quest.
pub fn resolve_entry<'c>(
    content: &'c Content,
    npc_id: &str,
    first_node: Option<&'c str>,
    record: &PlayerRecord,
) -> Option<&'c str> {
    banter_dialogue::resolver::resolve_entry(
        content,
        npc_id,
        first_node,
        record.profile.tracked_quest.as_deref(),
        |q| quest_status(record, content, &q.id),
    )
}

/// The node an NPC opens on when it has nothing left to offer.
pub const ALL_DONE: &str = banter_dialogue::resolver::ALL_DONE;

/// The idempotency key of a cutscene quest's ending: a quest is completed once per player, so
/// the quest names the step whichever session, instance or restart reports the scene done.
pub fn cutscene_step_key(quest: &str) -> String {
    format!("cutscene/{quest}")
}

/// Abandons an active quest (the quest log's `abandon_quest`): its state and progress are
/// forgotten and it is no longer tracked, in one audited step, so its giver offers it again. On
/// success `record` is the player after it; on error nothing was applied and calling again is
/// safe. A quest this very step already abandoned (its answer lost) answers as if it were
/// abandoned now.
pub async fn abandon_quest(
    store: &dyn Store,
    content: &Content,
    player: &str,
    record: &mut PlayerRecord,
    quest_id: &str,
    context: &StepContext<'_>,
) -> Result<(), EngineError> {
    quest_def(content, quest_id)?;
    if let Err(not_active) = require_active(record, content, quest_id) {
        return match store.step_applied(player, context.key).await {
            Ok(true) => {
                reload(store, player, record).await;
                Ok(())
            }
            _ => Err(not_active),
        };
    }
    let change = Change::Abandon { quest: quest_id };
    let tutorial = tutorial_move(content, record, Some((quest_id, None)));
    match land(store, &context.step(player, change, tutorial)).await {
        Ok(stepped) => *record = stepped.record,
        Err(NotNow::Earlier) => reload(store, player, record).await,
        // Completed or abandoned elsewhere since this copy was read: the store refused it.
        Err(NotNow::Refused(e)) => return Err(e),
    }
    Ok(())
}

/// Ends a cutscene quest when its scene has played (article section 5): in one step, every
/// objective is brought to its target and the reward is paid (exactly once, by the ledger). On
/// success `record` is the player after it; on error nothing was applied and calling again is
/// safe. A quest this very step already completed (its answer lost) answers as if it completed
/// now.
pub async fn finish_cutscene_quest(
    store: &dyn Store,
    content: &Content,
    player: &str,
    record: &mut PlayerRecord,
    quest_id: &str,
    context: &StepContext<'_>,
) -> Result<Effect, EngineError> {
    let def = quest_def(content, quest_id)?;
    *record = store.load_player(player).await?;
    if let Err(not_active) = require_active(record, content, quest_id) {
        // `record` was read just now: it is the player after that step.
        return match store.step_applied(player, context.key).await {
            Ok(true) => Ok(completed(def)),
            _ => Err(not_active),
        };
    }
    let state = record.quests.get(quest_id);
    let advances: Vec<ObjectiveAdvance> = def
        .objectives
        .iter()
        .filter_map(|o| {
            let progress = state
                .and_then(|s| s.progress.get(&o.id))
                .copied()
                .unwrap_or(0);
            (progress < o.target).then(|| ObjectiveAdvance {
                quest: quest_id.to_owned(),
                objective: o.id.clone(),
                amount: o.target - progress,
                target: o.target,
            })
        })
        .collect();
    let change = Change::Complete {
        quest: quest_id,
        coins: i64::from(def.rewards.coins),
        experience: i64::from(def.rewards.experience),
        advances: &advances,
    };
    let after = Some((quest_id, Some(banter_rules::Accepted::Completed)));
    let tutorial = tutorial_move(content, record, after);
    match land(store, &context.step(player, change, tutorial)).await {
        Ok(stepped) => *record = stepped.record,
        // Completed by an earlier report of the same scene: it is paid.
        Err(NotNow::Earlier) => reload(store, player, record).await,
        Err(NotNow::Refused(e)) => return Err(e),
    }
    Ok(completed(def))
}

#[cfg(test)]
mod round_trips {
    //! How many statements one `AcceptQuest` action sends to PostgreSQL: counted from sqlx's
    //! statement log (target `sqlx::query`, one event per statement, BEGIN and COMMIT included).

    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use banter_test_db::TestDb;
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;
    use crate::store::{self, ConnectOptions};

    struct Count(Arc<AtomicUsize>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Count {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            if event.metadata().target() == "sqlx::query" {
                self.0.fetch_add(1, Ordering::SeqCst);
                struct Show;
                impl tracing::field::Visit for Show {
                    fn record_debug(
                        &mut self,
                        field: &tracing::field::Field,
                        value: &dyn std::fmt::Debug,
                    ) {
                        if field.name() == "summary" {
                            eprintln!("  statement: {value:?}");
                        }
                    }
                }
                event.record(&mut Show);
            }
        }
    }

    /// A TCP proxy in front of PostgreSQL that counts round trips: each time the client
    /// sends after the server last spoke (or first) is one.
    async fn counting_proxy(
        upstream: std::net::SocketAddr,
    ) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let trips = Arc::new(AtomicUsize::new(0));
        let counted = trips.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let counted = counted.clone();
                tokio::spawn(async move {
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    // True while the client has the turn (it sent last).
                    let turn = Arc::new(std::sync::atomic::AtomicBool::new(false));
                    let client_turn = turn.clone();
                    let up = async move {
                        let mut buf = vec![0u8; 64 * 1024];
                        while let Ok(n) = client_read.read(&mut buf).await {
                            if n == 0 || server_write.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                            if !client_turn.swap(true, Ordering::SeqCst) {
                                counted.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                    };
                    let down = async move {
                        let mut buf = vec![0u8; 64 * 1024];
                        while let Ok(n) = server_read.read(&mut buf).await {
                            turn.store(false, Ordering::SeqCst);
                            if n == 0 || client_write.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    };
                    tokio::join!(up, down);
                });
            }
        });
        (addr, trips)
    }

    #[tokio::test]
    async fn an_accept_quest_action_on_postgres() {
        let db = TestDb::postgres("accept_round_trips").await;
        let options = ConnectOptions {
            max_connections: Some(1),
            ..ConnectOptions::default()
        };
        let upstream = db.pg_addr().expect("PostgreSQL's address");
        let (proxy, trips) = counting_proxy(upstream).await;
        let store: Arc<dyn Store> = Arc::new(
            store::PgStore::connect_with(db.pg_options_via(proxy).expect("options"), options)
                .await
                .expect("store"),
        );
        let library = crate::served::ContentVersion::load(&crate::testing::sample_content(), 1)
            .expect("sample content");
        let content = &library.content;
        let player = "rt-player";
        let mut record = store.load_player(player).await.expect("load");
        let mut available = content.quests.iter().filter(|q| {
            quest_status(&record, content, &q.id) == QuestStatus::Available && q.cutscene.is_none()
        });
        let (warm_up, quest) = match (available.next(), available.next()) {
            (Some(a), Some(b)) => (a.id.clone(), b.id.clone()),
            _ => panic!("two available quests"),
        };
        // One action first, so that the connection has prepared the statements: what is
        // counted is an action on a warm connection, as in play.
        let action = Action::AcceptQuest { quest_id: warm_up };
        let context = StepContext {
            key: "rt/warm-up",
            conversation: Some("rt"),
            message: "action",
            detail: None,
        };
        execute(
            store.as_ref(),
            content,
            player,
            &mut record,
            &action,
            &context,
        )
        .await
        .expect("accepted");
        let action = Action::AcceptQuest {
            quest_id: quest.clone(),
        };
        let context = StepContext {
            key: "rt/accept",
            conversation: Some("rt"),
            message: "action",
            detail: None,
        };
        let counted = Arc::new(AtomicUsize::new(0));
        let subscriber = tracing_subscriber::registry().with(Count(counted.clone()));
        let guard = tracing::subscriber::set_default(subscriber);
        let trips_before = trips.load(Ordering::SeqCst);
        let outcome = execute(
            store.as_ref(),
            content,
            player,
            &mut record,
            &action,
            &context,
        )
        .await
        .expect("accepted");
        drop(guard);
        let statements = counted.load(Ordering::SeqCst);
        let round_trips = trips.load(Ordering::SeqCst) - trips_before;
        eprintln!(
            "AcceptQuest {quest}: {statements} statements, {round_trips} round trips on PostgreSQL"
        );
        // The step's audit row, the accept, the player read back, COMMIT (BEGIN goes out with
        // the first of them): one transaction on one pooled connection, and no reload after.
        assert_eq!(statements, 4);
        assert!(matches!(outcome.effect, Effect::QuestAccepted { .. }));
        assert_eq!(quest_status(&record, content, &quest), QuestStatus::Active);
        store.close().await;
        drop(db);
    }
}
