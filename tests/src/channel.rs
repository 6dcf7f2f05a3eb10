//! Game-server channels (PROTOCOL.md section 16) from the game server's side: credentials issued
//! with the service key, a channel's numbered HTTP batches, and the channel WebSocket. Bodies are
//! written as JSON values (tests also send what a typed client never would); answers are read
//! into the protocol crate's types.

use std::net::SocketAddr;

use banter_protocol::channel::{Answer, Event};
use banter_protocol::{ClientMessage, Position, ServerMessage};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::client::{ClientRequestBuilder, IntoClientRequest};
use tokio_tungstenite::tungstenite::{self, Message};

use crate::*;

/// A credential as issued: its id (`gs_...`) and the secret shown once (`bgs_...`).
#[derive(Clone, Debug)]
pub struct Credential {
    pub id: String,
    pub credential: String,
    /// The whole `201` answer.
    pub issued: Value,
}

/// A status and a body read as JSON (a string when it is not JSON).
pub fn json_answer((status, text): (u16, String)) -> (u16, Value) {
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, value)
}

impl TestServer {
    /// A request with `Authorization: Bearer <bearer>` (none when `None`) and, with a body, a
    /// JSON content type; the status and the body as JSON.
    pub async fn bearer_json(
        &self,
        method: &str,
        path: &str,
        bearer: Option<&str>,
        body: &str,
    ) -> (u16, Value) {
        bearer_json(self.addr, method, path, bearer, body).await
    }

    /// A request to an operator route with the service key.
    pub async fn admin(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        let key = self.config.service_key.clone();
        self.bearer_json(method, path, Some(&key), body).await
    }

    /// Issues a credential for `players` (scope prefixes); it must be `201`.
    pub async fn issue_credential(&self, name: &str, players: &[&str]) -> Credential {
        let body = json!({"name": name, "players": players}).to_string();
        let (status, issued) = self.admin("POST", "/admin/game-servers", &body).await;
        assert_eq!(status, 201, "issue {name}: {issued}");
        Credential {
            id: issued["id"].as_str().expect("an id").to_owned(),
            credential: issued["credential"]
                .as_str()
                .expect("the credential")
                .to_owned(),
            issued,
        }
    }

    /// Revokes a credential; it must be `200`. The answer.
    pub async fn revoke_credential(&self, id: &str) -> Value {
        let (status, body) = self
            .admin("DELETE", &format!("/admin/game-servers/{id}"), "")
            .await;
        assert_eq!(status, 200, "revoke {id}: {body}");
        body
    }

    /// Opens a channel with `credential`; it must be `201`.
    pub async fn open_channel(&self, credential: &Credential) -> Channel {
        let (status, opened) = self
            .bearer_json("POST", "/v1/channels", Some(&credential.credential), "")
            .await;
        assert_eq!(status, 201, "open a channel: {opened}");
        Channel {
            addr: self.addr,
            credential: credential.credential.clone(),
            id: opened["channel"].as_str().expect("a channel id").to_owned(),
            limits: opened["limits"].clone(),
            seq: 0,
            ack: 0,
            last: None,
        }
    }

    /// A player token for `player`, signed with the server's secret (as a game's own login
    /// service would mint it), valid for an hour.
    pub fn player_token(&self, player: &str) -> String {
        let now = unix_now();
        banter_client::token::mint(&self.config.auth_secret, player, now, now + 3600)
    }

    /// Opens a channel over a WebSocket (`GET /v1/channels/ws`) with `Authorization: Bearer
    /// <bearer>`; the upgrade's error if the server refused it. Nothing is read.
    pub async fn connect_channel(&self, bearer: &str) -> Result<ChannelSocket, tungstenite::Error> {
        let uri = format!("ws://{}/v1/channels/ws", self.addr)
            .parse()
            .expect("a channel URI");
        let request = ClientRequestBuilder::new(uri)
            .with_header("Authorization", format!("Bearer {bearer}"))
            .into_client_request()?;
        let client = self.connect_request(request).await?;
        Ok(ChannelSocket { client })
    }
}

/// A request with a bearer value and, with a body, a JSON content type; status and JSON body.
pub async fn bearer_json(
    addr: SocketAddr,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: &str,
) -> (u16, Value) {
    let auth = bearer.map(|b| format!("Bearer {b}"));
    let mut headers = Vec::new();
    if let Some(auth) = &auth {
        headers.push(("Authorization", auth.as_str()));
    }
    if !body.is_empty() {
        headers.push(("Content-Type", "application/json"));
    }
    json_answer(http(addr, method, path, &headers, body).await)
}

// ---------------------------------------------------------------------------------------------
// Items and positions, as a game server writes them.

/// `{"player":..,"join":{}}`.
pub fn join(player: &str) -> Value {
    json!({"player": player, "join": {}})
}

/// `{"player":..,"message":<the client message>}`.
pub fn message(player: &str, message: ClientMessage) -> Value {
    json!({"player": player, "message": message})
}

/// `{"player":..,"leave":true}`.
pub fn leave(player: &str) -> Value {
    json!({"player": player, "leave": true})
}

/// `{"player":..,"position":[x,y,z]}`.
pub fn placed(player: &str, position: Position) -> Value {
    json!({"player": player, "position": position})
}

/// A `talk` to `npc` under `id`.
pub fn talk(npc: &str, id: u64) -> ClientMessage {
    talk_message(npc, None, None).with_id(id)
}

// ---------------------------------------------------------------------------------------------
// A channel's HTTP batches.

/// An open channel, and where its batches are: the next `seq`, and the `ack` it sends (the
/// highest event number read so far).
#[derive(Clone, Debug)]
pub struct Channel {
    pub addr: SocketAddr,
    pub credential: String,
    pub id: String,
    pub limits: Value,
    /// The last `seq` applied.
    pub seq: u64,
    /// The `ack` the next batch sends.
    pub ack: u64,
    /// The last batch applied, for a retry.
    pub last: Option<Value>,
}

impl Channel {
    /// The batch path.
    pub fn path(&self) -> String {
        format!("/v1/channels/{}/batch", self.id)
    }

    /// Posts a body (any text) to the batch route with this channel's credential.
    pub async fn post_text(&self, body: &str) -> (u16, Value) {
        bearer_json(
            self.addr,
            "POST",
            &self.path(),
            Some(&self.credential),
            body,
        )
        .await
    }

    /// Posts a batch body as-is; the status and body. Nothing here changes.
    pub async fn post(&self, body: &Value) -> (u16, Value) {
        self.post_text(&body.to_string()).await
    }

    /// The next batch's body: `seq` one past the last, this channel's `ack`.
    pub fn next_body(&self, positions: Vec<Value>, items: Vec<Value>, wait_ms: u64) -> Value {
        json!({
            "seq": self.seq + 1,
            "ack": self.ack,
            "wait_ms": wait_ms,
            "positions": positions,
            "items": items,
        })
    }

    /// Sends the next batch, which must be `200`; its answer. Reads the events: the next batch
    /// acknowledges them.
    pub async fn batch(
        &mut self,
        positions: Vec<Value>,
        items: Vec<Value>,
    ) -> Answer<ServerMessage> {
        self.batch_waiting(positions, items, 0).await
    }

    /// Like [`Channel::batch`], holding the answer up to `wait_ms` for an event.
    pub async fn batch_waiting(
        &mut self,
        positions: Vec<Value>,
        items: Vec<Value>,
        wait_ms: u64,
    ) -> Answer<ServerMessage> {
        let body = self.next_body(positions, items, wait_ms);
        let answer = self.applied(&body).await;
        self.seq += 1;
        self.last = Some(body);
        answer
    }

    /// Sends the last batch again (same `seq`, same `ack`); its answer.
    pub async fn retry(&mut self) -> Answer<ServerMessage> {
        let body = self.last.clone().expect("a batch to retry");
        self.applied(&body).await
    }

    /// Posts `body`, which must be answered `200`; the answer, whose events this channel then
    /// acknowledges with its next batch.
    pub async fn applied(&mut self, body: &Value) -> Answer<ServerMessage> {
        let (status, answer) = self.post(body).await;
        assert_eq!(status, 200, "batch {body}: {answer}");
        let answer = read_answer(&answer);
        self.read(&answer.events);
        answer
    }

    /// Notes events as received: the next batch acknowledges them.
    pub fn read(&mut self, events: &[Event<ServerMessage>]) {
        if let Some(n) = events.iter().map(|e| e.n).max() {
            self.ack = self.ack.max(n);
        }
    }

    /// `DELETE /v1/channels/<channel>`; the status and body.
    pub async fn delete(&self) -> (u16, Value) {
        bearer_json(
            self.addr,
            "DELETE",
            &format!("/v1/channels/{}", self.id),
            Some(&self.credential),
            "",
        )
        .await
    }
}

/// A batch answer's JSON read into the protocol's types (every event a server message).
pub fn read_answer(answer: &Value) -> Answer<ServerMessage> {
    serde_json::from_value(answer.clone())
        .unwrap_or_else(|e| panic!("not a batch answer ({e}): {answer}"))
}

/// The messages of `player` among `events`, in order.
pub fn messages_for(events: &[Event<ServerMessage>], player: &str) -> Vec<ServerMessage> {
    events
        .iter()
        .filter(|e| e.player == player)
        .map(|e| e.message.clone())
        .collect()
}

/// The resume token of `player`'s `welcome` among `events`.
pub fn welcome_token(events: &[Event<ServerMessage>], player: &str) -> String {
    messages_for(events, player)
        .into_iter()
        .find_map(|m| match m {
            ServerMessage::Welcome { resume_token, .. } => Some(resume_token),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no welcome for {player} in {events:?}"))
}

/// The one error among `player`'s messages in `events`: its code and id.
pub fn the_error(
    events: &[Event<ServerMessage>],
    player: &str,
) -> (banter_protocol::ErrorCode, Option<u64>) {
    let errors: Vec<_> = messages_for(events, player)
        .into_iter()
        .filter_map(|m| match m {
            ServerMessage::Error { code, id, .. } => Some((code, id)),
            _ => None,
        })
        .collect();
    match errors.as_slice() {
        [one] => *one,
        other => panic!("expected one error for {player}, got {other:?} in {events:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The channel WebSocket.

/// A channel over one WebSocket: JSON text frames both ways.
pub struct ChannelSocket {
    pub client: Client,
}

impl ChannelSocket {
    /// Sends a text frame as-is.
    pub async fn send_text(&mut self, text: &str) {
        self.client.send_text(text).await;
    }

    /// Sends a batch frame (`{"positions":[..],"items":[..]}`).
    pub async fn send_batch(&mut self, positions: Vec<Value>, items: Vec<Value>) {
        let frame = json!({"positions": positions, "items": items});
        self.send_text(&frame.to_string()).await;
    }

    /// The next frame of any kind; `None` once the stream ended.
    pub async fn next_frame(&mut self) -> Option<Message> {
        self.client.next_frame().await
    }

    /// The next text frame as JSON (pings skipped); panics on anything else.
    pub async fn recv_json(&mut self) -> Value {
        loop {
            match self.next_frame().await {
                Some(Message::Text(text)) => {
                    return serde_json::from_str(text.as_str()).expect("a JSON frame");
                }
                Some(Message::Ping(_) | Message::Pong(_)) => continue,
                other => panic!("expected a text frame, got {other:?}"),
            }
        }
    }

    /// Reads `{"events":[...]}` frames until `done` holds for the events read so far; every
    /// event, in order. Each frame must be an events frame.
    pub async fn events_until(
        &mut self,
        done: impl Fn(&[Event<ServerMessage>]) -> bool,
    ) -> Vec<Event<ServerMessage>> {
        let mut events: Vec<Event<ServerMessage>> = Vec::new();
        while !done(&events) {
            let frame = self.recv_json().await;
            let read: banter_protocol::channel::Events<ServerMessage> =
                serde_json::from_value(frame.clone())
                    .unwrap_or_else(|e| panic!("not an events frame ({e}): {frame}"));
            events.extend(read.events);
        }
        events
    }
}

/// True when `events` hold `player`'s `ack` of `id`.
pub fn acked(events: &[Event<ServerMessage>], player: &str, id: u64) -> bool {
    events
        .iter()
        .any(|e| e.player == player && e.message == ServerMessage::Ack { id })
}
