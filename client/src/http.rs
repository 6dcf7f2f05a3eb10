//! The server's HTTP calls: health and readiness, metrics, content reload, the audit trail and
//! the trusted game server's events (device login is in [`crate::login`]). Over `reqwest`, a
//! maintained client: HTTP/1.1 with pooled keep-alive connections, or one connection per request
//! where that is the point ([`Http::unpooled`]).
//!
//! Every call answers the status and the body when the caller wants to judge them itself
//! ([`Http::request`]), or a typed answer where the server's is one (`readyz`, `reload`, ...).

use std::time::Duration;

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue};
use serde::Deserialize;

use crate::endpoint::Endpoint;
use crate::error::{Error, Result};

/// How long one HTTP exchange may take.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(15);

/// The server's development service key (`banter_server::config::DEV_SERVICE_KEY`): what the
/// trusted game server and operators present as `Authorization: Bearer`.
pub const DEV_SERVICE_KEY: &str = "banter-development-service-key";

/// The server's HTTP side.
#[derive(Clone, Debug)]
pub struct Http {
    endpoint: Endpoint,
    client: reqwest::Client,
    timeout: Duration,
}

/// What `/readyz` says.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Readiness {
    /// True for `200`, false for `503` (the store does not answer).
    #[serde(skip)]
    pub ready: bool,
    pub store: String,
    pub backend: String,
    pub content_version: u64,
    pub open_sessions: i64,
}

/// One row of a player's audit trail (`/admin/audit`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct AuditRow {
    pub id: i64,
    pub at_ms: i64,
    pub conversation: Option<String>,
    pub message: String,
    pub code: Option<String>,
    pub detail: Option<String>,
}

/// One objective a game event advanced.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Advanced {
    pub quest: String,
    pub objective: String,
    pub progress: u32,
    pub target: u32,
}

/// What became of a game event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivered {
    /// Applied now: the objectives it advanced, and the tutorial stage it moved to, if any.
    Applied {
        advanced: Vec<Advanced>,
        tutorial_stage: Option<i64>,
    },
    /// Its id was applied before (`409`): nothing changed, which is what a retry wants.
    Duplicate,
}

impl Delivered {
    /// The objectives advanced (none for a duplicate).
    pub fn advanced(self) -> Vec<Advanced> {
        match self {
            Delivered::Applied { advanced, .. } => advanced,
            Delivered::Duplicate => Vec::new(),
        }
    }
}

#[derive(Debug, Deserialize)]
struct Applied {
    advanced: Vec<Advanced>,
    #[serde(default)]
    tutorial_stage: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct Reloaded {
    version: u64,
}

impl Http {
    /// A client with a pool of keep-alive connections (what a game client wants).
    pub fn new(endpoint: Endpoint) -> Result<Http> {
        Self::build(endpoint, reqwest::Client::builder())
    }

    /// A client that opens a connection for each request and closes it after: what a health
    /// probe measures, and what a test that counts the server's connections expects.
    pub fn unpooled(endpoint: Endpoint) -> Result<Http> {
        Self::build(
            endpoint,
            reqwest::Client::builder().pool_max_idle_per_host(0),
        )
    }

    /// A pooled client whose exchanges may take `timeout` (a long-poll holds its answer).
    pub fn with_timeout(endpoint: Endpoint, timeout: Duration) -> Result<Http> {
        Self::build_timed(endpoint, reqwest::Client::builder(), timeout)
    }

    fn build(endpoint: Endpoint, builder: reqwest::ClientBuilder) -> Result<Http> {
        Self::build_timed(endpoint, builder, HTTP_TIMEOUT)
    }

    fn build_timed(
        endpoint: Endpoint,
        builder: reqwest::ClientBuilder,
        timeout: Duration,
    ) -> Result<Http> {
        let client = builder.timeout(timeout).build()?;
        Ok(Http {
            endpoint,
            client,
            timeout,
        })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// One request with any method and headers; the status and the body. A status is an answer,
    /// not an error: only a request that got none fails.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Result<(u16, String)> {
        let method = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|_| Error::Other(format!("not an HTTP method: `{method}`")))?;
        let mut request = self
            .client
            .request(method, self.endpoint.http_url(path))
            .body(body.to_owned());
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| Error::Other(format!("not a header name: `{name}`")))?;
            let value = HeaderValue::from_str(value)
                .map_err(|_| Error::Other(format!("not a header value for `{name}`")))?;
            request = request.header(name, value);
        }
        let timeout = self.timeout;
        let timed_out = |e: reqwest::Error| {
            if e.is_timeout() {
                Error::Timeout(timeout)
            } else {
                Error::Transport(e)
            }
        };
        let response = request.send().await.map_err(timed_out)?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(timed_out)?;
        Ok((status, text))
    }

    /// A GET, with a bearer token or key if given.
    pub async fn get(&self, path: &str, bearer: Option<&str>) -> Result<(u16, String)> {
        let auth = bearer.map(|b| format!("Bearer {b}"));
        let headers: Vec<(&str, &str)> = auth
            .as_deref()
            .map(|a| (AUTHORIZATION.as_str(), a))
            .into_iter()
            .collect();
        self.request("GET", path, &headers, "").await
    }

    /// A JSON POST, with a bearer token or key if given.
    pub async fn post_json(
        &self,
        path: &str,
        bearer: Option<&str>,
        body: &str,
    ) -> Result<(u16, String)> {
        let auth = bearer.map(|b| format!("Bearer {b}"));
        let mut headers = vec![(CONTENT_TYPE.as_str(), "application/json")];
        if let Some(auth) = auth.as_deref() {
            headers.push((AUTHORIZATION.as_str(), auth));
        }
        self.request("POST", path, &headers, body).await
    }

    /// `GET /healthz`: Ok once the server answers `200 ok`.
    pub async fn healthz(&self) -> Result<()> {
        match self.get("/healthz", None).await? {
            (200, body) if body.trim() == "ok" => Ok(()),
            (status, body) => Err(http_error("/healthz", status, body)),
        }
    }

    /// `GET /readyz`: whether the server can serve (its store answers), and what it serves.
    pub async fn readyz(&self) -> Result<Readiness> {
        let (status, body) = self.get("/readyz", None).await?;
        if status != 200 && status != 503 {
            return Err(http_error("/readyz", status, body));
        }
        let mut readiness: Readiness = parse("/readyz", &body)?;
        readiness.ready = status == 200;
        Ok(readiness)
    }

    /// `GET /metrics`: the Prometheus text.
    pub async fn metrics(&self) -> Result<String> {
        match self.get("/metrics", None).await? {
            (200, body) => Ok(body),
            (status, body) => Err(http_error("/metrics", status, body)),
        }
    }

    /// `POST /admin/reload` with the service key: the content version now served.
    pub async fn reload(&self, service_key: &str) -> Result<u64> {
        match self
            .post_json("/admin/reload", Some(service_key), "")
            .await?
        {
            (200, body) => parse::<Reloaded>("/admin/reload", &body).map(|r| r.version),
            (status, body) => Err(http_error("/admin/reload", status, body)),
        }
    }

    /// `GET /admin/audit` with the service key: a player's most recent audit rows, oldest first.
    pub async fn audit(
        &self,
        service_key: &str,
        player: &str,
        limit: Option<u32>,
    ) -> Result<Vec<AuditRow>> {
        let mut url = reqwest::Url::parse(&self.endpoint.http_url("/admin/audit"))
            .map_err(|e| Error::BadUrl(e.to_string()))?;
        url.query_pairs_mut().append_pair("player", player);
        if let Some(limit) = limit {
            url.query_pairs_mut()
                .append_pair("limit", &limit.to_string());
        }
        let path = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        match self.get(&path, Some(service_key)).await? {
            (200, body) => parse("/admin/audit", &body),
            (status, body) => Err(http_error("/admin/audit", status, body)),
        }
    }

    /// `POST /internal/events` with the service key: one game event (a JSON body as
    /// docs/PROTOCOL.md section 14 describes). A `409` is [`Delivered::Duplicate`].
    pub async fn post_event(&self, service_key: &str, body: &str) -> Result<Delivered> {
        match self
            .post_json("/internal/events", Some(service_key), body)
            .await?
        {
            (200, text) => {
                let applied: Applied = parse("/internal/events", &text)?;
                Ok(Delivered::Applied {
                    advanced: applied.advanced,
                    tutorial_stage: applied.tutorial_stage,
                })
            }
            (409, _) => Ok(Delivered::Duplicate),
            (status, text) => Err(http_error("/internal/events", status, text)),
        }
    }
}

impl Endpoint {
    /// One HTTP request on a connection of its own ([`Http::unpooled`]); the status and the
    /// body.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Result<(u16, String)> {
        Http::unpooled(self.clone())?
            .request(method, path, headers, body)
            .await
    }

    /// A JSON POST on a connection of its own; the status and the body.
    pub async fn post_json(
        &self,
        path: &str,
        bearer: Option<&str>,
        body: &str,
    ) -> Result<(u16, String)> {
        Http::unpooled(self.clone())?
            .post_json(path, bearer, body)
            .await
    }
}

/// An answer with an unexpected status as an error.
pub(crate) fn http_error(path: &str, status: u16, body: String) -> Error {
    Error::Http {
        path: path.to_owned(),
        status,
        body,
    }
}

/// A JSON answer body.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(path: &str, body: &str) -> Result<T> {
    serde_json::from_str(body).map_err(|e| Error::Protocol(format!("{path} answered {e}: {body}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_or_say_which_path_was_wrong() {
        let rows: Vec<AuditRow> = parse(
            "/admin/audit",
            r#"[{"id":1,"at_ms":2,"conversation":null,"message":"talk","code":null,"detail":null}]"#,
        )
        .expect("rows");
        assert_eq!(rows[0].message, "talk");
        let e = parse::<Reloaded>("/admin/reload", "{}").expect_err("no version");
        assert!(e.to_string().contains("/admin/reload"), "{e}");
        let applied: Applied = parse(
            "/internal/events",
            r#"{"event_id":"e","advanced":[{"quest":"Q","objective":"O","progress":1,"target":2}]}"#,
        )
        .expect("applied");
        assert_eq!(applied.advanced[0].target, 2);
        assert_eq!(applied.tutorial_stage, None);
    }

    #[test]
    fn a_duplicate_advanced_nothing() {
        assert!(Delivered::Duplicate.advanced().is_empty());
    }
}
