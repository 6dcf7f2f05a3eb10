//! One WebSocket to the server, request ids matched to their `ack` or `error`: the client
//! library's ([`banter_client::connection`]).

pub use banter_client::connection::{
    ANSWER_TIMEOUT, Connection, Refusal, Reply, Resumed, Welcome, handshake, upgrade_status,
};
