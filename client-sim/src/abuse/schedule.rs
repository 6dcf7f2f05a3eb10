//! When the abusers act: open-loop schedules at a fixed rate (churn, replay), workers ramped in
//! over the start of the run (slowloris, never-reading, malformed), and which events carry
//! garbage. Open loop: a schedule never waits for the server, so a slow server sees the same
//! offered rate, and the report shows what was achieved.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::{Instant, Interval, MissedTickBehavior};

use super::dial::CONNECT_TIMEOUT;

/// When event `k` of an open-loop schedule at `rate` per second is due, counted from its start.
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

/// What an open-loop schedule did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Ran {
    pub attempted: u64,
    /// Due attempts not started because `in_flight` were still running (the client behind).
    pub skipped: u64,
    /// How long the schedule ran, in seconds.
    pub seconds: f64,
}

impl Ran {
    /// `count` per second over the schedule's run, rounded; 0 for a schedule that never ran.
    pub fn per_sec(&self, count: u64) -> f64 {
        if self.seconds > 0.0 {
            (count as f64 / self.seconds).round()
        } else {
            0.0
        }
    }
}

/// Runs `attempt(k)` for k = 0, 1, ... on an open-loop schedule at `rate` until the deadline,
/// at most `in_flight` at once (a due attempt beyond it is skipped and counted), then waits for
/// the stragglers.
pub async fn open_loop<F, Fut>(rate: f64, in_flight: usize, deadline: Instant, attempt: F) -> Ran
where
    F: Fn(u64) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let gate = Arc::new(Semaphore::new(in_flight));
    let start = Instant::now();
    let mut ran = Ran::default();
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
                ran.attempted += 1;
            }
            Err(_) => ran.skipped += 1,
        }
        k += 1;
    }
    ran.seconds = start.elapsed().as_secs_f64();
    let everyone = u32::try_from(in_flight).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(CONNECT_TIMEOUT * 2, gate.acquire_many(everyone)).await;
    ran
}

/// A ticker every `period`, first tick at once, that waits a whole period after a late tick
/// rather than bursting to catch up: an abuser's pace, never faster than asked.
pub fn paced(period: Duration) -> Interval {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    tick
}

/// Runs `n` workers, started evenly over the first tenth of the run (two seconds at most) rather
/// than in one burst, each handed its index and start time; returns when all have ended.
pub async fn ramped<W, F>(n: usize, duration: Duration, worker: W)
where
    W: Fn(usize, Instant) -> F,
    F: Future<Output = ()> + Send + 'static,
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[tokio::test(start_paused = true)]
    async fn an_open_loop_runs_what_is_due_and_skips_what_cannot_start() {
        use std::sync::atomic::{AtomicU64, Ordering};
        let done = Arc::new(AtomicU64::new(0));
        let deadline = Instant::now() + Duration::from_secs(1);
        let counter = done.clone();
        // 100 attempts due in the second, each taking 50 ms, at most 2 at once: about one in
        // two and a half can start.
        let ran = open_loop(100.0, 2, deadline, move |_| {
            let counter = counter.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                counter.fetch_add(1, Ordering::Relaxed);
            }
        })
        .await;
        assert_eq!(ran.attempted + ran.skipped, 100, "{ran:?}");
        assert!(ran.skipped > 0 && ran.attempted > 0, "{ran:?}");
        assert_eq!(
            done.load(Ordering::Relaxed),
            ran.attempted,
            "the stragglers are awaited"
        );
        assert!(ran.per_sec(ran.attempted) > 0.0);
        assert_eq!(Ran::default().per_sec(10), 0.0);
    }
}
