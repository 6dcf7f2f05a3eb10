//! One player's session: the layers a message goes through, named by what flows in them.
//!
//! frames (WebSocket) → [`Session::on_frame`]: size, binary and rate checks → `ClientMessage`
//! → [`Session::handle`]: the world checks and the walk → quest engine → store
//! → `ServerMessage`s into a bounded outgoing queue → the writer task → frames.
//!
//! One task per connection owns all of the session's state, so messages are handled strictly in
//! order and nothing in here needs a lock. A small writer task drains the outgoing queue into the
//! socket; when a client stops reading, the queue fills and the session ends instead of
//! buffering without bound.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use banter_dialogue::content::NpcDef;
use banter_dialogue::{DialogueGraph, Walk, WalkError};
use banter_player::availability;
use banter_player::{
    DialogueState, OwnerHandle, OwnerHandles, PlayerStateMachine, StoryState, TagHandle, owner, tag,
};
use banter_protocol::{
    ActionType, ByeReason, ClientMessage, CloseReason, ErrorCode, PROTOCOL_VERSION, Position,
    ServerMessage,
};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::app::SharedApp;
use crate::hub::Control;
use crate::library::Library;
use crate::outbox::{Outbox, OutboxReceiver};
use crate::quests::{self, PlayerFacts};
use crate::store::PlayerRecord;
use crate::world::{self, Body, MoveError};

/// A refusal: the code the client matches on and a message for people.
#[derive(Debug)]
struct Refusal {
    code: ErrorCode,
    message: String,
}

impl Refusal {
    fn new(code: ErrorCode, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
        }
    }
}

impl From<WalkError> for Refusal {
    fn from(e: WalkError) -> Refusal {
        let code = match e {
            WalkError::UnknownVertex => ErrorCode::UnknownVertex,
            WalkError::NotReachable => ErrorCode::NotReachable,
            WalkError::NotALine => ErrorCode::NotALine,
            WalkError::NotAResponse => ErrorCode::NotAResponse,
            WalkError::AwaitsChoice => ErrorCode::AwaitsChoice,
            WalkError::AwaitsJump => ErrorCode::AwaitsJump,
            WalkError::ConditionFailed => ErrorCode::ConditionFailed,
            WalkError::NotArmed => ErrorCode::NotArmed,
            WalkError::PayloadMismatch => ErrorCode::PayloadMismatch,
            WalkError::Closed => ErrorCode::NoConversation,
            WalkError::BadJumpTarget => ErrorCode::Internal,
        };
        Refusal::new(code, e.to_string())
    }
}

/// How long a session that said goodbye keeps reading, for the client's Close.
const LINGER: Duration = Duration::from_secs(1);

/// How long a `resume` waits for an older session of the player to wind down and park.
const RESUME_PATIENCE: Duration = Duration::from_secs(2);

/// Why the session loop stops.
enum End {
    /// The client closed or the connection broke.
    Gone,
    /// The server ends it, telling the client why.
    Bye(ByeReason, &'static str),
    /// The client stopped reading: nothing more can be sent.
    TooSlow,
}

/// An open conversation: the graph version it opened with and the walk over it.
pub struct OpenConversation {
    name: String,
    npc: NpcDef,
    /// The content version the conversation opened with: its graph and the quest definitions
    /// its conditions are checked against, whatever a reload swaps in meanwhile. Held here so a
    /// step does not take the content lock.
    library: Arc<Library>,
    graph: Arc<DialogueGraph>,
    walk: Walk,
}

/// Token bucket for the per-connection message rate.
struct RateLimit {
    tokens: f64,
    last: Instant,
    rate: f64,
    burst: f64,
}

impl RateLimit {
    fn allow(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

struct Session {
    app: SharedApp,
    player: String,
    id: u64,
    out: Outbox,
    body: Body,
    machine: PlayerStateMachine,
    dialogue: OwnerHandle<owner::Dialogue>,
    story: OwnerHandle<owner::Story>,
    afk: TagHandle<tag::Afk>,
    record: PlayerRecord,
    conversation: Option<OpenConversation>,
    /// When the player last opened a conversation, as time since the server started.
    last_talk: Option<Duration>,
    cutscene: Option<String>,
    /// The cutscene quest whose reward lands when `cutscene` is reported done.
    cutscene_quest: Option<String>,
    rate: RateLimit,
    strikes: u32,
    last_seen: Instant,
}

/// Runs a session on an upgraded socket until it ends.
pub async fn run(
    app: SharedApp,
    socket: WebSocket,
    player: String,
    token_expires: u64,
    starting: tokio::sync::OwnedSemaphorePermit,
) {
    app.metrics.session_opened();
    let id = app.next_session_id();
    app.parked.session_started(&player);
    let (control_tx, mut control_rx) = mpsc::channel(16);
    app.hub.register(&player, id, control_tx);
    let (sink, mut stream) = socket.split();
    let (out, out_rx) = Outbox::new(
        app.config.limits.outgoing_queue,
        app.config.limits.outgoing_queue_bytes,
    );
    let writer = tokio::spawn(write_frames(sink, out_rx));

    let end = match app.store.load_player(&player).await {
        Err(e) => {
            drop(starting);
            tracing::warn!(%player, error = %e, "cannot load the player; closing the session");
            let _ = out.try_send(text(&ServerMessage::Error {
                id: None,
                code: ErrorCode::StoreUnavailable,
                message: "the store is unavailable; reconnect later".into(),
                retryable: true,
            }));
            End::Gone
        }
        Ok(record) => {
            claim(&app, &player, id).await;
            // Started: the store work of a session start is done.
            drop(starting);
            let (machine, handles) = PlayerStateMachine::new();
            let limits = &app.config.limits;
            let now = Instant::now();
            // The server writes only what it knows: talking, cutscenes, and the Afk tag the
            // client reports. The other owners' handles are dropped here.
            let OwnerHandles {
                dialogue,
                story,
                tags,
                ..
            } = handles;
            let memory = app.hub.recall(&player);
            let mut session = Session {
                player: player.clone(),
                id,
                out: out.clone(),
                body: memory.body,
                machine,
                dialogue,
                story,
                afk: tags.afk,
                record,
                conversation: None,
                last_talk: memory.last_talk,
                cutscene: None,
                cutscene_quest: None,
                rate: RateLimit {
                    tokens: limits.burst,
                    last: now,
                    rate: limits.rate_per_sec,
                    burst: limits.burst,
                },
                strikes: 0,
                last_seen: now,
                app: app.clone(),
            };
            session.welcome();
            let end = session
                .serve(&mut stream, &mut control_rx, token_expires)
                .await;
            session.park_if_dropped(&end);
            end
        }
    };

    let said_bye = matches!(end, End::Bye(..));
    match end {
        End::Bye(reason, message) => {
            let _ = out.try_send(text(&ServerMessage::Bye {
                reason,
                message: message.into(),
            }));
            let _ = out.try_send(Message::Close(Some(CloseFrame {
                code: 1000,
                reason: Utf8Bytes::from_static(message),
            })));
        }
        End::Gone => {
            let _ = out.try_send(Message::Close(None));
        }
        End::TooSlow => writer.abort(),
    }
    drop(out);
    // The writer ends when the queue is drained and closed; a stuck peer cannot hold it long.
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    if said_bye {
        // Read what the client still sends until it answers our Close, briefly. Closing with
        // unread data in the socket makes the kernel reset the connection, and a reset throws
        // away the `bye` still waiting in the client's receive buffer (a flooder would never
        // learn why it was cut off).
        let _ = tokio::time::timeout(LINGER, async {
            while let Some(Ok(frame)) = stream.next().await {
                if matches!(frame, Message::Close(_)) {
                    break;
                }
            }
        })
        .await;
    }
    if app.config.coordinate_sessions {
        // Frees the player for a quick reconnect anywhere; a replaced session holds no claim,
        // so this releases nothing then. A failure only leaves a row the next claim overwrites.
        if let Err(e) = app
            .store
            .release_session(&player, &app.session_key(id))
            .await
        {
            tracing::debug!(%player, error = %e, "session claim not released");
        }
    }
    app.parked.session_ended(&player);
    app.hub.unregister(&player, id);
    app.metrics.session_closed();
}

/// Claims the player for this session in the store, so that a session of the same player on any
/// other instance closes (the newest claim wins). If the store refuses, the session still runs:
/// conversations need no write, and every quest change stays exactly-once in the database; only
/// the takeover of an older session elsewhere waits for the next claim.
async fn claim(app: &SharedApp, player: &str, id: u64) {
    if !app.config.coordinate_sessions {
        return;
    }
    let key = app.session_key(id);
    match app.store.claim_session(player, &key, &app.instance).await {
        Ok(claim) => app.hub.claimed(player, id, &key, claim.epoch),
        Err(e) => tracing::warn!(%player, error = %e, "cannot claim the session"),
    }
}

/// Drains the outgoing queue into the socket. Everything already queued when the writer wakes
/// (an effect and its ack, the answers to pipelined requests) goes out in one write: frames are
/// fed into the WebSocket's write buffer and flushed once, instead of a syscall per message.
async fn write_frames(
    mut sink: futures_util::stream::SplitSink<WebSocket, Message>,
    mut queue: OutboxReceiver,
) {
    'drain: while let Some(message) = queue.recv().await {
        let mut closing = matches!(message, Message::Close(_));
        if sink.feed(message).await.is_err() {
            break;
        }
        while !closing {
            let Some(next) = queue.try_recv() else { break };
            closing = matches!(next, Message::Close(_));
            if sink.feed(next).await.is_err() {
                break 'drain;
            }
        }
        if sink.flush().await.is_err() || closing {
            break;
        }
    }
    let _ = sink.close().await;
}

fn text(message: &ServerMessage) -> Message {
    Message::Text(serde_json::to_string(message).unwrap_or_default().into())
}

impl Session {
    fn welcome(&mut self) {
        let message = ServerMessage::Welcome {
            protocol: PROTOCOL_VERSION,
            player: self.player.clone(),
            session: self.id,
            profile: quests::profile(&self.record),
            resume_token: self.resume_token(),
            position: self.body.position(),
        };
        let _ = self.send(&message);
    }

    fn resume_token(&self) -> String {
        self.app
            .tokens
            .resume_token(&self.player, &self.app.session_key(self.id))
    }

    /// A session that ended without the client choosing to (a dropped or silent connection, a
    /// reconnect that replaced it, a client that stopped reading) parks its open conversation for
    /// a `resume` within the grace window.
    fn park_if_dropped(&mut self, end: &End) {
        let dropped = match end {
            End::Gone | End::TooSlow => true,
            End::Bye(reason, _) => matches!(reason, ByeReason::Replaced | ByeReason::Timeout),
        };
        if !dropped {
            return;
        }
        if let Some(conversation) = self.conversation.take() {
            let now = self.app.now();
            self.app.parked.park(
                &self.player,
                self.resume_token(),
                now + self.app.config.limits.resume_window,
                now,
                conversation,
            );
        }
    }

    /// Takes back the conversation a dropped session of this player parked under `token`.
    async fn on_resume(&mut self, token: &str) -> Result<(), Refusal> {
        if self.conversation.is_some() {
            return Err(Refusal::new(
                ErrorCode::ConversationOpen,
                "a conversation is already open",
            ));
        }
        if let Some(busy) = availability::interruption(&self.machine) {
            return Err(Refusal::new(ErrorCode::Busy, busy.message()));
        }
        let app = self.app.clone();
        let conversation = app
            .parked
            .take(&self.player, token, || app.now(), RESUME_PATIENCE)
            .await
            .ok_or_else(|| {
                Refusal::new(
                    ErrorCode::ResumeRefused,
                    "no conversation to resume with that token; talk again",
                )
            })?;
        let hash = conversation
            .library
            .conversations
            .get(&conversation.name)
            .map(|p| p.hash.clone())
            .unwrap_or_default();
        self.dialogue
            .enter(&mut self.machine, DialogueState::Talking);
        self.send(&ServerMessage::Resumed {
            conversation: conversation.name.clone(),
            hash,
        });
        self.conversation = Some(conversation);
        Ok(())
    }

    /// Queues a message; false if the client stopped reading and the queue is full.
    fn send(&self, message: &ServerMessage) -> bool {
        self.out.try_send(text(message)).is_ok()
    }

    async fn serve(
        &mut self,
        stream: &mut futures_util::stream::SplitStream<WebSocket>,
        control: &mut mpsc::Receiver<Control>,
        token_expires: u64,
    ) -> End {
        // A session does not outlive its token.
        let expires_in = Duration::from_secs(token_expires.saturating_sub(crate::app::unix_now()));
        let expiry = tokio::time::sleep(expires_in);
        tokio::pin!(expiry);
        let limits = self.app.config.limits.clone();
        let mut ping =
            tokio::time::interval_at(Instant::now() + limits.ping_interval, limits.ping_interval);
        let shutdown = self.app.shutdown.clone();
        loop {
            tokio::select! {
                frame = stream.next() => {
                    let Some(Ok(frame)) = frame else { return End::Gone };
                    self.last_seen = Instant::now();
                    if let Some(end) = self.on_frame(frame).await {
                        return end;
                    }
                }
                Some(control) = control.recv() => match control {
                    Control::Replaced => {
                        return End::Bye(ByeReason::Replaced, "the player connected again elsewhere");
                    }
                    Control::Progress(effects) => {
                        if let Some(end) = self.on_progress(effects).await {
                            return end;
                        }
                    }
                },
                _ = shutdown.cancelled() => {
                    return End::Bye(ByeReason::Shutdown, "the server is shutting down");
                }
                _ = &mut expiry => {
                    return End::Bye(ByeReason::TokenExpired, "the token expired; log in again");
                }
                _ = ping.tick() => {
                    if self.last_seen.elapsed() > limits.idle_timeout {
                        return End::Bye(ByeReason::Timeout, "no answer to pings");
                    }
                    if self.out.try_send(Message::Ping(Default::default())).is_err() {
                        return End::TooSlow;
                    }
                }
            }
        }
    }

    /// The frame layer: what arrives must be a small text frame, within the rate.
    async fn on_frame(&mut self, frame: Message) -> Option<End> {
        let bytes = match frame {
            Message::Close(_) => return Some(End::Gone),
            Message::Ping(_) | Message::Pong(_) => return None,
            Message::Text(bytes) => Some(bytes),
            Message::Binary(_) => None,
        };
        let started = std::time::Instant::now();
        // Every data frame counts against the rate, binary ones included.
        if !self.rate.allow(Instant::now()) {
            self.app.metrics.message("invalid");
            self.strikes += 1;
            if self.strikes >= self.app.config.limits.flood_strikes {
                return Some(End::Bye(ByeReason::Flooding, "too many messages"));
            }
            return self.refuse(
                None,
                "frame",
                Refusal::new(ErrorCode::RateLimited, "slow down"),
            );
        }
        self.strikes = 0;
        let Some(bytes) = bytes else {
            self.app.metrics.message("invalid");
            return self.refuse(
                None,
                "frame",
                Refusal::new(
                    ErrorCode::BinaryFrame,
                    "binary frames are not part of the protocol",
                ),
            );
        };
        if bytes.len() > self.app.config.limits.max_frame_bytes {
            self.app.metrics.message("invalid");
            return self.refuse(
                None,
                "frame",
                Refusal::new(
                    ErrorCode::FrameTooLarge,
                    format!(
                        "frames are limited to {} bytes",
                        self.app.config.limits.max_frame_bytes
                    ),
                ),
            );
        }
        let message = match ClientMessage::decode(bytes.as_str()) {
            Ok(m) => m,
            Err(e) => {
                self.app.metrics.message("invalid");
                // A frame that is JSON with a numeric `id` but no valid message still gets its
                // error under that id, so a client waiting on it does not hang.
                return self.refuse(
                    e.id,
                    "invalid",
                    Refusal::new(ErrorCode::Malformed, e.message),
                );
            }
        };
        let kind = message.kind();
        self.app.metrics.message(kind);
        let id = message.id();
        let step = audited_step(&message);
        // The conversation a step belongs to is the one open before it (a talk opens its own).
        // Copied only for a step the audit keeps: moves and AFK reports allocate nothing here.
        let before = step
            .as_ref()
            .and_then(|_| self.conversation.as_ref().map(|c| c.name.clone()));
        let result = self.handle(message).await;
        let end = match result {
            Ok(()) => {
                if let Some(detail) = step {
                    let conversation = before
                        .as_deref()
                        .or(self.conversation.as_ref().map(|c| c.name.as_str()));
                    self.app
                        .audit
                        .record(&self.player, conversation, kind, None, Some(&detail));
                }
                match id {
                    Some(id) if !self.send(&ServerMessage::Ack { id }) => Some(End::TooSlow),
                    _ => None,
                }
            }
            Err(refusal) => self.refuse(id, kind, refusal),
        };
        self.app.metrics.handled(started.elapsed());
        end
    }

    fn refuse(&mut self, id: Option<u64>, kind: &str, refusal: Refusal) -> Option<End> {
        self.app.metrics.rejected(refusal.code);
        self.app.audit.record(
            &self.player,
            self.conversation.as_ref().map(|c| c.name.as_str()),
            kind,
            Some(refusal.code.name()),
            Some(&refusal.message),
        );
        let sent = self.send(&ServerMessage::Error {
            id,
            code: refusal.code,
            message: refusal.message,
            retryable: refusal.code.retryable(),
        });
        (!sent).then_some(End::TooSlow)
    }

    /// The command layer: one client message, checked and applied, or refused with nothing
    /// changed.
    async fn handle(&mut self, message: ClientMessage) -> Result<(), Refusal> {
        match message {
            ClientMessage::Move { position, .. } => self.on_move(position),
            ClientMessage::Talk {
                npc,
                instance,
                cached,
                ..
            } => {
                self.on_talk(&npc, instance.as_deref(), cached.as_deref())
                    .await
            }
            ClientMessage::Advance { node, .. } => {
                let open = open_mut(&mut self.conversation)?;
                let vertex = open
                    .graph
                    .find(&node)
                    .ok_or_else(|| unknown_vertex(&node))?;
                let facts = PlayerFacts {
                    record: &self.record,
                    machine: &self.machine,
                    content: &open.library.content,
                };
                open.walk.advance(&open.graph, vertex, &facts)?;
                Ok(())
            }
            ClientMessage::Choose { response, .. } => {
                let open = open_mut(&mut self.conversation)?;
                let vertex = open
                    .graph
                    .find(&response)
                    .ok_or_else(|| unknown_vertex(&response))?;
                let facts = PlayerFacts {
                    record: &self.record,
                    machine: &self.machine,
                    content: &open.library.content,
                };
                open.walk.choose(&open.graph, vertex, &facts)?;
                Ok(())
            }
            ClientMessage::Action {
                action, payload, ..
            } => self.on_action(action, &payload).await,
            ClientMessage::Close { .. } => {
                if self.conversation.is_none() {
                    return Err(Refusal::new(
                        ErrorCode::NoConversation,
                        "no conversation is open",
                    ));
                }
                self.close_conversation(CloseReason::Client);
                Ok(())
            }
            ClientMessage::SetAfk { afk, .. } => {
                self.afk.set(&mut self.machine, afk);
                Ok(())
            }
            ClientMessage::FetchConversation { conversation, .. } => {
                let library = self.app.content.current();
                let published = library.conversations.get(&conversation).ok_or_else(|| {
                    Refusal::new(
                        ErrorCode::UnknownConversation,
                        format!("no conversation `{conversation}`"),
                    )
                })?;
                self.send(&ServerMessage::Conversation {
                    conversation,
                    hash: published.hash.clone(),
                    content: published.json.to_string(),
                });
                Ok(())
            }
            ClientMessage::CutsceneDone { scene, .. } => self.on_cutscene_done(&scene).await,
            ClientMessage::Resume { token, .. } => self.on_resume(&token).await,
        }
    }

    fn on_move(&mut self, position: Position) -> Result<(), Refusal> {
        let now = self.app.now();
        match self.body.move_to(&self.app.config.world, position, now) {
            Ok(()) => {
                self.remember();
                // Walking out of the NPC's reach ends the conversation.
                let walked_away = self.conversation.as_ref().is_some_and(|open| {
                    !world::within_reach(&self.app.config.world, &open.npc, position)
                });
                if walked_away {
                    self.close_conversation(CloseReason::WalkedAway);
                }
                Ok(())
            }
            Err(MoveError::NotFinite) => Err(Refusal::new(
                ErrorCode::Malformed,
                "coordinates must be finite numbers",
            )),
            Err(MoveError::Teleport) => Err(Refusal::new(
                ErrorCode::Teleport,
                "moved faster than the speed limit; the last valid position stays",
            )),
        }
    }

    async fn on_talk(
        &mut self,
        name: &str,
        hint: Option<&str>,
        cached: Option<&str>,
    ) -> Result<(), Refusal> {
        if self.conversation.is_some() {
            return Err(Refusal::new(
                ErrorCode::ConversationOpen,
                "a conversation is already open",
            ));
        }
        let Some(position) = self.body.position() else {
            return Err(Refusal::new(
                ErrorCode::NoBody,
                "the player has no body in the world yet",
            ));
        };
        if let Some(busy) = availability::interruption(&self.machine) {
            return Err(Refusal::new(ErrorCode::Busy, busy.message()));
        }
        let cooldown = self.app.config.world.talk_cooldown;
        let now = self.app.now();
        if self
            .last_talk
            .is_some_and(|t| now.saturating_sub(t) < cooldown)
        {
            return Err(Refusal::new(
                ErrorCode::TalkCooldown,
                format!(
                    "{} ms must pass between conversations",
                    cooldown.as_millis()
                ),
            ));
        }
        let library = self.app.content.current();
        let npc = library
            .npcs
            .resolve(name, hint, position)
            .ok_or_else(|| Refusal::new(ErrorCode::UnknownNpc, format!("no NPC named `{name}`")))?
            .clone();
        if !world::within_reach(&self.app.config.world, &npc, position) {
            return Err(Refusal::new(
                ErrorCode::TooFar,
                format!(
                    "`{}` is {:.1} studs away; the reach is {}",
                    npc.id,
                    world::distance(npc.position, position),
                    npc.range + self.app.config.world.lag_allowance
                ),
            ));
        }
        self.open_conversation(library, npc, cached).await
    }

    async fn open_conversation(
        &mut self,
        library: Arc<Library>,
        npc: NpcDef,
        cached: Option<&str>,
    ) -> Result<(), Refusal> {
        let published = library
            .conversations
            .get(&npc.conversation)
            .ok_or_else(|| {
                Refusal::new(
                    ErrorCode::UnknownConversation,
                    format!("NPC `{}` speaks no conversation", npc.id),
                )
            })?;
        let graph = published.graph.clone();
        let first = graph
            .first_node()
            .and_then(|v| graph.vertex(v))
            .map(|v| &*v.name);
        // During the tutorial every NPC but the one it points at opens on the stage's lockout
        // line; the pointed NPC comes from the function clients use too.
        let lockout = banter_dialogue::tutorial::lockout_entry(
            &library.content,
            self.record.profile.tutorial_stage,
            &npc.id,
        );
        let resolved = match lockout {
            Some(node) => Some(node),
            None => quests::resolve_entry(&library.content, &npc.id, first, &self.record),
        };
        let entry_name = resolved
            .ok_or_else(|| Refusal::new(ErrorCode::Internal, "the conversation has no entry"))?;
        if lockout.is_none()
            && let Some(quest) = banter_dialogue::resolver::cutscene_offer(
                &library.content,
                &npc.id,
                entry_name,
                |q| quests::quest_status(&self.record, &library.content, &q.id),
            )
        {
            // A cutscene quest opens no conversation: accept, play, pay when it ends.
            let quest = quest.clone();
            return self.start_cutscene_quest(&library, &quest).await;
        }
        // The player is talking from here on: the facts the client gets say so, as do the ones
        // the server checks later conditions against. Undone if the walk cannot open.
        let was = self.machine;
        self.dialogue
            .enter(&mut self.machine, DialogueState::Talking);
        let facts = PlayerFacts {
            record: &self.record,
            machine: &self.machine,
            content: &library.content,
        };
        let opened = graph
            .find(entry_name)
            .ok_or_else(|| {
                Refusal::new(
                    ErrorCode::Internal,
                    format!(
                        "the entry node `{entry_name}` is not in `{}`",
                        npc.conversation
                    ),
                )
            })
            .and_then(|entry| Walk::open(&graph, entry, &facts).map_err(Refusal::from));
        let walk = match opened {
            Ok((walk, _)) => walk,
            Err(refusal) => {
                self.machine = was;
                return Err(refusal);
            }
        };
        let sheet = facts.sheet();
        let entry_name = entry_name.to_owned();
        self.last_talk = Some(self.app.now());
        self.remember();
        self.app.metrics.conversation_opened();
        self.send(&ServerMessage::Opened {
            conversation: npc.conversation.clone(),
            npc: world::npc_ref(&npc),
            speaker: graph.speaker().map(str::to_owned),
            entry: entry_name,
            hash: published.hash.clone(),
            content: (cached != Some(published.hash.as_str())).then(|| published.json.to_string()),
            facts: sheet,
        });
        self.conversation = Some(OpenConversation {
            name: npc.conversation.clone(),
            npc,
            library,
            graph,
            walk,
        });
        // A new conversation supersedes one a dropped connection left for a resume.
        self.app.parked.discard(&self.player);
        Ok(())
    }

    /// Talking to the giver of an available cutscene quest: the quest is accepted, the client is
    /// told to play the scene, and the session enters `Story.Cutscene` until `cutscene_done`.
    /// Answered before (instead of) any `opened`.
    async fn start_cutscene_quest(
        &mut self,
        library: &Library,
        quest: &banter_dialogue::content::QuestDef,
    ) -> Result<(), Refusal> {
        let Some(scene) = quest.cutscene.clone() else {
            return Err(Refusal::new(
                ErrorCode::Internal,
                "the quest has no cutscene",
            ));
        };
        let accept = banter_protocol::Action::AcceptQuest {
            quest_id: quest.id.clone(),
        };
        let outcome = quests::execute(
            self.app.store.as_ref(),
            &library.content,
            &self.player,
            &mut self.record,
            &accept,
        )
        .await
        .map_err(|e| Refusal::new(e.code(), e.to_string()))?;
        self.app.metrics.action_run(ActionType::AcceptQuest);
        self.app.metrics.action_run(ActionType::PlayCutscene);
        self.last_talk = Some(self.app.now());
        self.remember();
        self.cutscene = Some(scene.clone());
        self.cutscene_quest = Some(quest.id.clone());
        self.story.enter(&mut self.machine, StoryState::Cutscene);
        let profile = quests::profile(&self.record);
        self.send(&ServerMessage::Effect {
            action: ActionType::AcceptQuest,
            effect: outcome.effect,
            profile: profile.clone(),
        });
        self.send(&ServerMessage::Effect {
            action: ActionType::PlayCutscene,
            effect: banter_protocol::Effect::PlayCutscene { scene },
            profile,
        });
        Ok(())
    }

    /// The client finished playing the scene the server started. A cutscene quest's objectives
    /// complete and its reward is paid (exactly once, by the store); then the cutscene ends. A
    /// retryable store failure keeps the cutscene, so the client can report it again.
    async fn on_cutscene_done(&mut self, scene: &str) -> Result<(), Refusal> {
        if self.cutscene.as_deref() != Some(scene) {
            return Err(Refusal::new(
                ErrorCode::NoCutscene,
                format!("no cutscene `{scene}` is playing"),
            ));
        }
        if let Some(quest) = self.cutscene_quest.clone() {
            let library = self.app.content.current();
            let finished = quests::finish_cutscene_quest(
                self.app.store.as_ref(),
                &library.content,
                &self.player,
                &mut self.record,
                &quest,
            )
            .await;
            match finished {
                Ok(effect) => {
                    self.app.metrics.action_run(ActionType::CompleteQuest);
                    self.send(&ServerMessage::Effect {
                        action: ActionType::CompleteQuest,
                        effect,
                        profile: quests::profile(&self.record),
                    });
                }
                Err(e) => {
                    let code = e.code();
                    if !code.retryable() {
                        self.end_cutscene();
                    }
                    return Err(Refusal::new(code, e.to_string()));
                }
            }
        }
        self.end_cutscene();
        Ok(())
    }

    fn end_cutscene(&mut self) {
        self.cutscene = None;
        self.cutscene_quest = None;
        self.story.clear(&mut self.machine);
    }

    /// A game event advanced the player's objectives: reload the record (so checks see the new
    /// progress) and tell the client.
    async fn on_progress(&mut self, effects: Vec<banter_protocol::Effect>) -> Option<End> {
        match self.app.store.load_player(&self.player).await {
            Ok(record) => self.record = record,
            Err(e) => {
                // Checks and completions reload from the store anyway; only the push is late.
                tracing::warn!(player = %self.player, error = %e, "cannot reload after an event");
            }
        }
        let profile = quests::profile(&self.record);
        for effect in effects {
            if !self.send(&ServerMessage::Effect {
                action: ActionType::AdvanceObjective,
                effect,
                profile: profile.clone(),
            }) {
                return Some(End::TooSlow);
            }
        }
        None
    }

    /// Keeps the body and talk time in the hub, so a reconnect continues from them.
    fn remember(&self) {
        self.app.hub.remember(
            &self.player,
            crate::hub::PlayerMemory {
                body: self.body,
                last_talk: self.last_talk,
            },
        );
    }

    fn close_conversation(&mut self, reason: CloseReason) {
        if let Some(mut open) = self.conversation.take() {
            open.walk.close();
            tracing::debug!(player = %self.player, conversation = %open.name, npc = %open.npc.id, "conversation closed");
        }
        self.dialogue.clear(&mut self.machine);
        self.send(&ServerMessage::Closed { reason });
    }

    async fn on_action(&mut self, action_type: ActionType, payload: &str) -> Result<(), Refusal> {
        let open = open_mut(&mut self.conversation)?;
        let graph = open.graph.clone();
        let library = open.library.clone();
        let index = open.walk.check_action(&graph, action_type, payload)?;
        let authored = graph
            .action(index)
            .ok_or_else(|| {
                Refusal::new(ErrorCode::Internal, "armed action missing from its graph")
            })?
            .action
            .clone();
        // A server-decided jump must land on a line of this graph: check before committing.
        if let banter_protocol::Action::CheckQuest {
            success_node,
            failure_node,
            ..
        } = &authored
        {
            for node in [success_node, failure_node] {
                graph.find(node).ok_or_else(|| unknown_vertex(node))?;
            }
        }
        let outcome = quests::execute(
            self.app.store.as_ref(),
            &library.content,
            &self.player,
            &mut self.record,
            &authored,
        )
        .await
        .map_err(|e| Refusal::new(e.code(), e.to_string()))?;
        // Committed: only now is the arming spent.
        self.app.metrics.action_run(action_type);
        let open = open_mut(&mut self.conversation)?;
        open.walk.spend(index);
        if let Some(node) = &outcome.jump {
            let target = graph.find(node).ok_or_else(|| unknown_vertex(node))?;
            let facts = PlayerFacts {
                record: &self.record,
                machine: &self.machine,
                content: &library.content,
            };
            open.walk.jump_to(&graph, target, &facts)?;
        }
        if let Some(scene) = &outcome.cutscene {
            self.cutscene = Some(scene.clone());
            self.cutscene_quest = None;
            self.story.enter(&mut self.machine, StoryState::Cutscene);
        }
        self.send(&ServerMessage::Effect {
            action: action_type,
            effect: outcome.effect,
            profile: quests::profile(&self.record),
        });
        if let Some(node) = outcome.jump {
            self.send(&ServerMessage::Jump { node });
        }
        Ok(())
    }
}

/// The `id` of a frame that did not decode as a message, if it is a JSON object with one.
fn open_mut(conversation: &mut Option<OpenConversation>) -> Result<&mut OpenConversation, Refusal> {
    conversation
        .as_mut()
        .ok_or_else(|| Refusal::new(ErrorCode::NoConversation, "no conversation is open"))
}

fn unknown_vertex(name: &str) -> Refusal {
    Refusal::new(
        ErrorCode::UnknownVertex,
        format!("no node or response `{name}` in this conversation"),
    )
}

/// What the audit log keeps of an accepted conversation step, so support can replay it; `None`
/// for messages that are not conversation steps (moves, AFK, fetches), which are not recorded.
fn audited_step(message: &ClientMessage) -> Option<String> {
    match message {
        ClientMessage::Talk { npc, instance, .. } => Some(match instance {
            Some(instance) => format!("{npc} ({instance})"),
            None => npc.clone(),
        }),
        ClientMessage::Advance { node, .. } => Some(node.clone()),
        ClientMessage::Choose { response, .. } => Some(response.clone()),
        ClientMessage::Action {
            action, payload, ..
        } => Some(format!("{} {payload}", action.name())),
        ClientMessage::Close { .. } => Some(String::new()),
        ClientMessage::CutsceneDone { scene, .. } => Some(scene.clone()),
        // The token is a secret of the player's: never in the log.
        ClientMessage::Resume { .. } => Some(String::new()),
        ClientMessage::Move { .. }
        | ClientMessage::SetAfk { .. }
        | ClientMessage::FetchConversation { .. } => None,
    }
}
