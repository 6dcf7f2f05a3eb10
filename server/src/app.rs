//! What every request and session shares: configuration, content, store, metrics, the hub.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::audit::AuditLog;
use crate::auth::TokenKey;
use crate::config::Config;
use crate::hub::Hub;
use crate::metrics::Metrics;
use crate::served::ServedContent;
use crate::store::Store;

pub struct App {
    pub config: Config,
    pub content: ServedContent,
    pub store: Arc<dyn Store>,
    pub metrics: Metrics,
    pub hub: Hub,
    /// Conversations of dropped connections, waiting for a `resume`.
    /// Which players' conversations this process parked, with the content version each opened
    /// with (the walk itself is in the store).
    pub parked: crate::resume::ParkingLot<Arc<crate::served::ContentVersion>>,
    pub audit: AuditLog,
    /// Narrative analytics waiting for the store.
    pub analytics: crate::analytics::Analytics,
    /// The audit writer's end of the queue, taken once by `run`.
    pub audit_queue:
        std::sync::Mutex<Option<tokio::sync::mpsc::Receiver<crate::store::AuditRecord>>>,
    pub tokens: TokenKey,
    /// Cancelled when the server shuts down: every session says goodbye and closes.
    pub shutdown: CancellationToken,
    /// Every session task, so shutdown can wait for them.
    pub sessions: TaskTracker,
    next_session: AtomicU64,
    /// This process among the instances sharing the database: session claims name it.
    pub instance: String,
    /// When the server started: the time base of bodies and cooldowns, which outlive sessions.
    pub started: tokio::time::Instant,
    /// Sessions between their upgrade and their welcome (loading the player, claiming it), at
    /// most `limits.max_session_starts`: a storm of connections cannot queue unbounded work on
    /// the store pool ahead of the requests of players already in conversation.
    pub session_starts: Arc<tokio::sync::Semaphore>,
}

impl App {
    pub fn new(config: Config, content: ServedContent, store: Arc<dyn Store>) -> App {
        let (audit, audit_queue) = AuditLog::new(&config.audit);
        let config_session_starts = config.limits.max_session_starts;
        let mut metrics = Metrics::default();
        if let Some(timings) = store.write_timings() {
            metrics.serve_write_timings(&timings);
        }
        App {
            audit,
            analytics: crate::analytics::Analytics::new(config.analytics),
            audit_queue: std::sync::Mutex::new(audit_queue),
            tokens: TokenKey::new(&config.auth_secret),
            config,
            content,
            store,
            metrics,
            hub: Hub::default(),
            parked: crate::resume::ParkingLot::default(),
            shutdown: CancellationToken::new(),
            sessions: TaskTracker::new(),
            next_session: AtomicU64::new(1),
            instance: instance_id(),
            started: tokio::time::Instant::now(),
            session_starts: Arc::new(tokio::sync::Semaphore::new(config_session_starts)),
        }
    }

    /// Time since the server started.
    pub fn now(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    pub fn next_session_id(&self) -> u64 {
        self.next_session.fetch_add(1, Ordering::Relaxed)
    }

    /// A session's name among every instance's: `<instance>.<session>`.
    pub fn session_key(&self, session: u64) -> String {
        format!("{}.{session}", self.instance)
    }
}

/// A name for this process that no other instance on the database shares: the host's process
/// id and the start time in nanoseconds, in hex.
fn instance_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("i{:x}-{:x}", std::process::id(), nanos)
}

/// Milliseconds since the Unix epoch: the windows of parked conversations, which every instance
/// on the database must read alike.
pub fn unix_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Seconds since the Unix epoch, for token expiry. With [`instance_id`], [`unix_millis`] and
/// `audit::stamp`, the only wall-clock reads in the server: everything else runs on the
/// monotonic [`App::now`].
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub type SharedApp = Arc<App>;
