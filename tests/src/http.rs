//! HTTP calls through the client library (`banter-client`).

use std::net::SocketAddr;

use banter_client::{Endpoint, Http};

/// An HTTP client for the server at `addr`: the client library's, one connection per request
/// (as the server's connection counts in tests expect).
pub fn http_client(addr: SocketAddr) -> Http {
    let endpoint = Endpoint::parse(&addr.to_string()).expect("a socket address is an endpoint");
    Http::unpooled(endpoint).expect("an HTTP client")
}

/// One GET that never panics: the answer, or `None` if there was none.
pub(crate) async fn probe(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    http_client(addr).get(path, None).await.ok()
}

/// One HTTP request through the client library; the status and the body.
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    http_client(addr)
        .request(method, path, headers, body)
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}
