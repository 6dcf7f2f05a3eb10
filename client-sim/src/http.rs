//! Where the server is, and the few HTTP requests a client makes (device login, game events):
//! a minimal HTTP/1.1 client over a TCP stream, so the simulator needs no HTTP stack.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::{Result, SimError};

/// How long one HTTP exchange may take.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(15);

/// The server's address, from `--url`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// `host:port`.
    pub authority: String,
}

impl Endpoint {
    /// Parses `http://HOST:PORT`, `ws://HOST:PORT` or `HOST:PORT` (a trailing `/` or path is
    /// ignored). TLS schemes are refused: the simulator speaks plain HTTP and WebSocket.
    pub fn parse(url: &str) -> Result<Endpoint> {
        let rest = ["http://", "ws://"]
            .iter()
            .find_map(|scheme| url.strip_prefix(scheme))
            .unwrap_or(url);
        if rest.contains("://") {
            return Err(SimError::BadUrl(url.to_owned()));
        }
        let authority = rest.split('/').next().unwrap_or_default();
        let valid = authority
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !valid {
            return Err(SimError::BadUrl(url.to_owned()));
        }
        Ok(Endpoint {
            authority: authority.to_owned(),
        })
    }

    /// The WebSocket URL carrying `token` in the query string.
    pub fn ws_url(&self, token: &str) -> String {
        format!("ws://{}/v1/ws?token={token}", self.authority)
    }

    /// One HTTP request; the status and the body. `Connection: close`, so the body is whatever
    /// comes before the server closes.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Result<(u16, String)> {
        tokio::time::timeout(
            HTTP_TIMEOUT,
            self.request_inner(method, path, headers, body),
        )
        .await
        .map_err(|_| SimError::Timeout(HTTP_TIMEOUT))?
    }

    async fn request_inner(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Result<(u16, String)> {
        let mut stream = TcpStream::connect(&self.authority).await?;
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.authority,
            body.len()
        );
        for (name, value) in headers {
            request.push_str(name);
            request.push_str(": ");
            request.push_str(value);
            request.push_str("\r\n");
        }
        request.push_str("\r\n");
        request.push_str(body);
        stream.write_all(request.as_bytes()).await?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await?;
        parse_response(&response).ok_or_else(|| {
            SimError::Protocol(format!(
                "not an HTTP response: {:?}",
                String::from_utf8_lossy(&response[..response.len().min(80)])
            ))
        })
    }

    /// A JSON POST; the status and the body.
    pub async fn post_json(
        &self,
        path: &str,
        bearer: Option<&str>,
        body: &str,
    ) -> Result<(u16, String)> {
        let auth = bearer.map(|b| format!("Bearer {b}"));
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(auth) = auth.as_deref() {
            headers.push(("Authorization", auth));
        }
        self.request("POST", path, &headers, body).await
    }
}

/// Status and body of a raw HTTP/1.1 response (chunked bodies are decoded).
fn parse_response(raw: &[u8]) -> Option<(u16, String)> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_owned()
    };
    Some((status, body))
}

fn dechunk(mut body: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n")?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        out.push_str(rest.get(..size)?);
        body = rest.get(size..)?.strip_prefix("\r\n")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_or_without_a_scheme() {
        for url in [
            "http://127.0.0.1:7350",
            "ws://127.0.0.1:7350/",
            "127.0.0.1:7350",
            "http://127.0.0.1:7350/v1/ws",
        ] {
            assert_eq!(Endpoint::parse(url).expect(url).authority, "127.0.0.1:7350");
        }
        for bad in [
            "https://x:1",
            "wss://x:1",
            "localhost",
            "http://:80",
            "x:port",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn responses_parse_plain_and_chunked() {
        let plain = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
        assert_eq!(parse_response(plain), Some((200, "ok".to_owned())));
        let chunked = b"HTTP/1.1 401 Unauthorized\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked), Some((401, "abcde".to_owned())));
        assert_eq!(parse_response(b"garbage"), None);
    }
}
