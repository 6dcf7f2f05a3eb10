//! How an abuser reaches the server: a TCP connection from one of the loopback source addresses
//! (with a small receive buffer when asked), and a WebSocket upgrade whose answer is kept as a
//! status or a short label, never an error that ends the abuser.

use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tokio::net::{TcpSocket, TcpStream};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::client::Request;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::http::header::AUTHORIZATION;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self};

use super::figures::Tally;
use crate::auth::{mint, unix_now};
use crate::bench::source_ip;
use crate::error::{Result, SimError};

/// A WebSocket over plain TCP.
pub type Ws = WebSocketStream<TcpStream>;

/// How long a TCP connect or a WebSocket upgrade may take before it counts as a failure.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where an upgrade carries its token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenVia {
    Query,
    Header,
}

/// The upgrade request for `/v1/ws` with `token` in the query string or an `Authorization`
/// header (docs/PROTOCOL.md section 1 allows both; replays go both ways).
pub fn upgrade_request(authority: &str, token: &str, via: TokenVia) -> Result<Request> {
    let url = match via {
        TokenVia::Query => format!("ws://{authority}/v1/ws?token={token}"),
        TokenVia::Header => format!("ws://{authority}/v1/ws"),
    };
    let mut request = url.into_client_request()?;
    if via == TokenVia::Header {
        let value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|e| SimError::Other(format!("token not fit for a header: {e}")))?;
        request.headers_mut().insert(AUTHORIZATION, value);
    }
    Ok(request)
}

/// A short label for an I/O failure, fit for a tally.
pub fn io_label(e: &std::io::Error) -> String {
    format!("{:?}", e.kind())
}

/// A short label for a WebSocket failure, fit for a tally.
pub fn ws_label(e: &tungstenite::Error) -> String {
    match e {
        tungstenite::Error::Io(e) => io_label(e),
        tungstenite::Error::Http(response) => response.status().as_u16().to_string(),
        tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed => {
            "closed".to_owned()
        }
        tungstenite::Error::Protocol(p) => format!("protocol: {p}"),
        other => format!("websocket: {other}"),
    }
}

/// Where the server is and what every abuser shares: the source addresses, the token secret,
/// and when the run ends.
pub struct Dialer {
    pub addr: SocketAddr,
    pub authority: String,
    pub source_ips: usize,
    pub secret: String,
    pub deadline: Instant,
}

/// The outcome of an upgrade attempt.
pub enum Upgrade {
    Accepted(Box<Ws>),
    /// The server answered with this status instead of `101`.
    Refused(u16),
    /// No answer: the label says why.
    Failed(String),
}

impl Upgrade {
    /// The tally label of an upgrade that did not get a session: the status, or why not.
    pub fn label(&self) -> String {
        match self {
            Upgrade::Accepted(_) => "101".to_owned(),
            Upgrade::Refused(status) => status.to_string(),
            Upgrade::Failed(why) => why.clone(),
        }
    }
}

impl Dialer {
    /// A TCP connection from source address number `i`, with SO_RCVBUF set first when asked
    /// (before the connect, so the window the server sees is the small one from the start).
    pub async fn tcp(&self, i: usize, rcvbuf: Option<u32>) -> std::io::Result<TcpStream> {
        let socket = if self.addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        if let Some(size) = rcvbuf {
            socket.set_recv_buffer_size(size)?;
        }
        if self.source_ips > 1 && self.addr.is_ipv4() && self.addr.ip().is_loopback() {
            socket.bind(SocketAddr::new(
                IpAddr::V4(source_ip(i, self.source_ips)),
                0,
            ))?;
        }
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, socket.connect(self.addr))
            .await
            .map_err(|_| std::io::Error::new(ErrorKind::TimedOut, "connect timed out"))??;
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    /// Upgrades `/v1/ws` with `token`.
    pub async fn upgrade(
        &self,
        i: usize,
        token: &str,
        via: TokenVia,
        rcvbuf: Option<u32>,
    ) -> Upgrade {
        let request = match upgrade_request(&self.authority, token, via) {
            Ok(r) => r,
            Err(e) => return Upgrade::Failed(format!("request: {e}")),
        };
        let stream = match self.tcp(i, rcvbuf).await {
            Ok(s) => s,
            Err(e) => return Upgrade::Failed(format!("connect: {}", io_label(&e))),
        };
        // A small read buffer: abusers read little, and their memory is the honest client's.
        let config = WebSocketConfig::default()
            .read_buffer_size(4096)
            .write_buffer_size(0);
        let handshake = tokio_tungstenite::client_async_with_config(request, stream, Some(config));
        match tokio::time::timeout(CONNECT_TIMEOUT, handshake).await {
            Err(_) => Upgrade::Failed("upgrade: TimedOut".to_owned()),
            Ok(Ok((ws, _))) => Upgrade::Accepted(Box::new(ws)),
            Ok(Err(tungstenite::Error::Http(response))) => {
                Upgrade::Refused(response.status().as_u16())
            }
            Ok(Err(e)) => Upgrade::Failed(format!("upgrade: {}", ws_label(&e))),
        }
    }

    /// A session for `player` from source address `i`: upgrades until one is accepted, a second
    /// apart, each refusal tallied in `refusals`; `None` once the run is over.
    pub async fn session(
        &self,
        i: usize,
        player: &str,
        rcvbuf: Option<u32>,
        refusals: &Tally,
    ) -> Option<Ws> {
        while Instant::now() < self.deadline {
            let token = self.token(player);
            match self.upgrade(i, &token, TokenVia::Query, rcvbuf).await {
                Upgrade::Accepted(ws) => return Some(*ws),
                refused => {
                    refusals.add(refused.label());
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
        None
    }

    /// A token for `player`, valid for the next hour.
    pub fn token(&self, player: &str) -> String {
        let now = unix_now();
        mint(&self.secret, player, now, now + 3600)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upgrade_requests_carry_the_token_where_asked() {
        let q = upgrade_request("127.0.0.1:7350", "abc.def.ghi", TokenVia::Query).expect("query");
        assert_eq!(q.uri().path(), "/v1/ws");
        assert_eq!(q.uri().query(), Some("token=abc.def.ghi"));
        assert!(q.headers().get(AUTHORIZATION).is_none());
        let h = upgrade_request("127.0.0.1:7350", "abc.def.ghi", TokenVia::Header).expect("header");
        assert_eq!(h.uri().query(), None);
        assert_eq!(
            h.headers().get(AUTHORIZATION).and_then(|v| v.to_str().ok()),
            Some("Bearer abc.def.ghi")
        );
        // The upgrade's own headers are there: it is a real WebSocket handshake.
        assert!(h.headers().contains_key("sec-websocket-key"));
    }
}
