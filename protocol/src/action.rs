//! Actions authored on dialogue nodes and responses (article section 2 and 7.3).

use std::str::FromStr;

use serde::{Deserialize, Serialize};
use strum::{EnumCount, VariantArray};

/// The closed vocabulary of action types. The string form is the `Type` field of the content
/// files and the `action` field of the wire message.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    strum::IntoStaticStr,
    strum::Display,
    strum::VariantArray,
    strum::EnumCount,
)]
pub enum ActionType {
    AcceptQuest,
    CheckQuest,
    CompleteQuest,
    AdvanceObjective,
    TrackQuest,
    OpenShop,
    OpenSellMenu,
    PlayCutscene,
    ChooseRideBoat,
}

impl ActionType {
    /// Every action type, in declaration order.
    pub const ALL: [ActionType; ActionType::COUNT] = crate::all(ActionType::VARIANTS);

    /// The name used in content files and on the wire: the variant's own name.
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// A name that is not one of [`ActionType::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown action type `{0}`")]
pub struct UnknownActionType(pub String);

impl FromStr for ActionType {
    type Err = UnknownActionType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ActionType::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| UnknownActionType(s.to_owned()))
    }
}

/// How far an `AdvanceObjective` moves its objective, and optionally on which island.
///
/// The article encodes the amount and the island positionally, so naming an island forces the
/// amount to be written even when it is 1. Making the island live *inside* the amount means an
/// island without an amount cannot be represented at all.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ObjectiveAmount {
    pub amount: u32,
    pub island: Option<String>,
}

/// An action as authored in a dialogue, with every field the content gave it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "Type", rename_all_fields = "PascalCase")]
pub enum Action {
    /// The player takes on a quest.
    AcceptQuest { quest_id: String },
    /// The server checks the quest's objectives and jumps to `success_node` or `failure_node`.
    CheckQuest {
        quest_id: String,
        success_node: String,
        failure_node: String,
    },
    /// The quest is handed in and its reward paid.
    CompleteQuest { quest_id: String },
    /// A talk-only objective moves forward.
    AdvanceObjective {
        quest_id: String,
        objective_id: String,
        amount: Option<ObjectiveAmount>,
    },
    /// The quest becomes the one followed in the journal.
    TrackQuest { quest_id: String },
    /// A shop opens on the client.
    OpenShop { shop: String },
    /// The selling menu opens on the client.
    OpenSellMenu,
    /// A cutscene plays, optionally for a quest.
    PlayCutscene {
        scene: String,
        quest_id: Option<String>,
    },
    /// The player is sent to pick a boat for a trip.
    ChooseRideBoat { quest_id: String },
}

impl Action {
    /// The type of this action.
    pub fn action_type(&self) -> ActionType {
        match self {
            Action::AcceptQuest { .. } => ActionType::AcceptQuest,
            Action::CheckQuest { .. } => ActionType::CheckQuest,
            Action::CompleteQuest { .. } => ActionType::CompleteQuest,
            Action::AdvanceObjective { .. } => ActionType::AdvanceObjective,
            Action::TrackQuest { .. } => ActionType::TrackQuest,
            Action::OpenShop { .. } => ActionType::OpenShop,
            Action::OpenSellMenu => ActionType::OpenSellMenu,
            Action::PlayCutscene { .. } => ActionType::PlayCutscene,
            Action::ChooseRideBoat { .. } => ActionType::ChooseRideBoat,
        }
    }

    /// The quest this action is about, if any.
    pub fn quest_id(&self) -> Option<&str> {
        match self {
            Action::AcceptQuest { quest_id }
            | Action::CheckQuest { quest_id, .. }
            | Action::CompleteQuest { quest_id }
            | Action::AdvanceObjective { quest_id, .. }
            | Action::TrackQuest { quest_id }
            | Action::ChooseRideBoat { quest_id } => Some(quest_id),
            Action::PlayCutscene { quest_id, .. } => quest_id.as_deref(),
            Action::OpenShop { .. } | Action::OpenSellMenu => None,
        }
    }
}
