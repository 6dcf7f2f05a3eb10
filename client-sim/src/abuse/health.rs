//! The `/healthz` prober: asks every second while the abusers run, and again (a few times, a
//! second apart) once they stopped. A failed probe fails the run.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use super::figures::{add, get};
use super::schedule::paced;
use crate::http::Endpoint;

/// How long one `/healthz` probe may take before the server counts as not answering.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(5);
/// How often `/healthz` is asked during the run.
const HEALTH_EVERY: Duration = Duration::from_secs(1);
/// Attempts, a second apart, for the server to answer `/healthz` once the abusers stopped.
const HEALTH_AFTER_ATTEMPTS: u32 = 10;
/// Failure descriptions kept.
const SAMPLES: usize = 10;

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

/// One `/healthz`: Ok(milliseconds) or why not.
pub async fn probe(endpoint: &Endpoint) -> std::result::Result<f64, String> {
    let started = Instant::now();
    match tokio::time::timeout(HEALTH_TIMEOUT, endpoint.request("GET", "/healthz", &[], "")).await {
        Err(_) => Err(format!("no answer within {HEALTH_TIMEOUT:?}")),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok((200, body))) if body.trim() == "ok" => Ok(started.elapsed().as_secs_f64() * 1000.0),
        Ok(Ok((status, body))) => Err(format!("HTTP {status}: {}", body.trim())),
    }
}

/// The prober's counters while it runs.
#[derive(Default)]
pub(super) struct Live {
    probes: AtomicU64,
    pub(super) failures: AtomicU64,
    samples: Mutex<Vec<String>>,
    slowest_us: AtomicU64,
}

impl Live {
    /// The report, with whether the server answered after the run.
    pub(super) fn report(&self, answering_after: bool) -> HealthReport {
        HealthReport {
            probes: get(&self.probes),
            failures: get(&self.failures),
            failure_samples: self.samples.lock().map(|s| s.clone()).unwrap_or_default(),
            slowest_ms: get(&self.slowest_us) as f64 / 1000.0,
            answering_after,
        }
    }
}

/// Probes once a second until `deadline`.
pub(super) async fn run(endpoint: Endpoint, deadline: Instant, started: Instant, live: Arc<Live>) {
    let mut tick = paced(HEALTH_EVERY);
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
                    && s.len() < SAMPLES
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

/// Whether the server answers `/healthz` within a few attempts, a second apart.
pub(super) async fn answering_after(endpoint: &Endpoint) -> bool {
    for attempt in 0..HEALTH_AFTER_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        if probe(endpoint).await.is_ok() {
            return true;
        }
    }
    false
}
