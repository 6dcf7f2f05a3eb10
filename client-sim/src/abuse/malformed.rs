//! Malformed frames: sessions sending invalid JSON, unknown types, missing fields, frames over
//! the 4 KiB limit and far over it (1 MiB), binary frames and invalid UTF-8, reconnecting when
//! the server closes them. Every answerable frame must get one typed `error`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde::Serialize;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};

use super::AbuseOptions;
use super::dial::{Dialer, Ws};
use super::figures::{Tally, add, get};
use super::noread::WRITE_PATIENCE;
use super::schedule::{paced, ramped};

/// The protocol's client frame limit (docs/PROTOCOL.md section 1).
pub const FRAME_LIMIT: usize = 4096;
/// "Far over the limit": over the WebSocket layer's own 64 KiB cap, so the server must drop the
/// connection without buffering it all.
pub const HUGE_FRAME: usize = 1024 * 1024;

/// What a malformed session sends as its `k`-th frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MalformedKind {
    /// Not JSON: `malformed` without an id.
    InvalidJson,
    /// A JSON object with an unknown `type`: `malformed` under its id.
    UnknownType,
    /// A known type without its field: `malformed` under its id.
    MissingField,
    /// Valid JSON over the 4 KiB limit: `frame_too_large`, the connection stays.
    Oversized,
    /// A binary frame: `binary_frame`, the connection stays.
    Binary,
    /// 1 MiB: over the WebSocket layer's 64 KiB cap, the connection is dropped.
    Huge,
    /// A text frame that is not UTF-8: a WebSocket protocol error, the connection is dropped.
    InvalidUtf8,
}

impl MalformedKind {
    pub fn name(self) -> &'static str {
        match self {
            MalformedKind::InvalidJson => "invalid_json",
            MalformedKind::UnknownType => "unknown_type",
            MalformedKind::MissingField => "missing_field",
            MalformedKind::Oversized => "over_4kib",
            MalformedKind::Binary => "binary",
            MalformedKind::Huge => "1mib",
            MalformedKind::InvalidUtf8 => "invalid_utf8",
        }
    }

    /// True when the server answers the frame with one typed `error` and keeps the connection.
    pub fn answered(self) -> bool {
        !matches!(self, MalformedKind::Huge | MalformedKind::InvalidUtf8)
    }

    /// The kind of frame `k`: the five answerable kinds in turn, and every `rare_every`-th frame
    /// one that kills the connection (1 MiB and invalid UTF-8 alternately).
    pub fn at(k: u64, rare_every: u64) -> MalformedKind {
        if rare_every > 0 && k % rare_every == rare_every - 1 {
            return if (k / rare_every).is_multiple_of(2) {
                MalformedKind::Huge
            } else {
                MalformedKind::InvalidUtf8
            };
        }
        match k % 5 {
            0 => MalformedKind::InvalidJson,
            1 => MalformedKind::UnknownType,
            2 => MalformedKind::MissingField,
            3 => MalformedKind::Oversized,
            _ => MalformedKind::Binary,
        }
    }

    /// The frame itself, with request id `k` where the kind has one.
    pub fn frame(self, k: u64) -> Message {
        let padded = |len: usize| {
            let bare = format!(r#"{{"type":"set_afk","id":{k},"afk":true,"pad":""}}"#);
            let pad = "x".repeat(len.saturating_sub(bare.len()));
            format!(r#"{{"type":"set_afk","id":{k},"afk":true,"pad":"{pad}"}}"#)
        };
        match self {
            MalformedKind::InvalidJson => {
                Message::Text(format!(r#"{{"type":"move","id":{k},"#).into())
            }
            MalformedKind::UnknownType => {
                Message::Text(format!(r#"{{"type":"teleport_me","id":{k}}}"#).into())
            }
            MalformedKind::MissingField => {
                Message::Text(format!(r#"{{"type":"talk","id":{k}}}"#).into())
            }
            MalformedKind::Oversized => Message::Text(padded(FRAME_LIMIT + 904).into()),
            MalformedKind::Binary => {
                Message::Binary(vec![0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3].into())
            }
            MalformedKind::Huge => Message::Text(padded(HUGE_FRAME).into()),
            // `Message::Text` only holds valid UTF-8; a raw frame does not care.
            MalformedKind::InvalidUtf8 => Message::Frame(Frame::message(
                vec![b'{', b'"', 0xff, 0xfe, 0xc3, b'"', b'}'],
                OpCode::Data(Data::Text),
                true,
            )),
        }
    }
}

/// What the malformed sessions sent and got.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MalformedReport {
    pub sessions: usize,
    pub rate_per_session: f64,
    pub connects: u64,
    pub connect_failures: BTreeMap<String, u64>,
    pub frames_sent: BTreeMap<String, u64>,
    pub frames_total: u64,
    /// Frames of the kinds the server answers with a typed error.
    pub frames_answerable: u64,
    /// Typed `error`s received, by code.
    pub errors_received: BTreeMap<String, u64>,
    pub byes: BTreeMap<String, u64>,
    /// Connections the server ended (after a 1 MiB or invalid UTF-8 frame, a `bye`, ...).
    pub closed_by_server: u64,
    pub other_messages: u64,
}

/// The malformed sessions' counters while they run.
#[derive(Default)]
pub(super) struct Live {
    connects: AtomicU64,
    pub(super) frames: AtomicU64,
    answerable: AtomicU64,
    pub(super) closed: AtomicU64,
    other: AtomicU64,
    connect_failures: Tally,
    sent: Tally,
    errors: Tally,
    byes: Tally,
}

/// Reads a malformed session's answers until the stream ends, counting them.
async fn reader(mut stream: futures_util::stream::SplitStream<Ws>, live: Arc<Live>) {
    #[derive(serde::Deserialize)]
    struct Peek {
        #[serde(rename = "type")]
        kind: String,
        code: Option<String>,
        reason: Option<String>,
    }
    while let Some(Ok(frame)) = stream.next().await {
        let Message::Text(text) = frame else { continue };
        match serde_json::from_str::<Peek>(text.as_str()) {
            Ok(p) if p.kind == "error" => live.errors.add(p.code.unwrap_or_default()),
            Ok(p) if p.kind == "bye" => live.byes.add(p.reason.unwrap_or_default()),
            Ok(p) if p.kind == "welcome" => {}
            _ => add(&live.other),
        }
    }
}

/// One session slot: bad frames at the session's rate, a new session whenever the server ends
/// one, until the deadline.
async fn session(
    dialer: Arc<Dialer>,
    i: usize,
    start_at: Instant,
    options: Arc<AbuseOptions>,
    live: Arc<Live>,
) {
    tokio::time::sleep_until(start_at).await;
    let player = format!("abuse-malformed-{i}");
    let period = Duration::from_secs_f64(1.0 / options.malformed_rate);
    let mut k = 0u64;
    while let Some(ws) = dialer
        .session(i, &player, None, &live.connect_failures)
        .await
    {
        add(&live.connects);
        let (mut sink, stream) = ws.split();
        let mut reading = tokio::spawn(reader(stream, live.clone()));
        let mut tick = paced(period);
        let by_server = loop {
            tokio::select! {
                _ = tick.tick() => {
                    let kind = MalformedKind::at(k, options.malformed_rare_every);
                    k += 1;
                    let sent = tokio::time::timeout(WRITE_PATIENCE, sink.send(kind.frame(k))).await;
                    if !matches!(sent, Ok(Ok(()))) {
                        break true;
                    }
                    add(&live.frames);
                    live.sent.add(kind.name());
                    if kind.answered() {
                        add(&live.answerable);
                    } else {
                        // The server drops the connection: wait for the reader to see it
                        // rather than write into a dying socket.
                        let _ = tokio::time::timeout(Duration::from_secs(5), &mut reading).await;
                        break true;
                    }
                }
                _ = &mut reading => break true,
                () = tokio::time::sleep_until(dialer.deadline) => break false,
            }
        };
        if by_server {
            add(&live.closed);
        } else {
            let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
        }
        reading.abort();
    }
}

/// Runs `options.malformed` session slots until the deadline.
pub(super) async fn run(
    dialer: Arc<Dialer>,
    options: Arc<AbuseOptions>,
    live: Arc<Live>,
) -> MalformedReport {
    let n = options.malformed;
    ramped(n, options.duration, |i, at| {
        session(dialer.clone(), i, at, options.clone(), live.clone())
    })
    .await;
    MalformedReport {
        sessions: n,
        rate_per_session: options.malformed_rate,
        connects: get(&live.connects),
        connect_failures: live.connect_failures.take(),
        frames_sent: live.sent.take(),
        frames_total: get(&live.frames),
        frames_answerable: get(&live.answerable),
        errors_received: live.errors.take(),
        byes: live.byes.take(),
        closed_by_server: get(&live.closed),
        other_messages: get(&live.other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_frames_cycle_and_break_where_expected() {
        let kinds: Vec<MalformedKind> = (0..100).map(|k| MalformedKind::at(k, 50)).collect();
        assert_eq!(kinds[49], MalformedKind::Huge);
        assert_eq!(kinds[99], MalformedKind::InvalidUtf8);
        assert_eq!(kinds.iter().filter(|k| !k.answered()).count(), 2);
        for kind in [
            MalformedKind::InvalidJson,
            MalformedKind::UnknownType,
            MalformedKind::MissingField,
            MalformedKind::Oversized,
            MalformedKind::Binary,
        ] {
            assert!(kinds.contains(&kind), "{kind:?}");
            assert!(kind.answered());
        }
        assert!((0..1000).all(|k| MalformedKind::at(k, 0).answered()));
        let len = |m: Message| m.len();
        assert!(len(MalformedKind::Oversized.frame(7)) > FRAME_LIMIT);
        assert!(len(MalformedKind::Oversized.frame(7)) < 64 * 1024);
        assert!(len(MalformedKind::Huge.frame(7)) >= HUGE_FRAME);
        // Over the limit but valid JSON: the size is what gets refused, not the syntax.
        let Message::Text(text) = MalformedKind::Oversized.frame(7) else {
            panic!("a text frame")
        };
        assert!(serde_json::from_str::<serde_json::Value>(text.as_str()).is_ok());
        let Message::Frame(frame) = MalformedKind::InvalidUtf8.frame(1) else {
            panic!("a raw frame")
        };
        assert!(std::str::from_utf8(frame.payload()).is_err());
        // The unknown type and the missing field keep their id, so the error carries it.
        for kind in [MalformedKind::UnknownType, MalformedKind::MissingField] {
            let Message::Text(text) = kind.frame(42) else {
                panic!("text")
            };
            let value: serde_json::Value = serde_json::from_str(text.as_str()).expect("json");
            assert_eq!(value["id"], 42);
            assert!(banter_protocol::ClientMessage::decode(text.as_str()).is_err());
        }
    }
}
