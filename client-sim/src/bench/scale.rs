//! Scale: many authenticated sessions held open, each sending a cheap `set_afk` every few
//! seconds, the round trips in one histogram, and the server's resident memory per session.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use hdrhistogram::Histogram;
use serde::Serialize;
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use super::machine::{Machine, rss_kib};
use super::round_to;
use super::target::{Target, next_text, request};
use crate::error::{Result, SimError};
use crate::report::{micros, progress_bar, table};
use crate::session::new_histogram;

/// How the scale test runs.
#[derive(Clone, Debug)]
pub struct ScaleOptions {
    pub target: Target,
    pub sessions: usize,
    pub interval: Duration,
    /// How long every session stays open once the last one has connected.
    pub hold: Duration,
    pub parallel_connects: usize,
    pub server_pid: Option<u32>,
}

/// The scale result.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ScaleReport {
    pub machine: Machine,
    pub sessions_requested: usize,
    /// Sessions welcomed and open at once (the most reached).
    pub sessions_open: u64,
    pub connect_seconds: f64,
    pub hold_seconds: f64,
    pub interval_seconds: f64,
    /// `set_afk` requests answered with an `ack` while holding.
    pub messages: u64,
    pub connect_errors: u64,
    pub message_errors: u64,
    pub error_samples: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_rss_before_kib: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_rss_open_kib: Option<u64>,
    /// (RSS with every session open − RSS before) / sessions open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_rss_per_session_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_rss_kib: Option<u64>,
    pub latency_p50_us: u64,
    pub latency_p99_us: u64,
}

/// Shared counters of the scale test.
#[derive(Default)]
struct ScaleLive {
    open: AtomicU64,
    peak: AtomicU64,
    messages: AtomicU64,
    connect_errors: AtomicU64,
    message_errors: AtomicU64,
    samples: std::sync::Mutex<Vec<String>>,
    /// Round trips of every session, in one histogram (one per session would cost more memory
    /// than the session).
    round_trips: std::sync::Mutex<Option<Histogram<u64>>>,
}

impl ScaleLive {
    fn sample(&self, what: String) {
        if let Ok(mut samples) = self.samples.lock()
            && samples.len() < 10
        {
            samples.push(what);
        }
    }
}

/// One idle-ish session: welcomed, then a `set_afk` every `interval` (at a random phase) until
/// `stop`.
async fn scale_session(
    target: Arc<Target>,
    i: usize,
    interval: Duration,
    gate: Arc<Semaphore>,
    live: Arc<ScaleLive>,
    connected: mpsc::UnboundedSender<()>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let Ok(permit) = gate.acquire().await else {
        return;
    };
    let opened = async {
        let token = target.token(i).await?;
        let mut ws = target.open("/v1/ws", &token, i).await?;
        let welcome = next_text(&mut ws).await?;
        if !welcome.starts_with(r#"{"type":"welcome""#) {
            return Err(SimError::Protocol(welcome));
        }
        Ok(ws)
    }
    .await;
    drop(permit);
    let _ = connected.send(());
    let mut ws = match opened {
        Ok(ws) => ws,
        Err(e) => {
            live.connect_errors.fetch_add(1, Ordering::Relaxed);
            live.sample(format!("session {i}: {e}"));
            return;
        }
    };
    let open = live.open.fetch_add(1, Ordering::Relaxed) + 1;
    live.peak.fetch_max(open, Ordering::Relaxed);
    // A deterministic spread of first sends over one interval.
    let phase = interval.mul_f64((i as f64 * 0.618_033_988_7).fract());
    let mut tick = tokio::time::interval_at(Instant::now() + phase, interval);
    let mut id = 0u64;
    let mut stopped = false;
    while !stopped {
        tokio::select! {
            _ = tick.tick() => {
                id += 1;
                let afk = id.is_multiple_of(2);
                let started = Instant::now();
                match request(&mut ws, format!(r#"{{"type":"set_afk","id":{id},"afk":{afk}}}"#)).await {
                    Ok(_) => {
                        live.messages.fetch_add(1, Ordering::Relaxed);
                        let us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
                        if let Ok(mut h) = live.round_trips.lock()
                            && let Some(h) = h.as_mut()
                        {
                            h.saturating_record(us.max(1));
                        }
                    }
                    Err(e) => {
                        live.message_errors.fetch_add(1, Ordering::Relaxed);
                        live.sample(format!("session {i}: {e}"));
                        break;
                    }
                }
            }
            frame = ws.next() => match frame {
                // Pings are answered by tungstenite while reading.
                Some(Ok(Message::Text(text))) => {
                    live.message_errors.fetch_add(1, Ordering::Relaxed);
                    live.sample(format!("session {i}: unasked {text}"));
                    break;
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                    live.message_errors.fetch_add(1, Ordering::Relaxed);
                    live.sample(format!("session {i}: the connection closed"));
                    break;
                }
                Some(Ok(_)) => {}
            },
            changed = stop.changed() => {
                stopped = changed.is_err() || *stop.borrow();
            }
        }
    }
    live.open.fetch_sub(1, Ordering::Relaxed);
    let _ = tokio::time::timeout(Duration::from_secs(5), ws.close(None)).await;
}

/// Opens `sessions` sessions, holds them while each sends a message every `interval`, and
/// measures the server's memory per session.
pub async fn scale(options: ScaleOptions, progress: bool) -> Result<ScaleReport> {
    let target = Arc::new(options.target.clone());
    let live = Arc::new(ScaleLive {
        round_trips: std::sync::Mutex::new(Some(new_histogram()?)),
        ..ScaleLive::default()
    });
    let gate = Arc::new(Semaphore::new(options.parallel_connects.max(1)));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (connected_tx, mut connected_rx) = mpsc::unbounded_channel();
    let mut report = ScaleReport {
        machine: Machine::probe_with_server(options.server_pid),
        sessions_requested: options.sessions,
        interval_seconds: options.interval.as_secs_f64(),
        server_rss_before_kib: options.server_pid.and_then(rss_kib),
        ..ScaleReport::default()
    };
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(options.sessions);
    for i in 0..options.sessions {
        tasks.push(tokio::spawn(scale_session(
            target.clone(),
            i,
            options.interval,
            gate.clone(),
            live.clone(),
            connected_tx.clone(),
            stop_rx.clone(),
        )));
    }
    drop(connected_tx);
    let bar = progress_bar(
        options.sessions as u64,
        "connect [{bar:30}] {pos}/{len} sessions  {msg}",
        progress,
    );
    let mut attempts = 0usize;
    while attempts < options.sessions && connected_rx.recv().await.is_some() {
        attempts += 1;
        bar.inc(1);
        if attempts.is_multiple_of(100) {
            bar.set_message(format!(
                "{} open, {} failed",
                live.open.load(Ordering::Relaxed),
                live.connect_errors.load(Ordering::Relaxed),
            ));
        }
    }
    drop(bar);
    report.connect_seconds = round_to(started.elapsed().as_secs_f64(), 1);
    let holding = Instant::now();
    let bar = progress_bar(
        options.hold.as_secs(),
        "holding [{bar:30}] {pos}/{len} s  {msg}",
        progress,
    );
    // Memory is sampled once the connect burst has settled, while every session is idle-ish.
    let settle = options.hold.min(Duration::from_secs(5));
    tokio::time::sleep(settle).await;
    report.server_rss_open_kib = options.server_pid.and_then(rss_kib);
    let open_now = live.open.load(Ordering::Relaxed);
    if let (Some(before), Some(open)) = (report.server_rss_before_kib, report.server_rss_open_kib)
        && open_now > 0
    {
        report.server_rss_per_session_bytes = Some(open.saturating_sub(before) * 1024 / open_now);
    }
    let rest = options.hold.saturating_sub(settle);
    let mut waited = Duration::ZERO;
    while waited < rest {
        bar.set_position(holding.elapsed().as_secs());
        bar.set_message(format!(
            "{} open, {} messages, {} errors",
            live.open.load(Ordering::Relaxed),
            live.messages.load(Ordering::Relaxed),
            live.message_errors.load(Ordering::Relaxed),
        ));
        let step = (rest - waited).min(Duration::from_secs(1));
        tokio::time::sleep(step).await;
        waited += step;
    }
    drop(bar);
    report.client_rss_kib = rss_kib(std::process::id());
    report.hold_seconds = round_to(holding.elapsed().as_secs_f64(), 1);
    report.sessions_open = live.peak.load(Ordering::Relaxed);
    let _ = stop_tx.send(true);
    for task in tasks {
        let _ = task.await;
    }
    let histogram = live
        .round_trips
        .lock()
        .ok()
        .and_then(|mut h| h.take())
        .unwrap_or(new_histogram()?);
    report.messages = live.messages.load(Ordering::Relaxed);
    report.connect_errors = live.connect_errors.load(Ordering::Relaxed);
    report.message_errors = live.message_errors.load(Ordering::Relaxed);
    report.error_samples = live.samples.lock().map(|s| s.clone()).unwrap_or_default();
    if !histogram.is_empty() {
        report.latency_p50_us = histogram.value_at_quantile(0.5);
        report.latency_p99_us = histogram.value_at_quantile(0.99);
    }
    Ok(report)
}

impl ScaleReport {
    pub fn table(&self) -> String {
        let kib = |k: Option<u64>| k.map_or("-".to_owned(), |k| format!("{k} KiB"));
        let mut rows = vec![
            vec![
                "sessions requested".into(),
                self.sessions_requested.to_string(),
            ],
            vec![
                "sessions open at once".into(),
                self.sessions_open.to_string(),
            ],
            vec![
                "connect time".into(),
                format!("{:.1} s", self.connect_seconds),
            ],
            vec!["held for".into(), format!("{:.1} s", self.hold_seconds)],
            vec![
                "one message per session every".into(),
                format!("{} s", self.interval_seconds),
            ],
            vec!["messages answered".into(), self.messages.to_string()],
            vec![
                "latency p50 / p99".into(),
                format!(
                    "{} / {}",
                    micros(self.latency_p50_us),
                    micros(self.latency_p99_us)
                ),
            ],
            vec!["connect errors".into(), self.connect_errors.to_string()],
            vec!["message errors".into(), self.message_errors.to_string()],
            vec!["server RSS before".into(), kib(self.server_rss_before_kib)],
            vec!["server RSS, all open".into(), kib(self.server_rss_open_kib)],
            vec![
                "server RSS per session".into(),
                self.server_rss_per_session_bytes
                    .map_or("-".to_owned(), |b| format!("{:.1} KiB", b as f64 / 1024.0)),
            ],
            vec!["client RSS".into(), kib(self.client_rss_kib)],
        ];
        for sample in &self.error_samples {
            rows.push(vec!["  error".into(), sample.clone()]);
        }
        format!(
            "{}\n\n{}",
            self.machine.line(),
            table(&["", "value"], &rows)
        )
    }

    /// True when every session opened and nothing failed.
    pub fn clean(&self) -> bool {
        self.connect_errors == 0
            && self.message_errors == 0
            && self.sessions_open as usize == self.sessions_requested
    }
}
