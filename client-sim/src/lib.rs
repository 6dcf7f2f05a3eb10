//! Banter's headless client, as a library: the CLI (`banter-sim`) is a thin layer of argument
//! parsing and formatting over these modules. Built on the server's own `banter-protocol` and
//! `banter-dialogue`, and on `banter-client` for everything on the wire, so the client and the
//! server cannot drift.
//!
//! Layers, named by what flows through them:
//!
//! - [`http`], [`connection`], [`auth`] and [`error`]: the client library's endpoint and HTTP
//!   calls, WebSocket with request ids matched to their answers, token minting and error type,
//!   re-exported under the names the simulator has always used;
//! - [`session`]: a player: login, reconnect, move, talk, and a conversation walked with the
//!   client rules ([`banter_dialogue::ClientWalk`]) under a [`session::Driver`];
//! - [`facts`]: the player's facts kept current from effects; [`world`]: NPCs and quests from
//!   the content folder; [`pace`]: reading time and the client's own rate limit;
//!   [`events`]: the trusted game server's catches and finds;
//! - [`bot`] and [`load`]: honest bots and the load test; [`party`]: bots in parties walking a
//!   shared conversation together (`load --party-size`); [`attack`]: the cheat catalogue;
//!   [`play`]: the interactive terminal client; [`report`]: tables and JSON;
//! - [`barks`]: simulated play on a fake clock, driving the bark director;
//! - [`bench`]: the server against its own stack (echo versus step, open-loop latency, scale);
//!   [`abuse`]: slowloris, never-reading sessions, churn, malformed frames and token replay at
//!   once.

pub mod abuse;
pub mod attack;
pub mod auth;
pub mod barks;
pub mod bench;
pub mod bot;
pub mod channel;
pub mod connection;
pub mod error;
pub mod events;
pub mod facts;
pub mod http;
pub mod load;
pub mod pace;
pub mod party;
pub mod play;
pub mod report;
pub mod session;
pub mod world;

pub use error::SimError;
