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
    ByeReason, ClientMessage, ClientMessageKind, CloseReason, Effect, ErrorCode, FactSheet,
    MAX_CLIENT_FRAME_BYTES, NpcRef, PROTOCOL_VERSION, Position, Profile, QuestStatus,
    ServerMessage,
};
pub use payload::{ActionPayload, PayloadError};

/// A closed vocabulary's `VARIANTS` (strum's derive, in declaration order) as the array its `ALL`
/// has always been: `N` is the enum's `COUNT`, so a mismatch cannot compile.
const fn all<T: Copy, const N: usize>(variants: &[T]) -> [T; N] {
    match variants.first_chunk::<N>() {
        Some(all) => *all,
        None => panic!("COUNT and VARIANTS disagree"),
    }
}
