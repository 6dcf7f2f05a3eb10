//! The gossip loop of the sample content (`content/dialogue/base/Marisol.json`): Marisol's
//! `Marisol_Gossip` line, whose first response opens the rod shop and leads back through
//! `Marisol_GossipMore`. None of it writes to the store. Its messages, the echo messages of the
//! same byte length, and how an answer is told by its first bytes.

use serde::Serialize;
use tokio_tungstenite::tungstenite::Message;

/// The NPC and the instance hint.
pub const NPC: &str = "Marisol";
pub const INSTANCE: &str = "marisol";
/// Where the body spawns: 4 studs from Marisol at (-6, 3, -18).
pub const SPAWN: [f64; 3] = [-6.0, 3.0, -14.0];
/// The line the conversation opens on for a fresh player.
pub const ENTRY: &str = "Marisol_Hello";
/// "Heard any gossip?": into the loop.
pub const INTO_LOOP: &str = "Marisol_Hello_r5";
/// One lap, in the order the client rules send it: choose the response (its `OpenShop` is
/// held), advance past the line it led to, then send the held action.
pub const CHOOSE: &str = "Marisol_Gossip_r1";
pub const ADVANCE: &str = "Marisol_GossipMore";
pub const SHOP: &str = "SaltyHookRods";

/// The three messages of one lap, with request id `id`.
pub fn step_message(lap_index: u64, id: u64) -> String {
    match lap_index % 3 {
        0 => format!(r#"{{"type":"choose","id":{id},"response":"{}"}}"#, CHOOSE),
        1 => format!(r#"{{"type":"advance","id":{id},"node":"{}"}}"#, ADVANCE),
        _ => format!(
            r#"{{"type":"action","id":{id},"action":"OpenShop","payload":"{}"}}"#,
            SHOP
        ),
    }
}

/// The echo message standing for step message `lap_index` with id `id`: a JSON object of
/// exactly the same byte length.
pub fn echo_message(lap_index: u64, id: u64) -> String {
    let len = step_message(lap_index, id).len();
    let bare = format!(r#"{{"type":"echo","id":{id},"pad":""}}"#);
    let pad = len.saturating_sub(bare.len());
    format!(r#"{{"type":"echo","id":{id},"pad":"{}"}}"#, "x".repeat(pad))
}

/// What an answer frame says, from its first bytes (the server writes `type` first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    Ack,
    Error,
    /// Not an answer: an `effect`, `jump`, ... caused by the request before its `ack`.
    Other,
}

pub fn classify(text: &str) -> Answer {
    if text.starts_with(r#"{"type":"ack""#) {
        Answer::Ack
    } else if text.starts_with(r#"{"type":"error""#) || text.starts_with(r#"{"type":"bye""#) {
        Answer::Error
    } else {
        Answer::Other
    }
}

/// Which side of the comparison a phase drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Echo,
    Step,
}

/// One connection's state across phases: its lap position and next request id.
pub(super) struct Lane {
    pub(super) lap: u64,
    pub(super) next_id: u64,
}

impl Lane {
    pub(super) fn next(&mut self, phase: Phase) -> Message {
        let (lap, id) = (self.lap, self.next_id);
        self.lap += 1;
        self.next_id += 1;
        Message::Text(
            match phase {
                Phase::Echo => echo_message(lap, id),
                Phase::Step => step_message(lap, id),
            }
            .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_messages_are_as_long_as_step_messages() {
        for lap in 0..3 {
            for id in [1, 9, 10, 999, 123_456_789] {
                let step = step_message(lap, id);
                let echo = echo_message(lap, id);
                assert_eq!(step.len(), echo.len(), "{step} / {echo}");
                let value: serde_json::Value = serde_json::from_str(&echo).expect("json");
                assert_eq!(value["id"], id);
                let message: banter_protocol::ClientMessage =
                    serde_json::from_str(&step).expect("a client message");
                assert_eq!(message.id(), Some(id));
            }
        }
    }

    #[test]
    fn answers_are_told_by_their_first_bytes() {
        let ack =
            serde_json::to_string(&banter_protocol::ServerMessage::Ack { id: 7 }).expect("json");
        assert_eq!(classify(&ack), Answer::Ack);
        let error = serde_json::to_string(&banter_protocol::ServerMessage::Error {
            id: Some(7),
            code: banter_protocol::ErrorCode::NotArmed,
            message: "x".into(),
            retryable: false,
        })
        .expect("json");
        assert_eq!(classify(&error), Answer::Error);
        let jump =
            serde_json::to_string(&banter_protocol::ServerMessage::Jump { node: "n".into() })
                .expect("json");
        assert_eq!(classify(&jump), Answer::Other);
    }
}
