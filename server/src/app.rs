//! What every request and session shares: configuration, content, store, metrics, the hub.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::TokenKey;
use crate::config::Config;
use crate::hub::Hub;
use crate::library::ContentHandle;
use crate::metrics::Metrics;
use crate::store::Store;

pub struct App {
    pub config: Config,
    pub content: ContentHandle,
    pub store: Arc<dyn Store>,
    pub metrics: Metrics,
    pub hub: Hub,
    pub tokens: TokenKey,
    /// Cancelled when the server shuts down: every session says goodbye and closes.
    pub shutdown: CancellationToken,
    /// Every session task, so shutdown can wait for them.
    pub sessions: TaskTracker,
    next_session: AtomicU64,
    /// When the server started: the time base of bodies and cooldowns, which outlive sessions.
    pub started: tokio::time::Instant,
}

impl App {
    pub fn new(config: Config, content: ContentHandle, store: Arc<dyn Store>) -> App {
        App {
            tokens: TokenKey::new(&config.auth_secret),
            config,
            content,
            store,
            metrics: Metrics::default(),
            hub: Hub::default(),
            shutdown: CancellationToken::new(),
            sessions: TaskTracker::new(),
            next_session: AtomicU64::new(1),
            started: tokio::time::Instant::now(),
        }
    }

    /// Time since the server started.
    pub fn now(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    pub fn next_session_id(&self) -> u64 {
        self.next_session.fetch_add(1, Ordering::Relaxed)
    }
}

/// Seconds since the Unix epoch, for token expiry. The one wall-clock read in the server.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub type SharedApp = Arc<App>;
