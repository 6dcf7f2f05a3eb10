//! Cheats on the frames themselves: oversized (answered) and huge (dropped) frames, binary
//! frames, malformed JSON, unknown types, fields and actions, non-finite positions, and
//! flooding.
//!
//! Flooding is sent frame after frame, each answer read before the next frame goes out. A
//! client that writes hundreds of frames at once and then reads usually never sees its `bye
//! flooding`: the server closes the socket with those frames unread, the kernel answers with a
//! TCP reset, and the reset discards the `bye` still in the client's receive buffer.

use std::sync::Arc;

use banter_protocol::{ActionType, ByeReason, ErrorCode};
use tokio_tungstenite::tungstenite::Message;

use super::cheater::{Cheat, CheatFuture, action_message, answer_of_raw, as_player};
use super::{AttackOptions, Outcome, PIM, PIM_QUEST};
use crate::error::SimError;

/// Frames sent back to back at most before the flood counts as unanswered.
const FLOOD_FRAMES: usize = 300;

/// A frame-level cheat by a player standing by Pim: `frame` is sent raw.
fn frame_cheat(options: &Arc<AttackOptions>, tag: &'static str, frame: Message) -> CheatFuture {
    as_player(options, tag, PIM, PIM, |p| Box::pin(p.raw(frame)))
}

fn text(s: &str) -> Message {
    Message::Text(s.to_owned().into())
}

/// Frame after frame, each one's answer read before the next is sent: far over the rate
/// (hundreds a second), yet the server has read everything when it says `bye`, so the `bye` is
/// not lost to a reset (see the module docs).
fn flooding(options: &Arc<AttackOptions>) -> CheatFuture {
    as_player(options, "flood", PIM, PIM, |p| {
        Box::pin(async move {
            let connection = p.connection()?;
            let forged =
                serde_json::to_string(&action_message(ActionType::CompleteQuest, PIM_QUEST))
                    .map_err(|e| SimError::Other(e.to_string()))?;
            let mut got = Outcome::Accepted;
            for _ in 0..FLOOD_FRAMES {
                if connection.send_frame(text(&forged)).await.is_err() {
                    break;
                }
                match answer_of_raw(connection).await? {
                    Outcome::Code(ErrorCode::RateLimited) => {
                        got = Outcome::Code(ErrorCode::RateLimited);
                    }
                    ended @ (Outcome::Bye(_) | Outcome::Dropped) => {
                        got = ended;
                        break;
                    }
                    _ => {}
                }
            }
            Ok(got)
        })
    })
}

pub(super) fn cheats(options: &Arc<AttackOptions>) -> Vec<Cheat> {
    use ErrorCode::*;
    let padding = "x".repeat(5 * 1024);
    let oversized = format!(
        r#"{{"type":"action","id":1,"action":"CompleteQuest","payload":"{PIM_QUEST}","pad":"{padding}"}}"#
    );
    let huge = format!(
        r#"{{"type":"action","id":1,"action":"CompleteQuest","payload":"{}"}}"#,
        "x".repeat(70 * 1024)
    );
    vec![
        Cheat {
            name: "oversized frame (5 KiB)",
            expected: Outcome::Code(FrameTooLarge),
            run: frame_cheat(options, "oversized", text(&oversized)),
        },
        Cheat {
            name: "huge frame (70 KiB)",
            expected: Outcome::Dropped,
            run: frame_cheat(options, "huge", text(&huge)),
        },
        Cheat {
            name: "binary frame",
            expected: Outcome::Code(BinaryFrame),
            run: frame_cheat(
                options,
                "binary",
                Message::Binary(br#"{"type":"close","id":1}"#.to_vec().into()),
            ),
        },
        Cheat {
            name: "malformed: not JSON",
            expected: Outcome::Code(Malformed),
            run: frame_cheat(options, "not-json", text(r#"{"type":"talk","id":"#)),
        },
        Cheat {
            name: "malformed: unknown message type",
            expected: Outcome::Code(Malformed),
            run: frame_cheat(
                options,
                "unknown-type",
                text(r#"{"type":"grant_coins","id":1,"amount":1000}"#),
            ),
        },
        Cheat {
            name: "malformed: unknown field",
            expected: Outcome::Code(Malformed),
            run: frame_cheat(
                options,
                "unknown-field",
                text(r#"{"type":"close","id":1,"coins":1000}"#),
            ),
        },
        Cheat {
            name: "malformed: missing field",
            expected: Outcome::Code(Malformed),
            run: frame_cheat(
                options,
                "missing-field",
                text(r#"{"type":"advance","id":1}"#),
            ),
        },
        Cheat {
            name: "malformed: unknown action type",
            expected: Outcome::Code(Malformed),
            run: frame_cheat(
                options,
                "unknown-action",
                text(r#"{"type":"action","id":1,"action":"GrantCoins","payload":"1000"}"#),
            ),
        },
        Cheat {
            name: "malformed: non-finite position",
            expected: Outcome::Code(Malformed),
            run: frame_cheat(
                options,
                "non-finite",
                text(r#"{"type":"move","id":1,"position":[1e999,0,0]}"#),
            ),
        },
        Cheat {
            name: "flooding (frames back to back)",
            expected: Outcome::Bye(ByeReason::Flooding),
            run: flooding(options),
        },
    ]
}
