//! The HTTP surface: health, readiness, metrics, device login, the WebSocket upgrade, and the
//! operator's content reload. Every error is an [`ApiError`] (`api_error.rs`), the extractors'
//! rejections included.

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::ws::rejection::WebSocketUpgradeRejection;

use crate::api_error::ApiError;
use crate::app::SharedApp;
use crate::auth;
use crate::clock::unix_now;

pub fn router(app: SharedApp) -> Router {
    let mut router = Router::new()
        .route("/healthz", get(healthz))
        .route("/openapi.json", get(openapi))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/v1/ws", get(upgrade))
        .route("/admin/reload", post(reload))
        .route("/admin/audit", get(audit_trail))
        .route("/admin/analytics", get(analytics_report))
        .route("/internal/events", post(game_event));
    if !app.config.production {
        router = router.route("/v1/auth/device", post(device_login));
    }
    if app.config.bench_echo && !app.config.production {
        router = router.route("/bench/echo", get(bench_echo));
    }
    router = crate::channel::routes::routes(router);
    if app.config.playground {
        router = crate::playground::routes(router);
    }
    router
        .fallback(crate::api_error::no_route)
        .method_not_allowed_fallback(crate::api_error::wrong_method)
        .with_state(app)
}

async fn healthz() -> &'static str {
    "ok"
}

/// The OpenAPI description of every HTTP endpoint (`docs/openapi.json`, checked against the
/// real routes by `tests/tests/openapi.rs`).
pub const OPENAPI: &str = include_str!("../../docs/openapi.json");

async fn openapi() -> (
    [(axum::http::header::HeaderName, &'static str); 1],
    &'static str,
) {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        OPENAPI,
    )
}

#[derive(Serialize)]
struct Readiness {
    store: String,
    backend: &'static str,
    content_version: u64,
    open_sessions: i64,
}

/// How long `/readyz` waits for the store.
const READY_PROBE: std::time::Duration = std::time::Duration::from_secs(1);

async fn readyz(State(app): State<SharedApp>) -> Response {
    // An outage must show here quickly, not after the pool's whole acquire timeout.
    let store = match tokio::time::timeout(READY_PROBE, app.store.ping()).await {
        Ok(result) => result,
        Err(_) => Err(crate::store::StoreError::Unavailable(
            "no answer within a second".into(),
        )),
    };
    let body = Readiness {
        store: match &store {
            Ok(()) => "ok".to_owned(),
            Err(e) => format!(
                "unavailable (ref {})",
                crate::incident::report_outage("readyz", e)
            ),
        },
        backend: app.store.backend(),
        content_version: app.content.current().version,
        open_sessions: app.metrics.open_sessions(),
    };
    let status = if store.is_ok() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(body)).into_response()
}

async fn metrics(State(app): State<SharedApp>) -> Response {
    let text = app.metrics.render(&app.audit, &app.analytics);
    ([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], text).into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditQuery {
    player: String,
    #[serde(default)]
    limit: Option<u32>,
}

#[derive(Serialize)]
struct AuditRow {
    id: i64,
    at_ms: i64,
    conversation: Option<String>,
    message: String,
    code: Option<String>,
    detail: Option<String>,
}

/// A player's most recent audit rows, oldest first, for support (`?player=&limit=`, at most
/// 1,000). Requires the service key.
async fn audit_trail(
    State(app): State<SharedApp>,
    headers: HeaderMap,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Json<Vec<AuditRow>>, ApiError> {
    auth::require_service_key(&headers, &app.config.service_key)?;
    let Query(query) = query?;
    crate::store::check_id("player", &query.player)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let limit = query.limit.unwrap_or(100).clamp(1, 1000);
    // Trail rows hold several steps each: unfold them, then keep the latest `limit` steps.
    let rows = crate::audit::expand(app.store.audit_for_player(&query.player, limit).await?);
    let skip = rows.len().saturating_sub(limit as usize);
    Ok(Json(
        rows.into_iter()
            .skip(skip)
            .map(|row| AuditRow {
                id: row.id,
                at_ms: row.at_ms,
                conversation: row.record.conversation,
                message: row.record.message,
                code: row.record.code,
                detail: row.record.detail,
            })
            .collect(),
    ))
}

/// Narrative analytics for writers: one conversation's report (`?conversation=`, with
/// `version=` and `locale=`), or every conversation's opens and endings. Counts only, never a
/// player id. Requires the service key.
async fn analytics_report(
    State(app): State<SharedApp>,
    headers: HeaderMap,
    query: Result<Query<crate::analytics::AnalyticsQuery>, QueryRejection>,
) -> Result<Json<crate::analytics::Answer>, ApiError> {
    auth::require_service_key(&headers, &app.config.service_key)?;
    let Query(query) = query?;
    let library = app.content.current();
    let answer = crate::analytics::answer(app.store.as_ref(), Some(&library), &query).await?;
    Ok(Json(answer))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceLogin {
    device_id: String,
}

#[derive(Serialize, Deserialize)]
pub struct TokenResponse {
    pub token: String,
    pub player: String,
    pub expires_at: u64,
}

/// Development login (as in Nakama): a device id mints a token for a stable player id. Off in
/// production, where tokens come from the game's own account service.
async fn device_login(
    State(app): State<SharedApp>,
    body: Result<Json<DeviceLogin>, JsonRejection>,
) -> Result<Json<TokenResponse>, ApiError> {
    let Json(body) = body?;
    if !auth::valid_device_id(&body.device_id) {
        return Err(ApiError::BadRequest(
            "device_id must be 8 to 128 printable ASCII characters".into(),
        ));
    }
    let player = auth::player_for_device(&body.device_id);
    let now = unix_now();
    let ttl = app.config.token_ttl.as_secs();
    Ok(Json(TokenResponse {
        token: app.tokens.mint(&player, now, ttl),
        player,
        expires_at: now + ttl,
    }))
}

#[derive(Deserialize)]
struct UpgradeQuery {
    token: Option<String>,
    /// The locale the player reads in (BCP 47); a tag that is not one is a 400.
    locale: Option<String>,
}

/// The token comes in `Authorization: Bearer` or, for browsers that cannot set headers on a
/// WebSocket, in `?token=`. No valid token: 401 and no session.
async fn upgrade(
    State(app): State<SharedApp>,
    headers: HeaderMap,
    query: Result<Query<UpgradeQuery>, QueryRejection>,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let ws = ws?;
    let Query(query) = query?;
    let locale = query
        .locale
        .as_deref()
        .map(banter_dialogue::locale::Locale::parse)
        .transpose()
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let claims = admit(&app, &headers, query)?;
    if app.hub.carried_elsewhere(&claims.sub, None).is_some() {
        return Err(ApiError::CarriedElsewhere(format!(
            "a game server's channel carries `{}`: it places the player and speaks for it",
            claims.sub
        )));
    }
    // Taken before the upgrade, so a refusal is a plain 503 the client retries with backoff. A
    // burst (everyone reconnecting after a deploy) waits its turn briefly; a storm past what the
    // store can start is refused instead of queueing without bound.
    let starting = tokio::time::timeout(
        SESSION_START_PATIENCE,
        app.session_starts.clone().acquire_owned(),
    )
    .await;
    let Ok(Ok(starting)) = starting else {
        app.metrics.session_start_refused();
        return Err(ApiError::AtCapacity);
    };
    let session_app = Arc::clone(&app);
    Ok(configure(&app, ws).on_upgrade(move |socket| {
        let tracker = session_app.sessions.clone();
        tracker.track_future(crate::session::run(
            session_app,
            socket,
            claims.sub,
            claims.exp,
            locale,
            starting,
        ))
    }))
}

/// How long an upgrade waits for one of the `--max-session-starts` slots before `503`.
const SESSION_START_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// What an upgrade checks before it accepts: a valid token and room for one more session.
fn admit(
    app: &SharedApp,
    headers: &HeaderMap,
    query: UpgradeQuery,
) -> Result<auth::Claims, ApiError> {
    let token = auth::bearer(headers).or(query.token).unwrap_or_default();
    let claims = app.tokens.verify(&token, unix_now()).map_err(|e| {
        app.metrics.auth_failed();
        ApiError::Unauthorized(e)
    })?;
    if app.metrics.open_sessions() >= app.config.limits.max_connections as i64 {
        return Err(ApiError::AtCapacity);
    }
    Ok(claims)
}

/// The WebSocket settings every upgrade gets, the echo's included.
fn configure(app: &SharedApp, ws: WebSocketUpgrade) -> WebSocketUpgrade {
    let limits = &app.config.limits;
    ws.read_buffer_size(limits.read_buffer_bytes)
        // Frames wait in the write buffer until a flush (or 4 KiB): a session's writer flushes
        // once per batch of queued messages; the echo flushes every frame.
        .write_buffer_size(limits.read_buffer_bytes)
        // Frames past the protocol's limit get a typed error; this hard cap only stops a
        // peer from making the server buffer megabytes before the check can run.
        .max_message_size(limits.max_frame_bytes * 16)
        .max_frame_size(limits.max_frame_bytes * 16)
}

/// `GET /bench/echo` (only with `--bench-echo`): the transport's limit. The same token check,
/// upgrade settings and task tracking as `/v1/ws`; then every text frame goes straight back as
/// a text frame, with no decoding, no session and no queue. `banter-sim bench` compares the
/// validated dialogue step against it.
async fn bench_echo(
    State(app): State<SharedApp>,
    headers: HeaderMap,
    query: Result<Query<UpgradeQuery>, QueryRejection>,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let ws = ws?;
    let Query(query) = query?;
    admit(&app, &headers, query)?;
    let tracker = app.sessions.clone();
    // The session's own token too (`session/socket.rs`): the two pay for shutdown alike.
    let shutdown = app.shutdown.child_token();
    Ok(configure(&app, ws).on_upgrade(move |socket| {
        tracker.track_future(async move {
            tokio::select! {
                () = echo(socket) => {}
                () = shutdown.cancelled() => {}
            }
        })
    }))
}

/// Echoes text frames. Every frame already received is echoed into the write buffer before one
/// flush, as a session's writer does with its queue, so the two are compared on equal terms.
async fn echo(mut socket: axum::extract::ws::WebSocket) {
    use axum::extract::ws::Message;
    use futures_util::{FutureExt, SinkExt};
    'read: while let Some(Ok(first)) = socket.recv().await {
        let mut frame = Some(first);
        while let Some(next) = frame.take() {
            let text = match next {
                Message::Text(text) => text,
                Message::Close(_) => break 'read,
                // Pings are answered by the WebSocket layer; nothing else is echoed.
                _ => continue,
            };
            if socket.feed(Message::Text(text)).await.is_err() {
                break 'read;
            }
            frame = match socket.recv().now_or_never() {
                Some(Some(Ok(frame))) => Some(frame),
                Some(Some(Err(_)) | None) => break 'read,
                None => None,
            };
        }
        if socket.flush().await.is_err() {
            break;
        }
    }
}

#[derive(Serialize)]
struct Reloaded {
    version: u64,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ReloadQuery {
    /// Swap in content that removes more than `--reload-max-shrink` of the world.
    #[serde(default)]
    force: bool,
}

async fn reload(
    State(app): State<SharedApp>,
    headers: HeaderMap,
    query: Result<Query<ReloadQuery>, QueryRejection>,
) -> Result<Json<Reloaded>, ApiError> {
    auth::require_service_key(&headers, &app.config.service_key)?;
    let Query(query) = query?;
    let options = crate::reload::ReloadOptions { force: query.force };
    crate::reload::reload(&app, options)
        .await
        .map(|version| Json(Reloaded { version }))
}

#[derive(Serialize, Deserialize)]
pub struct EventApplied {
    pub event_id: String,
    /// Every objective the event advanced (empty when it matched none; the id is recorded
    /// anyway, so a second delivery is still a duplicate).
    pub advanced: Vec<crate::events::Advanced>,
    /// The tutorial stage a `tutorial_started` event moved the profile to, if it moved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tutorial_stage: Option<i64>,
}

/// The trusted game server reports world progress (see docs/PROTOCOL.md, section 14).
async fn game_event(
    State(app): State<SharedApp>,
    headers: HeaderMap,
    body: Result<Json<crate::events::GameEventBody>, JsonRejection>,
) -> Result<Json<EventApplied>, ApiError> {
    auth::require_service_key(&headers, &app.config.service_key)?;
    let Json(body) = body?;
    let event = body.validate().map_err(ApiError::BadRequest)?;
    let library = app.content.current();
    let applied = crate::events::apply(app.store.as_ref(), &library.content, &event).await?;
    // An objective reaching its target is a stage of its quest's funnel; the player may be
    // offline, so no locale.
    for advanced in &applied.advanced {
        app.analytics.effect(&library, "", &advanced.effect());
    }
    if !applied.advanced.is_empty() || applied.tutorial_stage.is_some() {
        // The session reloads the player's record (a new stage changes every NPC's entry) and
        // pushes one effect per advanced objective.
        let effects = applied
            .advanced
            .iter()
            .map(crate::events::Advanced::effect)
            .collect();
        app.hub
            .notify(&event.player, crate::hub::Control::Progress(effects));
    }
    Ok(Json(EventApplied {
        event_id: event.event_id,
        advanced: applied.advanced,
        tutorial_stage: applied.tutorial_stage,
    }))
}

#[cfg(test)]
mod tests {
    use axum::body::to_bytes;

    use super::*;
    use crate::auth::{AuthError, ServiceKeyError};
    use crate::events::EventError;
    use crate::store::StoreError;

    const SECRET: &str = "database i/o: expected to read 5 bytes, got 0 bytes at EOF";

    async fn answer(error: ApiError) -> (StatusCode, String) {
        let response = error.into_response();
        let status = response.status();
        let body = to_bytes(response.into_body(), 64 * 1024)
            .await
            .expect("body");
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn every_store_and_event_error_has_one_status_and_no_internal_text() {
        // A store failure that is a bug or a misconfiguration: `internal`, with a reference.
        let internal = [
            StoreError::Database(SECRET.into()),
            StoreError::Corrupt(SECRET.into()),
            StoreError::Config(SECRET.into()),
            StoreError::Migration(SECRET.into()),
            StoreError::AlreadyPaid { quest: "Q".into() },
        ]
        .map(|e| {
            (
                ApiError::from(e),
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
            )
        });
        let cases: Vec<(ApiError, StatusCode, &str)> = internal
            .into_iter()
            .chain([
                (
                    StoreError::Unavailable(SECRET.into()).into(),
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_unavailable",
                ),
                (
                    StoreError::InvalidInput("bad id".into()).into(),
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                ),
                (
                    StoreError::InvalidAmount { amount: 0 }.into(),
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                ),
                (
                    EventError::UnknownPlayer("p".into()).into(),
                    StatusCode::NOT_FOUND,
                    "unknown_player",
                ),
                (
                    EventError::Duplicate("e".into()).into(),
                    StatusCode::CONFLICT,
                    "duplicate",
                ),
                (
                    EventError::Store(StoreError::Unavailable(SECRET.into())).into(),
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_unavailable",
                ),
                (
                    AuthError::Expired.into(),
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                ),
                (
                    ServiceKeyError::Missing.into(),
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                ),
                (
                    ServiceKeyError::Wrong.into(),
                    StatusCode::FORBIDDEN,
                    "forbidden",
                ),
            ])
            .collect();
        for (error, status, code) in cases {
            let (got, body) = answer(error).await;
            assert_eq!(got, status, "{body}");
            assert!(body.contains(&format!("\"error\":\"{code}\"")), "{body}");
            assert!(!body.contains(SECRET), "leaked: {body}");
            if status.is_server_error() && code != "at_capacity" {
                assert!(body.contains("(ref "), "{body}");
            }
        }
    }
}
