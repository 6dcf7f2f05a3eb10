//! `Client`: a raw WebSocket client that speaks the wire protocol, and its typed answers.

use banter_protocol::{ByeReason, ClientMessage, ErrorCode, ServerMessage};
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::*;

/// What the server answered to one request: what came before the ack, and the ack or error.
#[derive(Debug)]
pub struct Reply {
    pub messages: Vec<ServerMessage>,
}

/// A refused request.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub code: ErrorCode,
    pub message: String,
    pub before: Vec<ServerMessage>,
}

pub struct Client {
    pub(crate) ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    pub(crate) next_id: u64,
}

impl Client {
    /// Sends any WebSocket frame.
    pub async fn send_frame(&mut self, frame: Message) {
        self.ws.send(frame).await.expect("send");
    }

    /// Sends a message as-is (no id added).
    pub async fn send(&mut self, message: &ClientMessage) {
        let text = serde_json::to_string(message).expect("encode");
        self.send_frame(Message::Text(text.into())).await;
    }

    /// The next protocol message; pings and pongs are skipped.
    pub async fn recv(&mut self) -> ServerMessage {
        self.try_recv()
            .await
            .expect("a message before the connection closed")
    }

    /// The next protocol message, or `None` once the server closed the connection.
    pub async fn try_recv(&mut self) -> Option<ServerMessage> {
        loop {
            let frame = tokio::time::timeout(PATIENCE, self.ws.next())
                .await
                .expect("a frame in time");
            match frame {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return None,
                Some(Ok(Message::Text(text))) => {
                    return Some(serde_json::from_str(text.as_str()).expect("a protocol message"));
                }
                Some(Ok(_)) => continue,
            }
        }
    }

    /// Sends a message with a fresh id and collects everything up to its ack or error.
    pub async fn request(&mut self, message: ClientMessage) -> Result<Reply, Refused> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&message.with_id(id)).await;
        let mut messages = Vec::new();
        loop {
            match self.recv().await {
                ServerMessage::Ack { id: acked } if acked == id => return Ok(Reply { messages }),
                ServerMessage::Error {
                    id: Some(failed),
                    code,
                    message,
                    ..
                } if failed == id => {
                    return Err(Refused {
                        code,
                        message,
                        before: messages,
                    });
                }
                other => messages.push(other),
            }
        }
    }

    /// Closes the socket from the client's side.
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers for the rejection-path tests: typed shortcuts over `request`, metrics, raw upgrades.
// ---------------------------------------------------------------------------------------------

/// What an `opened` message carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    pub conversation: String,
    pub npc: banter_protocol::NpcRef,
    pub entry: String,
    pub hash: String,
    pub content: Option<String>,
    pub facts: banter_protocol::FactSheet,
}

impl Reply {
    /// The `opened` message among the replies, if any.
    pub fn opened(&self) -> Option<Opened> {
        self.messages.iter().find_map(|m| match m {
            ServerMessage::Opened {
                conversation,
                npc,
                entry,
                hash,
                content,
                facts,
                ..
            } => Some(Opened {
                conversation: conversation.clone(),
                npc: npc.clone(),
                entry: entry.clone(),
                hash: hash.clone(),
                content: content.clone(),
                facts: facts.clone(),
            }),
            _ => None,
        })
    }

    /// Every effect among the replies, in order.
    pub fn effects(&self) -> Vec<banter_protocol::Effect> {
        self.messages
            .iter()
            .filter_map(|m| match m {
                ServerMessage::Effect { effect, .. } => Some(effect.clone()),
                _ => None,
            })
            .collect()
    }

    /// The profile carried by the last effect among the replies.
    pub fn profile(&self) -> Option<banter_protocol::Profile> {
        self.messages.iter().rev().find_map(|m| match m {
            ServerMessage::Effect { profile, .. } => Some(profile.clone()),
            _ => None,
        })
    }

    /// The conversation a `resume` took back and its content hash, from the `resumed` message.
    pub fn resumed(&self) -> Option<(&str, &str)> {
        self.messages.iter().find_map(|m| match m {
            ServerMessage::Resumed { conversation, hash } => {
                Some((conversation.as_str(), hash.as_str()))
            }
            _ => None,
        })
    }

    /// The content hash and content of the `conversation` message a fetch is answered with,
    /// which must be the whole reply.
    pub fn fetched(&self) -> (&str, &str) {
        match self.messages.as_slice() {
            [ServerMessage::Conversation { hash, content, .. }] => (hash, content),
            other => panic!("expected a conversation, got {other:?}"),
        }
    }
}

/// A `talk` to `npc`, with an instance hint and the content hash cached, if any (no id).
pub fn talk_message(npc: &str, instance: Option<&str>, cached: Option<&str>) -> ClientMessage {
    ClientMessage::Talk {
        id: None,
        npc: npc.to_owned(),
        instance: instance.map(str::to_owned),
        cached: cached.map(str::to_owned),
    }
}

/// Expecting a request to be refused, for `Result<_, Refused>`.
pub trait ExpectRefused {
    /// The refusal, which must carry `code`; panics if the request was accepted.
    fn expect_refused(self, code: ErrorCode) -> Refused;

    /// Like [`ExpectRefused::expect_refused`], and the error was all the server sent.
    fn expect_refused_alone(self, code: ErrorCode) -> Refused;
}

impl<T: std::fmt::Debug> ExpectRefused for Result<T, Refused> {
    #[track_caller]
    fn expect_refused(self, code: ErrorCode) -> Refused {
        match self {
            Ok(accepted) => panic!("expected a refusal with {code:?}, got {accepted:?}"),
            Err(refused) => {
                assert_eq!(refused.code, code, "{refused:?}");
                refused
            }
        }
    }

    #[track_caller]
    fn expect_refused_alone(self, code: ErrorCode) -> Refused {
        let refused = self.expect_refused(code);
        assert!(
            refused.before.is_empty(),
            "a refusal sends nothing else: {:?}",
            refused.before
        );
        refused
    }
}

impl Client {
    /// Opens a conversation with `npc` (no instance hint); the `opened` message.
    pub async fn talk(&mut self, npc: &str) -> Result<Opened, Refused> {
        self.talk_hinted(npc, None).await
    }

    /// Opens a conversation with `npc` and an instance hint; the `opened` message.
    pub async fn talk_hinted(
        &mut self,
        npc: &str,
        instance: Option<&str>,
    ) -> Result<Opened, Refused> {
        let reply = self.request(talk_message(npc, instance, None)).await?;
        Ok(reply.opened().expect("an accepted talk sends `opened`"))
    }

    /// Talks to `npc` (no instance hint, nothing cached); the whole reply, which need not hold
    /// an `opened` (a cutscene quest's talk opens no conversation).
    pub async fn talk_reply(&mut self, npc: &str) -> Result<Reply, Refused> {
        self.request(talk_message(npc, None, None)).await
    }

    /// Asserts a talk to `npc` is refused with `code`, with nothing sent before the error, and
    /// opened nothing: a close then finds no conversation.
    pub async fn expect_talk_refused(&mut self, npc: &str, code: ErrorCode) -> Refused {
        let refused = self.talk(npc).await.expect_refused_alone(code);
        self.close_conversation()
            .await
            .expect_refused(ErrorCode::NoConversation);
        refused
    }

    /// Moves the body.
    pub async fn move_to(&mut self, position: [f64; 3]) -> Result<Reply, Refused> {
        self.request(ClientMessage::Move { id: None, position })
            .await
    }

    /// Advances past the NPC line `node`.
    pub async fn advance(&mut self, node: &str) -> Result<Reply, Refused> {
        self.request(ClientMessage::Advance {
            id: None,
            node: node.to_owned(),
        })
        .await
    }

    /// Picks the response `response`.
    pub async fn choose(&mut self, response: &str) -> Result<Reply, Refused> {
        self.request(ClientMessage::Choose {
            id: None,
            response: response.to_owned(),
        })
        .await
    }

    /// Runs an action with its payload.
    pub async fn action(
        &mut self,
        action: banter_protocol::ActionType,
        payload: &str,
    ) -> Result<Reply, Refused> {
        self.request(ClientMessage::Action {
            id: None,
            action,
            payload: payload.to_owned(),
        })
        .await
    }

    /// Closes the open conversation.
    pub async fn close_conversation(&mut self) -> Result<Reply, Refused> {
        self.request(ClientMessage::Close { id: None }).await
    }

    /// Reports the cutscene `scene` done.
    pub async fn cutscene_done(&mut self, scene: &str) -> Result<Reply, Refused> {
        self.request(ClientMessage::CutsceneDone {
            id: None,
            scene: scene.to_owned(),
        })
        .await
    }

    /// Sends a frame; the error instead of a panic if the connection is gone.
    pub async fn try_send_frame(&mut self, frame: Message) -> Result<(), tungstenite::Error> {
        self.ws.send(frame).await
    }

    /// Sends a raw text frame as-is (it need not be a valid message).
    pub async fn send_text(&mut self, text: &str) {
        self.send_frame(Message::Text(text.to_owned().into())).await;
    }

    /// The next message, which must be an error; its code and id.
    pub async fn recv_error(&mut self) -> (ErrorCode, Option<u64>) {
        match self.recv().await {
            ServerMessage::Error { code, id, .. } => (code, id),
            other => panic!("expected an error, got {other:?}"),
        }
    }
}

// Requests about the session rather than a conversation: resuming, the locale, content.
impl Client {
    /// Takes back a dropped session's conversation with the resume token of its `welcome`.
    pub async fn resume(&mut self, resume_token: &str) -> Result<Reply, Refused> {
        self.request(ClientMessage::Resume {
            id: None,
            token: resume_token.to_owned(),
        })
        .await
    }

    /// Asks for the locale `locale`; the locale served, as its `locale_set` names it.
    pub async fn set_locale(&mut self, locale: &str) -> Result<String, Refused> {
        let reply = self
            .request(ClientMessage::SetLocale {
                id: None,
                locale: locale.to_owned(),
            })
            .await?;
        Ok(reply
            .messages
            .iter()
            .find_map(|m| match m {
                ServerMessage::LocaleSet { locale } => Some(locale.clone()),
                _ => None,
            })
            .expect("a locale_set before the ack"))
    }

    /// Asks for the merged conversation `conversation`.
    pub async fn fetch_conversation(&mut self, conversation: &str) -> Result<Reply, Refused> {
        self.request(ClientMessage::FetchConversation {
            id: None,
            conversation: conversation.to_owned(),
        })
        .await
    }
}

impl TestServer {
    /// The `/metrics` text.
    pub async fn metrics(&self) -> String {
        let (status, body) = self.http("GET", "/metrics", &[], "").await;
        assert_eq!(status, 200, "metrics: {body}");
        body
    }

    /// One sample of `/metrics` by its exact series (`name` or `name{label="v"}`).
    pub async fn metric(&self, series: &str) -> f64 {
        let text = self.metrics().await;
        metric_value(&text, series).unwrap_or_else(|| panic!("no series `{series}` in:\n{text}"))
    }

    /// Opens a WebSocket with a request built by the caller (headers, path); the upgrade's
    /// error if the server refused it. No welcome is read.
    pub async fn connect_request(
        &self,
        request: tungstenite::handshake::client::Request,
    ) -> Result<Client, tungstenite::Error> {
        let (ws, _) = tokio_tungstenite::connect_async(request).await?;
        Ok(Client { ws, next_id: 0 })
    }

    /// Opens a WebSocket with the token in the `Authorization` header (`Bearer`) instead of
    /// the query; the upgrade's error if the server refused it. No welcome is read.
    pub async fn connect_with_bearer(&self, token: &str) -> Result<Client, tungstenite::Error> {
        let mut request = format!("ws://{}/v1/ws", self.addr)
            .into_client_request()
            .expect("a request");
        let bearer = HeaderValue::from_str(&format!("Bearer {token}")).expect("a header value");
        request.headers_mut().insert("Authorization", bearer);
        self.connect_request(request).await
    }

    /// Like [`TestServer::connect`], over a socket whose kernel receive buffer is `bytes`: a
    /// client that stops reading fills it quickly.
    pub async fn connect_small_buffer(&self, token: &str, bytes: u32) -> Client {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_recv_buffer_size(bytes).expect("SO_RCVBUF");
        let stream = socket.connect(self.addr).await.expect("connect");
        let url = format!("ws://{}/v1/ws?token={token}", self.addr);
        let (ws, _) = tokio_tungstenite::client_async(url, MaybeTlsStream::Plain(stream))
            .await
            .expect("upgrade accepted");
        let mut client = Client { ws, next_id: 0 };
        match client.recv().await {
            ServerMessage::Welcome { .. } => client,
            other => panic!("expected welcome, got {other:?}"),
        }
    }
}

/// The value of one series in a Prometheus text exposition.
pub fn metric_value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            (name == series).then(|| value.parse().ok()).flatten()
        })
}

/// Seconds since the Unix epoch, as the server's token check reads the clock.
pub use banter_client::token::unix_now;

impl Client {
    /// The next WebSocket frame of any kind (pings and close frames included); `None` once the
    /// stream has ended.
    pub async fn next_frame(&mut self) -> Option<Message> {
        let frame = tokio::time::timeout(PATIENCE, self.ws.next())
            .await
            .expect("a frame in time");
        match frame {
            None | Some(Err(_)) => None,
            Some(Ok(frame)) => Some(frame),
        }
    }

    /// Reads every frame until the connection ends (past the close frame, to the TCP end):
    /// once this returns, the server has let go of the connection.
    pub async fn until_eof(&mut self) -> Vec<Message> {
        let mut frames = Vec::new();
        while let Some(frame) = self.next_frame().await {
            frames.push(frame);
        }
        frames
    }
}

impl Client {
    /// Reads to the end of the connection, which the server must end by saying only `bye`
    /// with `reason` and then sending a close frame; every frame.
    pub async fn until_bye(&mut self, reason: ByeReason) -> Vec<Message> {
        let frames = self.until_eof().await;
        let said = messages_in(&frames);
        assert!(
            matches!(said.as_slice(), [ServerMessage::Bye { reason: r, .. }] if *r == reason),
            "expected only a bye {reason:?}: {said:?}"
        );
        assert!(
            matches!(frames.last(), Some(Message::Close(_))),
            "a close frame last: {frames:?}"
        );
        frames
    }
}

/// The protocol messages among raw frames.
pub fn messages_in(frames: &[Message]) -> Vec<ServerMessage> {
    frames
        .iter()
        .filter_map(|f| match f {
            Message::Text(text) => {
                Some(serde_json::from_str(text.as_str()).expect("a protocol message"))
            }
            _ => None,
        })
        .collect()
}
