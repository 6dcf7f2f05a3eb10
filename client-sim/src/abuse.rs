//! `banter-sim abuse`: the server under abuse, every kind at once, for a while.
//!
//! RELIABILITY.md scenario 6 runs this beside an honest `banter-sim load` and compares the honest
//! latency with a calm run. Each abuser reports what it did and what the server answered:
//!
//! - **slowloris**: TCP connections that send a `GET /v1/ws` upgrade one header line at a time,
//!   a line every few seconds, never finishing. A server must close them (a header-read
//!   deadline); one that never does lets a few hundred sockets hold its accept path.
//! - **never-reading**: authenticated sessions that send requests with answers and never read a
//!   byte, with a small kernel receive buffer. The server's bounded outgoing queue must fill and
//!   the server must drop them.
//! - **churn**: upgrades at a fixed rate (1,000/s by default) from a pool of players, each closed
//!   at once; a fraction with garbage tokens, which must all be refused.
//! - **malformed**: sessions sending invalid JSON, unknown types, frames over the 4 KiB limit and
//!   far over it (1 MiB), binary frames and invalid UTF-8, reconnecting when closed.
//! - **replay**: tokens that expired (one of them after being used once) and tokens signed with
//!   another secret, at volume; every one must be refused with 401.
//!
//! A prober asks `/healthz` every second throughout, and once more at the end. The command
//! fails when the server stopped answering it, or when an expired, foreign or garbage token got a
//! session; everything else is a figure (and a note when it looks wrong).
//!
//! Abusers use raw sockets and `tungstenite` directly, never [`crate::connection`]: they must be
//! able to not read, to send what a client must not, and to cost the machine as little as
//! possible, since the honest client shares it.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::client::Request;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::http::header::AUTHORIZATION;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::{self, Message};

use crate::auth::{DEV_SECRET, mint, tampered, unix_now, unsigned};
use crate::bench::Machine;
use crate::error::{Result, SimError};
use crate::http::Endpoint;
use crate::report::table;

/// A WebSocket over plain TCP.
type Ws = WebSocketStream<TcpStream>;

/// How long a TCP connect or a WebSocket upgrade may take before it counts as a failure.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one `/healthz` probe may take before the server counts as not answering.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(5);
/// How often `/healthz` is asked during the run.
const HEALTH_EVERY: Duration = Duration::from_secs(1);
/// Attempts, a second apart, for the server to answer `/healthz` once the abusers stopped.
const HEALTH_AFTER_ATTEMPTS: u32 = 10;
/// A secret that is not the server's, for tokens that must be refused.
const FOREIGN_SECRET: &str = "abuse-foreign-secret-not-the-servers-0123456789";
/// The protocol's client frame limit (docs/PROTOCOL.md section 1).
pub const FRAME_LIMIT: usize = 4096;
/// "Far over the limit": over the WebSocket layer's own 64 KiB cap, so the server must drop the
/// connection without buffering it all.
pub const HUGE_FRAME: usize = 1024 * 1024;
/// Figures kept per distribution; beyond it new samples are dropped (the counts stay exact).
const MAX_SAMPLES: usize = 200_000;

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

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

/// How the run goes; every count or rate at 0 switches that abuser off.
#[derive(Clone, Debug)]
pub struct AbuseOptions {
    pub endpoint: Endpoint,
    pub duration: Duration,
    /// Signs the tokens of the abusers that need a session (the server's `--auth-secret`).
    pub auth_secret: String,
    /// Loopback source addresses (127.0.0.1 ..= 127.0.0.k) the connections are spread over, so
    /// churn does not run out of ephemeral ports.
    pub source_ips: usize,
    pub slowloris: usize,
    pub slowloris_interval: Duration,
    pub noread: usize,
    pub noread_rate: f64,
    pub noread_request: NoReadRequest,
    pub noread_conversation: String,
    pub noread_rcvbuf: u32,
    pub churn_rate: f64,
    pub churn_pool: usize,
    pub churn_garbage: f64,
    pub churn_in_flight: usize,
    pub malformed: usize,
    pub malformed_rate: f64,
    pub malformed_rare_every: u64,
    pub replay_rate: f64,
    /// Progress lines on stderr every few seconds.
    pub progress: bool,
}

/// Arguments of `banter-sim abuse` (the CLI's thin layer; the run is [`run`]).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The server: http://HOST:PORT (or ws://HOST:PORT, or HOST:PORT).
    #[arg(long, env = "BANTER_URL", default_value = "http://127.0.0.1:7350")]
    pub url: String,
    /// How long every abuser runs, in seconds.
    #[arg(long, default_value_t = 30.0)]
    pub seconds: f64,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// The server's token secret (`--auth-secret`) [default: the development secret].
    #[arg(long, env = "BANTER_AUTH_SECRET", hide_env_values = true)]
    pub auth_secret: Option<String>,
    /// Spread connections over this many loopback source addresses (127.0.0.1 ...).
    #[arg(long, default_value_t = 8)]
    pub source_ips: usize,
    /// Slowloris: connections that never finish their upgrade request.
    #[arg(long, default_value_t = 500)]
    pub slowloris: usize,
    /// Slowloris: seconds between two header lines.
    #[arg(long, default_value_t = 3.0)]
    pub slowloris_interval: f64,
    /// Never-reading sessions (players `abuse-noread-<i>`), each reconnecting when dropped.
    #[arg(long, default_value_t = 200)]
    pub noread: usize,
    /// Never-reading: requests per second per session (the server allows 20). Just under the
    /// limit, so the server's buffers fill as fast as a client may make them.
    #[arg(long, default_value_t = 18.0)]
    pub noread_rate: f64,
    /// Never-reading: what they ask for.
    #[arg(long, value_enum, default_value_t = NoReadRequest::Fetch)]
    pub noread_request: NoReadRequest,
    /// Never-reading: the conversation `fetch` asks for.
    #[arg(long, default_value = "Bram")]
    pub noread_conversation: String,
    /// Never-reading: the socket's SO_RCVBUF, in bytes (the kernel doubles it and has a floor).
    #[arg(long, default_value_t = 2048)]
    pub noread_rcvbuf: u32,
    /// Churn: upgrades per second, each closed at once.
    #[arg(long, default_value_t = 1000.0)]
    pub churn_rate: f64,
    /// Churn: players the valid tokens are for (`abuse-churn-<i>`).
    #[arg(long, default_value_t = 5000)]
    pub churn_pool: usize,
    /// Churn: the fraction of upgrades with a garbage token.
    #[arg(long, default_value_t = 0.1)]
    pub churn_garbage: f64,
    /// Churn: upgrades in flight at most; a due upgrade beyond it is skipped and counted.
    #[arg(long, default_value_t = 256)]
    pub churn_in_flight: usize,
    /// Malformed: sessions sending bad frames (players `abuse-malformed-<i>`).
    #[arg(long, default_value_t = 50)]
    pub malformed: usize,
    /// Malformed: frames per second per session (the server allows 20).
    #[arg(long, default_value_t = 15.0)]
    pub malformed_rate: f64,
    /// Malformed: every this many frames, one that kills the connection (1 MiB or invalid
    /// UTF-8, alternately); 0 for never.
    #[arg(long, default_value_t = 50)]
    pub malformed_rare_every: u64,
    /// Replay: expired and foreign-secret upgrades per second.
    #[arg(long, default_value_t = 200.0)]
    pub replay_rate: f64,
}

fn check_rate(name: &str, rate: f64) -> std::result::Result<(), String> {
    if rate.is_finite() && (0.0..=1_000_000.0).contains(&rate) {
        Ok(())
    } else {
        Err(format!("--{name} must be in [0, 1000000], got {rate}"))
    }
}

impl Args {
    /// The options, checked.
    pub fn options(&self) -> std::result::Result<AbuseOptions, String> {
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 86_400.0) {
            return Err(format!(
                "--seconds must be in (0, 86400], got {}",
                self.seconds
            ));
        }
        if !(self.slowloris_interval.is_finite() && self.slowloris_interval > 0.0) {
            return Err("--slowloris-interval must be positive".to_owned());
        }
        check_rate("noread-rate", self.noread_rate)?;
        check_rate("churn-rate", self.churn_rate)?;
        check_rate("malformed-rate", self.malformed_rate)?;
        check_rate("replay-rate", self.replay_rate)?;
        if !(0.0..=1.0).contains(&self.churn_garbage) {
            return Err(format!(
                "--churn-garbage must be in [0, 1], got {}",
                self.churn_garbage
            ));
        }
        if self.churn_pool == 0 || self.churn_in_flight == 0 {
            return Err("--churn-pool and --churn-in-flight must be positive".to_owned());
        }
        Ok(AbuseOptions {
            endpoint: Endpoint::parse(&self.url).map_err(|e| e.to_string())?,
            duration: Duration::from_secs_f64(self.seconds),
            auth_secret: self
                .auth_secret
                .clone()
                .unwrap_or_else(|| DEV_SECRET.to_owned()),
            source_ips: self.source_ips.clamp(1, 250),
            slowloris: self.slowloris,
            slowloris_interval: Duration::from_secs_f64(self.slowloris_interval),
            noread: if self.noread_rate > 0.0 {
                self.noread
            } else {
                0
            },
            noread_rate: self.noread_rate,
            noread_request: self.noread_request,
            noread_conversation: self.noread_conversation.clone(),
            noread_rcvbuf: self.noread_rcvbuf,
            churn_rate: self.churn_rate,
            churn_pool: self.churn_pool,
            churn_garbage: self.churn_garbage,
            churn_in_flight: self.churn_in_flight,
            malformed: if self.malformed_rate > 0.0 {
                self.malformed
            } else {
                0
            },
            malformed_rate: self.malformed_rate,
            malformed_rare_every: self.malformed_rare_every,
            replay_rate: self.replay_rate,
            progress: !self.quiet,
        })
    }
}

/// `banter-sim abuse`: runs, prints, and says whether the server held (`Ok(false)`: it did not).
pub async fn run_cli(args: &Args) -> std::result::Result<bool, String> {
    let options = args.options()?;
    let report = run(options).await.map_err(|e| e.to_string())?;
    crate::report::print(args.json, &report, || report.table())?;
    Ok(report.ok)
}

// ---------------------------------------------------------------------------------------------
// Pure pieces: pacing, requests, frames, tokens, figures
// ---------------------------------------------------------------------------------------------

/// When event `k` of an open-loop schedule at `rate` per second is due, counted from its start.
/// Open loop: the schedule never waits for the server, so a slow server sees the same offered
/// rate (and the report shows what was achieved).
pub fn due(k: u64, rate: f64) -> Duration {
    if rate > 0.0 {
        Duration::from_secs_f64(k as f64 / rate)
    } else {
        Duration::MAX
    }
}

/// How many events of a schedule at `rate` per second fall in the first `span`.
pub fn events_in(span: Duration, rate: f64) -> u64 {
    if rate > 0.0 {
        (span.as_secs_f64() * rate).ceil() as u64
    } else {
        0
    }
}

/// Whether event `k` is one of the `fraction` that carry garbage: exactly `floor(n × fraction)`
/// of the first `n` events, evenly spread, no random source needed.
pub fn is_garbage(k: u64, fraction: f64) -> bool {
    ((k + 1) as f64 * fraction).floor() > (k as f64 * fraction).floor()
}

/// The `i`-th connection's loopback source address, 127.0.0.1 ..= 127.0.0.`n`.
pub fn source_ip(i: usize, n: usize) -> Ipv4Addr {
    let n = n.clamp(1, 250);
    Ipv4Addr::new(127, 0, 0, 1 + (i % n) as u8)
}

/// Line `n` (from 0) of a slowloris upgrade request: the request line, the upgrade's real
/// headers, then made-up headers forever. Never the empty line that would end the request.
pub fn slowloris_line(authority: &str, n: u64) -> String {
    match n {
        0 => "GET /v1/ws HTTP/1.1\r\n".to_owned(),
        1 => format!("Host: {authority}\r\n"),
        2 => "Upgrade: websocket\r\n".to_owned(),
        3 => "Connection: Upgrade\r\n".to_owned(),
        4 => "Sec-WebSocket-Version: 13\r\n".to_owned(),
        5 => "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n".to_owned(),
        n => format!("X-Slowloris-{n}: {n}\r\n"),
    }
}

/// The status code of an HTTP response's first bytes (`HTTP/1.1 408 Request Timeout`).
pub fn status_of(head: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(head.get(..head.len().min(64))?).ok()?;
    let mut words = text.strip_prefix("HTTP/")?.split_whitespace();
    words.next()?;
    let code = words.next()?;
    (code.len() == 3).then(|| code.parse().ok()).flatten()
}

/// Where an upgrade carries its token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenVia {
    Query,
    Header,
}

/// The upgrade request for `/v1/ws` with `token` in the query string or an `Authorization`
/// header (docs/PROTOCOL.md section 1 allows both; replays go both ways).
pub fn upgrade_request(authority: &str, token: &str, via: TokenVia) -> Result<Request> {
    let url = match via {
        TokenVia::Query => format!("ws://{authority}/v1/ws?token={token}"),
        TokenVia::Header => format!("ws://{authority}/v1/ws"),
    };
    let mut request = url.into_client_request()?;
    if via == TokenVia::Header {
        let value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|e| SimError::Other(format!("token not fit for a header: {e}")))?;
        request.headers_mut().insert(AUTHORIZATION, value);
    }
    Ok(request)
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

/// A garbage token for churn upgrade `k`: never signed with the server's secret, always safe
/// in a query string. Several shapes, so the server's parser sees more than one kind of junk.
pub fn garbage_token(k: u64, secret: &str) -> String {
    let now = unix_now();
    match k % 4 {
        0 => format!("garbage-{k}"),
        1 => unsigned(&format!("abuse-churn-{k}"), now),
        2 => tampered(&mint(secret, &format!("abuse-churn-{k}"), now, now + 3600)),
        _ => "eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.AAAA".to_owned(),
    }
}

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

/// What a replayed token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayKind {
    /// Signed by the server's secret, expired long ago.
    LongExpired,
    /// One of the short-lived tokens that got a session at the start, replayed after `exp`.
    JustExpired,
    /// Signed with another secret, not expired.
    ForeignSecret,
}

impl ReplayKind {
    pub fn name(self) -> &'static str {
        match self {
            ReplayKind::LongExpired => "expired_long_ago",
            ReplayKind::JustExpired => "used_then_expired",
            ReplayKind::ForeignSecret => "foreign_secret",
        }
    }

    /// The kind of replay `k`, and whether it goes in the header (otherwise the query): every
    /// kind both ways.
    pub fn at(k: u64) -> (ReplayKind, TokenVia) {
        let kind = match k % 3 {
            0 => ReplayKind::LongExpired,
            1 => ReplayKind::JustExpired,
            _ => ReplayKind::ForeignSecret,
        };
        let via = if (k / 3).is_multiple_of(2) {
            TokenVia::Query
        } else {
            TokenVia::Header
        };
        (kind, via)
    }
}

/// A token signed with the server's secret that expired between 1 s and an hour before `now`.
pub fn expired_token(secret: &str, player: &str, k: u64, now: u64) -> String {
    let exp = now.saturating_sub(1 + k % 3600);
    mint(secret, player, exp.saturating_sub(3600), exp)
}

/// A token for the next hour signed with a secret the server does not have.
pub fn foreign_token(player: &str, now: u64) -> String {
    mint(FOREIGN_SECRET, player, now, now + 3600)
}

/// A distribution's summary (seconds or milliseconds, as the field says).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    pub count: usize,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub max: f64,
}

/// The nearest-rank summary of `values` (sorted in place).
pub fn spread(values: &mut [f64]) -> Spread {
    if values.is_empty() {
        return Spread::default();
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let at = |q: f64| values[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    Spread {
        count: n,
        min: round(values[0]),
        p50: round(at(0.5)),
        p90: round(at(0.9)),
        max: round(values[n - 1]),
    }
}

impl Spread {
    fn text(&self, unit: &str) -> String {
        if self.count == 0 {
            "-".to_owned()
        } else {
            format!(
                "min {} / p50 {} / p90 {} / max {} {unit}",
                self.min, self.p50, self.p90, self.max
            )
        }
    }
}

/// A short label for an I/O failure, fit for a tally.
fn io_label(e: &std::io::Error) -> String {
    format!("{:?}", e.kind())
}

/// A short label for a WebSocket failure, fit for a tally.
fn ws_label(e: &tungstenite::Error) -> String {
    match e {
        tungstenite::Error::Io(e) => io_label(e),
        tungstenite::Error::Http(response) => response.status().as_u16().to_string(),
        tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed => {
            "closed".to_owned()
        }
        tungstenite::Error::Protocol(p) => format!("protocol: {p}"),
        other => format!("websocket: {other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Shared counters
// ---------------------------------------------------------------------------------------------

/// Counts by label.
#[derive(Default)]
struct Tally(Mutex<BTreeMap<String, u64>>);

impl Tally {
    fn add(&self, label: impl Into<String>) {
        if let Ok(mut map) = self.0.lock() {
            *map.entry(label.into()).or_insert(0) += 1;
        }
    }

    fn take(&self) -> BTreeMap<String, u64> {
        self.0.lock().map(|m| m.clone()).unwrap_or_default()
    }
}

/// Samples of a distribution, bounded.
#[derive(Default)]
struct Samples(Mutex<Vec<f64>>);

impl Samples {
    fn push(&self, value: f64) {
        if let Ok(mut v) = self.0.lock()
            && v.len() < MAX_SAMPLES
        {
            v.push(value);
        }
    }

    fn spread(&self) -> Spread {
        self.0
            .lock()
            .map(|mut v| spread(&mut v))
            .unwrap_or_default()
    }
}

fn add(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

fn get(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

/// Everything every abuser needs.
struct Ctx {
    addr: SocketAddr,
    authority: String,
    endpoint: Endpoint,
    source_ips: usize,
    secret: String,
    deadline: Instant,
}

/// The outcome of an upgrade attempt.
enum Upgrade {
    Accepted(Box<Ws>),
    /// The server answered with this status instead of `101`.
    Refused(u16),
    /// No answer: the label says why.
    Failed(String),
}

impl Ctx {
    /// A TCP connection from source address number `i`, with SO_RCVBUF set first when asked
    /// (before the connect, so the window the server sees is the small one from the start).
    async fn tcp(&self, i: usize, rcvbuf: Option<u32>) -> std::io::Result<TcpStream> {
        let socket = if self.addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        if let Some(size) = rcvbuf {
            socket.set_recv_buffer_size(size)?;
        }
        if self.source_ips > 1 && self.addr.is_ipv4() && self.addr.ip().is_loopback() {
            socket.bind(SocketAddr::new(
                IpAddr::V4(source_ip(i, self.source_ips)),
                0,
            ))?;
        }
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, socket.connect(self.addr))
            .await
            .map_err(|_| std::io::Error::new(ErrorKind::TimedOut, "connect timed out"))??;
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    /// Upgrades `/v1/ws` with `token`.
    async fn upgrade(&self, i: usize, token: &str, via: TokenVia, rcvbuf: Option<u32>) -> Upgrade {
        let request = match upgrade_request(&self.authority, token, via) {
            Ok(r) => r,
            Err(e) => return Upgrade::Failed(format!("request: {e}")),
        };
        let stream = match self.tcp(i, rcvbuf).await {
            Ok(s) => s,
            Err(e) => return Upgrade::Failed(format!("connect: {}", io_label(&e))),
        };
        // A small read buffer: abusers read little, and their memory is the honest client's.
        let config = WebSocketConfig::default()
            .read_buffer_size(4096)
            .write_buffer_size(0);
        let handshake = tokio_tungstenite::client_async_with_config(request, stream, Some(config));
        match tokio::time::timeout(CONNECT_TIMEOUT, handshake).await {
            Err(_) => Upgrade::Failed("upgrade: TimedOut".to_owned()),
            Ok(Ok((ws, _))) => Upgrade::Accepted(Box::new(ws)),
            Ok(Err(tungstenite::Error::Http(response))) => {
                Upgrade::Refused(response.status().as_u16())
            }
            Ok(Err(e)) => Upgrade::Failed(format!("upgrade: {}", ws_label(&e))),
        }
    }

    fn token(&self, player: &str) -> String {
        let now = unix_now();
        mint(&self.secret, player, now, now + 3600)
    }
}

// ---------------------------------------------------------------------------------------------
// The report
// ---------------------------------------------------------------------------------------------

/// What the slowloris connections did and what the server did to them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SlowlorisReport {
    pub connections: usize,
    pub line_interval_s: f64,
    pub connected: u64,
    pub connect_failures: BTreeMap<String, u64>,
    pub header_lines_sent: u64,
    /// Connections the server closed (end of stream, reset, or a failed write).
    pub closed_by_server: u64,
    /// What the server sent before closing: a status code, or `nothing`.
    pub server_answers: BTreeMap<String, u64>,
    /// Seconds from connect to the server's close.
    pub closed_after_s: Spread,
    /// Still open when the run ended (the server never closed them).
    pub open_at_end: u64,
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

/// What the connect churn did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ChurnReport {
    pub target_per_sec: f64,
    pub pool: usize,
    pub garbage_fraction: f64,
    pub attempted: u64,
    pub completed: u64,
    pub achieved_per_sec: f64,
    /// Due upgrades not started because `--churn-in-flight` were still waiting.
    pub skipped_client_behind: u64,
    /// Valid tokens: `101`, other statuses, failures.
    pub valid: BTreeMap<String, u64>,
    /// Garbage tokens: every one must be `401`.
    pub garbage: BTreeMap<String, u64>,
    pub garbage_admitted: u64,
    /// Milliseconds from connect to `101`, valid tokens.
    pub upgrade_ms: Spread,
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

/// What the token replay got.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplayReport {
    pub target_per_sec: f64,
    /// Short-lived tokens used once while valid, then replayed after expiry.
    pub short_lived_tokens: usize,
    pub short_lived_accepted_while_valid: u64,
    pub attempted: u64,
    pub achieved_per_sec: f64,
    pub skipped_client_behind: u64,
    /// Per kind of token, the answers (`401` expected).
    pub answers: BTreeMap<String, BTreeMap<String, u64>>,
    /// Refused tokens that got a session anyway: must be 0.
    pub admitted: u64,
}

/// The `/healthz` prober.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HealthReport {
    pub probes: u64,
    pub failures: u64,
    pub failure_samples: Vec<String>,
    pub slowest_ms: f64,
    /// Answered `200 ok` after the abusers stopped.
    pub answering_after: bool,
}

/// A thing worth a person's attention; `fail` ones make the command exit non-zero.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub fail: bool,
    pub what: String,
}

/// The whole run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AbuseReport {
    pub machine: Machine,
    pub seconds: f64,
    pub slowloris: SlowlorisReport,
    pub noread: NoReadReport,
    pub churn: ChurnReport,
    pub malformed: MalformedReport,
    pub replay: ReplayReport,
    pub health: HealthReport,
    pub findings: Vec<Finding>,
    /// No failing finding.
    pub ok: bool,
}

fn tally_text(map: &BTreeMap<String, u64>) -> String {
    if map.is_empty() {
        return "-".to_owned();
    }
    map.iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl AbuseReport {
    /// The findings, from the figures.
    fn judge(&mut self) {
        let mut findings = Vec::new();
        if self.health.failures > 0 {
            findings.push(Finding {
                fail: true,
                what: format!(
                    "/healthz failed {} of {} probes during the run (first: {})",
                    self.health.failures,
                    self.health.probes,
                    self.health
                        .failure_samples
                        .first()
                        .map_or("-", String::as_str)
                ),
            });
        }
        if !self.health.answering_after {
            findings.push(Finding {
                fail: true,
                what: "/healthz did not answer after the run".to_owned(),
            });
        }
        if self.replay.admitted > 0 {
            findings.push(Finding {
                fail: true,
                what: format!(
                    "{} expired or foreign-secret tokens got a session",
                    self.replay.admitted
                ),
            });
        }
        if self.churn.garbage_admitted > 0 {
            findings.push(Finding {
                fail: true,
                what: format!(
                    "{} garbage tokens got a session",
                    self.churn.garbage_admitted
                ),
            });
        }
        let s = &self.slowloris;
        if s.open_at_end > 0 {
            findings.push(Finding {
                fail: false,
                what: format!(
                    "slowloris: {} of {} connections were still open after {:.0} s \
                     (the server never closed them)",
                    s.open_at_end, s.connected, self.seconds
                ),
            });
        }
        let n = &self.noread;
        if n.sessions_opened > 0 && n.closed_by_server == 0 {
            findings.push(Finding {
                fail: false,
                what: format!(
                    "never-reading: none of {} sessions was dropped in {:.0} s",
                    n.sessions_opened, self.seconds
                ),
            });
        }
        let valid_refused: u64 = self
            .churn
            .valid
            .iter()
            .filter(|(k, _)| k.as_str() != "101")
            .map(|(_, v)| v)
            .sum();
        if valid_refused > 0 {
            findings.push(Finding {
                fail: false,
                what: format!(
                    "churn: {valid_refused} valid-token upgrades did not get 101 ({})",
                    tally_text(&self.churn.valid)
                ),
            });
        }
        self.ok = !findings.iter().any(|f| f.fail);
        self.findings = findings;
    }

    /// Tables for people.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{}\nabuse for {:.0} s\n\n",
            self.machine.line(),
            self.seconds
        );
        let s = &self.slowloris;
        let n = &self.noread;
        let c = &self.churn;
        let m = &self.malformed;
        let r = &self.replay;
        let h = &self.health;
        let mut rows: Vec<Vec<String>> = Vec::new();
        // Two rows per abuser, what it did and what the server did, so lines stay readable.
        let mut pair = |name: &str, did: String, got: String| {
            rows.push(vec![name.to_owned(), "did".to_owned(), did]);
            rows.push(vec![String::new(), "server".to_owned(), got]);
        };
        pair(
            "slowloris",
            format!(
                "{} connections ({} connected), a header line every {} s, {} lines sent",
                s.connections, s.connected, s.line_interval_s, s.header_lines_sent
            ),
            format!(
                "closed {} (sent before closing: {}) after {}; open at end {}",
                s.closed_by_server,
                tally_text(&s.server_answers),
                s.closed_after_s.text("s"),
                s.open_at_end
            ),
        );
        pair(
            "never-reading",
            format!(
                "{} slots, {} sessions, {} requests ({} at {}/s each, SO_RCVBUF {})",
                n.slots,
                n.sessions_opened,
                n.requests_sent,
                n.request.map_or("-", NoReadRequest::name),
                n.rate_per_session,
                n.rcvbuf_bytes
            ),
            format!(
                "dropped {} after {}, requests sent by then {}; open at end {}; \
                 upgrade failures: {}",
                n.closed_by_server,
                n.closed_after_s.text("s"),
                n.requests_before_close.text(""),
                n.open_at_end,
                tally_text(&n.upgrade_failures)
            ),
        );
        pair(
            "churn",
            format!(
                "{} upgrades at {}/s target, {:.0}/s achieved, {} skipped (client behind)",
                c.attempted, c.target_per_sec, c.achieved_per_sec, c.skipped_client_behind
            ),
            format!(
                "valid: {}; garbage: {}; upgrade {}",
                tally_text(&c.valid),
                tally_text(&c.garbage),
                c.upgrade_ms.text("ms")
            ),
        );
        pair(
            "malformed",
            format!(
                "{} sessions, {} connects, {} frames ({})",
                m.sessions,
                m.connects,
                m.frames_total,
                tally_text(&m.frames_sent)
            ),
            format!(
                "errors: {}; byes: {}; closed by server {}",
                tally_text(&m.errors_received),
                tally_text(&m.byes),
                m.closed_by_server
            ),
        );
        pair(
            "replay",
            format!(
                "{} upgrades at {}/s target, {:.0}/s achieved; {} short-lived tokens, \
                 {} accepted while valid",
                r.attempted,
                r.target_per_sec,
                r.achieved_per_sec,
                r.short_lived_tokens,
                r.short_lived_accepted_while_valid
            ),
            format!(
                "{}; admitted {}",
                r.answers
                    .iter()
                    .map(|(k, v)| format!("{k} {}", tally_text(v)))
                    .collect::<Vec<_>>()
                    .join("; "),
                r.admitted
            ),
        );
        pair(
            "/healthz",
            format!("{} probes, one a second", h.probes),
            format!(
                "{} failed, slowest {:.1} ms, answering after: {}",
                h.failures, h.slowest_ms, h.answering_after
            ),
        );
        out.push_str(&table(&["abuser", "", "what"], &rows));
        for f in &self.findings {
            let label = if f.fail { "FAIL" } else { "note" };
            out.push_str(&format!("{label}: {}\n", f.what));
        }
        out.push_str(if self.ok {
            "the server held\n"
        } else {
            "the server did not hold\n"
        });
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Slowloris
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct SlowlorisLive {
    connected: AtomicU64,
    open: AtomicU64,
    lines: AtomicU64,
    closed: AtomicU64,
    connect_failures: Tally,
    answers: Tally,
    closed_after: Samples,
}

async fn slowloris_connection(
    ctx: Arc<Ctx>,
    i: usize,
    start_at: Instant,
    interval: Duration,
    live: Arc<SlowlorisLive>,
) {
    tokio::time::sleep_until(start_at).await;
    let mut stream = match ctx.tcp(i, None).await {
        Ok(s) => s,
        Err(e) => {
            live.connect_failures.add(io_label(&e));
            return;
        }
    };
    add(&live.connected);
    add(&live.open);
    let connected_at = Instant::now();
    let (mut reader, mut writer) = stream.split();
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut line = 0u64;
    let mut buf = [0u8; 512];
    let mut answer: Option<String> = None;
    let closed = loop {
        tokio::select! {
            _ = tick.tick() => {
                let text = slowloris_line(&ctx.authority, line);
                if writer.write_all(text.as_bytes()).await.is_err() {
                    break true;
                }
                line += 1;
                add(&live.lines);
            }
            read = reader.read(&mut buf) => match read {
                Ok(0) | Err(_) => break true,
                Ok(n) => {
                    // The first bytes say what the server answered (a 408, a 400, ...); keep
                    // reading until it closes.
                    answer.get_or_insert_with(|| {
                        status_of(&buf[..n]).map_or_else(|| "bytes".to_owned(), |s| s.to_string())
                    });
                }
            },
            () = tokio::time::sleep_until(ctx.deadline) => break false,
        }
    };
    live.open.fetch_sub(1, Ordering::Relaxed);
    if closed {
        add(&live.closed);
        live.closed_after.push(connected_at.elapsed().as_secs_f64());
        live.answers
            .add(answer.unwrap_or_else(|| "nothing".to_owned()));
    }
}

/// Runs `n` workers, started evenly over the first tenth of the run (two seconds at most) rather
/// than in one burst, each handed its index and start time; returns when all have ended.
async fn ramped<W, F>(n: usize, duration: Duration, worker: W)
where
    W: Fn(usize, Instant) -> F,
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let ramp = duration.mul_f64(0.1).min(Duration::from_secs(2));
    let start = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|i| tokio::spawn(worker(i, start + ramp.mul_f64(i as f64 / n.max(1) as f64))))
        .collect();
    for task in tasks {
        let _ = task.await;
    }
}

async fn slowloris(
    ctx: Arc<Ctx>,
    options: &AbuseOptions,
    live: Arc<SlowlorisLive>,
) -> SlowlorisReport {
    let n = options.slowloris;
    ramped(n, options.duration, |i, at| {
        slowloris_connection(ctx.clone(), i, at, options.slowloris_interval, live.clone())
    })
    .await;
    SlowlorisReport {
        connections: n,
        line_interval_s: options.slowloris_interval.as_secs_f64(),
        connected: get(&live.connected),
        connect_failures: live.connect_failures.take(),
        header_lines_sent: get(&live.lines),
        closed_by_server: get(&live.closed),
        server_answers: live.answers.take(),
        closed_after_s: live.closed_after.spread(),
        open_at_end: get(&live.connected) - get(&live.closed),
    }
}

// ---------------------------------------------------------------------------------------------
// Never-reading sessions
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct NoReadLive {
    opened: AtomicU64,
    open: AtomicU64,
    /// Sessions still writing fine when the run ended.
    survived: AtomicU64,
    sent: AtomicU64,
    closed: AtomicU64,
    upgrade_failures: Tally,
    close_errors: Tally,
    closed_after: Samples,
    requests_before_close: Samples,
}

/// How long a write may block before the session counts as stuck (the server neither reads
/// nor closes).
const WRITE_PATIENCE: Duration = Duration::from_secs(10);

async fn noread_slot(
    ctx: Arc<Ctx>,
    i: usize,
    start_at: Instant,
    options: Arc<AbuseOptions>,
    live: Arc<NoReadLive>,
) {
    tokio::time::sleep_until(start_at).await;
    let player = format!("abuse-noread-{i}");
    let period = Duration::from_secs_f64(1.0 / options.noread_rate);
    while Instant::now() < ctx.deadline {
        let token = ctx.token(&player);
        let mut ws = match ctx
            .upgrade(i, &token, TokenVia::Query, Some(options.noread_rcvbuf))
            .await
        {
            Upgrade::Accepted(ws) => *ws,
            Upgrade::Refused(status) => {
                live.upgrade_failures.add(status.to_string());
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Upgrade::Failed(why) => {
                live.upgrade_failures.add(why);
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        add(&live.opened);
        add(&live.open);
        let opened_at = Instant::now();
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
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
                () = tokio::time::sleep_until(ctx.deadline) => break None,
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

async fn noread(ctx: Arc<Ctx>, options: Arc<AbuseOptions>, live: Arc<NoReadLive>) -> NoReadReport {
    let n = options.noread;
    ramped(n, options.duration, |i, at| {
        noread_slot(ctx.clone(), i, at, options.clone(), live.clone())
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

// ---------------------------------------------------------------------------------------------
// Open-loop schedules (churn, replay)
// ---------------------------------------------------------------------------------------------

/// Runs `attempt(k)` for k = 0, 1, ... on an open-loop schedule at `rate` until the deadline,
/// at most `in_flight` at once (a due attempt beyond it is skipped and counted), then waits for
/// the stragglers. Returns (attempted, skipped, seconds the schedule ran).
async fn open_loop<F, Fut>(
    rate: f64,
    in_flight: usize,
    deadline: Instant,
    attempt: F,
) -> (u64, u64, f64)
where
    F: Fn(u64) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let gate = Arc::new(Semaphore::new(in_flight));
    let start = Instant::now();
    let (mut attempted, mut skipped) = (0u64, 0u64);
    let mut k = 0u64;
    loop {
        let at = start + due(k, rate);
        if at >= deadline {
            break;
        }
        tokio::time::sleep_until(at).await;
        match gate.clone().try_acquire_owned() {
            Ok(permit) => {
                let run = attempt(k);
                tokio::spawn(async move {
                    run.await;
                    drop(permit);
                });
                attempted += 1;
            }
            Err(_) => skipped += 1,
        }
        k += 1;
    }
    let ran = start.elapsed().as_secs_f64();
    let everyone = u32::try_from(in_flight).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(CONNECT_TIMEOUT * 2, gate.acquire_many(everyone)).await;
    (attempted, skipped, ran)
}

#[derive(Default)]
struct ChurnLive {
    completed: AtomicU64,
    garbage_admitted: AtomicU64,
    valid: Tally,
    garbage: Tally,
    upgrade_ms: Samples,
}

async fn churn_one(ctx: Arc<Ctx>, k: u64, pool: usize, fraction: f64, live: Arc<ChurnLive>) {
    let garbage = is_garbage(k, fraction);
    let token = if garbage {
        garbage_token(k, &ctx.secret)
    } else {
        ctx.token(&format!("abuse-churn-{}", k % pool as u64))
    };
    let started = Instant::now();
    let outcome = ctx.upgrade(k as usize, &token, TokenVia::Query, None).await;
    let tally = if garbage { &live.garbage } else { &live.valid };
    match outcome {
        Upgrade::Accepted(ws) => {
            let mut ws = *ws;
            tally.add("101");
            if garbage {
                add(&live.garbage_admitted);
            } else {
                live.upgrade_ms
                    .push(started.elapsed().as_secs_f64() * 1000.0);
            }
            // An immediate close: the Close frame, no waiting for the welcome.
            let _ = tokio::time::timeout(Duration::from_secs(1), ws.close(None)).await;
        }
        Upgrade::Refused(status) => tally.add(status.to_string()),
        Upgrade::Failed(why) => tally.add(why),
    }
    add(&live.completed);
}

async fn churn(ctx: Arc<Ctx>, options: &AbuseOptions, live: Arc<ChurnLive>) -> ChurnReport {
    let (pool, fraction) = (options.churn_pool, options.churn_garbage);
    let (attempted, skipped, ran) = if options.churn_rate > 0.0 {
        let live = live.clone();
        let ctx2 = ctx.clone();
        open_loop(
            options.churn_rate,
            options.churn_in_flight,
            ctx.deadline,
            move |k| churn_one(ctx2.clone(), k, pool, fraction, live.clone()),
        )
        .await
    } else {
        (0, 0, 0.0)
    };
    let completed = get(&live.completed);
    ChurnReport {
        target_per_sec: options.churn_rate,
        pool,
        garbage_fraction: fraction,
        attempted,
        completed,
        achieved_per_sec: if ran > 0.0 {
            (completed as f64 / ran).round()
        } else {
            0.0
        },
        skipped_client_behind: skipped,
        valid: live.valid.take(),
        garbage: live.garbage.take(),
        garbage_admitted: get(&live.garbage_admitted),
        upgrade_ms: live.upgrade_ms.spread(),
    }
}

// ---------------------------------------------------------------------------------------------
// Malformed frames
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct MalformedLive {
    connects: AtomicU64,
    frames: AtomicU64,
    answerable: AtomicU64,
    closed: AtomicU64,
    other: AtomicU64,
    connect_failures: Tally,
    sent: Tally,
    errors: Tally,
    byes: Tally,
}

/// Reads a malformed session's answers until the stream ends, counting them.
async fn malformed_reader(
    mut stream: futures_util::stream::SplitStream<Ws>,
    live: Arc<MalformedLive>,
) {
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

async fn malformed_session(
    ctx: Arc<Ctx>,
    i: usize,
    start_at: Instant,
    options: Arc<AbuseOptions>,
    live: Arc<MalformedLive>,
) {
    tokio::time::sleep_until(start_at).await;
    let player = format!("abuse-malformed-{i}");
    let period = Duration::from_secs_f64(1.0 / options.malformed_rate);
    let mut k = 0u64;
    while Instant::now() < ctx.deadline {
        let token = ctx.token(&player);
        let ws = match ctx.upgrade(i, &token, TokenVia::Query, None).await {
            Upgrade::Accepted(ws) => *ws,
            Upgrade::Refused(status) => {
                live.connect_failures.add(status.to_string());
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Upgrade::Failed(why) => {
                live.connect_failures.add(why);
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        add(&live.connects);
        let (mut sink, stream) = ws.split();
        let mut reader = tokio::spawn(malformed_reader(stream, live.clone()));
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
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
                        let _ = tokio::time::timeout(Duration::from_secs(5), &mut reader).await;
                        break true;
                    }
                }
                _ = &mut reader => break true,
                () = tokio::time::sleep_until(ctx.deadline) => break false,
            }
        };
        if by_server {
            add(&live.closed);
        } else {
            let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
        }
        reader.abort();
    }
}

async fn malformed(
    ctx: Arc<Ctx>,
    options: Arc<AbuseOptions>,
    live: Arc<MalformedLive>,
) -> MalformedReport {
    let n = options.malformed;
    ramped(n, options.duration, |i, at| {
        malformed_session(ctx.clone(), i, at, options.clone(), live.clone())
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

// ---------------------------------------------------------------------------------------------
// Token replay
// ---------------------------------------------------------------------------------------------

/// Short-lived tokens used while valid, then replayed once they expired.
const SHORT_LIVED: usize = 8;
/// Their lifetime, in seconds: long enough to be used once under load, short enough to expire
/// early in the run.
const SHORT_LIFETIME: u64 = 3;

#[derive(Default)]
struct ReplayLive {
    admitted: AtomicU64,
    answers: Mutex<BTreeMap<String, BTreeMap<String, u64>>>,
}

impl ReplayLive {
    fn answer(&self, kind: ReplayKind, answer: String) {
        if let Ok(mut map) = self.answers.lock() {
            *map.entry(kind.name().to_owned())
                .or_default()
                .entry(answer)
                .or_insert(0) += 1;
        }
    }
}

async fn replay_one(ctx: Arc<Ctx>, k: u64, short: Arc<(Vec<String>, u64)>, live: Arc<ReplayLive>) {
    let (mut kind, via) = ReplayKind::at(k);
    let now = unix_now();
    let player = format!("abuse-replay-{}", k % 1000);
    let (short_tokens, short_exp) = (&short.0, short.1);
    // A second past `exp`, so neither clock's rounding can make it valid; until then (or with
    // no short-lived token) the slot replays a long-expired one.
    if kind == ReplayKind::JustExpired && (short_tokens.is_empty() || now <= short_exp) {
        kind = ReplayKind::LongExpired;
    }
    let token = match kind {
        ReplayKind::LongExpired => expired_token(&ctx.secret, &player, k, now),
        ReplayKind::JustExpired => short_tokens[(k as usize) % short_tokens.len()].clone(),
        ReplayKind::ForeignSecret => foreign_token(&player, now),
    };
    match ctx.upgrade(k as usize, &token, via, None).await {
        Upgrade::Accepted(ws) => {
            let mut ws = *ws;
            add(&live.admitted);
            live.answer(kind, "101".to_owned());
            let _ = tokio::time::timeout(Duration::from_secs(1), ws.close(None)).await;
        }
        Upgrade::Refused(status) => live.answer(kind, status.to_string()),
        Upgrade::Failed(why) => live.answer(kind, why),
    }
}

async fn replay(ctx: Arc<Ctx>, options: &AbuseOptions, live: Arc<ReplayLive>) -> ReplayReport {
    let mut report = ReplayReport {
        target_per_sec: options.replay_rate,
        ..ReplayReport::default()
    };
    if options.replay_rate <= 0.0 {
        return report;
    }
    // The short-lived tokens get a session each while valid, so what is replayed later is a
    // token the server once accepted.
    let now = unix_now();
    let exp = now + SHORT_LIFETIME;
    let mut short = Vec::with_capacity(SHORT_LIVED);
    for j in 0..SHORT_LIVED {
        let token = mint(&ctx.secret, &format!("abuse-replay-short-{j}"), now, exp);
        if let Upgrade::Accepted(ws) = ctx.upgrade(j, &token, TokenVia::Query, None).await {
            let mut ws = *ws;
            report.short_lived_accepted_while_valid += 1;
            let _ = tokio::time::timeout(Duration::from_secs(1), ws.close(None)).await;
        }
        short.push(token);
    }
    report.short_lived_tokens = short.len();
    let short = Arc::new((short, exp));
    let (attempted, skipped, ran) = {
        let (ctx2, live2) = (ctx.clone(), live.clone());
        open_loop(options.replay_rate, 64, ctx.deadline, move |k| {
            replay_one(ctx2.clone(), k, short.clone(), live2.clone())
        })
        .await
    };
    report.attempted = attempted;
    report.skipped_client_behind = skipped;
    report.achieved_per_sec = if ran > 0.0 {
        (attempted as f64 / ran).round()
    } else {
        0.0
    };
    report.answers = live.answers.lock().map(|m| m.clone()).unwrap_or_default();
    report.admitted = get(&live.admitted);
    report
}

// ---------------------------------------------------------------------------------------------
// Health
// ---------------------------------------------------------------------------------------------

/// One `/healthz`: Ok(milliseconds) or why not.
async fn probe(endpoint: &Endpoint) -> std::result::Result<f64, String> {
    let started = Instant::now();
    match tokio::time::timeout(HEALTH_TIMEOUT, endpoint.request("GET", "/healthz", &[], "")).await {
        Err(_) => Err(format!("no answer within {HEALTH_TIMEOUT:?}")),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok((200, body))) if body.trim() == "ok" => Ok(started.elapsed().as_secs_f64() * 1000.0),
        Ok(Ok((status, body))) => Err(format!("HTTP {status}: {}", body.trim())),
    }
}

#[derive(Default)]
struct HealthLive {
    probes: AtomicU64,
    failures: AtomicU64,
    samples: Mutex<Vec<String>>,
    slowest_us: AtomicU64,
}

async fn health(endpoint: Endpoint, deadline: Instant, started: Instant, live: Arc<HealthLive>) {
    let mut tick = tokio::time::interval(HEALTH_EVERY);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    while Instant::now() < deadline {
        tick.tick().await;
        add(&live.probes);
        match probe(&endpoint).await {
            Ok(ms) => {
                live.slowest_us
                    .fetch_max((ms * 1000.0) as u64, Ordering::Relaxed);
            }
            Err(why) => {
                add(&live.failures);
                if let Ok(mut s) = live.samples.lock()
                    && s.len() < 10
                {
                    s.push(format!(
                        "at {:.1} s: {why}",
                        started.elapsed().as_secs_f64()
                    ));
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

/// Runs every abuser at once for the duration, then asks `/healthz` once more.
pub async fn run(options: AbuseOptions) -> Result<AbuseReport> {
    let addr = tokio::net::lookup_host(&options.endpoint.authority)
        .await?
        .next()
        .ok_or_else(|| SimError::BadUrl(options.endpoint.authority.clone()))?;
    // The server must answer before the run: a server that was never up is not a finding.
    probe(&options.endpoint)
        .await
        .map_err(|why| SimError::Other(format!("the server does not answer /healthz: {why}")))?;
    let started = Instant::now();
    let ctx = Arc::new(Ctx {
        addr,
        authority: options.endpoint.authority.clone(),
        endpoint: options.endpoint.clone(),
        source_ips: options.source_ips,
        secret: options.auth_secret.clone(),
        deadline: started + options.duration,
    });
    let options = Arc::new(options);
    let slow_live = Arc::new(SlowlorisLive::default());
    let noread_live = Arc::new(NoReadLive::default());
    let churn_live = Arc::new(ChurnLive::default());
    let malformed_live = Arc::new(MalformedLive::default());
    let replay_live = Arc::new(ReplayLive::default());
    let health_live = Arc::new(HealthLive::default());

    let health_task = tokio::spawn(health(
        ctx.endpoint.clone(),
        ctx.deadline,
        started,
        health_live.clone(),
    ));
    let progress_task = options.progress.then(|| {
        let (s, n, c, m, r, h) = (
            slow_live.clone(),
            noread_live.clone(),
            churn_live.clone(),
            malformed_live.clone(),
            replay_live.clone(),
            health_live.clone(),
        );
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(5));
            tick.tick().await;
            loop {
                tick.tick().await;
                eprintln!(
                    "abuse {:>4.0} s: slowloris open {} closed {}; never-reading open {} dropped {}; \
                     churn {}; malformed frames {} closed {}; replay admitted {}; healthz failures {}",
                    started.elapsed().as_secs_f64(),
                    get(&s.open),
                    get(&s.closed),
                    get(&n.open),
                    get(&n.closed),
                    get(&c.completed),
                    get(&m.frames),
                    get(&m.closed),
                    get(&r.admitted),
                    get(&h.failures),
                );
            }
        })
    });

    let (slowloris, noread, churn, malformed, replay) = tokio::join!(
        slowloris(ctx.clone(), &options, slow_live),
        noread(ctx.clone(), options.clone(), noread_live),
        churn(ctx.clone(), &options, churn_live),
        malformed(ctx.clone(), options.clone(), malformed_live),
        replay(ctx.clone(), &options, replay_live),
    );
    let _ = health_task.await;
    if let Some(task) = progress_task {
        task.abort();
    }
    let mut answering_after = false;
    for attempt in 0..HEALTH_AFTER_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        if probe(&ctx.endpoint).await.is_ok() {
            answering_after = true;
            break;
        }
    }
    let mut report = AbuseReport {
        machine: Machine::probe(),
        seconds: options.duration.as_secs_f64(),
        slowloris,
        noread,
        churn,
        malformed,
        replay,
        health: HealthReport {
            probes: get(&health_live.probes),
            failures: get(&health_live.failures),
            failure_samples: health_live
                .samples
                .lock()
                .map(|s| s.clone())
                .unwrap_or_default(),
            slowest_ms: get(&health_live.slowest_us) as f64 / 1000.0,
            answering_after,
        },
        findings: Vec::new(),
        ok: false,
    };
    report.judge();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn claims(token: &str) -> serde_json::Value {
        let part = token.split('.').nth(1).expect("claims");
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).expect("base64")).expect("json")
    }

    #[test]
    fn an_open_loop_schedule_is_evenly_spaced() {
        assert_eq!(due(0, 1000.0), Duration::ZERO);
        assert_eq!(due(1000, 1000.0), Duration::from_secs(1));
        assert_eq!(due(5, 2.0), Duration::from_millis(2500));
        assert_eq!(due(3, 0.0), Duration::MAX);
        assert_eq!(events_in(Duration::from_secs(30), 1000.0), 30_000);
        assert_eq!(events_in(Duration::from_millis(1500), 3.0), 5);
        assert_eq!(events_in(Duration::from_secs(5), 0.0), 0);
        // Every event due within the span is counted, none after it.
        let span = Duration::from_millis(1234);
        let n = events_in(span, 200.0);
        assert!(due(n - 1, 200.0) < span && due(n, 200.0) >= span);
    }

    #[test]
    fn the_garbage_fraction_is_exact_and_spread() {
        let garbage: Vec<u64> = (0..1000).filter(|&k| is_garbage(k, 0.1)).collect();
        assert_eq!(garbage.len(), 100);
        // Evenly spread: one in every ten.
        for pair in garbage.windows(2) {
            assert!((9..=11).contains(&(pair[1] - pair[0])), "{pair:?}");
        }
        assert_eq!((0..500).filter(|&k| is_garbage(k, 0.0)).count(), 0);
        assert_eq!((0..500).filter(|&k| is_garbage(k, 1.0)).count(), 500);
    }

    #[test]
    fn source_addresses_stay_on_loopback() {
        assert_eq!(source_ip(0, 8), Ipv4Addr::new(127, 0, 0, 1));
        assert_eq!(source_ip(9, 8), Ipv4Addr::new(127, 0, 0, 2));
        assert_eq!(source_ip(7, 1), Ipv4Addr::new(127, 0, 0, 1));
        assert_eq!(source_ip(999, 1000), Ipv4Addr::new(127, 0, 0, 250));
        assert!((0..1000).all(|i| source_ip(i, 300).is_loopback()));
    }

    #[test]
    fn a_slowloris_request_never_ends() {
        let lines: Vec<String> = (0..50)
            .map(|n| slowloris_line("127.0.0.1:7350", n))
            .collect();
        assert_eq!(lines[0], "GET /v1/ws HTTP/1.1\r\n");
        assert_eq!(lines[1], "Host: 127.0.0.1:7350\r\n");
        for line in &lines {
            assert!(line.ends_with("\r\n"), "{line:?}");
            // The empty line would end the header; a header line has a name and a colon.
            assert!(line.len() > 2, "{line:?}");
            assert_eq!(line.matches("\r\n").count(), 1, "{line:?}");
        }
        assert!(lines[1..].iter().all(|l| l.contains(": ")));
    }

    #[test]
    fn statuses_are_read_from_the_first_bytes() {
        assert_eq!(
            status_of(b"HTTP/1.1 408 Request Timeout\r\n\r\n"),
            Some(408)
        );
        assert_eq!(status_of(b"HTTP/1.0 400 Bad Request\r\n"), Some(400));
        assert_eq!(status_of(b"HTTP/1.1 431"), Some(431));
        assert_eq!(status_of(b"HTTP/1.1 40"), None);
        assert_eq!(status_of(b"garbage"), None);
        assert_eq!(status_of(&[0xff, 0xfe]), None);
        assert_eq!(status_of(b""), None);
    }

    #[test]
    fn upgrade_requests_carry_the_token_where_asked() {
        let q = upgrade_request("127.0.0.1:7350", "abc.def.ghi", TokenVia::Query).expect("query");
        assert_eq!(q.uri().path(), "/v1/ws");
        assert_eq!(q.uri().query(), Some("token=abc.def.ghi"));
        assert!(q.headers().get(AUTHORIZATION).is_none());
        let h = upgrade_request("127.0.0.1:7350", "abc.def.ghi", TokenVia::Header).expect("header");
        assert_eq!(h.uri().query(), None);
        assert_eq!(
            h.headers().get(AUTHORIZATION).and_then(|v| v.to_str().ok()),
            Some("Bearer abc.def.ghi")
        );
        // The upgrade's own headers are there: it is a real WebSocket handshake.
        assert!(h.headers().contains_key("sec-websocket-key"));
    }

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

    #[test]
    fn garbage_tokens_are_never_valid_and_fit_a_query() {
        for k in 0..8 {
            let token = garbage_token(k, DEV_SECRET);
            assert!(!token.is_empty());
            assert!(
                token
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
                "{token}"
            );
            assert!(upgrade_request("h:1", &token, TokenVia::Query).is_ok());
        }
    }

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

    #[test]
    fn replayed_tokens_are_expired_or_foreign() {
        let now = 1_800_000_000;
        for k in 0..5000 {
            let token = expired_token(DEV_SECRET, "p", k, now);
            let exp = claims(&token)["exp"].as_u64().expect("exp");
            assert!(exp < now && exp + 3600 >= now, "k {k}: exp {exp}");
        }
        let foreign = foreign_token("p", now);
        assert!(claims(&foreign)["exp"].as_u64().expect("exp") > now);
        assert_ne!(foreign, mint(DEV_SECRET, "p", now, now + 3600));
        // Every kind goes both ways.
        let seen: std::collections::HashSet<_> = (0..6)
            .map(|k| {
                let (kind, via) = ReplayKind::at(k);
                (kind.name(), via == TokenVia::Header)
            })
            .collect();
        assert_eq!(seen.len(), 6);
    }

    #[test]
    fn spreads_use_the_nearest_rank() {
        let mut values: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        let s = spread(&mut values);
        assert_eq!(
            (s.count, s.min, s.p50, s.p90, s.max),
            (10, 1.0, 5.0, 9.0, 10.0)
        );
        assert_eq!(spread(&mut []), Spread::default());
        let one = spread(&mut [2.5]);
        assert_eq!((one.p50, one.p90), (2.5, 2.5));
    }

    #[test]
    fn only_health_and_admitted_tokens_fail_the_run() {
        let mut report = AbuseReport {
            health: HealthReport {
                probes: 30,
                answering_after: true,
                ..HealthReport::default()
            },
            slowloris: SlowlorisReport {
                connected: 10,
                open_at_end: 10,
                ..SlowlorisReport::default()
            },
            ..AbuseReport::default()
        };
        report.judge();
        assert!(report.ok, "{:?}", report.findings);
        assert_eq!(report.findings.len(), 1, "the slowloris note");
        report.replay.admitted = 1;
        report.judge();
        assert!(!report.ok);
        report.replay.admitted = 0;
        report.health.failures = 1;
        report.judge();
        assert!(!report.ok);
        report.health.failures = 0;
        report.health.answering_after = false;
        report.judge();
        assert!(!report.ok);
        report.health.answering_after = true;
        report.churn.garbage_admitted = 2;
        report.judge();
        assert!(!report.ok);
        assert!(report.table().contains("FAIL"));
    }

    #[test]
    fn the_arguments_are_checked() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: Args,
        }
        let parse = |argv: &[&str]| {
            Cli::try_parse_from(std::iter::once("abuse").chain(argv.iter().copied()))
                .expect("parses")
                .args
                .options()
        };
        let o = parse(&["--url", "127.0.0.1:9", "--seconds", "5"]).expect("defaults");
        assert_eq!(o.slowloris, 500);
        assert_eq!(o.noread, 200);
        assert_eq!(o.churn_rate, 1000.0);
        assert_eq!(o.churn_pool, 5000);
        assert_eq!(o.auth_secret, DEV_SECRET);
        assert!(parse(&["--seconds", "0"]).is_err());
        assert!(parse(&["--churn-garbage", "1.5"]).is_err());
        assert!(parse(&["--replay-rate=-1"]).is_err());
        assert_eq!(parse(&["--noread-rate", "0"]).expect("off").noread, 0);
    }
}
