//! Banter's client library: what every Rust client of a Banter server shares — the simulator
//! (`banter-sim`), the end-to-end tests, and a game client.
//!
//! - [`endpoint`]: where the server is (pure);
//! - [`http`]: the HTTP calls (health, readiness, metrics, reload, audit, game events) over
//!   `reqwest`; [`login`]: device login;
//! - [`connection`]: one WebSocket, a reader task, request ids matched to their `ack` or
//!   `error`, and `resume`;
//! - [`reconnect`]: connect again with backoff after a drop, logging in again if need be, and
//!   take the conversation back;
//! - [`channel`]: a game server's side of channels: credentials, HTTP batches, the channel
//!   WebSocket;
//! - [`token`]: HS256 tokens minted with a secret, for tests and tools;
//! - [`error`]: the one error type.
//!
//! Built on the server's own `banter-protocol`, so a client and the server cannot drift.

pub mod channel;
pub mod connection;
pub mod endpoint;
pub mod error;
pub mod http;
pub mod login;
pub mod reconnect;
pub mod token;

pub use connection::{Connection, Refusal, Reply, Resumed, Welcome};
pub use endpoint::Endpoint;
pub use error::{Error, Result};
pub use http::Http;
pub use login::{Login, device_login};
pub use reconnect::{Backoff, reconnect, reconnect_and_resume};
