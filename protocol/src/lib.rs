//! The Banter wire protocol: what crosses the network between a game client and the server.
//!
//! This crate is shared by the server and by every client so that both sides build the very same
//! bytes. The most important piece is [`ActionPayload`]: the server accepts a client's action only
//! if its payload equals the payload built from the action authored in the dialogue, so the
//! comparison is only worth anything if both sides build it with the same function.
//!
//! Pure: no I/O, no clock, no async runtime.

mod action;
mod messages;
mod payload;
pub mod schema;

pub use action::{Action, ActionType, ObjectiveAmount, UnknownActionType};
pub use messages::{
    ByeReason, ClientMessage, CloseReason, Effect, ErrorCode, FactSheet, MAX_CLIENT_FRAME_BYTES,
    NpcRef, PROTOCOL_VERSION, Position, Profile, QuestStatus, ServerMessage,
};
pub use payload::{ActionPayload, PayloadError};
