//! Banter's game rules, written once.
//!
//! The server enforces these and every client follows them, so a Rust game client predicts
//! exactly what the server will accept: how far a player reaches ([`world::within_reach`]), how
//! far a body may move in a given time ([`world::Body`]), when the next conversation may open
//! ([`world::talk_cooldown_left`]) and what status a quest has for a player
//! ([`quests::quest_status`]). The numbers come from content (an NPC's range, a quest's
//! prerequisites and targets) and from [`WorldRules`], never from a literal at a call site.
//!
//! Pure: no I/O, no clock (time is an argument), no randomness.

pub mod quests;
pub mod world;

pub use quests::{Accepted, objectives_done, quest_status};
pub use world::{Body, MoveRefused, WorldRules, distance, reach, talk_cooldown_left, within_reach};
