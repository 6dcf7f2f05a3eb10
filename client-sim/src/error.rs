//! The library's typed errors. Nothing from the network or a file is unwrapped: every failure
//! ends up here, and the CLI prints it.

use banter_protocol::{ByeReason, ErrorCode};

/// Why a client operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("bad URL `{0}`: expected http://HOST:PORT, ws://HOST:PORT or HOST:PORT")]
    BadUrl(String),
    #[error("network: {0}")]
    Io(#[from] std::io::Error),
    #[error("websocket: {0}")]
    WebSocket(#[from] Box<tokio_tungstenite::tungstenite::Error>),
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
    #[error("content: {0}")]
    Content(String),
    #[error("{0}")]
    Other(String),
}

impl From<tokio_tungstenite::tungstenite::Error> for SimError {
    fn from(e: tokio_tungstenite::tungstenite::Error) -> Self {
        SimError::WebSocket(Box::new(e))
    }
}

impl SimError {
    /// True when the connection is gone and a reconnect may help.
    pub fn is_disconnect(&self) -> bool {
        matches!(
            self,
            SimError::Io(_)
                | SimError::WebSocket(_)
                | SimError::Closed
                | SimError::Bye { .. }
                | SimError::Timeout(_)
        )
    }
}

pub type Result<T, E = SimError> = std::result::Result<T, E>;
