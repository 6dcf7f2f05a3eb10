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

use banter_dialogue::condition::Reference;
use banter_dialogue::content::{Content, QuestDef};
use banter_dialogue::{Counter, DialogueGraph, Facts};
use banter_player::{Fact, PlayerStateMachine};
use banter_protocol::{Action, Effect, ErrorCode, FactSheet, Profile, QuestStatus};

use crate::store::{
    Applied, Change, ObjectiveAdvance, PlayerRecord, Step, Store, StoreError, StoredQuestStatus,
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
    fn step(&self, player: &'a str, change: Change<'a>) -> Step<'a> {
        Step {
            player,
            key: self.key,
            conversation: self.conversation,
            message: self.message,
            detail: self.detail,
            recorded_us: crate::clock::stamp(),
            change,
        }
    }
}

/// Why a step did not apply now.
enum NotNow {
    /// An earlier attempt under the same key applied it (a retry, or a COMMIT whose answer was
    /// lost): [`execute`] answers with what it did, read back from the store.
    Earlier,
    /// Refused; nothing applied.
    Refused(EngineError),
}

impl<E: Into<EngineError>> From<E> for NotNow {
    fn from(e: E) -> NotNow {
        NotNow::Refused(e.into())
    }
}

/// Applies `step`, and finds out before answering when its COMMIT's outcome is unknown.
async fn land(store: &dyn Store, step: &Step<'_>) -> Result<Applied, NotNow> {
    match store.apply_step(step).await {
        Ok(applied) => Ok(applied),
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
                condition.visit_references(&mut |reference| {
                    if let Reference::Quest(quest) = reference {
                        named.insert(quest);
                    }
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
        sheet
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
        }
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

fn quest_def<'c>(content: &'c Content, quest: &str) -> Result<&'c QuestDef, EngineError> {
    content
        .quest(quest)
        .ok_or_else(|| EngineError::QuestState(format!("no quest `{quest}`")))
}

/// Runs an accepted action against the player's quests as the step `context` names. On success
/// the store has committed the change (now, or an earlier attempt under the same key did) and
/// `record` is reloaded from it; on error nothing was applied, except for `outcome_unknown`,
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
    refresh_after_commit(store, content, player, record).await;
    answer_earlier(content, record, action)
}

/// What an action did, for a step that an earlier attempt under the same key applied: rebuilt
/// from the store as it is now (`record`, just read).
fn answer_earlier(
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
        Action::CompleteQuest { quest_id } => {
            let def = quest_def(content, quest_id)?;
            plain(Effect::QuestCompleted {
                quest: quest_id.clone(),
                coins: i64::from(def.rewards.coins),
                experience: i64::from(def.rewards.experience),
            })
        }
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
        other => {
            return Err(EngineError::QuestState(format!(
                "{} changes no stored state",
                other.action_type().name()
            )));
        }
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
    let plain = |effect: Effect| Outcome {
        effect,
        jump: None,
        cutscene: None,
    };
    // Objectives also advance outside this session (game events, another server instance):
    // a check or a completion reads the store's current progress, never a stale copy.
    if matches!(
        action,
        Action::CheckQuest { .. } | Action::CompleteQuest { .. }
    ) {
        *record = store.load_player(player).await?;
    }
    let outcome = match action {
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
            let objectives: Vec<String> = def.objectives.iter().map(|o| o.id.clone()).collect();
            let change = Change::Accept {
                quest: quest_id,
                objectives: &objectives,
            };
            land(store, &context.step(player, change)).await?;
            plain(Effect::QuestAccepted {
                quest: quest_id.clone(),
                objectives,
            })
        }
        Action::CheckQuest {
            quest_id,
            success_node,
            failure_node,
        } => {
            let def = quest_def(content, quest_id)?;
            require_active(record, content, quest_id)?;
            let done = objectives_done(record, def);
            Outcome {
                effect: Effect::QuestChecked {
                    quest: quest_id.clone(),
                    done,
                },
                jump: Some(if done { success_node } else { failure_node }.clone()),
                cutscene: None,
            }
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
            let coins = i64::from(def.rewards.coins);
            let experience = i64::from(def.rewards.experience);
            let change = Change::Complete {
                quest: quest_id,
                coins,
                experience,
                advances: &[],
            };
            land(store, &context.step(player, change)).await?;
            plain(Effect::QuestCompleted {
                quest: quest_id.clone(),
                coins,
                experience,
            })
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
            let amount = amount.as_ref().map_or(1, |a| a.amount);
            let advances = [ObjectiveAdvance {
                quest: quest_id.clone(),
                objective: objective_id.clone(),
                amount,
                target: objective.target,
            }];
            let change = Change::Advance {
                event_id: None,
                advances: &advances,
            };
            let progress = match land(store, &context.step(player, change)).await? {
                Applied::Advanced(progress) => progress
                    .first()
                    .copied()
                    .ok_or_else(|| StoreError::Corrupt("an advance returned no progress".into()))?,
                other => {
                    return Err(
                        StoreError::Corrupt(format!("an advance step answered {other:?}")).into(),
                    );
                }
            };
            plain(Effect::ObjectiveAdvanced {
                quest: quest_id.clone(),
                objective: objective_id.clone(),
                progress,
                target: objective.target,
            })
        }
        Action::TrackQuest { quest_id } => {
            quest_def(content, quest_id)?;
            let change = Change::Track {
                quest: Some(quest_id),
            };
            land(store, &context.step(player, change)).await?;
            plain(Effect::QuestTracked {
                quest: quest_id.clone(),
            })
        }
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
    };
    if mutates_store(action) {
        refresh_after_commit(store, content, player, record).await;
    }
    Ok(outcome)
}

/// Reads the player again after a committed change, and moves the tutorial on. The change stands
/// whatever happens here and its effect must reach the client: refusing it now would tell the
/// player `store_unavailable` for a quest already accepted or paid (found by the abuse run, where
/// a starved pool timed this read out). So a failed read is logged and the session's facts stay
/// as they were until the next read; the store, not this copy, decides every write.
async fn refresh_after_commit(
    store: &dyn Store,
    content: &Content,
    player: &str,
    record: &mut PlayerRecord,
) {
    match store.load_player(player).await {
        Ok(fresh) => {
            *record = fresh;
            advance_tutorial(store, content, player, record).await;
        }
        Err(e) => tracing::warn!(
            %player,
            error = %e,
            "cannot read the player after a committed change; facts stale until the next read"
        ),
    }
}

/// Moves the profile past every tutorial stage whose end now holds (after an accept or a
/// completion). The quest change is committed already and its effect must reach the client, so a
/// failed write is logged, not returned: the end still holds, and the next action moves the stage.
async fn advance_tutorial(
    store: &dyn Store,
    content: &Content,
    player: &str,
    record: &mut PlayerRecord,
) {
    let next =
        banter_dialogue::tutorial::stage_after(content, record.profile.tutorial_stage, |quest| {
            quest_status(record, content, quest)
        });
    if let Some(stage) = next {
        match store.set_tutorial_stage(player, stage).await {
            Ok(()) => record.profile.tutorial_stage = stage,
            Err(e) => tracing::warn!(player, stage, error = %e, "tutorial stage not moved"),
        }
    }
}

/// True if the action changes the player's stored state (it is a store step with its own
/// audit row).
pub fn mutates_store(action: &Action) -> bool {
    matches!(
        action,
        Action::AcceptQuest { .. }
            | Action::CompleteQuest { .. }
            | Action::AdvanceObjective { .. }
            | Action::TrackQuest { .. }
    )
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
/// success `record` is reloaded; on error nothing was applied and calling again is safe. A quest
/// this very step already abandoned (its answer lost) answers as if it were abandoned now.
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
                refresh_after_commit(store, content, player, record).await;
                Ok(())
            }
            _ => Err(not_active),
        };
    }
    let change = Change::Abandon { quest: quest_id };
    match land(store, &context.step(player, change)).await {
        Ok(_) | Err(NotNow::Earlier) => {}
        // Completed or abandoned elsewhere since this copy was read: the store refused it.
        Err(NotNow::Refused(e)) => return Err(e),
    }
    refresh_after_commit(store, content, player, record).await;
    Ok(())
}

/// Ends a cutscene quest when its scene has played (article section 5): in one step, every
/// objective is brought to its target and the reward is paid (exactly once, by the ledger). On
/// success `record` is reloaded; on error nothing was applied and calling again is safe. A
/// quest this very step already completed (its answer lost) answers as if it completed now.
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
    let completed = || Effect::QuestCompleted {
        quest: quest_id.to_owned(),
        coins: i64::from(def.rewards.coins),
        experience: i64::from(def.rewards.experience),
    };
    if let Err(not_active) = require_active(record, content, quest_id) {
        return match store.step_applied(player, context.key).await {
            Ok(true) => {
                advance_tutorial(store, content, player, record).await;
                Ok(completed())
            }
            _ => Err(not_active),
        };
    }
    let state = record.quests.get(quest_id);
    let advances: Vec<crate::store::ObjectiveAdvance> = def
        .objectives
        .iter()
        .filter_map(|o| {
            let progress = state
                .and_then(|s| s.progress.get(&o.id))
                .copied()
                .unwrap_or(0);
            (progress < o.target).then(|| crate::store::ObjectiveAdvance {
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
    match land(store, &context.step(player, change)).await {
        // Completed now, or by an earlier report of the same scene: either way it is paid.
        Ok(_) | Err(NotNow::Earlier) => {}
        Err(NotNow::Refused(e)) => return Err(e),
    }
    refresh_after_commit(store, content, player, record).await;
    Ok(completed())
}
