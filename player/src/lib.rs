//! Banter's player state machine (what is true) and availability (who may interrupt).
//!
//! The player's state used to be "spread across private variables inside each controller", so
//! nothing outside could ask "what is the player doing right now". [`PlayerStateMachine`] is
//! the one place that answers it: several small machines in parallel, one region per
//! [`Owner`], each holding at most one of its states, plus free-floating [`Tag`]s. The
//! effective state is the heaviest held one and is derived, never maintained, so the
//! transition nobody writes (stop fishing while sailing: the boat becomes the headline) is
//! announced like any other.
//!
//! Writes are owned. [`PlayerStateMachine::new`] mints the machine together with one write
//! handle per owner (and per tag); a controller keeps its own handle and publishes its state
//! through it. A foreign write or a misspelled name does not compile (see [`OwnerHandle`]).
//!
//! ```
//! use banter_player::{
//!     availability, BoatState, Effective, Fact, FishingState, PlayerStateMachine, State,
//!     StateChanged, Tag,
//! };
//!
//! let (mut m, handles) = PlayerStateMachine::new();
//! let boat = handles.boat; // moved into BoatController
//! let fishing = handles.fishing; // moved into FishingController
//!
//! boat.enter(&mut m, BoatState::Driving);
//! fishing.enter(&mut m, FishingState::Casted);
//! handles.tags.using_bait.set(&mut m, true);
//! assert!(m.has(Fact::Tag(Tag::UsingBait)));
//! assert!(m.has(FishingState::Casted.into()));
//!
//! // Nobody enters Boat.Driving, yet it becomes the headline.
//! assert_eq!(
//!     fishing.clear(&mut m),
//!     Some(StateChanged {
//!         from: Effective::State(State::Fishing(FishingState::Casted)),
//!         to: Effective::State(State::Boat(BoatState::Driving)),
//!     })
//! );
//! assert!(availability::barks_may_play(&m));
//! ```
//!
//! The crate is pure: no I/O, no clock, no randomness, no heap in the machine.

mod machine;
mod snapshot;
mod vocabulary;

pub mod availability;

pub use availability::Availability;
pub use machine::{
    OwnerHandle, OwnerKind, OwnerState, PlayerStateMachine, StateChanged, SubZoneWriter, TagChange,
    TagHandle, TagKind,
};
pub use snapshot::{RestoreError, Snapshot};
pub use vocabulary::{
    BoatState, DialogueState, Effective, Fact, FishingState, FootState, NameKind, Owner,
    OwnerHandles, State, StealState, StoryState, SubZone, Tag, TagHandles, UnknownName, owner, tag,
};
