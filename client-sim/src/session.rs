//! A player's session: log in, keep a connection (reconnecting when it drops), move the body,
//! talk, and walk a conversation with the client rules of article section 6.1.
//!
//! The conversation is walked by [`banter_dialogue::ClientWalk`], the very rules the server
//! validates with, over a graph built from the content the server sent by
//! [`banter_dialogue::build_conversation`]. What to do on each line (read it, pick a response,
//! advance) is a [`Driver`]'s decision: a bot, or a person at a terminal.
//!
//! Why one file over 600 lines: [`Session`]'s methods keep one set of invariants together (at most
//! one open conversation, the acknowledged actions, the metrics of every request) across
//! reconnects, and each method reads and updates all of them.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use banter_dialogue::content::{Content, NpcDef};
use banter_dialogue::{ClientWalk, DialogueGraph, Outgoing, Screen, VertexId, build_conversation};
use banter_protocol::{ClientMessage, Effect, Position, Profile, ServerMessage};
use hdrhistogram::Histogram;
use tokio::time::Instant;

use banter_client::reconnect::{Backoff, reconnect};

use crate::channel::{ChannelLink, ChannelSeat};
use crate::connection::{Connection, Reply, Welcome};
use crate::error::{Result, SimError};
use crate::facts::ClientFacts;
use crate::http::{Endpoint, Http};
use crate::pace::Pacer;
use crate::world::distance;

/// The server's time between two conversations (the shared world rules), plus a margin for the
/// time a `talk` spends on the network before the server reads its clock.
pub const TALK_COOLDOWN: Duration = banter_rules::WorldRules::DEFAULT
    .talk_cooldown
    .saturating_add(Duration::from_millis(50));
/// The most NPC lines a client walks in one conversation before it leaves (a loop guard).
pub const MAX_LINES: usize = 64;
/// Reconnect attempts before giving up.
pub const RECONNECT_ATTEMPTS: u32 = Backoff::DEFAULT.attempts;

pub use banter_client::login::Login;

/// `POST /v1/auth/device`, on a connection of its own.
pub async fn device_login(endpoint: &Endpoint, device: &str) -> Result<Login> {
    banter_client::device_login(&Http::unpooled(endpoint.clone())?, device).await
}

/// Counters shared with whoever watches a run (the load tool's progress bar).
#[derive(Debug, Default)]
pub struct Live {
    pub messages: AtomicU64,
    pub rejections: AtomicU64,
    pub errors: AtomicU64,
    pub quests_completed: AtomicU64,
    pub conversations: AtomicU64,
}

impl Live {
    pub fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// What one session measured.
#[derive(Debug)]
pub struct Metrics {
    /// Requests sent and answered.
    pub messages: u64,
    /// Round trips (send to `ack`/`error`), in microseconds.
    pub round_trips: Histogram<u64>,
    /// The same round trips by what was asked ([`request_kind`]), to tell which request a
    /// tail belongs to.
    pub round_trips_by_kind: BTreeMap<String, Histogram<u64>>,
    /// Round trips of requests sent at or after the end of the measured window
    /// ([`Session::measure_until`]): a load's bots close what they had open when its deadline
    /// came, all in the same millisecond, which no crowd of players does. Kept apart from
    /// `round_trips` so that herd, which the harness makes, is not read as the server's latency
    /// (the report prints it on its own line).
    pub wind_down: Histogram<u64>,
    /// Refusals by error code.
    pub rejections: BTreeMap<&'static str, u64>,
    /// Requests that got no answer (connection lost, timeout) and other failures.
    pub errors: u64,
    /// The first few errors, for the report.
    pub error_samples: Vec<String>,
    pub reconnects: u64,
    pub quests_completed: u64,
    pub conversations: u64,
    /// What the server acknowledged to this player, for checking against the database after a
    /// fault: each reward (quest, coins), and the highest progress of each objective.
    pub acknowledged: Acknowledged,
}

/// Acknowledged changes of one player: the server said so in an `effect`, which it sends only
/// after the change is committed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Acknowledged {
    pub rewards: Vec<(String, i64)>,
    pub progress: BTreeMap<(String, String), u32>,
}

/// What a request asks, for the latency breakdown: its `type`, and for an action its action
/// type too (`action AcceptQuest`), since only some actions write to the store.
pub fn request_kind(message: &ClientMessage) -> std::borrow::Cow<'static, str> {
    match message {
        ClientMessage::Action { action, .. } => format!("action {action:?}").into(),
        other => other.kind().into(),
    }
}

/// Builds an empty round-trip histogram: 1 µs to 1 hour, 3 significant figures.
pub fn new_histogram() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).map_err(|e| SimError::Other(e.to_string()))
}

impl Metrics {
    fn new() -> Result<Metrics> {
        Ok(Metrics {
            messages: 0,
            round_trips: new_histogram()?,
            round_trips_by_kind: BTreeMap::new(),
            wind_down: new_histogram()?,
            rejections: BTreeMap::new(),
            errors: 0,
            error_samples: Vec::new(),
            reconnects: 0,
            quests_completed: 0,
            conversations: 0,
            acknowledged: Acknowledged::default(),
        })
    }

    /// One answered request's round trip: in the latency figures (overall and by kind) if it was
    /// sent inside the measured window, in the wind-down if not.
    fn record(&mut self, kind: &str, micros: u64, measured: bool) -> Result<()> {
        if !measured {
            self.wind_down.saturating_record(micros);
            return Ok(());
        }
        self.round_trips.saturating_record(micros);
        if !self.round_trips_by_kind.contains_key(kind) {
            self.round_trips_by_kind
                .insert(kind.to_owned(), new_histogram()?);
        }
        if let Some(histogram) = self.round_trips_by_kind.get_mut(kind) {
            histogram.saturating_record(micros);
        }
        Ok(())
    }

    /// Counts an error and keeps a sample of it.
    pub fn error(&mut self, live: Option<&Live>, what: String) {
        self.errors += 1;
        if self.error_samples.len() < 5 {
            self.error_samples.push(what);
        }
        if let Some(live) = live {
            Live::add(&live.errors);
        }
    }
}

/// How a session is set up.
#[derive(Clone, Debug)]
pub struct SessionOptions {
    pub endpoint: Endpoint,
    /// The device id logged in with (8 to 128 printable ASCII characters).
    pub device: String,
    /// The client's own message rate limit (messages per second).
    pub rate_per_sec: f64,
    pub content: Arc<Content>,
}

/// An open conversation, as the server opened it.
#[derive(Clone, Debug)]
pub struct OpenConversation {
    pub name: String,
    pub npc: banter_protocol::NpcRef,
    pub speaker: Option<String>,
    pub graph: Arc<DialogueGraph>,
    pub entry: VertexId,
    /// A shared conversation's party, leader, participants and votes (PROTOCOL.md section 17.2);
    /// `None` for a conversation of the player's own.
    pub shared: Option<banter_protocol::SharedView>,
    /// The facts the server opened it with.
    pub facts: banter_protocol::FactSheet,
}

/// What a `talk` did.
#[derive(Debug)]
pub enum Talked {
    /// A conversation opened.
    Opened(Box<OpenConversation>),
    /// No conversation: a cutscene quest was accepted and its scene is pending.
    Cutscene,
    /// The server refused the talk.
    Refused(crate::connection::Refusal),
}

/// How a conversation ended on the client's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The walk reached its end.
    Ended,
    /// The driver left (or the loop guard did).
    Left,
}

/// A choice the driver makes under a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    Choose(VertexId),
    Leave,
}

/// Who sits at the client: decides on each line, and takes the time a person would.
pub trait Driver: Send {
    /// A new NPC line is on screen.
    fn line(&mut self, graph: &DialogueGraph, line: VertexId) -> impl Future<Output = ()> + Send;
    /// Picks one of the responses on screen.
    fn choose(
        &mut self,
        graph: &DialogueGraph,
        choices: &[VertexId],
        facts: &ClientFacts,
    ) -> impl Future<Output = Pick> + Send;
    /// The line has no responses: advance past it (true) or leave (false).
    fn advance(
        &mut self,
        graph: &DialogueGraph,
        line: VertexId,
    ) -> impl Future<Output = bool> + Send;
    /// An effect arrived (the facts are already updated).
    fn effect(&mut self, effect: &Effect, profile: &Profile);
    /// A cutscene plays; return when it has finished.
    fn cutscene(&mut self, scene: &str) -> impl Future<Output = ()> + Send;
}

/// How a session reaches the server: the player's own WebSocket (logged in with its device), or
/// a game server's channel that carries it.
enum Carrier {
    Direct { http: Http, login: Login },
    Channel(ChannelSeat),
}

/// The open session, over either carrier.
enum Link {
    Socket(Connection),
    Channel(ChannelLink),
}

impl Link {
    fn is_ended(&self) -> bool {
        match self {
            Link::Socket(c) => c.is_ended(),
            Link::Channel(c) => c.is_ended(),
        }
    }

    fn welcome(&self) -> &Welcome {
        match self {
            Link::Socket(c) => &c.welcome,
            Link::Channel(c) => &c.welcome,
        }
    }

    async fn request(&mut self, message: ClientMessage) -> Result<Reply> {
        match self {
            Link::Socket(c) => c.request(message).await,
            Link::Channel(c) => c.request(message).await,
        }
    }

    fn drain(&mut self) -> Vec<ServerMessage> {
        match self {
            Link::Socket(c) => c.drain(),
            Link::Channel(c) => c.drain(),
        }
    }

    async fn close(self) {
        match self {
            Link::Socket(c) => c.close().await,
            Link::Channel(c) => c.leave(),
        }
    }
}

/// A player's session.
pub struct Session {
    options: SessionOptions,
    carrier: Carrier,
    connection: Option<Link>,
    connected_once: bool,
    pacer: Pacer,
    /// Requests sent from this instant on are the wind-down, not the measured load
    /// ([`Metrics::wind_down`]).
    measured_until: Option<Instant>,
    /// The body's last accepted position.
    pub position: Option<Position>,
    last_move: Option<Instant>,
    last_talk: Option<Instant>,
    pub facts: ClientFacts,
    effects: Vec<(Effect, Profile)>,
    scenes: Vec<String>,
    /// Conversations by name: their hash and graph, sent back as `talk.cached`.
    graphs: HashMap<String, (String, Arc<DialogueGraph>)>,
    pub metrics: Metrics,
    live: Option<Arc<Live>>,
    /// With [`Session::follow_group`]: the party's and the shared conversation's messages, in
    /// the order they arrived, whether in a reply or pushed between requests.
    group: Option<VecDeque<ServerMessage>>,
}

/// True for the messages a party member's client follows a group by (PROTOCOL.md section 17):
/// the conversation's (`opened`, `jump`, `closed`, whoever caused them) and the party's.
fn is_group_message(message: &ServerMessage) -> bool {
    matches!(
        message,
        ServerMessage::Opened { .. }
            | ServerMessage::Jump { .. }
            | ServerMessage::Closed { .. }
            | ServerMessage::Party { .. }
            | ServerMessage::PartyInvited { .. }
            | ServerMessage::Participants { .. }
            | ServerMessage::Voted { .. }
            | ServerMessage::Chosen { .. }
            | ServerMessage::Advanced { .. }
    )
}

impl Session {
    /// Logs in and connects.
    pub async fn start(options: SessionOptions, live: Option<Arc<Live>>) -> Result<Session> {
        let facts = ClientFacts::fresh(&options.content);
        Session::start_with(options, facts, live).await
    }

    /// [`Session::start`] with the facts of a fresh player given: a copy of
    /// [`ClientFacts::fresh`] of the same content, worked out once for many sessions.
    pub async fn start_with(
        options: SessionOptions,
        facts: ClientFacts,
        live: Option<Arc<Live>>,
    ) -> Result<Session> {
        // One connection per HTTP call, as a person's client makes them: rarely.
        let http = Http::unpooled(options.endpoint.clone())?;
        let login = banter_client::device_login(&http, &options.device).await?;
        Session::begin(options, Carrier::Direct { http, login }, facts, live).await
    }

    /// A session carried by a game server's channel: the player of `seat` joins it (no login:
    /// the game server speaks for it), and its body is placed by the game server.
    pub async fn start_on_channel(
        options: SessionOptions,
        seat: ChannelSeat,
        facts: ClientFacts,
        live: Option<Arc<Live>>,
    ) -> Result<Session> {
        Session::begin(options, Carrier::Channel(seat), facts, live).await
    }

    async fn begin(
        options: SessionOptions,
        carrier: Carrier,
        facts: ClientFacts,
        live: Option<Arc<Live>>,
    ) -> Result<Session> {
        let mut session = Session {
            pacer: Pacer::new(options.rate_per_sec),
            measured_until: None,
            options,
            carrier,
            connection: None,
            connected_once: false,
            position: None,
            last_move: None,
            last_talk: None,
            facts,
            effects: Vec::new(),
            scenes: Vec::new(),
            graphs: HashMap::new(),
            metrics: Metrics::new()?,
            live,
            group: None,
        };
        session.connect().await?;
        Ok(session)
    }

    /// The player id.
    pub fn player(&self) -> &str {
        match &self.carrier {
            Carrier::Direct { login, .. } => &login.player,
            Carrier::Channel(seat) => &seat.player,
        }
    }

    /// True when a game server's channel carries the session.
    pub fn on_channel(&self) -> bool {
        matches!(self.carrier, Carrier::Channel(_))
    }

    pub fn content(&self) -> &Arc<Content> {
        &self.options.content
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.options.endpoint
    }

    pub fn live(&self) -> Option<&Live> {
        self.live.as_deref()
    }

    /// The open connection, reconnecting (with backoff, logging in again if the token is
    /// refused or about to expire) if it dropped.
    async fn connect(&mut self) -> Result<&mut Link> {
        if self.connection.as_ref().is_some_and(Link::is_ended) {
            self.connection = None;
        }
        if self.connection.is_none() {
            let connection = match &mut self.carrier {
                Carrier::Direct { http, login } => Link::Socket(
                    reconnect(http, &self.options.device, login, Backoff::DEFAULT).await?,
                ),
                Carrier::Channel(seat) => {
                    let link = seat.join().await?;
                    // The engine still has the body where it was: it places it again.
                    if link.welcome.position.is_none()
                        && let Some(position) = self.position
                    {
                        seat.place(position)?;
                    }
                    Link::Channel(link)
                }
            };
            let welcome = connection.welcome();
            self.facts.set_profile(&welcome.profile);
            // Where the server remembers the body, if it does: a server that was restarted (or
            // another instance) has none, and the next walk spawns it. A channel's body is where
            // its game server places it.
            if !self.on_channel() || welcome.position.is_some() {
                self.position = welcome.position;
            }
            // A cutscene quest's scene the previous session left playing (a drop, a restart,
            // another instance): the server has it playing again and pays on `cutscene_done`.
            if let Some(scene) = &welcome.cutscene
                && !self.scenes.contains(scene)
            {
                self.scenes.push(scene.clone());
            }
            if self.connected_once {
                self.metrics.reconnects += 1;
            }
            self.connected_once = true;
            self.connection = Some(connection);
        }
        self.connection.as_mut().ok_or(SimError::Closed)
    }

    /// Ends the measured window at `end`: the round trips of requests sent from then on go to
    /// [`Metrics::wind_down`], not to the latency figures (everything else, from rejections to
    /// acknowledged rewards, still counts).
    pub fn measure_until(&mut self, end: Instant) {
        self.measured_until = Some(end);
    }

    /// Sends one message (paced by the client's rate limit) and collects its answer. Effects
    /// update the facts; a dropped connection is reconnected on the next request.
    pub async fn request(&mut self, message: ClientMessage) -> Result<Reply> {
        self.pacer.ready().await;
        let kind = request_kind(&message);
        let measured = self.measured_until.is_none_or(|end| Instant::now() < end);
        let connection = self.connect().await?;
        let result = connection.request(message).await;
        match result {
            Ok(reply) => {
                self.metrics.messages += 1;
                let micros = u64::try_from(reply.round_trip.as_micros()).unwrap_or(u64::MAX);
                self.metrics.record(&kind, micros.max(1), measured)?;
                if let Some(live) = &self.live {
                    Live::add(&live.messages);
                }
                if let Err(refusal) = &reply.answer {
                    *self
                        .metrics
                        .rejections
                        .entry(refusal.code.name())
                        .or_insert(0) += 1;
                    if let Some(live) = &self.live {
                        Live::add(&live.rejections);
                    }
                }
                self.absorb(&reply.messages);
                Ok(reply)
            }
            Err(e) => {
                if e.is_disconnect() {
                    self.connection = None;
                }
                Err(e)
            }
        }
    }

    /// Messages that arrived between requests (effects pushed by game events).
    pub fn poll(&mut self) {
        let messages = self
            .connection
            .as_mut()
            .map(Link::drain)
            .unwrap_or_default();
        self.absorb(&messages);
    }

    /// Keeps the party's and the shared conversation's messages from now on, for
    /// [`Session::next_group_message`] and [`Session::wait_group_message`]: a party member's
    /// client follows a walk the group moves, and is told so in pushes as much as in replies.
    pub fn follow_group(&mut self) {
        self.group.get_or_insert_with(VecDeque::new);
    }

    /// The oldest group message not yet taken, if one has arrived (without waiting).
    pub fn next_group_message(&mut self) -> Option<ServerMessage> {
        self.poll();
        self.group.as_mut().and_then(VecDeque::pop_front)
    }

    /// The oldest group message not yet taken, waiting at most `patience` for one to be pushed;
    /// `None` if none came. Effects that arrive meanwhile update the facts. A dropped connection
    /// is an error (the next request reconnects).
    pub async fn wait_group_message(
        &mut self,
        patience: Duration,
    ) -> Result<Option<ServerMessage>> {
        let until = Instant::now() + patience;
        loop {
            if let Some(message) = self.next_group_message() {
                return Ok(Some(message));
            }
            let now = Instant::now();
            if now >= until {
                return Ok(None);
            }
            let received = match self.connection.as_mut() {
                None => return Err(SimError::Closed),
                Some(Link::Socket(connection)) => connection.recv(until - now).await,
                Some(Link::Channel(_)) => {
                    // A channel's messages come with its batches: look again shortly.
                    tokio::time::sleep((until - now).min(Duration::from_millis(50))).await;
                    continue;
                }
            };
            match received {
                Ok(ServerMessage::Bye { reason, message }) => {
                    self.connection = None;
                    return Err(SimError::Bye { reason, message });
                }
                Ok(message) => self.absorb(std::slice::from_ref(&message)),
                Err(SimError::Timeout(_)) => return Ok(None),
                Err(e) => {
                    if e.is_disconnect() {
                        self.connection = None;
                    }
                    return Err(e);
                }
            }
        }
    }

    fn absorb(&mut self, messages: &[ServerMessage]) {
        for message in messages {
            if let Some(group) = &mut self.group
                && is_group_message(message)
            {
                group.push_back(message.clone());
            }
            if let ServerMessage::Effect {
                effect, profile, ..
            } = message
            {
                self.facts.apply(&self.options.content, effect, profile);
                match effect {
                    Effect::ObjectiveAdvanced {
                        quest,
                        objective,
                        progress,
                        ..
                    } => {
                        let best = self
                            .metrics
                            .acknowledged
                            .progress
                            .entry((quest.clone(), objective.clone()))
                            .or_insert(0);
                        *best = (*best).max(*progress);
                    }
                    Effect::QuestCompleted { quest, coins, .. } => {
                        self.metrics
                            .acknowledged
                            .rewards
                            .push((quest.clone(), *coins));
                        self.metrics.quests_completed += 1;
                        if let Some(live) = &self.live {
                            Live::add(&live.quests_completed);
                        }
                    }
                    Effect::PlayCutscene { scene } => self.scenes.push(scene.clone()),
                    _ => {}
                }
                self.effects.push((effect.clone(), profile.clone()));
            }
        }
    }

    /// Effects received since the last call.
    pub fn take_effects(&mut self) -> Vec<(Effect, Profile)> {
        std::mem::take(&mut self.effects)
    }

    /// Moves the body to `position`. On a channel the game server places it (the next batch's
    /// `positions`): no `move` is sent, and nothing answers it.
    pub async fn move_to(&mut self, position: Position) -> Result<Reply> {
        if let Carrier::Channel(seat) = &self.carrier {
            seat.place(position)?;
            self.position = Some(position);
            self.last_move = Some(Instant::now());
            return Ok(Reply {
                messages: Vec::new(),
                answer: Ok(()),
                round_trip: Duration::ZERO,
            });
        }
        let reply = self
            .request(ClientMessage::Move { id: None, position })
            .await?;
        if reply.answer.is_ok() {
            self.position = Some(position);
            self.last_move = Some(Instant::now());
        }
        Ok(reply)
    }

    /// Walks (or sails) to `target` at `speed` studs a second, one move every `tick`. The first
    /// move of a body spawns it at `target`. Each step covers at most `speed` times the time
    /// since the previous move was acknowledged, which the server measured as longer, so an
    /// honest walk never looks like a teleport.
    pub async fn walk_to(
        &mut self,
        target: Position,
        speed: f64,
        tick: Duration,
        deadline: Option<Instant>,
    ) -> Result<()> {
        loop {
            let Some(from) = self.position else {
                let reply = self.move_to(target).await?;
                return refused(reply);
            };
            if distance(from, target) < 0.01 {
                return Ok(());
            }
            if let Some(last) = self.last_move {
                let next = last + tick;
                if deadline.is_some_and(|d| d < next) {
                    return Ok(());
                }
                tokio::time::sleep_until(next).await;
            }
            let elapsed = self.last_move.map_or(tick, |t| t.elapsed()).as_secs_f64();
            let step = crate::world::step_toward(from, target, speed * elapsed);
            let reply = self.move_to(step).await?;
            refused(reply)?;
        }
    }

    /// Waits until the talk cooldown since the last conversation has passed.
    pub async fn wait_talk_cooldown(&mut self) {
        if let Some(last) = self.last_talk {
            tokio::time::sleep_until(last + TALK_COOLDOWN).await;
        }
    }

    /// When a talk may be sent again.
    pub fn talk_ready_at(&self) -> Option<Instant> {
        self.last_talk.map(|t| t + TALK_COOLDOWN)
    }

    /// Talks to `npc` (by display name, with its instance as the hint), after the cooldown.
    pub async fn talk(&mut self, npc: &NpcDef) -> Result<Talked> {
        let reply = self.send_talk(npc).await?;
        if let Err(refusal) = reply.answer {
            return Ok(Talked::Refused(refusal));
        }
        let opened = reply
            .messages
            .into_iter()
            .find(|m| matches!(m, ServerMessage::Opened { .. }));
        let Some(opened) = opened else {
            return Ok(Talked::Cutscene);
        };
        Ok(Talked::Opened(Box::new(
            self.conversation_opened(opened).await?,
        )))
    }

    /// Sends the `talk` to `npc` after the cooldown (reconnecting and placing the body first if
    /// the connection dropped) and returns its reply as it is: what it opened is in the reply
    /// (and, for a session following a group, among its group messages).
    pub async fn send_talk(&mut self, npc: &NpcDef) -> Result<Reply> {
        self.wait_talk_cooldown().await;
        // A dropped connection reconnects lazily, on the next request. Reconnect first: a
        // restarted server (or another instance) remembers no body, and talking without one is
        // refused; the body is placed again where the player stood.
        let stood = self.position;
        self.connect().await?;
        if self.position.is_none()
            && let Some(stood) = stood
        {
            refused(self.move_to(stood).await?)?;
        }
        let cached = self
            .graphs
            .get(&npc.conversation)
            .map(|(hash, _)| hash.clone());
        let reply = self
            .request(ClientMessage::Talk {
                id: None,
                npc: npc.name.clone(),
                instance: Some(npc.id.clone()),
                cached,
            })
            .await?;
        if reply.answer.is_ok() {
            self.last_talk = Some(Instant::now());
        }
        Ok(reply)
    }

    /// A conversation the server opened (`opened`, answering this player's `talk` or pushed when
    /// the party's shared conversation took it in): the facts it carries become the player's,
    /// and its graph is built (or taken from the cache, or fetched).
    pub async fn conversation_opened(&mut self, opened: ServerMessage) -> Result<OpenConversation> {
        let ServerMessage::Opened {
            conversation: name,
            npc: npc_ref,
            speaker,
            entry,
            hash,
            content,
            facts,
            shared,
        } = opened
        else {
            return Err(SimError::Protocol(format!(
                "expected `opened`, got `{}`",
                message_type(&opened)
            )));
        };
        self.facts.opened(&self.options.content, &facts);
        if let Some(live) = &self.live {
            Live::add(&live.conversations);
        }
        self.metrics.conversations += 1;
        let graph = self.graph(&name, &hash, content).await?;
        let entry_id = graph
            .find(&entry)
            .ok_or_else(|| SimError::Protocol(format!("entry `{entry}` is not in `{name}`")))?;
        Ok(OpenConversation {
            name,
            npc: npc_ref,
            speaker,
            graph,
            entry: entry_id,
            shared,
            facts,
        })
    }

    /// The graph of a conversation: from the content sent, from the cache, or fetched.
    async fn graph(
        &mut self,
        name: &str,
        hash: &str,
        content: Option<String>,
    ) -> Result<Arc<DialogueGraph>> {
        let content = match content {
            Some(content) => content,
            None => {
                if let Some((cached_hash, graph)) = self.graphs.get(name)
                    && cached_hash == hash
                {
                    return Ok(graph.clone());
                }
                let reply = self
                    .request(ClientMessage::FetchConversation {
                        id: None,
                        conversation: name.to_owned(),
                    })
                    .await?;
                reply
                    .messages
                    .into_iter()
                    .find_map(|m| match m {
                        ServerMessage::Conversation { content, .. } => Some(content),
                        _ => None,
                    })
                    .ok_or_else(|| SimError::Protocol("no conversation content".to_owned()))?
            }
        };
        let (graph, diagnostics) = build_conversation(name, &content);
        if let Some(first) = diagnostics.iter().find(|d| d.is_error()) {
            return Err(SimError::Content(format!(
                "the server's `{name}` does not build: {first}"
            )));
        }
        let graph = Arc::new(graph);
        self.graphs
            .insert(name.to_owned(), (hash.to_owned(), graph.clone()));
        Ok(graph)
    }

    /// True while a cutscene the server started has not been reported done.
    pub fn cutscene_pending(&self) -> bool {
        !self.scenes.is_empty()
    }

    /// Plays every pending cutscene with the driver, then tells the server it has finished.
    pub async fn play_cutscenes(&mut self, driver: &mut impl Driver) -> Result<()> {
        // A scene stays queued until the server has answered its `cutscene_done` for good: after
        // a dropped connection or a retryable refusal (`store_unavailable`) the next call reports
        // it again, as a real client must, or the player would stay busy in the cutscene.
        while let Some(scene) = self.scenes.first().cloned() {
            driver.cutscene(&scene).await;
            let reply = self
                .request(ClientMessage::CutsceneDone {
                    id: None,
                    scene: scene.clone(),
                })
                .await?;
            self.forward_effects(driver);
            let retry = matches!(&reply.answer, Err(refusal) if refusal.code.retryable());
            if !retry {
                self.scenes.remove(0);
            }
            refused(reply)?;
        }
        Ok(())
    }

    fn forward_effects(&mut self, driver: &mut impl Driver) {
        for (effect, profile) in self.take_effects() {
            driver.effect(&effect, &profile);
        }
    }

    /// Walks an open conversation to its end with the client rules, which close it there. A
    /// refusal from the server stops the walk (and closes); a dropped connection is returned as
    /// is.
    pub async fn converse(
        &mut self,
        open: &OpenConversation,
        driver: &mut impl Driver,
    ) -> Result<Ending> {
        let result = self.walk_conversation(open, driver).await;
        if let Err(e) = &result
            && e.is_disconnect()
        {
            return result;
        }
        if matches!(result, Ok(Ending::Ended)) {
            // The walk's last step was its `close`.
            return result;
        }
        let close = self.request(ClientMessage::Close { id: None }).await;
        let ending = result?;
        refused(close?)?;
        Ok(ending)
    }

    async fn walk_conversation(
        &mut self,
        open: &OpenConversation,
        driver: &mut impl Driver,
    ) -> Result<Ending> {
        let graph = open.graph.clone();
        let mut out = Vec::new();
        let sheet = self.facts.sheet.clone();
        let mut walk =
            ClientWalk::open(&graph, open.entry, &sheet, &mut out).map_err(walk_error)?;
        let mut lines = 0;
        loop {
            self.send_walk(&graph, &mut walk, &mut out, driver).await?;
            let line = match walk.screen() {
                Screen::Ended => return Ok(Ending::Ended),
                Screen::Waiting => {
                    return Err(SimError::Protocol(
                        "a quest check was answered without a jump".to_owned(),
                    ));
                }
                Screen::Line(line) => line,
            };
            lines += 1;
            if lines > MAX_LINES {
                return Ok(Ending::Left);
            }
            driver.line(&graph, line).await;
            let sheet = self.facts.sheet.clone();
            let choices: Vec<VertexId> = walk.choices(&graph, &sheet).collect();
            if !choices.is_empty() {
                match driver.choose(&graph, &choices, &self.facts).await {
                    Pick::Choose(response) => walk
                        .choose(&graph, response, &sheet, &mut out)
                        .map_err(walk_error)?,
                    Pick::Leave => return Ok(Ending::Left),
                }
            } else if walk.can_advance(&graph, &sheet) {
                if !driver.advance(&graph, line).await {
                    return Ok(Ending::Left);
                }
                walk.advance(&graph, line, &sheet, &mut out)
                    .map_err(walk_error)?;
            } else {
                return Err(SimError::Protocol(format!(
                    "line `{}` waits for a jump that never came",
                    graph.vertex(line).map_or("?", |v| &v.name)
                )));
            }
        }
    }

    /// Sends what the walk queued, in order; a `jump` in an answer moves the walk (and may
    /// queue more), cutscenes play as they start.
    async fn send_walk(
        &mut self,
        graph: &DialogueGraph,
        walk: &mut ClientWalk,
        out: &mut Vec<Outgoing>,
        driver: &mut impl Driver,
    ) -> Result<()> {
        let mut queue: VecDeque<Outgoing> = out.drain(..).collect();
        while let Some(next) = queue.pop_front() {
            let message = wire(graph, next)?;
            let reply = self.request(message).await?;
            self.forward_effects(driver);
            let jump = reply.messages.iter().find_map(|m| match m {
                ServerMessage::Jump { node } => Some(node.clone()),
                _ => None,
            });
            refused(reply)?;
            self.play_cutscenes(driver).await?;
            if let Some(node) = jump {
                let target = graph
                    .find(&node)
                    .ok_or_else(|| SimError::Protocol(format!("jump to unknown `{node}`")))?;
                let sheet = self.facts.sheet.clone();
                let mut more = Vec::new();
                walk.jump(graph, target, &sheet, &mut more)
                    .map_err(walk_error)?;
                queue.extend(more);
            }
        }
        Ok(())
    }

    /// Counts a failure (a lost request, a failed HTTP call, a client bug) in the metrics.
    pub fn count_error(&mut self, what: String) {
        self.metrics.error(self.live.as_deref(), what);
    }

    /// Closes the connection and hands over what the session measured.
    pub async fn finish(mut self) -> Metrics {
        if let Some(connection) = self.connection.take() {
            connection.close().await;
        }
        self.metrics
    }
}

/// A server message's `type`, as the wire names it (for errors and logs).
pub fn message_type(message: &ServerMessage) -> String {
    serde_json::to_value(message)
        .ok()
        .and_then(|v| v.get("type")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

/// A refused reply as an error.
pub fn refused(reply: Reply) -> Result<()> {
    match reply.answer {
        Ok(()) => Ok(()),
        Err(r) => Err(SimError::Refused {
            code: r.code,
            message: r.message,
        }),
    }
}

fn walk_error(e: banter_dialogue::WalkError) -> SimError {
    SimError::Other(format!("client walk: {e}"))
}

/// The wire message for one step the walk queued.
pub fn wire(graph: &DialogueGraph, step: Outgoing) -> Result<ClientMessage> {
    step.message(graph)
        .ok_or_else(|| SimError::Other(format!("{step:?} is not in the conversation's graph")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_after_the_window_goes_to_the_wind_down_and_nowhere_else() {
        let mut metrics = Metrics::new().expect("a histogram");
        metrics.record("close", 12_000, false).expect("recorded");
        assert_eq!(metrics.wind_down.len(), 1);
        assert!(metrics.round_trips.is_empty());
        assert!(!metrics.round_trips_by_kind.contains_key("close"));

        metrics.record("close", 300, true).expect("recorded");
        metrics.record("move", 200, true).expect("recorded");
        assert_eq!(metrics.round_trips.len(), 2);
        assert_eq!(metrics.round_trips_by_kind["close"].len(), 1);
        assert_eq!(metrics.round_trips_by_kind["close"].max(), 300);
        assert_eq!(metrics.wind_down.len(), 1, "a measured one stays out of it");
    }
}
