//! The quest engine: what an accepted dialogue action does to the player's quests and profile.
//!
//! The walk has already proved the action was put in front of the player with its authored
//! payload. The engine then checks that the quest's state still allows it at this moment (no
//! completing a quest that is not active, no accepting one whose prerequisites are not met), and
//! commits through the store, which makes each reward exactly-once in the database.

use std::str::FromStr;

use banter_dialogue::content::{Content, QuestDef};
use banter_dialogue::{Counter, Facts};
use banter_player::{Fact, PlayerStateMachine};
use banter_protocol::{Action, Effect, ErrorCode, FactSheet, Profile, QuestStatus};

use crate::store::{PlayerRecord, StoreError, StoredQuestStatus};

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
    pub fn sheet(&self) -> FactSheet {
        let mut sheet = FactSheet {
            coins: self.record.profile.coins,
            experience: self.record.profile.experience,
            tutorial_stage: self.record.profile.tutorial_stage,
            ..FactSheet::default()
        };
        for quest in &self.content.quests {
            let status = self.quest_status(&quest.id);
            if status != QuestStatus::Available {
                sheet.quests.insert(quest.id.clone(), status);
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

/// Runs an accepted action against the player's quests. On success the store has committed the
/// change and `record` is reloaded from it; on error nothing was applied.
pub async fn execute(
    store: &dyn crate::store::Store,
    content: &Content,
    player: &str,
    record: &mut PlayerRecord,
    action: &Action,
) -> Result<Outcome, EngineError> {
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
                    )));
                }
            }
            let objectives: Vec<String> = def.objectives.iter().map(|o| o.id.clone()).collect();
            store.accept_quest(player, quest_id, &objectives).await?;
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
                )));
            }
            let coins = i64::from(def.rewards.coins);
            let experience = i64::from(def.rewards.experience);
            store
                .complete_quest(player, quest_id, coins, experience)
                .await?;
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
            let progress = store
                .advance_objective(
                    player,
                    quest_id,
                    objective_id,
                    amount,
                    objective.target,
                    None,
                )
                .await?;
            plain(Effect::ObjectiveAdvanced {
                quest: quest_id.clone(),
                objective: objective_id.clone(),
                progress,
                target: objective.target,
            })
        }
        Action::TrackQuest { quest_id } => {
            quest_def(content, quest_id)?;
            store.set_tracked_quest(player, Some(quest_id)).await?;
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
    store: &dyn crate::store::Store,
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
    store: &dyn crate::store::Store,
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

fn mutates_store(action: &Action) -> bool {
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

/// Ends a cutscene quest when its scene has played (article section 5): every objective is
/// brought to its target (one store call) and the reward is paid through `complete_quest`, which
/// pays exactly once. On success `record` is reloaded; on error the quest stays as the store
/// left it (objectives possibly done, nothing paid) and calling again is safe.
pub async fn finish_cutscene_quest(
    store: &dyn crate::store::Store,
    content: &Content,
    player: &str,
    record: &mut PlayerRecord,
    quest_id: &str,
) -> Result<Effect, EngineError> {
    let def = quest_def(content, quest_id)?;
    *record = store.load_player(player).await?;
    require_active(record, content, quest_id)?;
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
    if !advances.is_empty() {
        store.advance_objectives(player, None, &advances).await?;
    }
    let coins = i64::from(def.rewards.coins);
    let experience = i64::from(def.rewards.experience);
    store
        .complete_quest(player, quest_id, coins, experience)
        .await?;
    refresh_after_commit(store, content, player, record).await;
    Ok(Effect::QuestCompleted {
        quest: quest_id.to_owned(),
        coins,
        experience,
    })
}
