//! Never-reading sessions: authenticated sessions that send requests with answers and never
//! read a byte, with a small kernel receive buffer. The server's bounded outgoing queue must
//! fill and the server must drop them; each slot reconnects when dropped.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::SinkExt;
use serde::Serialize;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use super::AbuseOptions;
use super::dial::{Dialer, ws_label};
use super::figures::{Samples, Spread, Tally, add, get};
use super::schedule::{paced, ramped};

/// How long a write may block before the session counts as stuck (the server neither reads
/// nor closes).
pub const WRITE_PATIENCE: Duration = Duration::from_secs(10);

/// What a never-reading session asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoReadRequest {
    /// `fetch_conversation`: about 6 KiB per answer (the sample's `Bram`), so the server's
    /// socket buffer and queue fill in tens of seconds (on loopback the kernel takes about
    /// 2 MB per socket first).
    Fetch,
    /// `set_afk`: a 20-byte `ack` per request; many minutes before anything fills.
    Afk,
}

impl NoReadRequest {
    pub fn name(self) -> &'static str {
        match self {
            NoReadRequest::Fetch => "fetch_conversation",
            NoReadRequest::Afk => "set_afk",
        }
    }
}

/// The `id`-th request of a never-reading session.
pub fn noread_message(request: NoReadRequest, conversation: &str, id: u64) -> String {
    match request {
        NoReadRequest::Fetch => {
            format!(r#"{{"type":"fetch_conversation","id":{id},"conversation":"{conversation}"}}"#)
        }
        NoReadRequest::Afk => {
            let afk = id.is_multiple_of(2);
            format!(r#"{{"type":"set_afk","id":{id},"afk":{afk}}}"#)
        }
    }
}

/// What the never-reading sessions did and what the server did to them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NoReadReport {
    pub slots: usize,
    pub request: Option<NoReadRequest>,
    pub rate_per_session: f64,
    pub rcvbuf_bytes: u32,
    pub sessions_opened: u64,
    pub upgrade_failures: BTreeMap<String, u64>,
    pub requests_sent: u64,
    /// Sessions the server dropped (seen as a failed write: nothing is ever read).
    pub closed_by_server: u64,
    pub close_errors: BTreeMap<String, u64>,
    /// Seconds from the upgrade to the failed write.
    pub closed_after_s: Spread,
    /// Requests a session had sent when its write failed.
    pub requests_before_close: Spread,
    pub open_at_end: u64,
}

/// The never-reading sessions' counters while they run.
#[derive(Default)]
pub(super) struct Live {
    opened: AtomicU64,
    pub(super) open: AtomicU64,
    /// Sessions still writing fine when the run ended.
    survived: AtomicU64,
    sent: AtomicU64,
    pub(super) closed: AtomicU64,
    upgrade_failures: Tally,
    close_errors: Tally,
    closed_after: Samples,
    requests_before_close: Samples,
}

/// One slot: a session that writes and never reads until the server drops it, then another,
/// until the deadline.
async fn slot(
    dialer: Arc<Dialer>,
    i: usize,
    start_at: Instant,
    options: Arc<AbuseOptions>,
    live: Arc<Live>,
) {
    tokio::time::sleep_until(start_at).await;
    let player = format!("abuse-noread-{i}");
    let period = Duration::from_secs_f64(1.0 / options.noread_rate);
    let rcvbuf = Some(options.noread_rcvbuf);
    while let Some(mut ws) = dialer
        .session(i, &player, rcvbuf, &live.upgrade_failures)
        .await
    {
        add(&live.opened);
        add(&live.open);
        let opened_at = Instant::now();
        let mut tick = paced(period);
        let mut id = 0u64;
        // Never `ws.next()`: the welcome, the answers and the pings stay unread.
        let failure = loop {
            tokio::select! {
                _ = tick.tick() => {
                    id += 1;
                    let text = noread_message(options.noread_request, &options.noread_conversation, id);
                    match tokio::time::timeout(WRITE_PATIENCE, ws.send(Message::Text(text.into()))).await {
                        Ok(Ok(())) => add(&live.sent),
                        Ok(Err(e)) => break Some(ws_label(&e)),
                        Err(_) => break Some("write stalled".to_owned()),
                    }
                }
                () = tokio::time::sleep_until(dialer.deadline) => break None,
            }
        };
        live.open.fetch_sub(1, Ordering::Relaxed);
        match failure {
            Some(why) => {
                add(&live.closed);
                live.close_errors.add(why);
                live.closed_after.push(opened_at.elapsed().as_secs_f64());
                live.requests_before_close.push(id as f64);
                // A pause before the next session, as a reconnecting client would.
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            // At the deadline the socket is dropped unread, as such a client would.
            None => {
                add(&live.survived);
                break;
            }
        }
    }
}

/// Runs `options.noread` slots until the deadline.
pub(super) async fn run(
    dialer: Arc<Dialer>,
    options: Arc<AbuseOptions>,
    live: Arc<Live>,
) -> NoReadReport {
    let n = options.noread;
    ramped(n, options.duration, |i, at| {
        slot(dialer.clone(), i, at, options.clone(), live.clone())
    })
    .await;
    NoReadReport {
        slots: n,
        request: (n > 0).then_some(options.noread_request),
        rate_per_session: options.noread_rate,
        rcvbuf_bytes: options.noread_rcvbuf,
        sessions_opened: get(&live.opened),
        upgrade_failures: live.upgrade_failures.take(),
        requests_sent: get(&live.sent),
        closed_by_server: get(&live.closed),
        close_errors: live.close_errors.take(),
        closed_after_s: live.closed_after.spread(),
        requests_before_close: live.requests_before_close.spread(),
        open_at_end: get(&live.survived),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_reading_requests_are_client_messages_with_ids() {
        for request in [NoReadRequest::Fetch, NoReadRequest::Afk] {
            for id in [1, 2, 77] {
                let text = noread_message(request, "Bram", id);
                let message: banter_protocol::ClientMessage =
                    serde_json::from_str(&text).expect("a client message");
                assert_eq!(message.id(), Some(id), "{text}");
            }
        }
    }
}
