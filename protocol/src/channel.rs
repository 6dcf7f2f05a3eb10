//! Game-server channels (PROTOCOL.md section 16): the envelope that carries many players'
//! sessions over one HTTP batch stream or one WebSocket.
//!
//! The messages inside are exactly the WebSocket protocol's ([`crate::ClientMessage`],
//! [`crate::ServerMessage`]); these types only say whose they are and in what order they go.
//! Generic over the message type `M` so the server can keep what a game server sent as the raw
//! JSON it arrived as (and decode it under the player's own frame rules), while a client writes
//! its typed messages.

use serde::{Deserialize, Serialize};

use crate::Position;

/// The most events one batch answer holds; `more` says when others wait.
pub const MAX_ANSWER_EVENTS: usize = 1000;
/// The most bytes of events one batch answer holds (the first event always goes).
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// The most items in one batch.
pub const MAX_ITEMS: usize = 1000;
/// The most positions in one batch.
pub const MAX_POSITIONS: usize = 1000;
/// The largest request body (HTTP) or client frame (WebSocket) of a channel.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;
/// The longest a batch answer waits for an event.
pub const MAX_WAIT_MS: u64 = 25_000;

/// What `POST /v1/channels` answers, and the first frame of a channel's WebSocket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelOpened {
    pub channel: String,
    pub limits: ChannelLimits,
}

/// The bounds a channel holds its game server to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelLimits {
    pub max_items: usize,
    pub max_positions: usize,
    pub max_request_bytes: usize,
    pub max_events: usize,
    pub max_answer_bytes: usize,
    pub max_wait_ms: u64,
    pub idle_timeout_ms: u64,
    pub max_players: usize,
}

/// A batch over HTTP: `POST /v1/channels/<channel>/batch`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Batch<M> {
    /// The batch's number on its channel: 1, 2, 3, ...
    pub seq: u64,
    /// The highest event number received; events up to it are forgotten.
    #[serde(default)]
    pub ack: u64,
    /// How long the answer may wait for an event when none is waiting.
    #[serde(default)]
    pub wait_ms: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub positions: Vec<Placed>,
    #[serde(default = "Vec::new", skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<Item<M>>,
    /// Parties the game server declares for its players (PROTOCOL.md section 17.1), applied
    /// after the items (so a `join` in the same batch counts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parties: Vec<crate::DeclaredParty>,
}

/// A batch over the channel's WebSocket: no numbers, the socket orders and delivers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Frame<M> {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub positions: Vec<Placed>,
    #[serde(default = "Vec::new", skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<Item<M>>,
    /// Parties the game server declares for its players (PROTOCOL.md section 17.1), applied
    /// after the items (so a `join` in the same batch counts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parties: Vec<crate::DeclaredParty>,
}

/// Where the engine has a player now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placed {
    pub player: String,
    pub position: Position,
}

/// What one player does, as written: `player` and exactly one of `join`, `message`, `leave`
/// (see [`Item::what`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Item<M> {
    pub player: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join: Option<Join>,
    #[serde(default = "none", skip_serializing_if = "Option::is_none")]
    pub message: Option<M>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leave: Option<bool>,
}

fn none<M>() -> Option<M> {
    None
}

/// A player's session starts on the channel.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Join {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
}

/// What an item asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum What<'a, M> {
    Join(&'a Join),
    Message(&'a M),
    Leave,
}

/// Why an item cannot be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ItemError {
    #[error("an item needs exactly one of `join`, `message`, `leave`")]
    NotExactlyOne,
    #[error("`leave` can only be `true`")]
    LeaveFalse,
}

impl<M> Item<M> {
    /// A `join` item.
    pub fn join(player: impl Into<String>, locale: Option<String>) -> Item<M> {
        Item {
            player: player.into(),
            join: Some(Join { locale }),
            message: None,
            leave: None,
        }
    }

    /// A `message` item.
    pub fn message(player: impl Into<String>, message: M) -> Item<M> {
        Item {
            player: player.into(),
            join: None,
            message: Some(message),
            leave: None,
        }
    }

    /// A `leave` item.
    pub fn leave(player: impl Into<String>) -> Item<M> {
        Item {
            player: player.into(),
            join: None,
            message: None,
            leave: Some(true),
        }
    }

    /// What the item asks for, when it asks for exactly one thing.
    pub fn what(&self) -> Result<What<'_, M>, ItemError> {
        match (&self.join, &self.message, self.leave) {
            (Some(join), None, None) => Ok(What::Join(join)),
            (None, Some(message), None) => Ok(What::Message(message)),
            (None, None, Some(true)) => Ok(What::Leave),
            (None, None, Some(false)) => Err(ItemError::LeaveFalse),
            _ => Err(ItemError::NotExactlyOne),
        }
    }
}

/// One message for one player, numbered on its channel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event<M> {
    pub n: u64,
    pub player: String,
    pub message: M,
}

/// The answer to an HTTP batch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer<M> {
    pub seq: u64,
    pub events: Vec<Event<M>>,
    pub more: bool,
}

/// A server frame on a channel's WebSocket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Events<M> {
    pub events: Vec<Event<M>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClientMessage;

    fn item(json: &str) -> Item<serde_json::Value> {
        serde_json::from_str(json).expect("a well-formed item")
    }

    #[test]
    fn an_item_asks_for_exactly_one_thing() {
        let join = item(r#"{"player":"rbx-1","join":{"locale":"en"}}"#);
        assert!(matches!(join.what(), Ok(What::Join(j)) if j.locale.as_deref() == Some("en")));
        let leave = item(r#"{"player":"rbx-1","leave":true}"#);
        assert_eq!(leave.what(), Ok(What::Leave));
        let both = item(r#"{"player":"rbx-1","leave":true,"join":{}}"#);
        assert_eq!(both.what(), Err(ItemError::NotExactlyOne));
        let neither = item(r#"{"player":"rbx-1"}"#);
        assert_eq!(neither.what(), Err(ItemError::NotExactlyOne));
        let stay = item(r#"{"player":"rbx-1","leave":false}"#);
        assert_eq!(stay.what(), Err(ItemError::LeaveFalse));
        assert!(
            serde_json::from_str::<Item<serde_json::Value>>(r#"{"player":"a","x":1}"#).is_err()
        );
    }

    #[test]
    fn a_client_writes_typed_messages_the_server_reads_raw() {
        let batch = Batch {
            seq: 1,
            ack: 0,
            wait_ms: 0,
            positions: vec![Placed {
                player: "rbx-1".into(),
                position: [1.0, 2.0, 3.0],
            }],
            items: vec![
                Item::join("rbx-1", None),
                Item::message(
                    "rbx-1",
                    ClientMessage::SetAfk {
                        id: Some(1),
                        afk: true,
                    },
                ),
            ],
            parties: vec![crate::DeclaredParty {
                party: "crew".into(),
                leader: "rbx-1".into(),
                members: vec!["rbx-1".into(), "rbx-2".into()],
            }],
        };
        let text = serde_json::to_string(&batch).expect("a batch writes");
        assert_eq!(
            text,
            r#"{"seq":1,"ack":0,"wait_ms":0,"positions":[{"player":"rbx-1","position":[1.0,2.0,3.0]}],"items":[{"player":"rbx-1","join":{}},{"player":"rbx-1","message":{"type":"set_afk","id":1,"afk":true}}],"parties":[{"party":"crew","leader":"rbx-1","members":["rbx-1","rbx-2"]}]}"#
        );
        let read: Batch<serde_json::Value> = serde_json::from_str(&text).expect("and reads back");
        assert_eq!(read.items.len(), 2);
        assert_eq!(read.parties, batch.parties);
    }
}
