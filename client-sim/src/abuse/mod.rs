//! `banter-sim abuse`: the server under abuse, every kind at once, for a while.
//!
//! RELIABILITY.md scenario 6 runs this beside an honest `banter-sim load` and compares the honest
//! latency with a calm run. Each abuser reports what it did and what the server answered:
//!
//! - [`slowloris`]: TCP connections that send a `GET /v1/ws` upgrade one header line at a time,
//!   a line every few seconds, never finishing. A server must close them (a header-read
//!   deadline); one that never does lets a few hundred sockets hold its accept path.
//! - [`noread`]: authenticated sessions that send requests with answers and never read a byte,
//!   with a small kernel receive buffer. The server's bounded outgoing queue must fill and the
//!   server must drop them.
//! - [`churn`]: upgrades at a fixed rate (1,000/s by default) from a pool of players, each
//!   closed at once; a fraction with garbage tokens, which must all be refused.
//! - [`malformed`]: sessions sending invalid JSON, unknown types, frames over the 4 KiB limit
//!   and far over it (1 MiB), binary frames and invalid UTF-8, reconnecting when closed.
//! - [`replay`]: tokens that expired (one of them after being used once) and tokens signed with
//!   another secret, at volume; every one must be refused with 401.
//!
//! A prober ([`health`]) asks `/healthz` every second throughout, and once more at the end. The
//! run fails when the server stopped answering it, or when an expired, foreign or garbage token
//! got a session; everything else is a figure (and a note when it looks wrong): see [`report`].
//!
//! Abusers use raw sockets and `tungstenite` directly ([`dial`]), never [`crate::connection`]:
//! they must be able to not read, to send what a client must not, and to cost the machine as
//! little as possible, since the honest client shares it. Their pacing is in [`schedule`], their
//! distributions and tallies in [`figures`].

pub mod churn;
pub mod dial;
pub mod figures;
pub mod health;
pub mod malformed;
pub mod noread;
pub mod replay;
pub mod report;
pub mod schedule;
pub mod slowloris;

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::bench::Machine;
use crate::error::{Result, SimError};
use crate::http::Endpoint;

pub use churn::{ChurnReport, garbage_token};
pub use dial::{TokenVia, upgrade_request};
pub use figures::Spread;
pub use health::HealthReport;
pub use malformed::{FRAME_LIMIT, HUGE_FRAME, MalformedKind, MalformedReport};
pub use noread::{NoReadReport, NoReadRequest, noread_message};
pub use replay::{ReplayKind, ReplayReport, expired_token, foreign_token};
pub use report::{AbuseReport, Finding};
pub use schedule::{due, events_in, is_garbage};
pub use slowloris::{SlowlorisReport, slowloris_line, status_of};

use figures::get;

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
    /// A progress bar on stderr (drawn only when it is a terminal).
    pub progress: bool,
}

/// Runs every abuser at once for the duration, then asks `/healthz` once more.
pub async fn run(options: AbuseOptions) -> Result<AbuseReport> {
    let addr = tokio::net::lookup_host(&options.endpoint.authority)
        .await?
        .next()
        .ok_or_else(|| SimError::BadUrl(options.endpoint.authority.clone()))?;
    // The server must answer before the run: a server that was never up is not a finding.
    health::probe(&options.endpoint)
        .await
        .map_err(|why| SimError::Other(format!("the server does not answer /healthz: {why}")))?;
    let started = Instant::now();
    let dialer = Arc::new(dial::Dialer {
        addr,
        authority: options.endpoint.authority.clone(),
        source_ips: options.source_ips,
        secret: options.auth_secret.clone(),
        deadline: started + options.duration,
    });
    let options = Arc::new(options);
    let live = Lives::default();

    let health_task = tokio::spawn(health::run(
        options.endpoint.clone(),
        dialer.deadline,
        started,
        live.health.clone(),
    ));
    let progress_task = options
        .progress
        .then(|| tokio::spawn(progress(live.clone(), options.duration)));

    let (slowloris, noread, churn, malformed, replay) = tokio::join!(
        slowloris::run(dialer.clone(), &options, live.slowloris.clone()),
        noread::run(dialer.clone(), options.clone(), live.noread.clone()),
        churn::run(dialer.clone(), &options, live.churn.clone()),
        malformed::run(dialer.clone(), options.clone(), live.malformed.clone()),
        replay::run(dialer.clone(), &options, live.replay.clone()),
    );
    let _ = health_task.await;
    if let Some(task) = progress_task {
        task.abort();
        let _ = task.await;
    }
    let answering_after = health::answering_after(&options.endpoint).await;
    let mut report = AbuseReport {
        machine: Machine::probe(),
        seconds: options.duration.as_secs_f64(),
        slowloris,
        noread,
        churn,
        malformed,
        replay,
        health: live.health.report(answering_after),
        findings: Vec::new(),
        ok: false,
    };
    report.judge();
    Ok(report)
}

/// Every abuser's live counters, shared by the abuser and the progress bar.
#[derive(Clone, Default)]
struct Lives {
    slowloris: Arc<slowloris::Live>,
    noread: Arc<noread::Live>,
    churn: Arc<churn::Live>,
    malformed: Arc<malformed::Live>,
    replay: Arc<replay::Live>,
    health: Arc<health::Live>,
}

impl Lives {
    /// The figures a person watches while the run goes.
    fn message(&self) -> String {
        let (s, n, c, m, r, h) = (
            &self.slowloris,
            &self.noread,
            &self.churn,
            &self.malformed,
            &self.replay,
            &self.health,
        );
        format!(
            "slowloris open {} closed {}; never-reading open {} dropped {}; churn {}; \
             malformed frames {} closed {}; replay admitted {}; healthz failures {}",
            get(&s.open),
            get(&s.closed),
            get(&n.open),
            get(&n.closed),
            get(&c.completed),
            get(&m.frames),
            get(&m.closed),
            get(&r.admitted),
            get(&h.failures),
        )
    }
}

/// A progress bar over the run's duration with the abusers' figures, on stderr; until aborted
/// (which drops and so clears it).
async fn progress(live: Lives, duration: Duration) {
    let bar = crate::report::progress_bar(
        duration.as_secs().max(1),
        "abuse [{bar:20}] {pos:>4}/{len} s  {msg}",
        true,
    );
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tick.tick().await;
        bar.set_position(started.elapsed().as_secs());
        bar.set_message(live.message());
    }
}
