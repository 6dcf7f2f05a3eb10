//! A simulated game server carrying its players over one channel (docs/PROTOCOL.md section 16).
//!
//! The bots decide what to send exactly as they do over their own WebSockets
//! ([`crate::session::Session`]); a channel only delivers it. Each game server is one task, the
//! **multiplexer** ([`mux`]), owning the channel: players hand it their messages and their
//! positions (the simulated world's, never a `move`), it batches them, and routes each event
//! back to its player's [`ChannelLink`] ([`link`]).
//!
//! - HTTP ([`Transport::Http`]): at most one request in flight; the next goes no sooner than
//!   `60 s / requests_per_minute` after the last one started, carrying whatever was queued
//!   meanwhile; with nothing queued it is a long-poll. Each batch is numbered (`seq`) and
//!   acknowledges the events seen (`ack`); a request that got no answer is sent again with the
//!   same `seq`, which the server answers without applying anything twice.
//! - WebSocket ([`Transport::Ws`]): one socket; whatever is queued goes out as one frame as soon
//!   as it is queued.
//!
//! What it measures ([`ChannelStats`]): requests (and their spacing), each message's latency
//! from being queued to its answer event, every `error` event by code, quests paid.

pub mod link;
pub mod mux;

use std::collections::BTreeMap;
use std::time::Duration;

use banter_client::channel::Issued;
use hdrhistogram::Histogram;

use crate::error::Result;
use crate::http::{Endpoint, Http};

pub use link::{ChannelLink, ChannelSeat};
pub use mux::{ChannelClient, open};

/// How a game server reaches Banter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// HTTP batches with long-poll (what Roblox's `HttpService` can do).
    Http,
    /// One WebSocket.
    Ws,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Http => "http",
            Transport::Ws => "ws",
        }
    }
}

impl std::str::FromStr for Transport {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Transport, String> {
        match s {
            "http" => Ok(Transport::Http),
            "ws" | "websocket" => Ok(Transport::Ws),
            other => Err(format!("a transport is `http` or `ws`, not `{other}`")),
        }
    }
}

/// How one game server's channel runs.
#[derive(Clone, Debug)]
pub struct ChannelConfig {
    pub endpoint: Endpoint,
    pub credential: String,
    pub transport: Transport,
    /// HTTP: the most requests a minute (the batching cadence is one per `60 s / this`).
    pub requests_per_minute: f64,
    /// HTTP: how long an answer may wait for an event (`wait_ms`) when nothing is queued.
    pub long_poll: Duration,
}

impl ChannelConfig {
    /// The time between two requests' starts under the budget.
    pub fn interval(&self) -> Duration {
        Duration::from_secs_f64(60.0 / self.requests_per_minute.max(0.001))
    }
}

/// What one channel measured, over its whole life.
#[derive(Debug)]
pub struct ChannelStats {
    /// The channel's id (empty if it never opened).
    pub channel: String,
    /// HTTP requests (batches, retries included) or WebSocket frames sent.
    pub requests: u64,
    /// HTTP batches sent again after getting no answer.
    pub retries: u64,
    /// The most requests started within any 60 s.
    pub peak_requests_per_minute: u64,
    /// From the channel's opening to its close.
    pub duration: Duration,
    pub items: u64,
    pub positions: u64,
    pub events: u64,
    /// Each item's latency, from being queued to its answer event (`ack`, `error`, or a join's
    /// `welcome`), in microseconds.
    pub latency: Histogram<u64>,
    /// `error` events by code.
    pub rejections: BTreeMap<String, u64>,
    /// Requests refused or unanswered, a channel that ended under its players.
    pub errors: u64,
    pub error_samples: Vec<String>,
    /// `quest_completed` effects.
    pub quests_paid: u64,
}

impl ChannelStats {
    pub fn new() -> Result<ChannelStats> {
        Ok(ChannelStats {
            channel: String::new(),
            requests: 0,
            retries: 0,
            peak_requests_per_minute: 0,
            duration: Duration::ZERO,
            items: 0,
            positions: 0,
            events: 0,
            latency: crate::session::new_histogram()?,
            rejections: BTreeMap::new(),
            errors: 0,
            error_samples: Vec::new(),
            quests_paid: 0,
        })
    }

    /// Counts an error and keeps a sample of it.
    pub fn error(&mut self, what: String) {
        self.errors += 1;
        if self.error_samples.len() < 5 {
            self.error_samples.push(what);
        }
    }

    /// Requests a minute over the channel's life.
    pub fn requests_per_minute(&self) -> f64 {
        if self.duration.is_zero() {
            return 0.0;
        }
        self.requests as f64 * 60.0 / self.duration.as_secs_f64()
    }
}

/// The most of `starts` (sorted) within any window of `window`.
pub fn peak_within(starts: &[tokio::time::Instant], window: Duration) -> u64 {
    let mut peak = 0;
    let mut first = 0;
    for (last, &t) in starts.iter().enumerate() {
        while first < last && t.duration_since(starts[first]) >= window {
            first += 1;
        }
        peak = peak.max(last - first + 1);
    }
    peak as u64
}

/// Issues a credential speaking for `prefixes`, with the service key.
pub async fn issue(
    endpoint: &Endpoint,
    service_key: &str,
    name: &str,
    prefixes: &[String],
) -> Result<Issued> {
    Http::unpooled(endpoint.clone())?
        .issue_game_server(service_key, name, prefixes)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    #[test]
    fn the_peak_counts_the_busiest_window() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let starts = [
            at(0),
            at(100),
            at(59_999),
            at(60_000),
            at(60_050),
            at(200_000),
        ];
        assert_eq!(peak_within(&starts, Duration::from_secs(60)), 4);
        assert_eq!(peak_within(&[], Duration::from_secs(60)), 0);
        assert_eq!(peak_within(&starts[..1], Duration::from_secs(60)), 1);
    }

    #[test]
    fn transports_parse_by_name() {
        assert_eq!("http".parse::<Transport>(), Ok(Transport::Http));
        assert_eq!("ws".parse::<Transport>(), Ok(Transport::Ws));
        assert!("udp".parse::<Transport>().is_err());
        let config = ChannelConfig {
            endpoint: Endpoint::parse("127.0.0.1:1").expect("an endpoint"),
            credential: String::new(),
            transport: Transport::Http,
            requests_per_minute: 100.0,
            long_poll: Duration::ZERO,
        };
        assert_eq!(config.interval(), Duration::from_millis(600));
    }
}
