//! What every request and session shares: configuration, content, store, metrics, the hub.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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
    pub hub: Arc<Hub>,
    /// Conversations of dropped connections, waiting for a `resume`.
    /// Which players' conversations this process parked, with the content version each opened
    /// with (the walk itself is in the store).
    pub parked: crate::resume::ParkingLot<Arc<crate::served::ContentVersion>>,
    /// The sessions' side of the audit log; its writer (`audit::run_writer`) holds it too.
    pub audit: Arc<AuditLog>,
    /// Narrative analytics waiting for the store; its flusher (`analytics::run_flusher`) holds
    /// it too.
    pub analytics: Arc<crate::analytics::Analytics>,
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
    /// Time since the server started: the time base of bodies and cooldowns, which outlive
    /// sessions.
    pub uptime: crate::clock::Uptime,
    /// Sessions between their upgrade and their welcome (loading the player, claiming it), at
    /// most `limits.max_session_starts`: a storm of connections cannot queue unbounded work on
    /// the store pool ahead of the requests of players already in conversation.
    pub session_starts: Arc<tokio::sync::Semaphore>,
    /// The game-server channels open on this instance.
    pub channels: crate::channels::Channels,
    /// The shared conversations open on this instance, by party (PROTOCOL.md section 17).
    pub rooms: crate::rooms::Rooms,
}

impl App {
    pub fn new(config: Config, content: ServedContent, store: Arc<dyn Store>) -> App {
        let (audit, audit_queue) = AuditLog::new(&config.audit);
        let config_session_starts = config.limits.max_session_starts;
        let hub = Arc::new(Hub::default());
        let rooms = {
            let hub = Arc::clone(&hub);
            crate::rooms::Rooms::delivering(move |delivery| {
                hub.notify(
                    &delivery.player,
                    crate::hub::Control::Shared(Box::new(delivery.event)),
                );
            })
        };
        let mut metrics = Metrics::default();
        if let Some(timings) = store.write_timings() {
            metrics.serve_write_timings(&timings);
        }
        App {
            audit: Arc::new(audit),
            analytics: Arc::new(crate::analytics::Analytics::new(config.analytics)),
            audit_queue: std::sync::Mutex::new(audit_queue),
            tokens: TokenKey::new(&config.auth_secret),
            config,
            content,
            store,
            metrics,
            hub,
            parked: crate::resume::ParkingLot::default(),
            shutdown: CancellationToken::new(),
            sessions: TaskTracker::new(),
            next_session: AtomicU64::new(1),
            instance: instance_id(),
            uptime: crate::clock::Uptime::start(),
            session_starts: Arc::new(tokio::sync::Semaphore::new(config_session_starts)),
            channels: crate::channels::Channels::default(),
            rooms,
        }
    }

    /// Time since the server started.
    pub fn now(&self) -> std::time::Duration {
        self.uptime.now()
    }

    /// The server time at `instant`, for a caller that read the clock already.
    pub fn uptime_at(&self, instant: tokio::time::Instant) -> std::time::Duration {
        self.uptime.at(instant)
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
    format!("i{:x}-{:x}", std::process::id(), crate::clock::unix_nanos())
}

pub type SharedApp = Arc<App>;
