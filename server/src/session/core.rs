//! The command layer: one player's session state, driven by decoded messages and the time.
//!
//! After quinn-proto: no socket and no clock in here. [`SessionCore::handle`] takes a
//! `ClientMessage` and the server time, checks it against the world and the walk, applies it
//! through the quest engine and the store, and returns every `ServerMessage` the step caused,
//! ending with its `ack` or `error`. The socket task (`socket.rs`) only moves frames; the unit
//! tests (`tests.rs`) drive this directly on a real SQLite store with a fake clock.
//!
//! Every way into a conversation or an action checks the world at that moment (ARCHITECTURE.md
//! lists them): `talk`, `resume`, `cutscene_done` ending into an open conversation, and every
//! `action` check a body, the NPC's reach (with the NPC where the content served *now* puts it,
//! so a reload is covered) and availability.
//!
//! Longer than most files here (about 700 lines) on purpose: every command of the session sits in
//! one place, so the checks each way in makes can be read side by side.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use banter_dialogue::content::{NpcDef, QuestDef};
use banter_dialogue::locale::Locale;
use banter_dialogue::{ActionIndex, DialogueGraph, Walk};
use banter_player::availability;
use banter_player::{
    DialogueState, OwnerHandle, OwnerHandles, PlayerStateMachine, StoryState, TagHandle, owner, tag,
};
use banter_protocol::{
    Action, ActionType, ClientMessage, CloseReason, Effect, PROTOCOL_VERSION, Position,
    ServerMessage,
};

use super::refusal::{FrameError, Refusal, SessionError};
use crate::analytics::{ConversationTally, Ending};
use crate::app::SharedApp;
use crate::quests::{self, ServerFacts};
use crate::served::ContentVersion;
use crate::store::PlayerRecord;
use crate::world::{self, Body, WorldError};

/// How long a `resume` waits for an older session of the player to wind down and park.
const RESUME_PATIENCE: Duration = Duration::from_secs(2);
/// Between two looks in the store for a conversation another instance is parking.
const RESUME_POLL: Duration = Duration::from_millis(50);

/// What the store keeps of a parked conversation: enough to take it back on any instance that
/// serves the same content.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ParkedConversation {
    name: String,
    /// The NPC's instance id.
    npc: String,
    /// The conversation's published hash when it opened: it is taken back only on that version.
    hash: String,
    walk: banter_dialogue::WalkSnapshot,
    uid: String,
    spent: Vec<(u32, u32)>,
    /// The end of its window, in milliseconds since the Unix epoch.
    until_ms: i64,
}

/// An open conversation: the content version it opened with and the walk over it.
pub struct OpenConversation {
    name: String,
    npc: NpcDef,
    /// The content version the conversation opened with: its graph and the quest definitions
    /// its conditions are checked against, whatever a reload swaps in meanwhile. Held here so a
    /// step does not take the content lock.
    library: Arc<ContentVersion>,
    graph: Arc<DialogueGraph>,
    walk: Walk,
    /// Unique among every instance's conversations: `<instance>.<session>.<n>`. With an
    /// action's index and how often it was spent, it names each arming's store step.
    uid: String,
    /// How often each action was spent (committed) in this conversation.
    spent: HashMap<ActionIndex, u32>,
    /// What it did so far, for narrative analytics.
    tally: ConversationTally,
    /// The locale its text was served in when it opened (or was resumed).
    locale: String,
}

impl OpenConversation {
    /// Ends the conversation's tally and hands it to the analytics.
    fn tally_end(&mut self, analytics: &crate::analytics::Analytics, how: Ending, now: Duration) {
        let events = std::mem::take(&mut self.tally).end(how, now);
        analytics.conversation_ended(
            &self.library,
            &self.name,
            &self.locale,
            &self.graph,
            &events,
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
    app: SharedApp,
    player: String,
    id: u64,
    body: Body,
    machine: PlayerStateMachine,
    dialogue: OwnerHandle<owner::Dialogue>,
    story: OwnerHandle<owner::Story>,
    afk: TagHandle<tag::Afk>,
    record: PlayerRecord,
    conversation: Option<OpenConversation>,
    /// When the player last opened a conversation, in server time.
    last_talk: Option<Duration>,
    cutscene: Option<String>,
    /// The cutscene quest whose reward lands when `cutscene` is reported done.
    cutscene_quest: Option<String>,
    /// The quest the playing scene belongs to, which cannot be abandoned until the scene is
    /// reported done: the cutscene quest, or the quest a conversation's `PlayCutscene` names
    /// (its `QuestId`, else the active quest whose `Cutscene` the scene is).
    scene_quest: Option<String>,
    /// Conversations (and cutscene quests) this session opened, for their unique names.
    opened: u64,
    /// How many times this session abandoned each quest: part of an abandon's step key, so an
    /// `abandon_quest` sent again after `outcome_unknown` names the same step.
    abandoned: HashMap<String, u32>,
    /// No conversation opened or resumed yet: one may still be parked for the player.
    may_have_parked: bool,
    /// Accepted steps that changed nothing stored, on their way to the audit log.
    trail: crate::audit::Trail,
    /// The locale the player asked to read (`?locale=`, `set_locale`); `None`: the source.
    locale: Option<Locale>,
    /// What the step being handled has caused so far.
    out: Vec<ServerMessage>,
    /// The server time of the last message handled: when a conversation still open at the
    /// end of the session was last seen.
    last_seen: Duration,
}

impl Drop for SessionCore {
    /// However the session ends, the steps it took reach the audit queue.
    fn drop(&mut self) {
        self.trail.flush(&self.app.audit, &self.player);
        // A conversation still open (not closed, not parked) ends with the connection.
        if let Some(open) = self.conversation.as_mut() {
            open.tally_end(&self.app.analytics, Ending::Disconnected, self.last_seen);
        }
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
        };
        core.restore_cutscene();
        core
    }

    /// A name no other conversation of any session on any instance has.
    fn next_uid(&mut self) -> String {
        self.opened += 1;
        format!("{}.{}", self.app.session_key(self.id), self.opened)
    }

    /// The locale the player reads in from now on (`None`: the content's source language).
    pub fn set_locale(&mut self, locale: Option<Locale>) {
        self.locale = locale;
    }

    /// The tag the player's text is served in now: the first of the asked locale's fallback
    /// chain that the content has, else the source language.
    fn served_locale(&self) -> String {
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
        }
    }

    /// A cutscene quest is accepted when its scene starts and completed when the scene is
    /// reported done, so an active one means its scene was playing when the player's last
    /// session ended (a dropped connection, a crash, a restart, another instance): the new
    /// session picks the scene up, `welcome` says so, and `cutscene_done` pays the quest once
    /// (its step key is the quest's, whichever session reports it). The player is not held
    /// busy by it: a client that does not know the field can still talk to the giver, whose
    /// check line plays the scene again in a conversation that pays with its own actions.
    fn restore_cutscene(&mut self) {
        let library = self.app.content.current();
        // The first active quest (in content order) that has a scene.
        let playing = quests::active_quests(&self.record, &library.content)
            .into_iter()
            .find_map(|quest| Some((quest.cutscene.clone()?, quest.id.clone())));
        if let Some((scene, quest)) = playing {
            self.cutscene = Some(scene);
            self.scene_quest = Some(quest.clone());
            self.cutscene_quest = Some(quest);
        }
    }

    /// The open conversation's name, if any.
    pub fn conversation(&self) -> Option<&str> {
        self.conversation.as_ref().map(|c| c.name.as_str())
    }

    fn resume_token(&self) -> String {
        self.app
            .tokens
            .resume_token(&self.player, &self.app.session_key(self.id))
    }

    /// One client message at server time `now`: every message it caused, then its `ack` (if it
    /// had an id) or its `error`. A refused message changes nothing, except that an `action` out
    /// of the NPC's reach closes the conversation (`closed` `walked_away`) before its `error`.
    pub async fn handle(&mut self, message: ClientMessage, now: Duration) -> Vec<ServerMessage> {
        let kind = message.kind();
        self.app
            .metrics
            .message_type(crate::metrics::MessageType::Kind(
                banter_protocol::ClientMessageKind::from(&message),
            ));
        let id = message.id();
        self.last_seen = now;
        // A step belongs to the conversation open after it (a talk opens its own), except a
        // close, which belongs to the one it closed: only that copies the name.
        let closed = match &message {
            ClientMessage::Close { .. } => self.conversation().map(str::to_owned),
            _ => None,
        };
        match self.command(&message, now).await {
            Ok(audited) => {
                if let Some(detail) = audited_step(&message).filter(|_| audited == Audited::Trail) {
                    let conversation = closed
                        .as_deref()
                        .or(self.conversation.as_ref().map(|c| c.name.as_str()));
                    self.trail.push(
                        &self.app.audit,
                        &self.player,
                        conversation,
                        kind,
                        None,
                        detail,
                    );
                }
                if let Some(id) = id {
                    self.out.push(ServerMessage::Ack { id });
                }
            }
            Err(refusal) => {
                let error = self.refusal(id, kind, refusal);
                self.out.push(error);
            }
        }
        std::mem::take(&mut self.out)
    }

    /// A frame the frame layer refused: counted, audited, answered.
    pub fn refuse_frame(
        &mut self,
        id: Option<u64>,
        kind: &'static str,
        error: FrameError,
    ) -> ServerMessage {
        self.refusal(id, kind, Refusal::from(error))
    }

    fn refusal(&mut self, id: Option<u64>, kind: &str, refusal: Refusal) -> ServerMessage {
        self.app.metrics.rejected(refusal.code);
        // Into the trail, not a row of its own: an abuser's flood of refusals is many rows
        // otherwise, each a write honest players' quest writes queue behind (see `Trail`).
        let conversation = self.conversation.as_ref().map(|c| c.name.as_str());
        self.trail.push(
            &self.app.audit,
            &self.player,
            conversation,
            kind,
            Some(refusal.code.name()),
            &refusal.message,
        );
        refusal.to_message(id)
    }

    /// A game event advanced the player's objectives: reload the record (so checks see the new
    /// progress) and tell the client.
    pub async fn on_progress(&mut self, effects: Vec<Effect>) -> Vec<ServerMessage> {
        match self.app.store.load_player(&self.player).await {
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

    /// Parks the open conversation for a `resume` within the grace window (the session ended
    /// without the client choosing to): its walk in the store, where any instance can take it
    /// back exactly once, and the content version it opened with in this process, so a resume
    /// here keeps that version even after a reload.
    pub async fn park(&mut self, now: Duration) {
        let Some(mut conversation) = self.conversation.take() else {
            return;
        };
        // Its line was on screen until the last message the player sent, not until the
        // connection was found dead.
        conversation.tally_end(&self.app.analytics, Ending::Disconnected, self.last_seen);
        let window = self.app.config.limits.resume_window;
        let token = self.resume_token();
        let now_ms = crate::clock::unix_millis();
        let until_ms = now_ms.saturating_add(i64::try_from(window.as_millis()).unwrap_or(i64::MAX));
        if self
            .park_in_store(&conversation, &token, until_ms, now_ms)
            .await
        {
            self.app.parked.park(
                &self.player,
                token,
                now + window,
                now,
                conversation.library.clone(),
            );
        }
    }

    /// Writes a parked conversation to the store; false (logged) if it could not be.
    async fn park_in_store(
        &self,
        conversation: &OpenConversation,
        token: &str,
        until_ms: i64,
        now_ms: i64,
    ) -> bool {
        let parked = ParkedConversation {
            name: conversation.name.clone(),
            npc: conversation.npc.id.clone(),
            hash: conversation
                .library
                .conversations
                .get(&conversation.name)
                .map(|p| p.hash.clone())
                .unwrap_or_default(),
            walk: conversation.walk.snapshot(),
            uid: conversation.uid.clone(),
            spent: conversation.spent.iter().map(|(i, n)| (i.0, *n)).collect(),
            until_ms,
        };
        let stored = match serde_json::to_string(&parked) {
            Ok(json) => {
                self.app
                    .store
                    .park_conversation(&self.player, token, until_ms, now_ms, &json)
                    .await
            }
            Err(e) => Err(crate::store::StoreError::InvalidInput(e.to_string())),
        };
        match stored {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(player = %self.player, error = %e, "cannot park the conversation; a resume will be refused");
                false
            }
        }
    }

    async fn command(
        &mut self,
        message: &ClientMessage,
        now: Duration,
    ) -> Result<Audited, Refusal> {
        match message {
            ClientMessage::Move { position, .. } => {
                self.on_move(*position, now).map(|()| Audited::Trail)
            }
            ClientMessage::Talk {
                npc,
                instance,
                cached,
                ..
            } => {
                self.on_talk(npc, instance.as_deref(), cached.as_deref(), now)
                    .await
            }
            ClientMessage::Advance { node, .. } => {
                let open = open_mut(&mut self.conversation)?;
                let vertex = open
                    .graph
                    .find(node)
                    .ok_or_else(|| SessionError::UnknownVertex(node.clone()))?;
                let facts = ServerFacts {
                    record: &self.record,
                    machine: &self.machine,
                    content: &open.library.content,
                };
                let shown = open.walk.advance(&open.graph, vertex, &facts)?;
                open.tally.stepped(&open.graph, &open.walk, shown, now);
                Ok(Audited::Trail)
            }
            ClientMessage::Choose { response, .. } => {
                let open = open_mut(&mut self.conversation)?;
                let vertex = open
                    .graph
                    .find(response)
                    .ok_or_else(|| SessionError::UnknownVertex(response.clone()))?;
                let facts = ServerFacts {
                    record: &self.record,
                    machine: &self.machine,
                    content: &open.library.content,
                };
                let shown = open.walk.choose(&open.graph, vertex, &facts)?;
                open.tally.chose(vertex);
                open.tally.stepped(&open.graph, &open.walk, shown, now);
                Ok(Audited::Trail)
            }
            ClientMessage::Action {
                action, payload, ..
            } => self.on_action(*action, payload, now).await,
            ClientMessage::Close { .. } => {
                if self.conversation.is_none() {
                    return Err(SessionError::NoConversation.into());
                }
                self.close_conversation(CloseReason::Client, now);
                Ok(Audited::Trail)
            }
            ClientMessage::SetAfk { afk, .. } => {
                self.afk.set(&mut self.machine, *afk);
                Ok(Audited::Trail)
            }
            ClientMessage::SetLocale { locale, .. } => {
                let locale = Locale::parse(locale).map_err(SessionError::BadLocale)?;
                self.locale = Some(locale);
                let locale = self.served_locale();
                self.out.push(ServerMessage::LocaleSet { locale });
                Ok(Audited::Trail)
            }
            ClientMessage::FetchConversation { conversation, .. } => {
                // The open conversation's own version (the one its `opened` or `resumed` hash
                // names), else the version served now.
                let library = match &self.conversation {
                    Some(open) if open.name == *conversation => open.library.clone(),
                    _ => self.app.content.current(),
                };
                let published = library
                    .conversations
                    .get(conversation)
                    .ok_or_else(|| SessionError::UnknownConversation(conversation.clone()))?;
                let (json, hash) = published.for_locale(self.locale.as_ref());
                self.out.push(ServerMessage::Conversation {
                    conversation: conversation.clone(),
                    hash: hash.to_owned(),
                    content: json.to_string(),
                });
                Ok(Audited::Trail)
            }
            ClientMessage::CutsceneDone { scene, .. } => self.on_cutscene_done(scene, now).await,
            ClientMessage::AbandonQuest { quest, .. } => self.on_abandon_quest(quest).await,
            ClientMessage::Resume { token, .. } => {
                self.on_resume(token, now).await.map(|()| Audited::Trail)
            }
        }
    }

    /// Gives up an active quest (the quest log's abandon; no conversation arms it, and one may
    /// be open). One audited store step, keyed by this session, the quest and how often this
    /// session abandoned it before: the same request sent again after `outcome_unknown` is
    /// applied at most once and answered with what it did.
    async fn on_abandon_quest(&mut self, quest: &str) -> Result<Audited, Refusal> {
        if self.scene_quest.as_deref() == Some(quest) {
            return Err(quests::EngineError::QuestState(format!(
                "quest `{quest}` is in its cutscene: send `cutscene_done` first"
            ))
            .into());
        }
        let library = self.app.content.current();
        let before = self.abandoned.get(quest).copied().unwrap_or(0);
        let key = format!("{}/abandon/{quest}/{before}", self.app.session_key(self.id));
        let conversation = self.conversation().map(str::to_owned);
        let context = quests::StepContext {
            key: &key,
            conversation: conversation.as_deref(),
            message: "abandon_quest",
            detail: Some(quest),
        };
        quests::abandon_quest(
            self.app.store.as_ref(),
            &library.content,
            &self.player,
            &mut self.record,
            quest,
            &context,
        )
        .await?;
        self.abandoned.insert(quest.to_owned(), before + 1);
        self.app
            .analytics
            .abandoned(&library, quest, &self.served_locale());
        self.out.push(ServerMessage::QuestAbandoned {
            quest: quest.to_owned(),
            profile: quests::profile(&self.record),
        });
        Ok(Audited::InStep)
    }

    fn on_move(&mut self, position: Position, now: Duration) -> Result<(), Refusal> {
        self.body
            .move_to(&self.app.config.world, position, now)
            .map_err(WorldError::from)?;
        self.remember();
        // Walking out of the NPC's reach ends the conversation.
        self.close_if_out_of_reach(now);
        Ok(())
    }

    /// The world checks a player must pass to start anything: a body, not busy. The Dialogue
    /// region is left out: an open conversation is checked on its own (`conversation_open`).
    fn check_free(&self) -> Result<Position, WorldError> {
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
    fn reach_now(&self, npc: &NpcDef) -> Result<(), WorldError> {
        let library = self.app.content.current();
        let npc = library.npcs.by_id(&npc.id).unwrap_or(npc);
        world::check_reach(&self.app.config.world, npc, &self.body)
    }

    /// Closes the open conversation as walked away if its NPC is out of reach now; the reason
    /// as an error if it was.
    fn close_if_out_of_reach(&mut self, now: Duration) -> Option<WorldError> {
        let open = self.conversation.as_ref()?;
        let error = self.reach_now(&open.npc).err()?;
        self.close_conversation(CloseReason::WalkedAway, now);
        Some(error)
    }

    async fn on_talk(
        &mut self,
        name: &str,
        hint: Option<&str>,
        cached: Option<&str>,
        now: Duration,
    ) -> Result<Audited, Refusal> {
        if self.conversation.is_some() {
            return Err(SessionError::ConversationOpen.into());
        }
        let position = self.check_free()?;
        let rules = &self.app.config.world;
        if banter_rules::talk_cooldown_left(rules, self.last_talk, now).is_some() {
            return Err(WorldError::TalkCooldown(rules.talk_cooldown).into());
        }
        let library = self.app.content.current();
        let npc = library
            .npcs
            .resolve(name, hint, position)
            .ok_or_else(|| WorldError::UnknownNpc(name.to_owned()))?
            .clone();
        world::check_reach(&self.app.config.world, &npc, &self.body)?;
        self.open_conversation(library, npc, cached, now).await
    }

    async fn open_conversation(
        &mut self,
        library: Arc<ContentVersion>,
        npc: NpcDef,
        cached: Option<&str>,
        now: Duration,
    ) -> Result<Audited, Refusal> {
        let published = library
            .conversations
            .get(&npc.conversation)
            .ok_or_else(|| SessionError::UnknownConversation(npc.conversation.clone()))?;
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
        let entry_name = resolved.ok_or_else(|| {
            SessionError::Content(format!("`{}` has no entry for this player", npc.id))
        })?;
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
            return self.start_cutscene_quest(&library, &quest, now).await;
        }
        // The player is talking from here on: the facts the client gets say so, as do the ones
        // the server checks later conditions against. Undone if the walk cannot open.
        let was = self.machine;
        self.dialogue
            .enter(&mut self.machine, DialogueState::Talking);
        let facts = ServerFacts {
            record: &self.record,
            machine: &self.machine,
            content: &library.content,
        };
        let opened = match graph.find(entry_name) {
            Some(entry) => Walk::open(&graph, entry, &facts)
                .map(|(walk, _)| (walk, entry))
                .map_err(Refusal::from),
            None => Err(SessionError::Content(format!(
                "the entry node `{entry_name}` is not in `{}`",
                npc.conversation
            ))
            .into()),
        };
        let (walk, entry) = match opened {
            Ok(opened) => opened,
            Err(refusal) => {
                self.machine = was;
                return Err(refusal);
            }
        };
        let sheet = facts.sheet(&graph);
        let entry_name = entry_name.to_owned();
        self.last_talk = Some(now);
        self.remember();
        self.app.metrics.conversation_opened();
        // The text in the player's locale: its own hash, the same structure.
        let (json, hash) = published.for_locale(self.locale.as_ref());
        self.out.push(ServerMessage::Opened {
            conversation: npc.conversation.clone(),
            npc: world::npc_ref(&npc),
            speaker: graph.speaker().map(str::to_owned),
            entry: entry_name,
            hash: hash.to_owned(),
            content: (cached != Some(hash)).then(|| json.to_string()),
            facts: sheet,
        });
        let uid = self.next_uid();
        let tally = ConversationTally::opened(&graph, &walk, entry, now);
        let locale = self.served_locale();
        self.conversation = Some(OpenConversation {
            name: npc.conversation.clone(),
            npc,
            library,
            graph,
            walk,
            uid,
            spent: HashMap::new(),
            tally,
            locale,
        });
        // A new conversation supersedes one a dropped connection left for a resume, here or on
        // another instance (asked of the store once a session: only a session's first
        // conversation can find one there).
        self.app.parked.discard(&self.player);
        if std::mem::take(&mut self.may_have_parked)
            && let Err(e) = self.app.store.discard_parked(&self.player).await
        {
            tracing::warn!(player = %self.player, error = %e, "cannot discard a parked conversation");
        }
        Ok(Audited::Trail)
    }

    /// Talking to the giver of an available cutscene quest: the quest is accepted, the client is
    /// told to play the scene, and the session enters `Story.Cutscene` until `cutscene_done`.
    /// Answered before (instead of) any `opened`.
    async fn start_cutscene_quest(
        &mut self,
        library: &ContentVersion,
        quest: &QuestDef,
        now: Duration,
    ) -> Result<Audited, Refusal> {
        let scene = quest.cutscene.clone().ok_or_else(|| {
            SessionError::Content(format!("quest `{}` has no cutscene", quest.id))
        })?;
        let accept = Action::AcceptQuest {
            quest_id: quest.id.clone(),
        };
        let key = format!("{}/accept", self.next_uid());
        let detail = format!("AcceptQuest {} (cutscene {scene})", quest.id);
        let context = quests::StepContext {
            key: &key,
            conversation: None,
            message: "talk",
            detail: Some(&detail),
        };
        let outcome = quests::execute(
            self.app.store.as_ref(),
            &library.content,
            &self.player,
            &mut self.record,
            &accept,
            &context,
        )
        .await?;
        self.app.metrics.action_run(ActionType::AcceptQuest);
        self.app.metrics.action_run(ActionType::PlayCutscene);
        self.last_talk = Some(now);
        self.remember();
        self.cutscene = Some(scene.clone());
        self.cutscene_quest = Some(quest.id.clone());
        self.scene_quest = Some(quest.id.clone());
        self.story.enter(&mut self.machine, StoryState::Cutscene);
        let profile = quests::profile(&self.record);
        let locale = self.served_locale();
        self.app
            .analytics
            .cutscene_offered(library, &quest.id, &locale);
        self.app.analytics.effect(library, &locale, &outcome.effect);
        self.out.push(ServerMessage::Effect {
            action: ActionType::AcceptQuest,
            effect: outcome.effect,
            profile: profile.clone(),
        });
        self.out.push(ServerMessage::Effect {
            action: ActionType::PlayCutscene,
            effect: Effect::PlayCutscene { scene },
            profile,
        });
        Ok(Audited::InStep)
    }

    /// The client finished playing the scene the server started. A cutscene quest's objectives
    /// complete and its reward is paid (exactly once, by the store); then the cutscene ends. A
    /// retryable store failure keeps the cutscene, so the client can report it again. A
    /// conversation the cutscene played in continues only if its NPC is still within reach.
    async fn on_cutscene_done(&mut self, scene: &str, now: Duration) -> Result<Audited, Refusal> {
        if self.cutscene.as_deref() != Some(scene) {
            return Err(SessionError::NoCutscene(scene.to_owned()).into());
        }
        let mut audited = Audited::Trail;
        if let Some(quest) = self.cutscene_quest.clone() {
            let library = self.app.content.current();
            let key = quests::cutscene_step_key(&quest);
            let detail = format!("{scene} (CompleteQuest {quest})");
            let conversation = self.conversation().map(str::to_owned);
            let context = quests::StepContext {
                key: &key,
                conversation: conversation.as_deref(),
                message: "cutscene_done",
                detail: Some(&detail),
            };
            let finished = quests::finish_cutscene_quest(
                self.app.store.as_ref(),
                &library.content,
                &self.player,
                &mut self.record,
                &quest,
                &context,
            )
            .await;
            match finished {
                Ok(effect) => {
                    audited = Audited::InStep;
                    self.app.metrics.action_run(ActionType::CompleteQuest);
                    self.app
                        .analytics
                        .effect(&library, &self.served_locale(), &effect);
                    self.out.push(ServerMessage::Effect {
                        action: ActionType::CompleteQuest,
                        effect,
                        profile: quests::profile(&self.record),
                    });
                }
                Err(e) => {
                    let refusal = Refusal::from(e);
                    if !refusal.code.retryable() {
                        self.end_cutscene();
                    }
                    return Err(refusal);
                }
            }
        }
        self.end_cutscene();
        // The cutscene ends back in the conversation it played in: the world is checked again.
        self.close_if_out_of_reach(now);
        Ok(audited)
    }

    fn end_cutscene(&mut self) {
        self.cutscene = None;
        self.cutscene_quest = None;
        self.scene_quest = None;
        self.story.clear(&mut self.machine);
    }

    /// Takes back the conversation a dropped session of this player parked under `token`, if
    /// the player can talk to its NPC now. Out of reach, the conversation stays parked for the
    /// rest of its window: the player may walk back and resume.
    async fn on_resume(&mut self, token: &str, now: Duration) -> Result<(), Refusal> {
        if self.conversation.is_some() {
            return Err(SessionError::ConversationOpen.into());
        }
        self.check_free()?;
        let app = self.app.clone();
        // An older session of this player on this instance may be about to park: wait for it
        // (briefly). What it kept here is the content version the conversation opened with.
        let local = app
            .parked
            .take(&self.player, token, || now, RESUME_PATIENCE)
            .await;
        let json = self.take_parked(token, local.is_some()).await?;
        let parked: ParkedConversation =
            serde_json::from_str(&json).map_err(|_| SessionError::ResumeRefused)?;
        let conversation = self.rebuild(parked.clone(), local.map(|(library, _)| library))?;
        if let Err(far) = self.reach_now(&conversation.npc) {
            // Out of reach: parked again for the rest of its window.
            let now_ms = crate::clock::unix_millis();
            if self
                .park_in_store(&conversation, token, parked.until_ms, now_ms)
                .await
            {
                let left = Duration::from_millis(
                    u64::try_from(parked.until_ms.saturating_sub(now_ms)).unwrap_or(0),
                );
                app.parked.park(
                    &self.player,
                    token.to_owned(),
                    now + left,
                    now,
                    conversation.library.clone(),
                );
            }
            return Err(far.into());
        }
        self.may_have_parked = false;
        // The hash of the text the client cached for it: the player's locale's.
        let hash = conversation
            .library
            .conversations
            .get(&conversation.name)
            .map(|p| p.for_locale(self.locale.as_ref()).1.to_owned())
            .unwrap_or_default();
        self.dialogue
            .enter(&mut self.machine, DialogueState::Talking);
        self.out.push(ServerMessage::Resumed {
            conversation: conversation.name.clone(),
            hash,
        });
        self.conversation = Some(conversation);
        Ok(())
    }

    /// The parked conversation's JSON from the store, taken (so exactly once, on any instance).
    /// Another instance may still be parking it (the reconnect reached this one first): on a
    /// database that several instances share, ask again for up to [`RESUME_PATIENCE`]. A SQLite
    /// file serves one instance, and `parked_here` says whether this one parked it.
    async fn take_parked(&self, token: &str, parked_here: bool) -> Result<String, Refusal> {
        let shared = self.app.store.backend() == "postgres";
        let deadline = tokio::time::Instant::now() + RESUME_PATIENCE;
        loop {
            let now_ms = crate::clock::unix_millis();
            match self
                .app
                .store
                .take_parked(&self.player, token, now_ms)
                .await
            {
                Ok(Some(json)) => return Ok(json),
                Ok(None) if shared && !parked_here && tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(RESUME_POLL).await;
                }
                Ok(None) => return Err(SessionError::ResumeRefused.into()),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// An open conversation from what was parked: on the content version it opened with if this
    /// process still has it, else on the version served now if that is the same conversation
    /// (same hash: another instance on the same content). Anything else is refused, never a walk
    /// on a graph it was not taken on.
    fn rebuild(
        &self,
        parked: ParkedConversation,
        kept_here: Option<Arc<ContentVersion>>,
    ) -> Result<OpenConversation, SessionError> {
        let hash_matches = |library: &Arc<ContentVersion>| {
            library
                .conversations
                .get(&parked.name)
                .is_some_and(|p| p.hash == parked.hash)
        };
        let library = kept_here
            .filter(hash_matches)
            .or_else(|| Some(self.app.content.current()).filter(hash_matches))
            .ok_or(SessionError::ResumeRefused)?;
        let published = library
            .conversations
            .get(&parked.name)
            .ok_or(SessionError::ResumeRefused)?;
        let graph = published.graph.clone();
        let npc = library
            .npcs
            .by_id(&parked.npc)
            .cloned()
            .ok_or(SessionError::ResumeRefused)?;
        let walk = Walk::restore(&graph, &parked.walk).map_err(|_| SessionError::ResumeRefused)?;
        Ok(OpenConversation {
            name: parked.name,
            npc,
            library,
            graph,
            walk,
            uid: parked.uid,
            spent: parked
                .spent
                .into_iter()
                .map(|(i, n)| (ActionIndex(i), n))
                .collect(),
            tally: ConversationTally::resumed(),
            locale: self.served_locale(),
        })
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

    fn close_conversation(&mut self, reason: CloseReason, now: Duration) {
        if let Some(mut open) = self.conversation.take() {
            open.walk.close();
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

    async fn on_action(
        &mut self,
        action_type: ActionType,
        payload: &str,
        now: Duration,
    ) -> Result<Audited, Refusal> {
        let open = open_mut(&mut self.conversation)?;
        let graph = open.graph.clone();
        let library = open.library.clone();
        // The world at this moment: out of reach, the conversation ends and nothing runs.
        if let Some(far) = self.close_if_out_of_reach(now) {
            return Err(far.into());
        }
        self.check_free()?;
        let open = open_mut(&mut self.conversation)?;
        let index = open.walk.check_action(&graph, action_type, payload)?;
        let authored = graph
            .action(index)
            .ok_or_else(|| SessionError::Content("armed action missing from its graph".into()))?
            .action
            .clone();
        // A server-decided jump must land on a line of this graph: check before committing.
        if let Action::CheckQuest {
            success_node,
            failure_node,
            ..
        } = &authored
        {
            for node in [success_node, failure_node] {
                graph
                    .find(node)
                    .ok_or_else(|| SessionError::UnknownVertex(node.clone()))?;
            }
        }
        // The arming's step: the same arming sent again (after `outcome_unknown`, say) has the
        // same key, so the store applies it at most once and the answer says what it did.
        let key = format!(
            "{}/{}/{}",
            open.uid,
            index.0,
            open.spent.get(&index).copied().unwrap_or(0)
        );
        let detail = format!("{} {payload}", action_type.name());
        let context = quests::StepContext {
            key: &key,
            conversation: Some(&open.name),
            message: "action",
            detail: Some(crate::audit::truncate(
                &detail,
                crate::audit::MAX_DETAIL_BYTES,
            )),
        };
        let outcome = quests::execute(
            self.app.store.as_ref(),
            &library.content,
            &self.player,
            &mut self.record,
            &authored,
            &context,
        )
        .await?;
        // Committed: only now is the arming spent.
        let audited = if quests::mutates_store(&authored) {
            Audited::InStep
        } else {
            Audited::Trail
        };
        self.app.metrics.action_run(action_type);
        let open = open_mut(&mut self.conversation)?;
        open.walk.spend(index);
        *open.spent.entry(index).or_insert(0) += 1;
        open.tally.ran(&graph, index);
        self.app
            .analytics
            .effect(&library, &open.locale, &outcome.effect);
        if let Some(node) = &outcome.jump {
            let target = graph
                .find(node)
                .ok_or_else(|| SessionError::UnknownVertex(node.clone()))?;
            let facts = ServerFacts {
                record: &self.record,
                machine: &self.machine,
                content: &library.content,
            };
            open.walk.jump_to(&graph, target, &facts)?;
            open.tally.jumped(&graph, &open.walk, target, now);
        }
        if let Some(scene) = &outcome.cutscene {
            self.scene_quest = match &authored {
                banter_protocol::Action::PlayCutscene {
                    quest_id: Some(quest),
                    ..
                } => Some(quest.clone()),
                _ => quests::active_quests(&self.record, &library.content)
                    .into_iter()
                    .find(|q| q.cutscene.as_deref() == Some(scene.as_str()))
                    .map(|q| q.id.clone()),
            };
            self.cutscene = Some(scene.clone());
            self.cutscene_quest = None;
            self.story.enter(&mut self.machine, StoryState::Cutscene);
        }
        self.out.push(ServerMessage::Effect {
            action: action_type,
            effect: outcome.effect,
            profile: quests::profile(&self.record),
        });
        if let Some(node) = outcome.jump {
            self.out.push(ServerMessage::Jump { node });
        }
        Ok(audited)
    }
}

/// Where an accepted message's audit row is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Audited {
    /// By the store step that changed the player's state, in that step's transaction.
    InStep,
    /// By the session's best-effort trail, if the message is a conversation step at all.
    Trail,
}

/// The open conversation, or `no_conversation`.
fn open_mut(
    conversation: &mut Option<OpenConversation>,
) -> Result<&mut OpenConversation, SessionError> {
    conversation.as_mut().ok_or(SessionError::NoConversation)
}

/// What the audit log keeps of an accepted conversation step, so support can replay it; `None`
/// for messages that are not conversation steps (moves, AFK, fetches), which are not recorded.
/// Written straight into the session's trail: nothing is allocated for it per step.
fn audited_step(message: &ClientMessage) -> Option<StepDetail<'_>> {
    match message {
        ClientMessage::Move { .. }
        | ClientMessage::SetAfk { .. }
        | ClientMessage::SetLocale { .. }
        | ClientMessage::FetchConversation { .. } => None,
        _ => Some(StepDetail(message)),
    }
}

/// The detail of an audited step: the NPC (and instance), node, response, `ActionType payload`
/// or scene; nothing for a close or a resume (whose token is a secret of the player's).
struct StepDetail<'a>(&'a ClientMessage);

impl std::fmt::Display for StepDetail<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            ClientMessage::Talk { npc, instance, .. } => match instance {
                Some(instance) => write!(f, "{npc} ({instance})"),
                None => f.write_str(npc),
            },
            ClientMessage::Advance { node, .. } => f.write_str(node),
            ClientMessage::Choose { response, .. } => f.write_str(response),
            ClientMessage::Action {
                action, payload, ..
            } => write!(f, "{} {payload}", action.name()),
            ClientMessage::CutsceneDone { scene, .. } => f.write_str(scene),
            ClientMessage::AbandonQuest { quest, .. } => f.write_str(quest),
            ClientMessage::Close { .. }
            | ClientMessage::Resume { .. }
            | ClientMessage::Move { .. }
            | ClientMessage::SetAfk { .. }
            | ClientMessage::SetLocale { .. }
            | ClientMessage::FetchConversation { .. } => Ok(()),
        }
    }
}
