//! `banter-server serve` and `banter-server migrate`: the process around [`crate::run`].
//!
//! This is the only place that owns a runtime, installs the log subscriber and listens for
//! SIGINT and SIGTERM; everything inside `run` is what tests drive directly.

use std::io::Write;

use crate::config::{Config, LogFormat, ServeArgs};

use super::{EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE};

/// How long the runtime waits for tasks still running after [`crate::run`] returned.
const SHUTDOWN_STRAGGLERS: std::time::Duration = std::time::Duration::from_millis(100);

pub(crate) fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
}

fn init_logs(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colours only for a person at a terminal, never into a file or a log shipper.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi);
    let _ = match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// SIGINT (Ctrl-C) or SIGTERM (an orchestrator stopping the container).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

pub fn run(args: &ServeArgs, err: &mut dyn Write) -> std::io::Result<u8> {
    let config = match Config::from_args(args) {
        Ok(config) => config,
        Err(e) => {
            writeln!(err, "error: {e}")?;
            return Ok(EXIT_USAGE);
        }
    };
    init_logs(args.log_format);
    let runtime = runtime()?;
    let result = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.bind).await?;
        crate::run(config, listener, shutdown_signal()).await
    });
    // `run` kept to the shutdown grace; a task still blocked on a database that is down (a
    // SQLite call on a blocking thread, say) must not hold the process past it.
    runtime.shutdown_timeout(SHUTDOWN_STRAGGLERS);
    match result {
        Ok(()) => Ok(EXIT_OK),
        Err(e) => {
            writeln!(err, "error: {e}")?;
            Ok(EXIT_PROBLEMS)
        }
    }
}

pub fn migrate(
    database_url: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<u8> {
    let runtime = runtime()?;
    match runtime.block_on(crate::store::migrate(database_url)) {
        Ok(()) => {
            writeln!(out, "migrations applied to {}", redact(database_url))?;
            Ok(EXIT_OK)
        }
        Err(e) => {
            writeln!(err, "error: {e}")?;
            Ok(EXIT_PROBLEMS)
        }
    }
}

/// A database URL without its password, for messages.
pub(crate) fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            super::redact("postgres://app:hunter2@db:5432/banter"),
            "postgres://app:***@db:5432/banter"
        );
        assert_eq!(
            super::redact("sqlite://data/banter.db"),
            "sqlite://data/banter.db"
        );
    }
}
