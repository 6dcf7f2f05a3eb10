//! The command layer: one player's session state, driven by decoded messages and their time.
//!
//! No socket and no clock reads in here (nor in `commands.rs`, `cutscene.rs`, `parking.rs`):
//! [`SessionCore::handle`] takes a `ClientMessage` and a [`Now`] its caller read (server time and
//! Unix milliseconds), checks it against the world and the walk, applies it through the quest
//! engine and the store, and returns every `ServerMessage` the step caused, ending with its `ack`
//! or `error`. It is async: it awaits the store (through [`SessionStore`], and the quest engine's
//! steps), and a `resume` may wait on tokio timers for a parking session (`parking.rs` says
//! exactly how). The socket task (`socket.rs`) only moves frames; the unit tests (`tests.rs`)
//! and the writer test plans (`plans.rs`) drive this directly on a real SQLite store with a fake
//! server time.
//!
//! This file holds the state and the dispatch: each command is a function of its own, in
//! `commands.rs` (move, talk, the walk's steps, actions, close, AFK, locale, fetch, abandon),
//! `cutscene.rs` (`cutscene_done` and the scene a talk starts) and `parking.rs` (`resume`, and
//! parking when the connection drops). Every way into a conversation or an action checks the
//! world at that moment (ARCHITECTURE.md lists them) with the checks here (`check_free`,
//! `reach_now`): `talk`, `resume`, `cutscene_done` ending into an open conversation, and every
//! `action` check a body, the NPC's reach (with the NPC where the content served *now* puts it,
//! so a reload is covered) and availability.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use banter_dialogue::content::NpcDef;
use banter_dialogue::locale::Locale;
use banter_dialogue::{ActionIndex, DialogueGraph, Walk};
use banter_player::availability;
use banter_player::{OwnerHandle, OwnerHandles, PlayerStateMachine, TagHandle, owner, tag};
use banter_protocol::{
    ActionType, ClientMessage, CloseReason, Effect, PROTOCOL_VERSION, Position, ServerMessage,
};

use super::refusal::{FrameError, Refusal, SessionError};
use super::store::SessionStore;
use crate::analytics::{ConversationTally, Ending};
use crate::app::SharedApp;
use crate::quests;
use crate::served::ContentVersion;
use crate::store::{PlayerRecord, VisitDelta};
use crate::world::{self, Body, WorldError};

/// The time a message (or the end of a connection) is handled at, read by the caller: the core
/// reads no clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Now {
    /// Server time (`App::now`, monotonic): bodies, cooldowns, the local parking lot, analytics.
    pub mono: Duration,
    /// Milliseconds since the Unix epoch: the windows of parked conversations, which every
    /// instance on the database reads alike.
    pub unix_ms: i64,
    /// The same wall-clock reading in microseconds (`clock::unix_micros`): the audit trail's
    /// stamp for the step.
    pub unix_us: i64,
}

impl Now {
    /// Server time `mono` with the wall clock read at `unix_us` microseconds since the epoch.
    pub fn at(mono: Duration, unix_us: i64) -> Now {
        Now {
            mono,
            unix_ms: unix_us.div_euclid(1000), // as `clock::unix_millis` reads it
            unix_us,
        }
    }
}

/// An open conversation: the content version it opened with and the walk over it.
pub struct OpenConversation {
    pub(super) name: String,
    pub(super) npc: NpcDef,
    /// The content version the conversation opened with: its graph and the quest definitions
    /// its conditions are checked against, whatever a reload swaps in meanwhile. Held here so a
    /// step does not take the content lock.
    pub(super) library: Arc<ContentVersion>,
    pub(super) graph: Arc<DialogueGraph>,
    pub(super) walk: Walk,
    /// Unique among every instance's conversations: `<instance>.<session>.<n>`. With an
    /// action's index and how often it was spent, it names each arming's store step.
    pub(super) uid: String,
    /// How often each action was spent (committed) in this conversation.
    pub(super) spent: HashMap<ActionIndex, u32>,
    /// What it did so far, for narrative analytics.
    pub(super) tally: ConversationTally,
    /// The locale its text was served in when it opened (or was resumed).
    pub(super) locale: String,
    /// The party whose shared conversation this is (PROTOCOL.md section 17); `None`: the
    /// player's own.
    pub(super) shared: Option<String>,
}

impl OpenConversation {
    /// Ends the conversation's tally and hands it to the analytics.
    pub(super) fn tally_end(
        &mut self,
        analytics: &crate::analytics::Analytics,
        how: Ending,
        now: Duration,
    ) {
        let counts = std::mem::take(&mut self.tally).end(how, now);
        analytics.conversation_ended(
            &self.library,
            &self.name,
            &self.locale,
            &self.graph,
            &counts,
        );
    }
}

impl OpenConversation {
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// One player's session: what the server knows of the player between messages.
pub struct SessionCore {
    pub(super) app: SharedApp,
    pub(super) player: String,
    pub(super) id: u64,
    pub(super) body: Body,
    pub(super) machine: PlayerStateMachine,
    pub(super) dialogue: OwnerHandle<owner::Dialogue>,
    pub(super) story: OwnerHandle<owner::Story>,
    pub(super) afk: TagHandle<tag::Afk>,
    pub(super) record: PlayerRecord,
    pub(super) conversation: Option<OpenConversation>,
    /// When the player last opened a conversation, in server time.
    pub(super) last_talk: Option<Duration>,
    pub(super) cutscene: Option<String>,
    /// The cutscene quest whose reward lands when `cutscene` is reported done.
    pub(super) cutscene_quest: Option<String>,
    /// The quest the playing scene belongs to, which cannot be abandoned until the scene is
    /// reported done: the cutscene quest, or the quest a conversation's `PlayCutscene` names
    /// (its `QuestId`, else the active quest whose `Cutscene` the scene is).
    pub(super) scene_quest: Option<String>,
    /// Conversations (and cutscene quests) this session opened, for their unique names.
    pub(super) opened: u64,
    /// How many times this session abandoned each quest: part of an abandon's step key, so an
    /// `abandon_quest` sent again after `outcome_unknown` names the same step.
    pub(super) abandoned: HashMap<String, u32>,
    /// No conversation opened or resumed yet: one may still be parked for the player.
    pub(super) may_have_parked: bool,
    /// Accepted steps that changed nothing stored, on their way to the audit log.
    pub(super) trail: crate::audit::Trail,
    /// The locale the player asked to read (`?locale=`, `set_locale`); `None`: the source.
    pub(super) locale: Option<Locale>,
    /// What the step being handled has caused so far.
    pub(super) out: Vec<ServerMessage>,
    /// The server time of the last message handled: when a conversation still open at the
    /// end of the session was last seen.
    pub(super) last_seen: Duration,
    /// A game server places the player (PROTOCOL.md section 16.4): `move` is refused and the
    /// body comes from [`SessionCore::place`].
    pub(super) engine_placed: bool,
    /// The player's party as this session last heard it (PROTOCOL.md section 17.1).
    pub(super) party: Option<banter_protocol::PartyView>,
    /// Live invitations into parties, for the `welcome`.
    pub(super) invites: Vec<banter_protocol::InviteView>,
    /// Visits counted by conversations that ended, not yet in the store (written before the
    /// answer to the message that ended them goes out: [`SessionCore::store_visits`]).
    pub(super) unstored_visits: Vec<(String, Vec<VisitDelta>)>,
}

impl Drop for SessionCore {
    /// However the session ends, the steps it took reach the audit queue.
    fn drop(&mut self) {
        self.trail.flush(&self.app.audit, &self.player);
        // A shared conversation loses this participant (PROTOCOL.md section 17.4).
        self.leave_shared(banter_protocol::LeftReason::Dropped, self.last_seen);
        // A conversation still open (not closed, not parked) ends with the connection.
        self.end_open_conversation();
        // A session dropped without `finish` (a panic unwinding, a test): the visits go to the
        // store in the background.
        let unstored = std::mem::take(&mut self.unstored_visits);
        if unstored.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (store, player) = (self.app.store.clone(), self.player.clone());
        runtime.spawn(async move { write_visits(&*store, &player, unstored).await });
    }
}

impl SessionCore {
    /// A session for `player`, whose record was just loaded, continuing from what the world
    /// remembers of the player (body, time of the last conversation).
    pub fn new(app: SharedApp, player: String, id: u64, record: PlayerRecord) -> SessionCore {
        let (machine, handles) = PlayerStateMachine::new();
        // The server writes only what it knows: talking, cutscenes, and the Afk tag the client
        // reports. The other owners' handles are dropped here.
        let OwnerHandles {
            dialogue,
            story,
            tags,
            ..
        } = handles;
        let memory = app.hub.recall(&player);
        let mut core = SessionCore {
            app,
            player,
            id,
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
            scene_quest: None,
            opened: 0,
            abandoned: HashMap::new(),
            may_have_parked: true,
            trail: crate::audit::Trail::default(),
            locale: None,
            out: Vec::new(),
            last_seen: Duration::ZERO,
            engine_placed: false,
            party: None,
            invites: Vec::new(),
            unstored_visits: Vec::new(),
        };
        core.restore_cutscene();
        core
    }

    /// A name no other conversation of any session on any instance has.
    /// The store calls the core makes itself (the quest engine's steps take `app.store`).
    pub(super) fn store(&self) -> &(impl SessionStore + ?Sized) {
        self.app.store.as_ref()
    }

    pub(super) fn next_uid(&mut self) -> String {
        self.opened += 1;
        format!("{}.{}", self.app.session_key(self.id), self.opened)
    }

    /// The locale the player reads in from now on (`None`: the content's source language).
    pub fn set_locale(&mut self, locale: Option<Locale>) {
        self.locale = locale;
    }

    /// The tag the player's text is served in now: the first of the asked locale's fallback
    /// chain that the content has, else the source language.
    pub(super) fn served_locale(&self) -> String {
        let library = self.app.content.current();
        self.locale
            .as_ref()
            .and_then(|asked| library.served_locale(asked))
            .map_or_else(
                || library.content.locales.settings.source.clone(),
                |l| l.to_string(),
            )
    }

    pub fn welcome(&self) -> ServerMessage {
        ServerMessage::Welcome {
            locale: self.served_locale(),
            locales: self.app.content.current().content.locales.available(),
            protocol: PROTOCOL_VERSION,
            player: self.player.clone(),
            session: self.id,
            profile: quests::profile(&self.record),
            resume_token: self.resume_token(),
            position: self.body.position(),
            cutscene: self.cutscene.clone(),
            party: self.party.clone(),
            invites: self.invites.clone(),
        }
    }

    pub fn player(&self) -> &str {
        &self.player
    }

    pub fn app(&self) -> &SharedApp {
        &self.app
    }

    /// From now on a game server places the player: the body the world remembers is dropped
    /// (a player the game server has not placed has no body), and `move` is refused.
    pub fn set_engine_placed(&mut self) {
        self.engine_placed = true;
        self.body = Body::default();
    }

    /// The engine's position of the player at `now`: trusted (no speed budget), then the reach
    /// of an open conversation is checked as after a `move`. Returns what it caused (`closed`
    /// `walked_away`).
    pub fn place(&mut self, position: Position, now: Now) -> Vec<ServerMessage> {
        if self.body.place(position, now.mono).is_ok() {
            self.remember();
            self.close_if_out_of_reach(now.mono);
        }
        std::mem::take(&mut self.out)
    }

    /// The open conversation's name, if any.
    pub fn conversation(&self) -> Option<&str> {
        self.conversation.as_ref().map(|c| c.name.as_str())
    }

    pub(super) fn resume_token(&self) -> String {
        self.app
            .tokens
            .resume_token(&self.player, &self.app.session_key(self.id))
    }

    /// One client message at server time `now`: every message it caused, then its `ack` (if it
    /// had an id) or its `error`. A refused message changes nothing, except that an `action` out
    /// of the NPC's reach closes the conversation (`closed` `walked_away`) before its `error`.
    /// The visits of a conversation it ended are in the store when this returns.
    pub async fn handle(&mut self, message: ClientMessage, now: Now) -> Vec<ServerMessage> {
        match self.handle_now(message, now) {
            Step::Answered(answers) => answers,
            Step::StoreVisitsFirst(answers) => {
                self.store_visits().await;
                answers
            }
            Step::NeedsStore(message) => self.handle_with_store(message, now).await,
        }
    }

    /// [`SessionCore::handle`] for a message whose handling needs no store (moves, most
    /// conversation steps, the actions that only tell the client something), done at once;
    /// the others come back as [`Step::NeedsStore`], for [`SessionCore::handle_with_store`].
    /// A carrier that can run it without a future per message (the socket) saves one.
    pub fn handle_now(&mut self, message: ClientMessage, now: Now) -> Step {
        let closed = self.begin(&message, now);
        let Some(result) = self.command_now(&message, now) else {
            return Step::NeedsStore(message);
        };
        let answers = self.answer(&message, closed, result, now);
        if self.unstored_visits.is_empty() {
            Step::Answered(answers)
        } else {
            Step::StoreVisitsFirst(answers)
        }
    }

    /// [`SessionCore::handle`] for a message [`SessionCore::handle_now`] gave back.
    pub async fn handle_with_store(
        &mut self,
        message: ClientMessage,
        now: Now,
    ) -> Vec<ServerMessage> {
        let closed = self.begin(&message, now);
        let result = self.command(&message, now).await;
        let answers = self.answer(&message, closed, result, now);
        if !self.unstored_visits.is_empty() {
            self.store_visits().await;
        }
        answers
    }

    /// Notes the time. A step belongs to the conversation open after it (a talk opens its
    /// own), except a close, which belongs to the one it closed: its name, returned (the only
    /// copy of it a step makes). Nothing is counted here: `handle_now` may give the message
    /// back, and `answer` counts it once.
    fn begin(&mut self, message: &ClientMessage, now: Now) -> Option<String> {
        self.last_seen = now.mono;
        match message {
            ClientMessage::Close { .. } => self.conversation().map(str::to_owned),
            _ => None,
        }
    }

    /// What the command's result makes of the step: its trail line, then its `ack` or `error`
    /// after what it caused.
    fn answer(
        &mut self,
        message: &ClientMessage,
        closed: Option<String>,
        result: Result<Audited, Refusal>,
        now: Now,
    ) -> Vec<ServerMessage> {
        self.app
            .metrics
            .message_type(crate::metrics::MessageType::Kind(
                banter_protocol::ClientMessageKind::from(message),
            ));
        let (kind, id) = (message.kind(), message.id());
        match result {
            Ok(audited) => {
                if let Some(detail) = audited_step(message).filter(|_| audited == Audited::Trail) {
                    let conversation = closed
                        .as_deref()
                        .or(self.conversation.as_ref().map(|c| c.name.as_str()));
                    self.trail.push(
                        &self.app.audit,
                        &self.player,
                        conversation,
                        now.unix_us,
                        kind,
                        None,
                        &detail,
                    );
                }
                if let Some(id) = id {
                    self.out.push(ServerMessage::Ack { id });
                }
            }
            Err(refusal) => {
                let error = self.refusal(id, kind, refusal, now);
                self.out.push(error);
            }
        }
        std::mem::take(&mut self.out)
    }

    /// Gives back the answers [`SessionCore::handle`] returned once they are sent, so the next
    /// step's answers reuse their room instead of allocating it again.
    pub fn recycle(&mut self, mut sent: Vec<ServerMessage>) {
        if self.out.capacity() == 0 {
            sent.clear();
            self.out = sent;
        }
    }

    /// A frame the frame layer refused at `now`: counted, audited, answered.
    pub fn refuse_frame(
        &mut self,
        id: Option<u64>,
        kind: &'static str,
        error: FrameError,
        now: Now,
    ) -> ServerMessage {
        self.refusal(id, kind, Refusal::from(error), now)
    }

    fn refusal(
        &mut self,
        id: Option<u64>,
        kind: &str,
        refusal: Refusal,
        now: Now,
    ) -> ServerMessage {
        self.app.metrics.rejected(refusal.code);
        // Into the trail, not a row of its own: an abuser's flood of refusals is many rows
        // otherwise, each a write honest players' quest writes queue behind (see `Trail`).
        let conversation = self.conversation.as_ref().map(|c| c.name.as_str());
        self.trail.push(
            &self.app.audit,
            &self.player,
            conversation,
            now.unix_us,
            kind,
            Some(refusal.code.name()),
            &[&refusal.message],
        );
        refusal.to_message(id)
    }

    /// A game event advanced the player's objectives: reload the record (so checks see the new
    /// progress) and tell the client.
    pub async fn on_progress(&mut self, effects: Vec<Effect>) -> Vec<ServerMessage> {
        match self.store().load_player(&self.player).await {
            Ok(record) => self.record = record,
            Err(e) => {
                // Checks and completions reload from the store anyway; only the push is late.
                tracing::warn!(player = %self.player, error = %e, "cannot reload after an event");
            }
        }
        let profile = quests::profile(&self.record);
        effects
            .into_iter()
            .map(|effect| ServerMessage::Effect {
                action: ActionType::AdvanceObjective,
                effect,
                profile: profile.clone(),
            })
            .collect()
    }

    /// The commands that need no store, run at once (`None`: the message needs the store, for
    /// [`SessionCore::command`]).
    fn command_now(
        &mut self,
        message: &ClientMessage,
        now: Now,
    ) -> Option<Result<Audited, Refusal>> {
        let mono = now.mono;
        Some(match message {
            ClientMessage::Move { position, .. } => self.on_move(*position, mono),
            ClientMessage::Advance { node, .. } => self.on_advance(node, mono),
            ClientMessage::Choose { response, .. } => self.on_choose(response, mono),
            ClientMessage::Action {
                action, payload, ..
            } => return self.on_action_now(*action, payload, mono),
            ClientMessage::Close { .. } => self.on_close(mono),
            ClientMessage::SetAfk { afk, .. } => self.on_set_afk(*afk),
            ClientMessage::SetLocale { locale, .. } => self.on_set_locale(locale),
            ClientMessage::FetchConversation { conversation, .. } => {
                self.on_fetch_conversation(conversation)
            }
            ClientMessage::Talk { .. }
            | ClientMessage::CutsceneDone { .. }
            | ClientMessage::AbandonQuest { .. }
            | ClientMessage::Resume { .. }
            | ClientMessage::PartyForm { .. }
            | ClientMessage::PartyInvite { .. }
            | ClientMessage::PartyAccept { .. }
            | ClientMessage::PartyLeave { .. } => return None,
        })
    }

    /// The dispatch: each command is a function of its own (`commands.rs`, `cutscene.rs`,
    /// `parking.rs`); [`SessionCore::command_now`] runs those that need no store.
    async fn command(&mut self, message: &ClientMessage, now: Now) -> Result<Audited, Refusal> {
        if let Some(done) = self.command_now(message, now) {
            return done;
        }
        let mono = now.mono;
        match message {
            ClientMessage::Talk {
                npc,
                instance,
                cached,
                ..
            } => {
                self.on_talk(npc, instance.as_deref(), cached.as_deref(), now)
                    .await
            }
            ClientMessage::Action {
                action, payload, ..
            } => self.on_action(*action, payload, mono).await,
            ClientMessage::CutsceneDone { scene, .. } => self.on_cutscene_done(scene, mono).await,
            ClientMessage::AbandonQuest { quest, .. } => self.on_abandon_quest(quest).await,
            ClientMessage::Resume { token, .. } => self.on_resume(token, now).await,
            ClientMessage::PartyForm { .. } => self.on_party_form(now).await,
            ClientMessage::PartyInvite { player, .. } => self.on_party_invite(player, now).await,
            ClientMessage::PartyAccept { party, .. } => self.on_party_accept(party, now).await,
            ClientMessage::PartyLeave { .. } => self.on_party_leave(now).await,
            // `command_now` runs these, and never gives them back.
            ClientMessage::Move { .. }
            | ClientMessage::Advance { .. }
            | ClientMessage::Choose { .. }
            | ClientMessage::Close { .. }
            | ClientMessage::SetAfk { .. }
            | ClientMessage::SetLocale { .. }
            | ClientMessage::FetchConversation { .. } => Err(SessionError::Content(
                "a step that needs no store reached the store's dispatch".into(),
            )
            .into()),
        }
    }

    /// The world checks a player must pass to start anything: a body, not busy. The Dialogue
    /// region is left out: an open conversation is checked on its own (`conversation_open`).
    pub(super) fn check_free(&self) -> Result<Position, WorldError> {
        let position = self.body.position().ok_or(WorldError::NoBody)?;
        let mut others = self.machine;
        self.dialogue.clear(&mut others);
        match availability::interruption(&others) {
            Some(busy) => Err(WorldError::Busy(busy.message())),
            None => Ok(position),
        }
    }

    /// Whether the player can still reach the open conversation's NPC, where the content served
    /// now puts it (a reload may have moved it; a removed NPC keeps the place it opened with).
    pub(super) fn reach_now(&self, npc: &NpcDef) -> Result<(), WorldError> {
        let library = self.app.content.current();
        let npc = library.npcs.by_id(&npc.id).unwrap_or(npc);
        world::check_reach(&self.app.config.world, npc, &self.body)
    }

    /// Closes the open conversation as walked away if its NPC is out of reach now; the reason
    /// as an error if it was.
    pub(super) fn close_if_out_of_reach(&mut self, now: Duration) -> Option<WorldError> {
        let open = self.conversation.as_ref()?;
        let error = self.reach_now(&open.npc).err()?;
        self.close_conversation(CloseReason::WalkedAway, now);
        Some(error)
    }

    /// Keeps the body and talk time in the hub, so a reconnect continues from them.
    pub(super) fn remember(&self) {
        self.app.hub.remember(
            &self.player,
            crate::hub::PlayerMemory {
                body: self.body,
                last_talk: self.last_talk,
            },
        );
    }

    pub(super) fn close_conversation(&mut self, reason: CloseReason, now: Duration) {
        self.leave_shared(
            match reason {
                CloseReason::Client => banter_protocol::LeftReason::Closed,
                CloseReason::WalkedAway => banter_protocol::LeftReason::WalkedAway,
            },
            now,
        );
        if let Some(mut open) = self.conversation.take() {
            open.walk.close();
            self.keep_visits(&open);
            let how = match reason {
                CloseReason::Client => Ending::Closed,
                CloseReason::WalkedAway => Ending::WalkedAway,
            };
            open.tally_end(&self.app.analytics, how, now);
            tracing::debug!(player = %self.player, conversation = %open.name, npc = %open.npc.id, "conversation closed");
        }
        self.dialogue.clear(&mut self.machine);
        self.out.push(ServerMessage::Closed { reason });
    }
}

impl SessionCore {
    /// Adds what an ending conversation counted to the player's visits (PROTOCOL.md 10.1): its
    /// opening, and every line shown and response picked, each last showing after every one
    /// stored. In the session's record at once (the next conversation reads it), and queued for
    /// the store ([`SessionCore::store_visits`]).
    pub(super) fn keep_visits(&mut self, open: &OpenConversation) {
        let visits = self.record.visits.entry(open.name.clone()).or_default();
        let base = visits.nodes.values().map(|v| v.last).max().unwrap_or(0);
        visits.opens = visits.opens.saturating_add(1);
        let mut deltas = Vec::with_capacity(open.walk.counted().len());
        for counted in open.walk.counted() {
            let Some(vertex) = open.graph.vertex(counted.vertex) else {
                continue;
            };
            let last = base.saturating_add(u64::from(counted.last));
            let node = vertex.name.to_string();
            let stored = visits.nodes.entry(node.clone()).or_default();
            stored.count = stored.count.saturating_add(counted.count);
            stored.last = stored.last.max(last);
            deltas.push(VisitDelta {
                node,
                added: counted.count,
                last,
            });
        }
        self.unstored_visits.push((open.name.clone(), deltas));
    }

    /// Writes the visits of the conversations that ended. Awaited before the answer that ended
    /// them goes out and before a session is finished, so a client told `closed` (or whose
    /// connection closed) finds the counts on any instance. A failure is logged: counts are not
    /// worth failing a close for.
    pub async fn store_visits(&mut self) {
        let unstored = std::mem::take(&mut self.unstored_visits);
        write_visits(&*self.app.store, &self.player, unstored).await;
    }

    /// The end of the session for a conversation still open (not closed, not parked): it ends
    /// `disconnected`, and its visits are queued.
    fn end_open_conversation(&mut self) {
        if let Some(mut open) = self.conversation.take() {
            open.tally_end(&self.app.analytics, Ending::Disconnected, self.last_seen);
            self.keep_visits(&open);
        }
    }

    /// The session's last words with the store: a conversation still open ends, and every
    /// visit counted is written. Called by the carrier after `park` (which takes the
    /// conversation it parks), before the session is finished.
    pub async fn end(&mut self) {
        self.leave_shared(banter_protocol::LeftReason::Dropped, self.last_seen);
        self.end_open_conversation();
        self.store_visits().await;
    }
}

/// Writes each ended conversation's visits for `player`; a failure is logged.
async fn write_visits(
    store: &dyn crate::store::Store,
    player: &str,
    unstored: Vec<(String, Vec<VisitDelta>)>,
) {
    for (conversation, deltas) in unstored {
        if let Err(e) = store.record_visits(player, &conversation, 1, &deltas).await {
            tracing::warn!(%player, %conversation, error = %e, "visits not stored");
        }
    }
}

/// How far [`SessionCore::handle_now`] got with a message.
#[derive(Debug)]
pub enum Step {
    /// Handled: the answers may go out.
    Answered(Vec<ServerMessage>),
    /// Handled, and it ended a conversation: [`SessionCore::store_visits`] before the answers
    /// go out (PROTOCOL.md 10.1).
    StoreVisitsFirst(Vec<ServerMessage>),
    /// Not handled: it needs the store ([`SessionCore::handle_with_store`]).
    NeedsStore(ClientMessage),
}

/// Where an accepted message's audit row is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Audited {
    /// By the store step that changed the player's state, in that step's transaction.
    InStep,
    /// By the session's best-effort trail, if the message is a conversation step at all.
    Trail,
}

/// The open conversation, or `no_conversation`.
pub(super) fn open_mut(
    conversation: &mut Option<OpenConversation>,
) -> Result<&mut OpenConversation, SessionError> {
    conversation.as_mut().ok_or(SessionError::NoConversation)
}

/// What the audit log keeps of an accepted conversation step, so support can replay it: the
/// NPC (and instance), node, response, `ActionType payload` or scene, in pieces the trail writes
/// one after the other; nothing for a close or a resume (whose token is a secret of the
/// player's). `None` for messages that are not conversation steps (moves, AFK, fetches), which
/// are not recorded.
fn audited_step(message: &ClientMessage) -> Option<[&str; 4]> {
    Some(match message {
        ClientMessage::Move { .. }
        | ClientMessage::SetAfk { .. }
        | ClientMessage::SetLocale { .. }
        | ClientMessage::FetchConversation { .. } => return None,
        ClientMessage::Talk { npc, instance, .. } => match instance {
            Some(instance) => [npc, " (", instance, ")"],
            None => [npc, "", "", ""],
        },
        ClientMessage::Advance { node: one, .. }
        | ClientMessage::Choose { response: one, .. }
        | ClientMessage::CutsceneDone { scene: one, .. }
        | ClientMessage::AbandonQuest { quest: one, .. }
        | ClientMessage::PartyInvite { player: one, .. }
        | ClientMessage::PartyAccept { party: one, .. } => [one, "", "", ""],
        ClientMessage::Action {
            action, payload, ..
        } => [action.name(), " ", payload, ""],
        ClientMessage::Close { .. }
        | ClientMessage::PartyForm { .. }
        | ClientMessage::PartyLeave { .. }
        | ClientMessage::Resume { .. } => ["", "", "", ""],
    })
}
