//! Snapshot and restore.
//!
//! A snapshot stores what is true (held states, set tags, the revision) by stable name and
//! nothing derived: the effective state is recomputed on restore, never trusted from storage,
//! in the same level-triggered spirit as the rest of the crate.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::machine::PlayerStateMachine;
use crate::vocabulary::{Owner, State, Tag};

/// The serialized form of a [`PlayerStateMachine`].
///
/// States are listed, not keyed by owner: the owner is part of the state's name, so a state
/// cannot be filed under the wrong region. Names are the stable ones (`"Fishing.Casted"`,
/// `"SubZone.Dock"`), so reordering the enums never breaks stored snapshots, and an unknown
/// name fails deserialization.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// Format version; only [`Snapshot::VERSION`] is accepted.
    pub version: u32,
    /// The held states, at most one per owner.
    pub held: Vec<State>,
    /// The set tags, each at most once.
    pub tags: Vec<Tag>,
    /// The revision counter at the time of the snapshot.
    pub revision: u64,
}

impl Snapshot {
    /// The snapshot format this crate writes and reads.
    pub const VERSION: u32 = 1;
}

/// Why a snapshot could not be restored. Restoring never panics and never yields a machine
/// that breaks an invariant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RestoreError {
    /// The snapshot's format version is not [`Snapshot::VERSION`].
    UnsupportedVersion(u32),
    /// Two states of the same owner: impossible for a real machine ("Fishing cannot be in
    /// Fishing.Casted and Fishing.Minigame at the same time").
    OwnerHeldTwice {
        /// The owner named twice.
        owner: Owner,
        /// The first state listed for it.
        first: State,
        /// The second state listed for it.
        second: State,
    },
    /// A tag listed twice.
    TagListedTwice(Tag),
}

impl fmt::Display for RestoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RestoreError::UnsupportedVersion(v) => write!(
                f,
                "unsupported player snapshot version {v} (expected {})",
                Snapshot::VERSION
            ),
            RestoreError::OwnerHeldTwice {
                owner,
                first,
                second,
            } => write!(
                f,
                "owner {owner} holds two states in the snapshot: {first} and {second}"
            ),
            RestoreError::TagListedTwice(t) => write!(f, "tag {t} is listed twice in the snapshot"),
        }
    }
}

impl std::error::Error for RestoreError {}

impl PlayerStateMachine {
    /// What is true now, by name.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            version: Snapshot::VERSION,
            held: self.active_states().collect(),
            tags: self.active_tags().collect(),
            revision: self.revision(),
        }
    }

    /// Rebuilds a machine from a snapshot, recomputing the effective state.
    ///
    /// The write handles minted by [`PlayerStateMachine::new`] keep working on the restored
    /// machine. A snapshot no real machine could have produced is rejected, not repaired.
    pub fn restore(snapshot: &Snapshot) -> Result<PlayerStateMachine, RestoreError> {
        if snapshot.version != Snapshot::VERSION {
            return Err(RestoreError::UnsupportedVersion(snapshot.version));
        }
        let mut regions: [Option<State>; Owner::COUNT] = [None; Owner::COUNT];
        for &state in &snapshot.held {
            let owner = state.owner();
            let slot = &mut regions[owner.index()];
            if let Some(first) = *slot {
                return Err(RestoreError::OwnerHeldTwice {
                    owner,
                    first,
                    second: state,
                });
            }
            *slot = Some(state);
        }
        let mut tags = 0u32;
        for &tag in &snapshot.tags {
            if tags & tag.bit() != 0 {
                return Err(RestoreError::TagListedTwice(tag));
            }
            tags |= tag.bit();
        }
        Ok(PlayerStateMachine::from_parts(
            regions,
            tags,
            snapshot.revision,
        ))
    }
}

/// Serializes as a [`Snapshot`].
impl Serialize for PlayerStateMachine {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.snapshot().serialize(serializer)
    }
}

/// Deserializes a [`Snapshot`] and restores it; a corrupted snapshot is a deserialization
/// error.
impl<'de> Deserialize<'de> for PlayerStateMachine {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let snapshot = Snapshot::deserialize(deserializer)?;
        PlayerStateMachine::restore(&snapshot).map_err(serde::de::Error::custom)
    }
}
