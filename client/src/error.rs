//! The crate's one error type. Nothing from the network is unwrapped: every failure ends up here,
//! typed, so a caller can tell a refusal from a dropped connection from a server bug.

use banter_protocol::{ByeReason, ErrorCode};

/// Why a client operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("bad URL `{0}`: expected http://HOST:PORT, ws://HOST:PORT or HOST:PORT")]
    BadUrl(String),
    #[error("network: {0}")]
    Io(#[from] std::io::Error),
    #[error("websocket: {0}")]
    WebSocket(#[from] Box<tokio_tungstenite::tungstenite::Error>),
    /// An HTTP request that got no answer (connection refused or reset, a bad URL).
    #[error("HTTP request: {0}")]
    Transport(#[from] reqwest::Error),
    /// An HTTP answer other than the one asked for (a WebSocket upgrade refused included).
    #[error("HTTP {status} from {path}: {body}")]
    Http {
        path: String,
        status: u16,
        body: String,
    },
    #[error("the server sent something that is not a protocol message: {0}")]
    Protocol(String),
    #[error("the server ended the session: {reason:?} ({message})")]
    Bye { reason: ByeReason, message: String },
    #[error("the connection closed")]
    Closed,
    #[error("no answer within {0:?}")]
    Timeout(std::time::Duration),
    #[error("refused: {code:?}: {message}")]
    Refused { code: ErrorCode, message: String },
    /// Content that does not build: a conversation the server sent, or a client's own copy.
    #[error("content: {0}")]
    Content(String),
    #[error("{0}")]
    Other(String),
}

impl From<tokio_tungstenite::tungstenite::Error> for Error {
    fn from(e: tokio_tungstenite::tungstenite::Error) -> Self {
        Error::WebSocket(Box::new(e))
    }
}

impl Error {
    /// True when the connection is gone and a reconnect may help.
    pub fn is_disconnect(&self) -> bool {
        matches!(
            self,
            Error::Io(_)
                | Error::WebSocket(_)
                | Error::Transport(_)
                | Error::Closed
                | Error::Bye { .. }
                | Error::Timeout(_)
        )
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
