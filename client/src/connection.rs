//! One WebSocket to the server: frames in, protocol messages out, request ids matched to their
//! `ack` or `error`.
//!
//! A reader task owns the receiving half: it decodes every text frame into a
//! [`ServerMessage`] and answers the server's pings by itself (tungstenite flushes the pong
//! while reading), so a client that is busy elsewhere, or a person thinking at the keyboard,
//! is never dropped as a dead peer. The sending half stays here; [`Connection::request`]
//! sends one message with a fresh id and collects everything the server sent up to its answer.
//! [`Connection::resume`] takes back the conversation a dropped session left open.

use std::future::Future;
use std::time::{Duration, Instant};

use banter_protocol::{ClientMessage, ErrorCode, Profile, ServerMessage};
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::endpoint::Endpoint;
use crate::error::{Error, Result};

/// How long a request may wait for its answer.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(15);

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// What the reader task hands over.
#[derive(Debug)]
enum Incoming {
    Message(Box<ServerMessage>),
    /// A text frame that is not a server message (a server bug, or not a Banter server).
    Garbled(String),
    /// The stream ended (close frame, reset, end of stream).
    Closed,
}

/// The `welcome` that opens every session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Welcome {
    pub player: String,
    pub session: u64,
    pub profile: Profile,
    /// Where the server remembers the body; `None` when it must be spawned.
    pub position: Option<banter_protocol::Position>,
    /// The token a later session `resume`s this one's conversation with.
    pub resume_token: String,
    /// A cutscene quest's scene still playing from the previous session: play it, then send
    /// `cutscene_done` with it.
    pub cutscene: Option<String>,
    /// The locale the text is served in (the asked one, a fallback of it, or the source).
    pub locale: String,
    /// Every locale the content can be read in.
    pub locales: Vec<String>,
}

/// A refusal: the `error` that answered a request.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
    /// False for refusals decided before decoding (`rate_limited`, `frame_too_large`, ...),
    /// which carry no id.
    pub with_id: bool,
}

/// Everything one request caused: the messages before its answer, the answer, the round trip.
#[derive(Clone, Debug)]
pub struct Reply {
    pub messages: Vec<ServerMessage>,
    pub answer: std::result::Result<(), Refusal>,
    pub round_trip: Duration,
}

impl Reply {
    /// The refusal's code, if the request was refused.
    pub fn refused(&self) -> Option<ErrorCode> {
        self.answer.as_ref().err().map(|r| r.code)
    }
}

/// A conversation taken back by `resume`: the walk is where the dropped session left it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resumed {
    pub conversation: String,
    /// The content version it runs on (the one the client cached).
    pub hash: String,
}

/// An open session.
pub struct Connection {
    sink: SplitSink<Ws, Message>,
    inbox: mpsc::UnboundedReceiver<Incoming>,
    reader: JoinHandle<()>,
    next_id: u64,
    /// Set once the server said `bye` or the stream ended.
    ended: Option<Error>,
    pub welcome: Welcome,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// What `tokio_tungstenite`'s connect functions answer: the stream and the server's `101`, or
/// why not.
type Upgraded<W> =
    std::result::Result<(W, tungstenite::handshake::client::Response), tungstenite::Error>;

/// Waits at most [`ANSWER_TIMEOUT`] for a WebSocket handshake to `path` (`upgrade`, from one
/// of `tokio_tungstenite`'s connect functions). An upgrade the server refused is
/// [`Error::Http`] with its status and body.
pub async fn handshake<W>(path: &str, upgrade: impl Future<Output = Upgraded<W>>) -> Result<W> {
    let (ws, _) = tokio::time::timeout(ANSWER_TIMEOUT, upgrade)
        .await
        .map_err(|_| Error::Timeout(ANSWER_TIMEOUT))?
        .map_err(|e| match e {
            tungstenite::Error::Http(response) => Error::Http {
                path: path.to_owned(),
                status: response.status().as_u16(),
                body: response
                    .body()
                    .as_ref()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .unwrap_or_default(),
            },
            other => other.into(),
        })?;
    Ok(ws)
}

/// The outcome of a WebSocket upgrade attempt: `Ok(101)` when it was accepted.
pub async fn upgrade_status(endpoint: &Endpoint, token: &str) -> Result<u16> {
    match tokio_tungstenite::connect_async(endpoint.ws_url(token)).await {
        Ok((mut ws, response)) => {
            let _ = ws.close(None).await;
            Ok(response.status().as_u16())
        }
        Err(tungstenite::Error::Http(response)) => Ok(response.status().as_u16()),
        Err(e) => Err(e.into()),
    }
}

impl Connection {
    /// Upgrades a WebSocket with `token` and waits for the `welcome`.
    pub async fn connect(endpoint: &Endpoint, token: &str) -> Result<Connection> {
        // Nagle off, as a game client's socket is: a small message sent while an earlier one
        // is not yet acknowledged must not wait out the server's delayed ACK (40 ms).
        let ws = handshake(
            "/v1/ws",
            tokio_tungstenite::connect_async_with_config(endpoint.ws_url(token), None, true),
        )
        .await?;
        let (sink, mut stream) = ws.split();
        let (tx, inbox) = mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            while let Some(frame) = stream.next().await {
                let incoming = match frame {
                    Ok(Message::Text(text)) => match serde_json::from_str(text.as_str()) {
                        Ok(message) => Incoming::Message(Box::new(message)),
                        Err(_) => Incoming::Garbled(text.as_str().to_owned()),
                    },
                    Ok(Message::Close(_)) | Err(_) => break,
                    Ok(_) => continue,
                };
                if tx.send(incoming).is_err() {
                    return;
                }
            }
            let _ = tx.send(Incoming::Closed);
        });
        let mut connection = Connection {
            sink,
            inbox,
            reader,
            next_id: 0,
            ended: None,
            welcome: Welcome::default(),
        };
        match connection.recv(ANSWER_TIMEOUT).await? {
            welcome @ ServerMessage::Welcome { .. } => {
                connection.welcome = crate::channel::welcome_of(welcome).unwrap_or_default();
                Ok(connection)
            }
            ServerMessage::Error { code, message, .. } => Err(Error::Refused { code, message }),
            other => Err(Error::Protocol(format!("expected welcome, got {other:?}"))),
        }
    }

    /// True once the server ended the session or the stream closed.
    pub fn is_ended(&self) -> bool {
        self.ended.is_some()
    }

    /// Sends any frame as it is (the attack catalogue's raw access).
    pub async fn send_frame(&mut self, frame: Message) -> Result<()> {
        self.sink.send(frame).await.map_err(Error::from)
    }

    /// Sends a message as it is, id or not.
    pub async fn send(&mut self, message: &ClientMessage) -> Result<()> {
        let text = serde_json::to_string(message).map_err(|e| Error::Other(e.to_string()))?;
        self.send_frame(Message::Text(text.into())).await
    }

    /// The next protocol message, waiting at most `patience`.
    pub async fn recv(&mut self, patience: Duration) -> Result<ServerMessage> {
        if let Some(e) = &self.ended {
            return Err(match e {
                Error::Bye { reason, message } => Error::Bye {
                    reason: *reason,
                    message: message.clone(),
                },
                _ => Error::Closed,
            });
        }
        let incoming = tokio::time::timeout(patience, self.inbox.recv())
            .await
            .map_err(|_| Error::Timeout(patience))?;
        match incoming {
            Some(Incoming::Message(message)) => {
                let message = *message;
                if let ServerMessage::Bye { reason, message: m } = &message {
                    self.ended = Some(Error::Bye {
                        reason: *reason,
                        message: m.clone(),
                    });
                }
                Ok(message)
            }
            Some(Incoming::Garbled(text)) => Err(Error::Protocol(text)),
            Some(Incoming::Closed) | None => {
                self.ended.get_or_insert(Error::Closed);
                Err(Error::Closed)
            }
        }
    }

    /// Every message already received, without waiting (pushed effects between requests).
    pub fn drain(&mut self) -> Vec<ServerMessage> {
        let mut out = Vec::new();
        while let Ok(incoming) = self.inbox.try_recv() {
            match incoming {
                Incoming::Message(message) => {
                    let message = *message;
                    if let ServerMessage::Bye { reason, message: m } = &message {
                        self.ended = Some(Error::Bye {
                            reason: *reason,
                            message: m.clone(),
                        });
                    }
                    out.push(message);
                }
                Incoming::Garbled(_) => {}
                Incoming::Closed => {
                    self.ended.get_or_insert(Error::Closed);
                }
            }
        }
        out
    }

    /// A fresh request id.
    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends `message` with a fresh id and collects everything up to its `ack` or `error`. A
    /// `bye` or the end of the stream is an error; an `error` without an id answers this request
    /// (it is the oldest unanswered frame, since requests are sent one at a time).
    pub async fn request(&mut self, message: ClientMessage) -> Result<Reply> {
        let id = self.next_id();
        let started = Instant::now();
        self.send(&message.with_id(id)).await?;
        self.answer(id, started).await
    }

    /// Collects messages until the answer to request `id` arrives.
    pub async fn answer(&mut self, id: u64, started: Instant) -> Result<Reply> {
        let mut messages = Vec::new();
        loop {
            let message = self.recv(ANSWER_TIMEOUT).await?;
            match message {
                ServerMessage::Ack { id: acked } if acked == id => {
                    return Ok(Reply {
                        messages,
                        answer: Ok(()),
                        round_trip: started.elapsed(),
                    });
                }
                ServerMessage::Error {
                    id: answered,
                    code,
                    message: text,
                    ..
                } if answered.is_none() || answered == Some(id) => {
                    return Ok(Reply {
                        messages,
                        answer: Err(Refusal {
                            code,
                            message: text,
                            with_id: answered.is_some(),
                        }),
                        round_trip: started.elapsed(),
                    });
                }
                ServerMessage::Bye { reason, message } => {
                    return Err(Error::Bye { reason, message });
                }
                other => messages.push(other),
            }
        }
    }

    /// Takes back the conversation a dropped session left open, with the `resume_token` of that
    /// session's [`Welcome`]. A refusal (`resume_refused`: the grace window passed, or another
    /// conversation replaced it; or the body is out of reach) is an answer, not an error.
    pub async fn resume(
        &mut self,
        resume_token: &str,
    ) -> Result<std::result::Result<Resumed, Refusal>> {
        let reply = self
            .request(ClientMessage::Resume {
                id: None,
                token: resume_token.to_owned(),
            })
            .await?;
        if let Err(refusal) = reply.answer {
            return Ok(Err(refusal));
        }
        reply
            .messages
            .into_iter()
            .find_map(|m| match m {
                ServerMessage::Resumed { conversation, hash } => {
                    Some(Ok(Resumed { conversation, hash }))
                }
                _ => None,
            })
            .ok_or_else(|| Error::Protocol("a resume was acknowledged without `resumed`".into()))
    }

    /// Closes the socket from the client's side.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(2), self.sink.close()).await;
    }
}
