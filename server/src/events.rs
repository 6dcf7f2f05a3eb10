//! Game events: world progress the trusted game server reports (`POST /internal/events`).
//!
//! An event (a fish caught, an item found) advances every ACTIVE objective of the player that it
//! matches, in one store call under the event's id: all or nothing, and at most once per id.
//! A session of that player on this server is told through the hub; it reloads the player's
//! record and pushes an `effect` per advanced objective.
//!
//! `tutorial_started` is the game saying the intro began (the player stepped off the first
//! boat): a profile still at stage 0 enters the tutorial's first stage; the conversations move it
//! on from there (`banter_dialogue::tutorial::stage_after`).

use banter_dialogue::content::{Content, ObjectiveKind};
use banter_protocol::Effect;
use serde::{Deserialize, Serialize};

use crate::quests;
use crate::store::{
    Applied as StoreApplied, Change, MAX_AMOUNT, MAX_ID_LEN, ObjectiveAdvance, PlayerRecord, Step,
    Stepped, Store, StoreError, TutorialMove,
};

/// The JSON body of `POST /internal/events`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GameEventBody {
    /// Unique per event; a second delivery with the same id changes nothing.
    pub event_id: String,
    pub player: String,
    /// `fish_caught`, `item_found` or `tutorial_started`.
    pub kind: String,
    #[serde(default)]
    pub species: Option<String>,
    #[serde(default)]
    pub rarity: Option<String>,
    #[serde(default)]
    pub item: Option<String>,
    pub island: String,
    /// How many (default 1), `1..=1_000_000`.
    #[serde(default)]
    pub amount: Option<i64>,
}

/// A validated game event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameEvent {
    pub event_id: String,
    pub player: String,
    pub what: EventKind,
    pub island: String,
    pub amount: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    FishCaught {
        species: String,
        rarity: Option<String>,
    },
    ItemFound {
        item: String,
        rarity: Option<String>,
    },
    TutorialStarted,
}

impl GameEventBody {
    /// Checks the body; the message says what is wrong.
    pub fn validate(self) -> Result<GameEvent, String> {
        let text = |what: &str, value: &str| -> Result<(), String> {
            if value.is_empty() || value.len() > MAX_ID_LEN || value.chars().any(char::is_control) {
                return Err(format!(
                    "{what} must be 1 to {MAX_ID_LEN} bytes without control characters"
                ));
            }
            Ok(())
        };
        text("player", &self.player)?;
        text("island", &self.island)?;
        if self.event_id.is_empty()
            || self.event_id.len() > crate::store::MAX_EVENT_ID_LEN
            || self.event_id.chars().any(char::is_control)
        {
            return Err(format!(
                "event_id must be 1 to {} bytes without control characters",
                crate::store::MAX_EVENT_ID_LEN
            ));
        }
        let amount = self.amount.unwrap_or(1);
        if !(1..=i64::from(MAX_AMOUNT)).contains(&amount) {
            return Err(format!("amount {amount} is out of range 1..={MAX_AMOUNT}"));
        }
        if let Some(rarity) = &self.rarity {
            text("rarity", rarity)?;
        }
        let what = match self.kind.as_str() {
            "fish_caught" => {
                if self.item.is_some() {
                    return Err("a fish_caught event has no item".into());
                }
                let species = self.species.ok_or("a fish_caught event needs a species")?;
                text("species", &species)?;
                EventKind::FishCaught {
                    species,
                    rarity: self.rarity,
                }
            }
            "item_found" => {
                if self.species.is_some() {
                    return Err("an item_found event has no species".into());
                }
                let item = self.item.ok_or("an item_found event needs an item")?;
                text("item", &item)?;
                EventKind::ItemFound {
                    item,
                    rarity: self.rarity,
                }
            }
            "tutorial_started" => {
                if self.species.is_some() || self.item.is_some() || self.rarity.is_some() {
                    return Err("a tutorial_started event has no species, item or rarity".into());
                }
                if self.amount.is_some() {
                    return Err("a tutorial_started event has no amount".into());
                }
                EventKind::TutorialStarted
            }
            other => {
                return Err(format!(
                    "unknown event kind {other:?}: fish_caught, item_found or tutorial_started"
                ));
            }
        };
        Ok(GameEvent {
            event_id: self.event_id,
            player: self.player,
            what,
            island: self.island,
            amount: amount as u32,
        })
    }
}

/// One objective an event advanced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Advanced {
    pub quest: String,
    pub objective: String,
    pub progress: u32,
    pub target: u32,
}

impl Advanced {
    pub fn effect(&self) -> Effect {
        Effect::ObjectiveAdvanced {
            quest: self.quest.clone(),
            objective: self.objective.clone(),
            progress: self.progress,
            target: self.target,
        }
    }
}

/// The advances an event causes for this player: every active objective it matches that has not
/// reached its target. A catch matches `catch` objectives, a find `find` objectives; an
/// objective's `Island`, `Species` (catches) and `Rarity` filters must equal the event's.
pub fn matching_advances(
    content: &Content,
    record: &PlayerRecord,
    event: &GameEvent,
) -> Vec<ObjectiveAdvance> {
    let mut advances = Vec::new();
    for quest in quests::active_quests(record, content) {
        for objective in &quest.objectives {
            let (kind_matches, species, rarity) = match &event.what {
                EventKind::FishCaught { species, rarity } => (
                    objective.kind == ObjectiveKind::Catch,
                    Some(species.as_str()),
                    rarity.as_deref(),
                ),
                EventKind::ItemFound { rarity, .. } => (
                    objective.kind == ObjectiveKind::Find,
                    None,
                    rarity.as_deref(),
                ),
                EventKind::TutorialStarted => return Vec::new(),
            };
            let filter = |wanted: &Option<String>, given: Option<&str>| {
                wanted.as_deref().is_none_or(|w| Some(w) == given)
            };
            if !kind_matches
                || !filter(&objective.island, Some(&event.island))
                || !filter(&objective.species, species)
                || !filter(&objective.rarity, rarity)
            {
                continue;
            }
            let progress = record
                .quests
                .get(&quest.id)
                .and_then(|q| q.progress.get(&objective.id))
                .copied()
                .unwrap_or(0);
            if progress >= objective.target {
                continue;
            }
            advances.push(ObjectiveAdvance {
                quest: quest.id.clone(),
                objective: objective.id.clone(),
                amount: event.amount,
                target: objective.target,
            });
        }
    }
    advances
}

/// What an applied event did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// The objectives it advanced.
    pub advanced: Vec<Advanced>,
    /// The tutorial stage the profile entered, if it did.
    pub tutorial_stage: Option<i64>,
}

/// Records the event (a second delivery is a [`EventError::Duplicate`]) and moves a profile
/// still at stage 0 to the tutorial's first stage, in one step. A profile already in or past the
/// tutorial keeps its stage: the game may report the start again after a reinstall.
async fn start_tutorial(
    store: &dyn Store,
    content: &Content,
    event: &GameEvent,
) -> Result<Applied, EventError> {
    let record = store.load_player(&event.player).await?;
    let tutorial = banter_dialogue::tutorial::first_stage(content)
        .filter(|_| record.profile.tutorial_stage == 0)
        .map(|first| TutorialMove { from: 0, to: first });
    let stepped = record_event(store, event, &[], tutorial).await?;
    Ok(Applied {
        advanced: Vec::new(),
        tutorial_stage: tutorial
            .map(|m| m.to)
            .filter(|to| stepped.record.profile.tutorial_stage == *to),
    })
}

/// The event's store step: its advances (maybe none) under its id, with its audit row (and the
/// tutorial's move, if any), in one transaction. The step's key is the event id, so a second
/// delivery is refused twice over (the key, and `applied_events`), both as a duplicate.
async fn record_event(
    store: &dyn Store,
    event: &GameEvent,
    advances: &[ObjectiveAdvance],
    tutorial: Option<TutorialMove>,
) -> Result<Stepped, EventError> {
    let key = format!("event/{}", event.event_id);
    let detail = format!("{:?} {}", event.what, event.event_id);
    let step = Step {
        player: &event.player,
        key: &key,
        conversation: None,
        message: "event",
        detail: Some(crate::audit::truncate(
            &detail,
            crate::audit::MAX_DETAIL_BYTES,
        )),
        recorded_us: crate::clock::stamp(),
        change: Change::Advance {
            event_id: Some(&event.event_id),
            advances,
        },
        tutorial,
    };
    match store.apply_step(&step).await {
        Ok(stepped) => Ok(stepped),
        Err(StoreError::StepApplied { .. }) => Err(EventError::Duplicate(event.event_id.clone())),
        Err(e) => Err(e.into()),
    }
}

/// Why an event was not applied. Nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("unknown player {0:?}")]
    UnknownPlayer(String),
    #[error("event {0:?} was already applied")]
    Duplicate(String),
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for EventError {
    fn from(e: StoreError) -> EventError {
        match e {
            StoreError::UnknownPlayer(p) => EventError::UnknownPlayer(p),
            StoreError::DuplicateEvent { event_id } => EventError::Duplicate(event_id),
            other => EventError::Store(other),
        }
    }
}

/// Applies an event: finds the matching objectives and advances them in one store call under
/// the event id. A quest that stops being active between the read and the write (completed on
/// another path) fails that call with nothing applied; the event is then matched again.
pub async fn apply(
    store: &dyn Store,
    content: &Content,
    event: &GameEvent,
) -> Result<Applied, EventError> {
    if !store.player_exists(&event.player).await? {
        return Err(EventError::UnknownPlayer(event.player.clone()));
    }
    if event.what == EventKind::TutorialStarted {
        return start_tutorial(store, content, event).await;
    }
    let mut attempts = 0;
    loop {
        attempts += 1;
        let record = store.load_player(&event.player).await?;
        let advances = matching_advances(content, &record, event);
        match record_event(store, event, &advances, None).await {
            Ok(Stepped {
                applied: StoreApplied::Advanced(progress),
                ..
            }) => {
                let advanced = advances
                    .into_iter()
                    .zip(progress)
                    .map(|(a, progress)| Advanced {
                        quest: a.quest,
                        objective: a.objective,
                        progress,
                        target: a.target,
                    })
                    .collect();
                return Ok(Applied {
                    advanced,
                    tutorial_stage: None,
                });
            }
            Ok(other) => {
                return Err(EventError::Store(StoreError::Corrupt(format!(
                    "an event's step answered {:?}",
                    other.applied
                ))));
            }
            Err(EventError::Store(StoreError::QuestState { .. })) if attempts < 3 => continue,
            Err(e) => return Err(e),
        }
    }
}
