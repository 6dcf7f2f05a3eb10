//! Where the server reads the time: the wall clock, for what must be read from it (token
//! expiry, the windows of parked conversations that every instance reads alike, the audit's
//! order, the instance's name), and [`Uptime`], the monotonic time since the server started that
//! bodies and cooldowns run on (`App::now`). Timers, deadlines and measured durations
//! (`tokio::time::sleep`, `timeout_at`, an `Instant` taken for a timeout or a histogram) are not
//! readings of the time and stay where they are used.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The server's monotonic clock: time since it started, the time base of bodies and cooldowns,
/// which outlive sessions. On tokio's clock, so a test with the clock paused controls it.
#[derive(Clone, Copy, Debug)]
pub struct Uptime {
    started: tokio::time::Instant,
}

impl Uptime {
    /// Starts counting now.
    pub fn start() -> Uptime {
        Uptime {
            started: tokio::time::Instant::now(),
        }
    }

    /// Time since [`Uptime::start`].
    pub fn now(&self) -> Duration {
        self.started.elapsed()
    }

    /// The uptime at `instant` (read by the caller, who needs the reading for more than this).
    pub fn at(&self, instant: tokio::time::Instant) -> Duration {
        instant.saturating_duration_since(self.started)
    }
}

/// Seconds since the Unix epoch, for token expiry.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Milliseconds since the Unix epoch: the windows of parked conversations, which every instance
/// on the database must read alike.
pub fn unix_millis() -> i64 {
    unix_micros().div_euclid(1000)
}

/// Microseconds since the Unix epoch: the wall-clock reading a message comes in with, in
/// [`Now`](crate::session::Now), from which its audit stamp and its milliseconds are taken.
pub fn unix_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// Nanoseconds since the Unix epoch: with the process id, the name of this instance among those
/// sharing the database (`App::instance`).
pub fn unix_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// The last stamp handed out (see [`stamp`]).
static LAST_STAMP: AtomicI64 = AtomicI64::new(0);

/// When the server records something, in microseconds since the Unix epoch, strictly increasing
/// within this process (a later call never gets an earlier or equal stamp, even when the wall
/// clock steps back or two calls share a microsecond): the order support reads a player's audit
/// rows in (`store::AuditRecord::recorded_us`).
pub fn stamp() -> i64 {
    stamp_at(unix_micros())
}

/// [`stamp`] for a wall-clock reading already taken (`unix_micros`): strictly after every stamp
/// handed out before, and no earlier than the reading.
pub fn stamp_at(reading_us: i64) -> i64 {
    let mut last = LAST_STAMP.load(Ordering::Relaxed);
    loop {
        let next = reading_us.max(last.saturating_add(1));
        match LAST_STAMP.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}
