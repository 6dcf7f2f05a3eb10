//! Banter's bark director: what X says about what the player is doing.
//!
//! Three pieces, as the article separates them: what is true (the player
//! state machine, in `banter-player`), who may interrupt (availability, also
//! there) and what gets said about it: this crate. It holds
//!
//! - [`Cue`]: the 14 named moments and their fixed probability table;
//! - [`BarkCatalog`]: the data table of recorded lines, checked at load time;
//! - [`Deck`]: "a deck, not a die", so a pool is heard through before a line
//!   comes back, and never the same line twice in a row;
//! - [`BarkDirector`]: eligibility, the six filters in the article's order,
//!   dwell timers, going quiet; driven by inputs, emitting [`Command`]s;
//! - [`stats`]: the birthday-problem figures behind the deck, and the tally
//!   the simulator keeps.
//!
//! The crate is pure: no I/O (a catalog is parsed from its text by
//! [`BarkCatalog::from_json`]; the caller reads the file); time is an input
//! (a [`Duration`](std::time::Duration) since any epoch) and so is randomness
//! (any [`rand_core::Rng`]; [`SplitMix64`] for reproducible runs).
//!
//! ```
//! use std::time::Duration;
//! use banter_barks::{BarkCatalog, BarkDirector, Command, Cue, Payload, PayloadKey, SplitMix64};
//! use banter_player::PlayerStateMachine;
//!
//! let json = r#"{"lines": [
//!   {"id": "land.common", "text": "Small, but it counts.", "cues": ["LandFish"],
//!    "match": {"Rarity": "Common"}, "priority": 1}
//! ]}"#;
//! let loaded = BarkCatalog::from_json(json).unwrap();
//! let (player, _handles) = PlayerStateMachine::new();
//! let mut rng = SplitMix64::new(1);
//! let mut director = BarkDirector::new(loaded.catalog);
//! let now = Duration::from_secs(10);
//! director.start(now, &player);
//! let payload = Payload::new().with(PayloadKey::Rarity, "Common");
//! // The roll may fail (p = 0.30); every outcome says why.
//! let outcome = director.fire(now, Cue::LandFish, &payload, &player, &mut rng);
//! if let Some(line) = outcome.played() {
//!     assert_eq!(director.poll_command(), Some(Command::Play { line }));
//! }
//! ```

pub mod catalog;
pub mod cue;
pub mod deck;
pub mod director;
pub mod rng;
pub mod stats;

pub use catalog::{
    BarkCatalog, CatalogError, CatalogWarning, Line, LineId, LoadError, Loaded, Priority,
};
pub use cue::{Cue, CueKind, Payload, PayloadKey};
pub use deck::Deck;
pub use director::{
    Attempt, BarkDirector, Command, DirectorSnapshot, Filter, FireOutcome, Ineligible, PlayerView,
    QuietCause, QuietSet, QuietSource, Reason, StopReason,
};
pub use rng::SplitMix64;
