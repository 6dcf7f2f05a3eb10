//! Where the bench connects and as whom: tokens minted or logged in per player, WebSockets from
//! one of several loopback source addresses, and the bench's own sessions (standing by Marisol
//! with the gossip loop open) and echo connections.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Semaphore;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::script::{self, Answer, classify};
use crate::connection::handshake;
use crate::error::{Result, SimError};
use crate::http::Endpoint;

/// A WebSocket over plain TCP.
pub type Ws = WebSocketStream<TcpStream>;

/// How long one answer may take before it counts as an error.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(15);

/// The `i`-th connection's loopback source address, 127.0.0.1 ..= 127.0.0.`n` (`n` at most
/// 250): many connections spread over several addresses do not run out of ephemeral ports.
pub fn source_ip(i: usize, n: usize) -> Ipv4Addr {
    let n = n.clamp(1, 250);
    Ipv4Addr::new(127, 0, 0, 1 + (i % n) as u8)
}

/// Where to connect and as whom.
#[derive(Clone, Debug)]
pub struct Target {
    pub endpoint: Endpoint,
    /// Mint tokens with this secret instead of logging in (the server's `--auth-secret`).
    pub auth_secret: Option<String>,
    /// Loopback source addresses to spread connections over (127.0.0.1 .. 127.0.0.k), so many
    /// connections do not run out of ephemeral ports.
    pub source_ips: usize,
    /// Client-side WebSocket read buffer.
    pub read_buffer: usize,
    /// Makes player ids unique to this run.
    pub run_id: String,
}

impl Target {
    /// A token for player number `i` of this run.
    pub async fn token(&self, i: usize) -> Result<String> {
        match &self.auth_secret {
            Some(secret) => {
                let now = crate::auth::unix_now();
                let player = format!("bench-{}-{i}", self.run_id);
                Ok(crate::auth::mint(secret, &player, now, now + 24 * 3600))
            }
            None => {
                let device = format!("bench-{}-{i}", self.run_id);
                Ok(crate::session::device_login(&self.endpoint, &device)
                    .await?
                    .token)
            }
        }
    }

    /// Opens a WebSocket to `path` with `token`, from source address number `i`.
    pub async fn open(&self, path: &str, token: &str, i: usize) -> Result<Ws> {
        let addr: SocketAddr = tokio::net::lookup_host(&self.endpoint.authority)
            .await?
            .next()
            .ok_or_else(|| SimError::BadUrl(self.endpoint.authority.clone()))?;
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        if self.source_ips > 1 && addr.ip().is_loopback() && addr.is_ipv4() {
            socket.bind(SocketAddr::new(
                IpAddr::V4(source_ip(i, self.source_ips)),
                0,
            ))?;
        }
        let stream = socket.connect(addr).await?;
        stream.set_nodelay(true)?;
        let config = WebSocketConfig::default()
            .read_buffer_size(self.read_buffer)
            .write_buffer_size(0);
        let url = format!("ws://{}{path}?token={token}", self.endpoint.authority);
        handshake(
            path,
            tokio_tungstenite::client_async_with_config(url, stream, Some(config)),
        )
        .await
    }
}

/// The next text frame, within the answer timeout.
pub(super) async fn next_text(ws: &mut Ws) -> Result<String> {
    loop {
        let frame = tokio::time::timeout(ANSWER_TIMEOUT, ws.next())
            .await
            .map_err(|_| SimError::Timeout(ANSWER_TIMEOUT))?;
        match frame {
            Some(Ok(Message::Text(text))) => return Ok(text.as_str().to_owned()),
            Some(Ok(Message::Close(_))) | None => return Err(SimError::Closed),
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(e.into()),
        }
    }
}

/// Sends `text` and reads up to its `ack`; every frame before it, or the refusal.
pub(super) async fn request(ws: &mut Ws, text: String) -> Result<Vec<String>> {
    ws.send(Message::Text(text.clone().into())).await?;
    let mut before = Vec::new();
    loop {
        let frame = next_text(ws).await?;
        match classify(&frame) {
            Answer::Ack => return Ok(before),
            Answer::Error => return Err(SimError::Protocol(format!("`{text}` → {frame}"))),
            Answer::Other => before.push(frame),
        }
    }
}

/// A session of the bench's own: logged in, welcomed, standing by Marisol with the gossip
/// loop on screen, ready for laps.
pub async fn step_session(target: &Target, i: usize) -> Result<Ws> {
    let token = target.token(i).await?;
    let mut ws = target.open("/v1/ws", &token, i).await?;
    let welcome = next_text(&mut ws).await?;
    if !welcome.starts_with(r#"{"type":"welcome""#) {
        return Err(SimError::Protocol(format!(
            "expected welcome, got {welcome}"
        )));
    }
    let [x, y, z] = script::SPAWN;
    request(
        &mut ws,
        format!(r#"{{"type":"move","id":1,"position":[{x:?},{y:?},{z:?}]}}"#),
    )
    .await?;
    let opened = request(
        &mut ws,
        format!(
            r#"{{"type":"talk","id":2,"npc":"{}","instance":"{}"}}"#,
            script::NPC,
            script::INSTANCE
        ),
    )
    .await?;
    let entry = format!(r#""entry":"{}""#, script::ENTRY);
    if !opened.iter().any(|m| m.contains(&entry)) {
        return Err(SimError::Protocol(format!(
            "talking to {} did not open on {}: {opened:?}",
            script::NPC,
            script::ENTRY
        )));
    }
    request(
        &mut ws,
        format!(
            r#"{{"type":"choose","id":3,"response":"{}"}}"#,
            script::INTO_LOOP
        ),
    )
    .await?;
    Ok(ws)
}

/// An echo connection for player number `i` (the same token check as a session).
pub async fn echo_connection(target: &Target, i: usize) -> Result<Ws> {
    let token = target.token(i).await?;
    target.open("/bench/echo", &token, i).await
}

/// Opens `n` of something with at most `parallel` openings at once, in order.
pub(super) async fn open_all<T, F, Fut>(n: usize, parallel: usize, open: F) -> Result<Vec<T>>
where
    T: Send + 'static,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<T>> + Send + 'static,
{
    let gate = Arc::new(Semaphore::new(parallel.max(1)));
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let gate = gate.clone();
        let fut = open(i);
        tasks.push(tokio::spawn(async move {
            let _permit = gate.acquire().await;
            fut.await
        }));
    }
    let mut out = Vec::with_capacity(n);
    for task in tasks {
        out.push(task.await.map_err(|e| SimError::Other(e.to_string()))??);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_addresses_stay_on_loopback() {
        assert_eq!(source_ip(0, 8), Ipv4Addr::new(127, 0, 0, 1));
        assert_eq!(source_ip(9, 8), Ipv4Addr::new(127, 0, 0, 2));
        assert_eq!(source_ip(7, 1), Ipv4Addr::new(127, 0, 0, 1));
        assert_eq!(source_ip(999, 1000), Ipv4Addr::new(127, 0, 0, 250));
        assert!((0..1000).all(|i| source_ip(i, 300).is_loopback()));
    }
}
