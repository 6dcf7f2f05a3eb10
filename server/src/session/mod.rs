//! One player's session, in layers named by what flows through them:
//!
//! - `socket.rs`: frames in and out of the WebSocket. One task per connection owns the session,
//!   so messages are handled strictly in order and nothing needs a lock; a small writer task
//!   drains a bounded outgoing queue into the socket.
//! - `frames.rs`: a frame becomes a `ClientMessage` or a refusal (size, binary, rate, decoding).
//!   No socket, no clock.
//! - `core.rs`: the command layer. A decoded message and its time (`Now`, read by the caller)
//!   go in; the world checks, the walk, the quest engine and the store run (awaited: the core is
//!   async, and reads no clock); the session's state changes and the `ServerMessage`s it caused
//!   come out. Tested in `tests.rs` without sockets. Its commands are functions in
//!   `commands.rs` and `cutscene.rs`; parking and `resume` (the core's only waits, on tokio
//!   timers) in `parking.rs`; `store.rs`: `SessionStore`, the store calls the core makes itself.
//! - `refusal.rs`: the one mapping from every domain error to a wire code.
//! - `shared.rs`: parties and shared conversations (the party commands, votes, the leader's
//!   steps and the followers'), with the instance's rooms (`crate::rooms`).
//! - `life.rs`: a session's life outside its messages (begin, load and claim, finish), the same
//!   for a WebSocket and a player on a game-server channel (`channel/`).

mod commands;
mod core;
mod cutscene;
mod frames;
pub mod life;
mod parking;
mod refusal;
mod shared;
mod socket;
mod store;
#[cfg(test)]
mod tests;

pub use self::core::{Now, OpenConversation, SessionCore, Step};
pub use self::frames::{Checked, FrameCheck, RateLimit};
pub use self::refusal::{ChannelError, FrameError, Refusal, SessionError, walk_code};
pub use self::shared::deliver;
pub use self::socket::run;
pub use self::store::SessionStore;
