//! Banter's server crate: the HTTP and WebSocket service that hosts each player's conversation,
//! and the content tools a writer runs from a terminal.
//!
//! The binary is a thin `main` over [`cli`]; commands take their output streams as arguments,
//! so tests run them in-process and the exit codes are part of their contract. The service's
//! entry is [`run`]: tests start it on `127.0.0.1:0` and stop it with their own signal.

pub mod analytics;
pub mod api_error;
pub mod app;
pub mod audit;
pub mod auth;
pub mod background;
pub mod channel;
pub mod channels;
pub mod cli;
pub mod clock;
pub mod config;
pub mod credentials;
pub mod events;
pub mod http;
pub mod hub;
pub mod incident;
pub mod listen;
pub mod metrics;
pub mod migrations;
#[cfg(test)]
mod module_cycles;
pub mod outbox;
pub mod plans;
pub mod playground;
pub mod quests;
pub mod reload;
pub mod resume;
pub mod rooms;
pub mod served;
pub mod session;
pub mod store;
#[cfg(test)]
mod testing;
pub mod world;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::app::App;
use crate::config::Config;
use crate::served::{ContentErrors, ContentVersion, ServedContent};
use crate::store::{ConnectOptions, StoreError};

/// Why the server could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Content(#[from] ContentErrors),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("configuration: {0}")]
    Config(#[from] config::ConfigError),
    #[error("network: {0}")]
    Io(#[from] std::io::Error),
    #[error("content: {0}")]
    Stranded(String),
}

/// What is left of the grace when the process must be done: a margin for the runtime to wind
/// down and the process to exit before an orchestrator's SIGKILL at exactly the grace.
const EXIT_MARGIN: Duration = Duration::from_millis(250);

/// When each step of a shutdown must be done, from the moment the signal arrived and the grace
/// (`--shutdown-grace`). Sessions get the first 60 % (they were told at the signal and mostly
/// close at once; one stuck on a database that is down is what this bounds), the audit queue's
/// flush runs to 90 %, and the store is closed by the grace less [`EXIT_MARGIN`].
#[derive(Clone, Copy, Debug)]
pub struct ShutdownBudget {
    pub sessions: tokio::time::Instant,
    pub audit: tokio::time::Instant,
    pub store: tokio::time::Instant,
}

impl ShutdownBudget {
    pub fn new(signalled: tokio::time::Instant, grace: Duration) -> ShutdownBudget {
        let end = signalled + grace.saturating_sub(EXIT_MARGIN);
        ShutdownBudget {
            sessions: (signalled + grace.mul_f64(0.6)).min(end),
            audit: (signalled + grace.mul_f64(0.9)).min(end),
            store: end,
        }
    }
}

/// Runs the service on `listener` until `shutdown` completes, then stops accepting, tells every
/// open session why, waits for them, flushes the audit queue and closes the store, all within
/// the configured shutdown grace whatever the database is doing (see [`ShutdownBudget`]).
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    config.validate()?;
    let library = ContentVersion::load(&config.content, 1)?;
    let store = store::connect(&config.database_url, ConnectOptions::default()).await?;
    tracing::info!(
        backend = store.backend(),
        conversations = library.conversations.len(),
        npcs = library.npcs.len(),
        "content loaded, store ready"
    );
    // A start on new content is a push too: its migrations are applied, and it is refused if
    // it would strand a player.
    if let Err(refused) = migrations::admit(store.as_ref(), &config.content, &library).await {
        store.close().await;
        return Err(match refused {
            migrations::NotAdmitted::Content(reason) => ServerError::Stranded(reason),
            migrations::NotAdmitted::Store(e) => e.into(),
        });
    }
    let content = ServedContent::new(config.content.clone(), library);
    let app = Arc::new(App::new(config, content, store));
    let router = http::router(app.clone());

    #[cfg(unix)]
    let reload_task = tokio::spawn(reload_on_sighup(app.clone()));
    let claims_task = tokio::spawn(watch_claims(app.clone()));
    tokio::spawn(channel::watch_revocations(app.clone()));
    let audit_stop = tokio_util::sync::CancellationToken::new();
    let audit_queue = match app.audit_queue.lock() {
        Ok(mut queue) => queue.take(),
        Err(poisoned) => poisoned.into_inner().take(),
    };
    let audit_task = audit_queue.map(|queue| {
        tokio::spawn(audit::run_writer(
            app.store.clone(),
            app.audit.clone(),
            app.config.audit.retention,
            queue,
            audit_stop.clone(),
        ))
    });
    let analytics_task = tokio::spawn(analytics::run_flusher(
        app.analytics.clone(),
        app.store.clone(),
        audit_stop.clone(),
    ));
    if let Some(quiet) = app.config.watch_content {
        // Taken here, before the first request is served, not when the task first runs: a
        // change made as soon as the server answers must not become the watcher's baseline.
        let served = reload::folder_fingerprint(app.content.dir()).await;
        tokio::spawn(reload::watch_content(app.clone(), quiet, served));
    }

    let addr = listener.local_addr()?;
    tracing::info!(%addr, "listening");
    let stop = app.shutdown.clone();
    let signalled = Arc::new(std::sync::OnceLock::new());
    let signal_time = signalled.clone();
    listen::serve(app.clone(), listener, router, async move {
        shutdown.await;
        let _ = signal_time.set(tokio::time::Instant::now());
        tracing::info!("shutting down: no new connections; telling sessions");
        stop.cancel();
    })
    .await;
    let signalled = signalled
        .get()
        .copied()
        .unwrap_or_else(tokio::time::Instant::now);
    let budget = ShutdownBudget::new(signalled, app.config.shutdown_grace);

    // Upgraded WebSockets live outside the HTTP server's own drain; wait for them here.
    app.shutdown.cancel();
    app.sessions.close();
    if tokio::time::timeout_at(budget.sessions, app.sessions.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            sessions = app.sessions.len(),
            "some sessions did not end within the shutdown grace"
        );
    }
    #[cfg(unix)]
    reload_task.abort();
    claims_task.abort();
    // The sessions are gone: write what the audit queue still holds, then close the store.
    audit_stop.cancel();
    if let Some(mut task) = audit_task
        && tokio::time::timeout_at(budget.audit, &mut task)
            .await
            .is_err()
    {
        task.abort();
    }
    // The sessions' last conversations are tallied: add them to the store in the same grace.
    if tokio::time::timeout_at(budget.audit, analytics_task)
        .await
        .is_err()
    {
        tracing::warn!("narrative analytics not written before shutdown");
    }
    let unwritten = app.audit.unwritten();
    if unwritten > 0 {
        // Best-effort records only (refusals and plain steps): a step that changed a player's
        // state wrote its audit row in its own transaction.
        tracing::warn!(
            records = unwritten,
            "audit records not written before shutdown"
        );
    }
    if tokio::time::timeout_at(budget.store, app.store.close())
        .await
        .is_err()
    {
        tracing::warn!("the store did not close within the shutdown grace");
    }
    tracing::info!(seconds = signalled.elapsed().as_secs_f64(), "stopped");
    Ok(())
}

#[cfg(unix)]
async fn reload_on_sighup(app: app::SharedApp) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        tracing::warn!("cannot listen for SIGHUP; reload through /admin/reload only");
        return;
    };
    while hangups.recv().await.is_some() {
        let _ = reload::reload(&app, reload::ReloadOptions::default()).await;
    }
}

/// Follows the session claims every instance makes (the store's LISTEN/NOTIFY on PostgreSQL) and
/// closes local sessions a newer claim replaced. After missed notifications (a reconnection) it
/// asks the store who holds each local player. Ends when the store closes.
async fn watch_claims(app: app::SharedApp) {
    use futures_util::StreamExt;
    if !app.config.coordinate_sessions {
        return;
    }
    loop {
        let mut claims = match app.store.session_claims().await {
            Ok(stream) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "cannot follow session claims; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        while let Some(event) = claims.next().await {
            match event {
                store::ClaimEvent::Claimed(claim) => {
                    if app.hub.on_claim(&claim) {
                        app.metrics.session_taken_over();
                    }
                }
                store::ClaimEvent::Resync => resync_claims(&app).await,
            }
        }
        if app.shutdown.is_cancelled() {
            return;
        }
        // The stream ends when the store closes; anything else is worth a new subscription.
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn resync_claims(app: &app::SharedApp) {
    for (player, _, _) in app.hub.claims() {
        match app.store.session_owner(&player).await {
            Ok(Some(owner)) => {
                if app.hub.on_claim(&owner) {
                    app.metrics.session_taken_over();
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(error = %e, "cannot resync session claims");
                return;
            }
        }
    }
}
