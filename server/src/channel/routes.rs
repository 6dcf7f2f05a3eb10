//! The HTTP side of game-server channels and their credentials (PROTOCOL.md sections 16.1 to
//! 16.3): issue, list and revoke credentials with the service key; open, batch and close
//! channels with a credential; the channel WebSocket's upgrade (`socket.rs`).

use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use banter_protocol::DeclaredParty;
use banter_protocol::channel::{self as wire, Batch, Item, Placed};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::api_error::ApiError;
use crate::app::SharedApp;
use crate::auth;
use crate::channels::{self, BatchRefused, ChannelHandle, SeqError};
use crate::credentials::{self, GameServer};
use crate::store::MAX_PARTY_SIZE;

pub fn routes(router: Router<SharedApp>) -> Router<SharedApp> {
    router
        .route(
            "/admin/game-servers",
            post(issue_game_server).get(list_game_servers),
        )
        .route("/admin/game-servers/{id}", delete(revoke_game_server))
        .route("/v1/channels", post(open_channel))
        .route("/v1/channels/ws", get(super::socket::upgrade))
        .route("/v1/channels/{channel}", delete(close_channel))
        .route(
            "/v1/channels/{channel}/batch",
            post(batch).layer(DefaultBodyLimit::max(wire::MAX_REQUEST_BYTES)),
        )
}

impl From<SeqError> for ApiError {
    fn from(e: SeqError) -> ApiError {
        match e {
            SeqError::Stale { .. } => ApiError::StaleBatch(e.to_string()),
            SeqError::Gap { .. } => ApiError::BatchGap(e.to_string()),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IssueRequest {
    name: String,
    players: Vec<String>,
}

async fn issue_game_server(
    State(app): State<SharedApp>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    // A body over the route's limit is a JSON `413`, not axum's plain text.
    let body = body?;
    auth::require_service_key(&headers, &app.config.service_key)?;
    json_content(&headers)?;
    let request: IssueRequest = read_json(&body)?;
    credentials::check_issue(&request.name, &request.players)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let minted = credentials::mint().map_err(|e| ApiError::Internal {
        reference: crate::incident::report("minting a credential", &e),
    })?;
    let server = GameServer {
        id: minted.id,
        name: request.name,
        players: request.players,
        created_at_ms: crate::clock::unix_millis(),
        revoked_at_ms: None,
    };
    app.store
        .issue_game_server(&server, &minted.secret_sha256)
        .await?;
    let mut body = serde_json::to_value(&server).unwrap_or_default();
    body["credential"] = minted.credential.into();
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

async fn list_game_servers(
    State(app): State<SharedApp>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    auth::require_service_key(&headers, &app.config.service_key)?;
    let servers = app.store.game_servers().await?;
    Ok(axum::Json(serde_json::json!({ "game_servers": servers })).into_response())
}

async fn revoke_game_server(
    State(app): State<SharedApp>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    auth::require_service_key(&headers, &app.config.service_key)?;
    let unknown = || ApiError::NotFound(format!("no game server `{id}`"));
    if !credentials::looks_like_id(&id) {
        return Err(unknown());
    }
    let revoked = app
        .store
        .revoke_game_server(&id, crate::clock::unix_millis())
        .await?
        .ok_or_else(unknown)?;
    // This instance's channels end now; the others' within a second (`watch_revocations`).
    app.channels.revoked(&id);
    Ok(axum::Json(serde_json::json!({
        "id": revoked.id,
        "revoked_at_ms": revoked.revoked_at_ms,
    }))
    .into_response())
}

/// The game server a request's credential names, if it verifies and is not revoked. The store
/// is asked on every request, so a revocation holds at once on every instance.
pub async fn game_server(app: &SharedApp, headers: &HeaderMap) -> Result<GameServer, ApiError> {
    let presented =
        auth::bearer(headers).ok_or(ApiError::Unauthorized(auth::AuthError::Missing))?;
    let Ok(credential) = credentials::parse(&presented) else {
        // The service key or a player token where a credential belongs.
        let known = auth::require_service_key(headers, &app.config.service_key).is_ok()
            || presented.split('.').count() == 3;
        return Err(if known {
            ApiError::Forbidden
        } else {
            ApiError::BadCredential("not a game-server credential".into())
        });
    };
    let (server, secret_sha256) = app
        .store
        .game_server(&credential.id)
        .await?
        .ok_or_else(|| ApiError::BadCredential("unknown credential".into()))?;
    if !credentials::secret_matches(credential.secret, &secret_sha256) {
        return Err(ApiError::BadCredential("unknown credential".into()));
    }
    if server.revoked() {
        return Err(ApiError::BadCredential("the credential was revoked".into()));
    }
    Ok(server)
}

async fn open_channel(
    State(app): State<SharedApp>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    // A body over the route's limit is a JSON `413`, not axum's plain text.
    let body = body?;
    let server = game_server(&app, &headers).await?;
    if !body.iter().all(u8::is_ascii_whitespace) {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Empty {}
        json_content(&headers)?;
        let _: Empty = read_json(&body)?;
    }
    let idle = app.config.channel_idle_timeout;
    let channel = super::open(&app, server, Some(idle)).map_err(|e| ApiError::Internal {
        reference: crate::incident::report("opening a channel", &e),
    })?;
    let opened = wire::ChannelOpened {
        channel: channel.id.clone(),
        limits: super::limits(&app),
    };
    Ok((StatusCode::CREATED, axum::Json(opened)).into_response())
}

async fn close_channel(
    State(app): State<SharedApp>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let server = game_server(&app, &headers).await?;
    let channel = find(&app, &id, &server)?;
    channel.end(channels::Ending::Closed);
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn find(
    app: &SharedApp,
    id: &str,
    server: &GameServer,
) -> Result<std::sync::Arc<ChannelHandle>, ApiError> {
    app.channels
        .find(id, &server.id)
        .ok_or_else(|| unknown_channel(id))
}

fn unknown_channel(id: &str) -> ApiError {
    ApiError::UnknownChannel(format!(
        "no channel `{}` of this credential on this instance; open one and resume the players",
        banter_protocol::quoted_input(id)
    ))
}

/// A body must say it is JSON (`Content-Type: application/json`, parameters allowed), as every
/// other endpoint's (PROTOCOL.md section 14).
fn json_content(headers: &HeaderMap) -> Result<(), ApiError> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if json {
        Ok(())
    } else {
        Err(ApiError::BadRequest(
            "expected a body with `Content-Type: application/json`".into(),
        ))
    }
}

/// Reads a JSON body, naming where it went wrong (`items[3].player: ...`).
pub fn read_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let mut reader = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(&mut reader)
        .map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path == "." {
                ApiError::BadRequest(inner.to_string())
            } else {
                ApiError::BadRequest(format!("{path}: {inner}"))
            }
        })
        .and_then(|value| {
            reader
                .end()
                .map_err(|e| ApiError::BadRequest(e.to_string()))?;
            Ok(value)
        })
}

/// Checks what a batch holds beyond its JSON shape: the bounds, each item asking for exactly one
/// thing, player ids, positions, declared parties. The first problem, with where it is.
pub fn check_batch(
    positions: &[Placed],
    items: &[Item<Box<RawValue>>],
    parties: &[DeclaredParty],
) -> Result<(), ApiError> {
    let bad = |what: String| Err(ApiError::BadRequest(what));
    if items.len() > wire::MAX_ITEMS {
        return bad(format!("`items`: more than {} items", wire::MAX_ITEMS));
    }
    if positions.len() > wire::MAX_POSITIONS {
        return bad(format!(
            "`positions`: more than {} positions",
            wire::MAX_POSITIONS
        ));
    }
    for (i, placed) in positions.iter().enumerate() {
        if !auth::valid_player_id(&placed.player) {
            return bad(format!("positions[{i}].player: not a player id"));
        }
        if placed.position.iter().any(|c| !c.is_finite()) {
            return bad(format!("positions[{i}].position: not three finite numbers"));
        }
    }
    for (i, item) in items.iter().enumerate() {
        if !auth::valid_player_id(&item.player) {
            return bad(format!("items[{i}].player: not a player id"));
        }
        // A message over the frame limit is answered per player (`frame_too_large`), as on a
        // WebSocket; only the item's shape is checked here.
        if let Err(e) = item.what() {
            return bad(format!("items[{i}]: {e}"));
        }
    }
    if parties.len() > wire::MAX_ITEMS {
        return bad(format!("`parties`: more than {} parties", wire::MAX_ITEMS));
    }
    for (i, party) in parties.iter().enumerate() {
        check_declared(party).map_err(|e| ApiError::BadRequest(format!("parties[{i}].{e}")))?;
    }
    Ok(())
}

/// A declared party's shape (PROTOCOL.md section 17.1): its id and every player id plain, 1 to
/// [`MAX_PARTY_SIZE`] distinct members, the leader among them.
fn check_declared(party: &DeclaredParty) -> Result<(), String> {
    if !auth::valid_player_id(&party.party) {
        return Err("party: not a party id (1 to 64 letters, digits, `-`, `_`)".into());
    }
    if let Some(j) = party.members.iter().position(|m| !auth::valid_player_id(m)) {
        return Err(format!("members[{j}]: not a player id"));
    }
    if party.members.is_empty() || party.members.len() > MAX_PARTY_SIZE {
        return Err(format!("members: 1 to {MAX_PARTY_SIZE} players"));
    }
    for (j, member) in party.members.iter().enumerate() {
        if party.members[..j].contains(member) {
            return Err(format!("members[{j}]: `{member}` is named twice"));
        }
    }
    if !party.members.contains(&party.leader) {
        return Err("leader: not among the members".into());
    }
    Ok(())
}

async fn batch(
    State(app): State<SharedApp>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    // A body over the route's limit is a JSON `413`, not axum's plain text.
    let body = body?;
    let server = game_server(&app, &headers).await?;
    let channel = find(&app, &id, &server)?;
    json_content(&headers)?;
    let batch: Batch<Box<RawValue>> = read_json(&body)?;
    check_batch(&batch.positions, &batch.items, &batch.parties)?;
    if batch.wait_ms > wire::MAX_WAIT_MS {
        return Err(ApiError::BadRequest(format!(
            "`wait_ms`: at most {}",
            wire::MAX_WAIT_MS
        )));
    }
    let (seq, ack) = (batch.seq, batch.ack);
    let applied = channel
        .apply(channels::Batch {
            seq: Some(seq),
            ack,
            positions: batch.positions,
            items: batch.items,
            parties: batch.parties,
        })
        .await
        .ok_or_else(|| unknown_channel(&id))?;
    let arrival = match applied {
        Ok(arrival) => arrival,
        Err(BatchRefused::Sequence(e)) => return Err(e.into()),
        Err(BatchRefused::AckAhead(e)) => return Err(ApiError::BadRequest(e.to_string())),
    };
    let wait = Duration::from_millis(batch.wait_ms);
    channel
        .wait_for_events(ack, arrival, wait, &app.shutdown)
        .await;
    let cut = channel
        .events()
        .cut_after(ack, wire::MAX_ANSWER_EVENTS, wire::MAX_ANSWER_BYTES);
    let body = format!(
        r#"{{"seq":{seq},"events":[{}],"more":{}}}"#,
        cut.events, cut.more
    );
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}
