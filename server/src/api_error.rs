//! The HTTP surface's one error type and its one mapping to status codes and JSON bodies
//! (`{"error": "<code>", "message": "<text>"}`), the extractors' rejections included: no
//! request gets a plain-text error.

use axum::Json;
use axum::extract::rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection};
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::auth::{AuthError, ServiceKeyError};

/// Every way an HTTP request fails, and the status each maps to.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("unauthorized: {0}")]
    Unauthorized(AuthError),
    #[error("forbidden")]
    Forbidden,
    /// A game-server credential that does not verify, or was revoked.
    #[error("unauthorized: {0}")]
    BadCredential(String),
    /// A game-server channel this instance does not hold for the credential.
    #[error("{0}")]
    UnknownChannel(String),
    /// A channel batch older than the last applied (PROTOCOL.md section 16.3).
    #[error("{0}")]
    StaleBatch(String),
    /// A channel batch that skips ahead.
    #[error("{0}")]
    BatchGap(String),
    /// A direct WebSocket for a player a game server's channel carries.
    #[error("{0}")]
    CarriedElsewhere(String),
    #[error("bad request: {0}")]
    BadRequest(String),
    /// A body over its endpoint's limit.
    #[error("payload too large: {0}")]
    PayloadTooLarge(String),
    /// A route that exists, asked with a method it does not serve.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// `GET /v1/ws` without a WebSocket upgrade.
    #[error("upgrade required: {0}")]
    UpgradeRequired(String),
    #[error("content refused: {0}")]
    ContentRefused(String),
    #[error("server at capacity")]
    AtCapacity,
    /// A request about a player the store has never seen.
    #[error("{0}")]
    UnknownPlayer(String),
    /// Anything else asked for by name that does not exist (a conversation, a file).
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Duplicate(String),
    /// The store's own text is logged under the reference; the client sees only the reference.
    #[error("the store is unavailable; nothing was applied, retry later (ref {reference})")]
    StoreUnavailable { reference: String },
    #[error("something went wrong on the server; nothing was applied (ref {reference})")]
    Internal { reference: String },
}

/// The one mapping from analytics queries to HTTP errors (the endpoint and the playground).
impl From<crate::analytics::QueryError> for ApiError {
    fn from(e: crate::analytics::QueryError) -> ApiError {
        match e {
            crate::analytics::QueryError::Bad(why) => ApiError::BadRequest(why),
            crate::analytics::QueryError::UnknownConversation(_) => {
                ApiError::NotFound(e.to_string())
            }
            crate::analytics::QueryError::Store(e) => e.into(),
        }
    }
}

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> ApiError {
        ApiError::Unauthorized(e)
    }
}

impl From<ServiceKeyError> for ApiError {
    fn from(e: ServiceKeyError) -> ApiError {
        match e {
            ServiceKeyError::Missing => ApiError::Unauthorized(AuthError::Missing),
            ServiceKeyError::Wrong => ApiError::Forbidden,
        }
    }
}

/// The one mapping from store errors to HTTP errors: the caller's own mistakes are said plainly,
/// everything else is logged with a reference and answered without its text.
impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> ApiError {
        use crate::store::StoreError;
        match e {
            StoreError::InvalidInput(_) | StoreError::InvalidAmount { .. } => {
                ApiError::BadRequest(e.to_string())
            }
            StoreError::UnknownPlayer(_) => ApiError::UnknownPlayer(e.to_string()),
            StoreError::CarriedElsewhere(_) => ApiError::CarriedElsewhere(e.to_string()),
            StoreError::DuplicateEvent { .. } => ApiError::Duplicate(e.to_string()),
            // Placeholder until parties have their own statuses: the caller's request does not
            // fit the parties as they are.
            StoreError::NotInParty
            | StoreError::AlreadyInParty
            | StoreError::PartyFull
            | StoreError::NoInvite
            | StoreError::SharedElsewhere { .. }
            | StoreError::NotAMember => ApiError::BadRequest(e.to_string()),
            // An event whose COMMIT's outcome is unknown: the game server retries with the same
            // event id, which applies at most once and answers `duplicate` if the first landed.
            StoreError::Unavailable(_) | StoreError::OutcomeUnknown(_) => {
                ApiError::StoreUnavailable {
                    reference: crate::incident::report_outage("http", &e),
                }
            }
            StoreError::QuestState { .. }
            | StoreError::StepApplied { .. }
            | StoreError::AlreadyPaid { .. }
            | StoreError::Config(_)
            | StoreError::Migration(_)
            | StoreError::Corrupt(_)
            | StoreError::Database(_) => ApiError::Internal {
                reference: crate::incident::report("http", &e),
            },
        }
    }
}

impl From<crate::events::EventError> for ApiError {
    fn from(e: crate::events::EventError) -> ApiError {
        use crate::events::EventError;
        match e {
            EventError::UnknownPlayer(_) => ApiError::UnknownPlayer(e.to_string()),
            EventError::Duplicate(_) => ApiError::Duplicate(e.to_string()),
            EventError::Store(store) => ApiError::from(store),
        }
    }
}

#[derive(Serialize)]
struct ErrorBody {
    error: &'static str,
    message: String,
}

impl ApiError {
    /// The status and the `error` code.
    fn status(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::Unauthorized(_) | ApiError::BadCredential(_) => {
                (StatusCode::UNAUTHORIZED, "unauthorized")
            }
            ApiError::Forbidden => (StatusCode::FORBIDDEN, "forbidden"),
            ApiError::UnknownChannel(_) => (StatusCode::NOT_FOUND, "unknown_channel"),
            ApiError::StaleBatch(_) => (StatusCode::CONFLICT, "stale_batch"),
            ApiError::BatchGap(_) => (StatusCode::CONFLICT, "batch_gap"),
            ApiError::CarriedElsewhere(_) => (StatusCode::CONFLICT, "carried_elsewhere"),
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            ApiError::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            ApiError::UpgradeRequired(_) => (StatusCode::UPGRADE_REQUIRED, "upgrade_required"),
            ApiError::ContentRefused(_) => (StatusCode::UNPROCESSABLE_ENTITY, "content_refused"),
            ApiError::AtCapacity => (StatusCode::SERVICE_UNAVAILABLE, "at_capacity"),
            ApiError::UnknownPlayer(_) => (StatusCode::NOT_FOUND, "unknown_player"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::Duplicate(_) => (StatusCode::CONFLICT, "duplicate"),
            ApiError::StoreUnavailable { .. } => {
                (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable")
            }
            ApiError::Internal { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }

    /// The JSON body, `{"error": "<code>", "message": "<text>"}` (also a channel WebSocket's
    /// refusal frame).
    pub fn body(&self) -> impl Serialize + use<> {
        let (_, error) = self.status();
        // What the client sent is quoted short; a refused reload's list is the operator's own.
        let message = match self {
            ApiError::ContentRefused(_) => self.to_string(),
            _ => banter_protocol::bounded_message(&self.to_string()),
        };
        ErrorBody { error, message }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, _) = self.status();
        (status, Json(self.body())).into_response()
    }
}

/// A request the server could not read, as an [`ApiError`]: a body over its limit is `413`, a
/// WebSocket upgrade asked with another method `405` or without its headers `426`, anything else
/// (a missing JSON content type included) `400`. The text is cut short: axum's quotes what the
/// client sent (a field name, a value), and an error message carries at most a prefix of it.
fn rejection_text(status: StatusCode, text: &str) -> ApiError {
    let text = text.to_owned();
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge(text),
        StatusCode::METHOD_NOT_ALLOWED => ApiError::MethodNotAllowed,
        StatusCode::UPGRADE_REQUIRED => ApiError::UpgradeRequired(text),
        _ => ApiError::BadRequest(text),
    }
}

/// `From` each of axum's rejections (they share no trait), through [`rejection_text`].
macro_rules! from_rejections {
    ($($rejection:ty),+ $(,)?) => {$(
        impl From<$rejection> for ApiError {
            fn from(e: $rejection) -> ApiError {
                rejection_text(e.status(), &e.body_text())
            }
        }
    )+};
}

from_rejections!(
    BytesRejection,
    JsonRejection,
    QueryRejection,
    PathRejection,
    WebSocketUpgradeRejection,
);

/// Answers a path no route serves.
pub async fn no_route() -> ApiError {
    ApiError::NotFound("no such endpoint".into())
}

/// Answers a route asked with a method it does not serve.
pub async fn wrong_method() -> ApiError {
    ApiError::MethodNotAllowed
}
