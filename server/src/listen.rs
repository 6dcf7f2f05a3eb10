//! The connection layer: TCP connections in, HTTP/1.1 requests (and WebSocket upgrades) out to
//! the router.
//!
//! This replaces `axum::serve` for what a server on the open internet needs and it does not do:
//! - **A header-read deadline.** hyper closes a connection whose request head has not fully
//!   arrived within [`Limits::handshake_timeout`], on the first request and between keep-alive
//!   requests alike. Without a timer set, a slowloris client that sends a header line every few
//!   seconds holds its socket (and a file descriptor) for ever.
//! - **A cap on connections still in their handshake** ([`Limits::max_handshakes`]). A connection
//!   counts from accept until its first request head is in; past the cap a new connection is
//!   closed at once, so handshakes in flight cannot eat the descriptors that sessions need.
//! - **A small request-head buffer** ([`HEAD_BUFFER_BYTES`]): an upgrade request is a few hundred
//!   bytes; hyper's default lets each connection buffer up to about 400 KB.
//! - **`TCP_NODELAY`** on every accepted socket: answers go out when written, not after Nagle
//!   waits for the peer's acknowledgement of the previous one.
//!
//! Upgraded WebSockets leave this layer: their sessions are tracked by [`crate::app::App`].

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::app::SharedApp;
use crate::config::Limits;

/// The most a connection buffers while reading a request head (hyper's minimum is 8 KiB).
pub const HEAD_BUFFER_BYTES: usize = 16 * 1024;

/// The longest shutdown waits for plain HTTP connections (not sessions) to finish their
/// request; less when the shutdown grace is short (a half of it).
const HTTP_DRAIN: Duration = Duration::from_secs(5);

/// How long the accept loop pauses after an error that is not about one connection (out of file
/// descriptors, say), so it does not spin while nothing can be accepted.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Accepts connections on `listener` and serves `router` on each until `shutdown` completes;
/// then stops accepting, lets requests in flight finish (briefly) and returns.
pub async fn serve(
    app: SharedApp,
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()>,
) {
    let limits = app.config.limits.clone();
    let handshakes = Arc::new(Semaphore::new(limits.max_handshakes));
    let connections = TaskTracker::new();
    let closing = CancellationToken::new();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => stream,
                Err(e) if is_per_connection(&e) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot accept connections; pausing");
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                    continue;
                }
            },
        };
        let Ok(permit) = handshakes.clone().try_acquire_owned() else {
            // Dropping the stream closes it: the peer sees the connection end and may retry.
            app.metrics.handshake_refused();
            continue;
        };
        // Best effort: a socket that refuses the option still works, just with Nagle's delay.
        let _ = stream.set_nodelay(true);
        // A fixed send buffer: the kernel would otherwise autotune it to megabytes, and a peer
        // that never reads would hold all of it (RELIABILITY.md, scenario 6).
        let _ =
            socket2::SockRef::from(&stream).set_send_buffer_size(limits.socket_send_buffer_bytes);
        connections.spawn(serve_connection(
            app.clone(),
            stream,
            router.clone(),
            permit,
            &limits,
            closing.clone(),
        ));
    }
    closing.cancel();
    connections.close();
    let drain = HTTP_DRAIN.min(app.config.shutdown_grace / 2);
    if tokio::time::timeout(drain, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!("some HTTP requests did not finish in time");
    }
}

/// Errors `accept` returns for one connection that failed before it was handed over; the
/// listener itself is fine.
fn is_per_connection(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    )
}

fn serve_connection(
    app: SharedApp,
    stream: TcpStream,
    router: Router,
    permit: OwnedSemaphorePermit,
    limits: &Limits,
    closing: CancellationToken,
) -> impl Future<Output = ()> + Send + 'static {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.handshake_timeout)
        .max_buf_size(HEAD_BUFFER_BYTES);
    async move {
        app.metrics.http_connection_opened();
        // The permit goes back when the first request head is in: from then on the connection
        // is a request being served or an upgraded session, no longer a handshake.
        let permit = Mutex::new(Some(permit));
        let router = TowerToHyperService::new(router);
        let service = hyper::service::service_fn(move |request| {
            if let Ok(mut held) = permit.lock() {
                held.take();
            }
            hyper::service::Service::call(&router, request)
        });
        let connection = builder
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades();
        tokio::pin!(connection);
        let result = tokio::select! {
            result = connection.as_mut() => result,
            _ = closing.cancelled() => {
                connection.as_mut().graceful_shutdown();
                connection.await
            }
        };
        if let Err(e) = result {
            if e.is_timeout() {
                app.metrics.handshake_timed_out();
            } else {
                tracing::debug!(error = %e, "HTTP connection ended with an error");
            }
        }
        app.metrics.http_connection_closed();
    }
}
