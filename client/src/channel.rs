//! Game-server channels (docs/PROTOCOL.md section 16) from the game server's side: credentials
//! issued and revoked with the service key, a channel opened with a credential, its HTTP batches
//! and its WebSocket. The wire types are the protocol crate's ([`banter_protocol::channel`]);
//! what to batch, and when, is the caller's.

use std::time::{Duration, Instant};

use banter_protocol::ServerMessage;
use banter_protocol::channel::{Answer, Batch, ChannelOpened};
use futures_util::StreamExt;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use serde::Deserialize;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::connection::{ANSWER_TIMEOUT, Refusal, Reply, Welcome, handshake};
use crate::endpoint::Endpoint;
use crate::error::{Error, Result};
use crate::http::{Http, http_error, parse};

/// A channel's WebSocket (`GET /v1/channels/ws`).
pub type ChannelSocket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A credential as `POST /admin/game-servers` answers it: the only time its secret is shown.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Issued {
    pub id: String,
    pub name: String,
    pub players: Vec<String>,
    pub credential: String,
}

/// The JSON error of a refused request (`{"error":"stale_batch","message":"..."}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct ApiRefusal {
    #[serde(default)]
    pub error: String,
    #[serde(default)]
    pub message: String,
}

impl ApiRefusal {
    /// The refusal a body holds; an empty code when the body is not the JSON error (a proxy's
    /// page, a plain-text rejection).
    pub fn read(body: &str) -> ApiRefusal {
        serde_json::from_str(body).unwrap_or_default()
    }
}

/// What became of an HTTP batch.
#[derive(Clone, Debug, PartialEq)]
pub enum BatchOutcome {
    /// `200`: the events after the batch's `ack`.
    Answered(Answer<ServerMessage>),
    /// Any other status, with its JSON error (the code is empty when the body is not one).
    Refused {
        status: u16,
        refusal: ApiRefusal,
        body: String,
    },
}

/// The batch path of `channel`.
pub fn batch_path(channel: &str) -> String {
    format!("/v1/channels/{channel}/batch")
}

impl Http {
    /// `POST /admin/game-servers` with the service key: a credential that speaks for the players
    /// whose ids start with one of `players`.
    pub async fn issue_game_server(
        &self,
        service_key: &str,
        name: &str,
        players: &[String],
    ) -> Result<Issued> {
        const PATH: &str = "/admin/game-servers";
        let body = serde_json::json!({ "name": name, "players": players }).to_string();
        match self.post_json(PATH, Some(service_key), &body).await? {
            (201, text) => parse(PATH, &text),
            (status, text) => Err(http_error(PATH, status, text)),
        }
    }

    /// `DELETE /admin/game-servers/<id>` with the service key.
    pub async fn revoke_game_server(&self, service_key: &str, id: &str) -> Result<()> {
        let path = format!("/admin/game-servers/{id}");
        let auth = format!("Bearer {service_key}");
        match self
            .request("DELETE", &path, &[(AUTHORIZATION.as_str(), &auth)], "")
            .await?
        {
            (200, _) => Ok(()),
            (status, text) => Err(http_error(&path, status, text)),
        }
    }

    /// `POST /v1/channels` with a credential: the channel and its limits.
    pub async fn open_channel(&self, credential: &str) -> Result<ChannelOpened> {
        const PATH: &str = "/v1/channels";
        match self.post_json(PATH, Some(credential), "").await? {
            (201, text) => parse(PATH, &text),
            (status, text) => Err(http_error(PATH, status, text)),
        }
    }

    /// `DELETE /v1/channels/<channel>`: the status (`204` when it ended).
    pub async fn close_channel(&self, credential: &str, channel: &str) -> Result<u16> {
        let auth = format!("Bearer {credential}");
        let (status, _) = self
            .request(
                "DELETE",
                &format!("/v1/channels/{channel}"),
                &[(AUTHORIZATION.as_str(), &auth)],
                "",
            )
            .await?;
        Ok(status)
    }

    /// Posts a batch body as it is (well-formed or not): the status and the body.
    pub async fn post_batch_text(
        &self,
        credential: &str,
        channel: &str,
        body: &str,
    ) -> Result<(u16, String)> {
        let auth = format!("Bearer {credential}");
        self.request(
            "POST",
            &batch_path(channel),
            &[
                (CONTENT_TYPE.as_str(), "application/json"),
                (AUTHORIZATION.as_str(), &auth),
            ],
            body,
        )
        .await
    }

    /// Posts a batch: its answer, or the refusal.
    pub async fn post_batch<M: serde::Serialize>(
        &self,
        credential: &str,
        channel: &str,
        batch: &Batch<M>,
    ) -> Result<BatchOutcome> {
        let body = serde_json::to_string(batch).map_err(|e| Error::Other(e.to_string()))?;
        let (status, text) = self.post_batch_text(credential, channel, &body).await?;
        read_batch_answer(channel, status, text)
    }
}

/// What a batch's status and body say.
pub fn read_batch_answer(channel: &str, status: u16, body: String) -> Result<BatchOutcome> {
    if status == 200 {
        return parse(&batch_path(channel), &body).map(BatchOutcome::Answered);
    }
    Ok(BatchOutcome::Refused {
        status,
        refusal: ApiRefusal::read(&body),
        body,
    })
}

/// Opens a channel over one WebSocket with `credential`: the socket and its first frame. A
/// refused upgrade is [`Error::Http`] with its status and body.
pub async fn connect_socket(
    endpoint: &Endpoint,
    credential: &str,
) -> Result<(ChannelSocket, ChannelOpened)> {
    const PATH: &str = "/v1/channels/ws";
    let mut request = endpoint.ws_path_url(PATH).into_client_request()?;
    let auth = format!("Bearer {credential}")
        .parse()
        .map_err(|_| Error::Other("a credential that is no header value".to_owned()))?;
    request.headers_mut().insert(AUTHORIZATION, auth);
    let mut socket = handshake(
        PATH,
        tokio_tungstenite::connect_async_with_config(request, None, true),
    )
    .await?;
    let first = tokio::time::timeout(ANSWER_TIMEOUT, socket.next())
        .await
        .map_err(|_| Error::Timeout(ANSWER_TIMEOUT))?;
    match first {
        Some(Ok(Message::Text(text))) => {
            let opened = parse(PATH, text.as_str())?;
            Ok((socket, opened))
        }
        Some(Ok(other)) => Err(Error::Protocol(format!(
            "the channel's first frame is not its opening: {other:?}"
        ))),
        Some(Err(e)) => Err(e.into()),
        None => Err(Error::Closed),
    }
}

/// A `welcome` as the session's [`Welcome`]; `None` for anything else.
pub fn welcome_of(message: ServerMessage) -> Option<Welcome> {
    match message {
        ServerMessage::Welcome {
            player,
            session,
            profile,
            position,
            resume_token,
            cutscene,
            locale,
            locales,
            ..
        } => Some(Welcome {
            player,
            session,
            profile,
            position,
            resume_token,
            cutscene,
            locale,
            locales,
        }),
        _ => None,
    }
}

/// A request waiting for its answer among a player's channel events, as
/// [`crate::connection::Connection::request`] waits on its own socket: every event before the
/// answer is kept for the reply.
#[derive(Debug)]
pub struct AwaitedAnswer {
    id: u64,
    started: Instant,
    before: Vec<ServerMessage>,
}

impl AwaitedAnswer {
    /// Waits for the answer to request `id`, sent at `started`.
    pub fn new(id: u64, started: Instant) -> AwaitedAnswer {
        AwaitedAnswer {
            id,
            started,
            before: Vec::new(),
        }
    }

    /// Takes the player's next event: the reply once it is the request's `ack` or `error` (an
    /// `error` without an id answers the oldest unanswered request), `None` while it is
    /// something else; a `bye` is [`Error::Bye`].
    pub fn take(&mut self, event: ServerMessage) -> Result<Option<Reply>> {
        let answer = match event {
            ServerMessage::Ack { id } if id == self.id => Ok(()),
            ServerMessage::Error {
                id, code, message, ..
            } if id.is_none() || id == Some(self.id) => Err(Refusal {
                code,
                message,
                with_id: id.is_some(),
            }),
            ServerMessage::Bye { reason, message } => return Err(Error::Bye { reason, message }),
            other => {
                self.before.push(other);
                return Ok(None);
            }
        };
        Ok(Some(Reply {
            messages: std::mem::take(&mut self.before),
            answer,
            round_trip: self.started.elapsed(),
        }))
    }
}

/// How long a long-poll may hold on top of the HTTP timeout: a client waiting `wait_ms` for an
/// answer needs its own timeout longer than that.
pub fn long_poll_timeout(wait: Duration) -> Duration {
    crate::http::HTTP_TIMEOUT + wait
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_read_the_json_error_or_nothing() {
        let refused = ApiRefusal::read(r#"{"error":"stale_batch","message":"batch 1 is older"}"#);
        assert_eq!(refused.error, "stale_batch");
        assert_eq!(ApiRefusal::read("length limit exceeded").error, "");
        let outcome =
            read_batch_answer("ch_1", 409, r#"{"error":"batch_gap","message":"m"}"#.into())
                .expect("a refusal reads");
        assert!(matches!(
            outcome,
            BatchOutcome::Refused { status: 409, ref refusal, .. } if refusal.error == "batch_gap"
        ));
        let answered = read_batch_answer(
            "ch_1",
            200,
            r#"{"seq":1,"events":[{"n":1,"player":"p","message":{"type":"ack","id":3}}],"more":false}"#
                .into(),
        )
        .expect("an answer reads");
        assert!(matches!(answered, BatchOutcome::Answered(a) if a.events.len() == 1));
    }

    #[test]
    fn an_awaited_answer_keeps_what_came_before_its_ack_or_error() {
        let mut awaited = AwaitedAnswer::new(2, Instant::now());
        let earlier = ServerMessage::Ack { id: 1 };
        assert!(awaited.take(earlier.clone()).expect("kept").is_none());
        let reply = awaited
            .take(ServerMessage::Ack { id: 2 })
            .expect("answered")
            .expect("a reply");
        assert_eq!((reply.messages, reply.answer), (vec![earlier], Ok(())));

        let mut awaited = AwaitedAnswer::new(3, Instant::now());
        let refused = ServerMessage::Error {
            id: None,
            code: banter_protocol::ErrorCode::NotJoined,
            message: "m".into(),
            retryable: false,
        };
        let reply = awaited.take(refused).expect("answered").expect("a reply");
        assert_eq!(reply.refused(), Some(banter_protocol::ErrorCode::NotJoined));
        assert!(reply.answer.is_err_and(|r| !r.with_id));
        let bye = ServerMessage::Bye {
            reason: banter_protocol::ByeReason::Replaced,
            message: String::new(),
        };
        assert!(matches!(awaited.take(bye), Err(Error::Bye { .. })));
    }
}
