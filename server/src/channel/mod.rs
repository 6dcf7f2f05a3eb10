//! A game-server channel's task (PROTOCOL.md section 16): one task per channel owns the sessions
//! of the players it carries, each a [`SessionCore`] with exactly the rules of a WebSocket
//! session, and applies the channel's batches one at a time, in order. Requests reach it through
//! its [`ChannelHandle`] (`channels/`), over HTTP batches with long-poll (`routes.rs`) or one
//! WebSocket (`socket.rs`).
//!
//! What flows: a batch (positions, then items in order) in; numbered events out, into the
//! handle's queue, kept until acknowledged. The task also takes what the hub tells its players
//! (replaced, progress), and ends the channel when it goes idle or the server shuts down; at the
//! end every player's session ends as a socket's does.

pub mod routes;
mod socket;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use banter_dialogue::locale::Locale;
use banter_protocol::channel::{ChannelLimits, Item, Placed, What};
use banter_protocol::{ByeReason, ClientMessage, Position, ServerMessage};
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::app::SharedApp;
use crate::channels::{
    Batch, BatchRefused, BatchRequest, ChannelHandle, Ending, Sequenced, sequence,
};
use crate::credentials::GameServer;
use crate::hub::Control;
use crate::session::life::{self, Carrier};
use crate::session::{ChannelError, Checked, FrameCheck, Now, Refusal, SessionCore, SessionError};

/// The bounds of every channel, as the open answer states them.
pub fn limits(app: &SharedApp) -> ChannelLimits {
    use banter_protocol::channel as c;
    ChannelLimits {
        max_items: c::MAX_ITEMS,
        max_positions: c::MAX_POSITIONS,
        max_request_bytes: c::MAX_REQUEST_BYTES,
        max_events: c::MAX_ANSWER_EVENTS,
        max_answer_bytes: c::MAX_ANSWER_BYTES,
        max_wait_ms: c::MAX_WAIT_MS,
        idle_timeout_ms: u64::try_from(app.config.channel_idle_timeout.as_millis())
            .unwrap_or(u64::MAX),
        max_players: app.config.channel_max_players,
    }
}

/// Opens a channel for `server` and starts its task. `idle`: how long it lives without a batch
/// (HTTP), `None` while a socket holds it.
pub fn open(
    app: &SharedApp,
    server: GameServer,
    idle: Option<Duration>,
) -> Result<Arc<ChannelHandle>, crate::credentials::CredentialError> {
    let id = crate::credentials::channel_id()?;
    let (handle, batches) = ChannelHandle::new(id, server, idle.map(|_| app.now()));
    let handle = Arc::new(handle);
    let (control, control_rx) = mpsc::channel(256);
    app.channels.insert(handle.clone());
    app.metrics.channel_opened();
    let task = Task {
        app: app.clone(),
        handle: handle.clone(),
        control,
        applied: 0,
        players: HashMap::new(),
        placed: HashMap::new(),
        sessions: HashMap::new(),
    };
    // Tracked with the sessions: shutdown waits for the channel's players to park.
    app.sessions.spawn(task.run(batches, control_rx, idle));
    Ok(handle)
}

/// Every second while channels are open here, asks the store whether their credentials were
/// revoked (on another instance): their channels end within a second of a revocation anywhere.
pub async fn watch_revocations(app: SharedApp) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = app.shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        for id in app.channels.credentials() {
            match app.store.game_server(&id).await {
                Ok(Some((server, _))) if !server.revoked() => {}
                Ok(_) => app.channels.revoked(&id),
                // An outage keeps channels open; each batch asks the store again anyway.
                Err(e) => tracing::debug!(error = %e, "revocations not read"),
            }
        }
    }
}

/// The channel's task and all it owns.
struct Task {
    app: SharedApp,
    handle: Arc<ChannelHandle>,
    /// Where the hub sends its players' control messages.
    control: mpsc::Sender<(u64, Control)>,
    /// The last `seq` applied (HTTP).
    applied: u64,
    players: HashMap<String, Carried>,
    /// Placed by the game server and not joined yet.
    placed: HashMap<String, Position>,
    /// The hub's session numbers of the players, for its control messages.
    sessions: HashMap<u64, String>,
}

/// A player's session on the channel.
struct Carried {
    core: SessionCore,
    frames: FrameCheck,
    session: u64,
}

impl Task {
    async fn run(
        mut self,
        mut batches: mpsc::Receiver<BatchRequest>,
        mut control: mpsc::Receiver<(u64, Control)>,
        idle: Option<Duration>,
    ) {
        let app = self.app.clone();
        let handle = self.handle.clone();
        loop {
            let idle_left = idle.map(|idle| {
                let last = handle.last_batch().unwrap_or_default();
                (last + idle).saturating_sub(app.now())
            });
            tokio::select! {
                biased;
                _ = handle.ended().cancelled() => break,
                _ = app.shutdown.cancelled() => handle.end(Ending::Shutdown),
                Some((session, message)) = control.recv() => self.on_control(session, message).await,
                Some((batch, reply)) = batches.recv() => {
                    let answer = self.batch(batch).await;
                    let _ = reply.send(answer);
                }
                _ = tokio::time::sleep(idle_left.unwrap_or_default()), if idle_left.is_some() => {
                    if idle_left == Some(Duration::ZERO) {
                        handle.end(Ending::Dropped);
                    }
                }
            }
        }
        app.channels.remove(&handle.id);
        let ending = handle.ending().unwrap_or(Ending::Dropped);
        let now = life::now(&app);
        for (_, carried) in std::mem::take(&mut self.players) {
            end_session(&app, carried, ending.parks(), true, now).await;
        }
        app.metrics.channel_closed();
        tracing::debug!(channel = %handle.id, ?ending, "channel ended");
    }

    /// One batch: its sequence number and acknowledgement checked, then (unless it is a retry)
    /// its positions and items applied in order.
    async fn batch(&mut self, batch: Batch) -> Result<crate::channels::Arrival, BatchRefused> {
        let sequenced = match batch.seq {
            Some(seq) => sequence(seq, self.applied)?,
            None => Sequenced::Next,
        };
        let last = self.handle.events().last();
        if batch.ack > last {
            return Err(crate::channels::events::AckAhead {
                ack: batch.ack,
                last,
            }
            .into());
        }
        let arrival = self.handle.arrived(self.app.now());
        if sequenced == Sequenced::Next {
            if let Some(seq) = batch.seq {
                self.applied = seq;
            }
            let now = life::now(&self.app);
            for placed in &batch.positions {
                self.place(placed, now);
            }
            for item in &batch.items {
                if self.handle.is_ended() {
                    break;
                }
                self.item(item, now).await;
            }
            for party in &batch.parties {
                self.declare(party, now).await;
            }
        }
        // Checked against the last event above, before anything was applied.
        let _ = self.handle.events().ack(batch.ack);
        Ok(arrival)
    }

    async fn item(&mut self, item: &Item<Box<RawValue>>, now: Now) {
        // Items were read before (`routes::check_batch`): each asks for exactly one thing.
        match item.what() {
            Ok(What::Join(join)) => self.join(&item.player, join.locale.as_deref(), now).await,
            Ok(What::Message(raw)) => self.message(&item.player, raw, now).await,
            Ok(What::Leave) => self.leave(&item.player, now).await,
            Err(_) => {}
        }
    }

    /// A party the game server declares (PROTOCOL.md section 17.1): every member in scope and
    /// on this channel, else refused to the leader (or the member out of scope).
    async fn declare(&mut self, declared: &banter_protocol::DeclaredParty, now: Now) {
        for member in &declared.members {
            if !self.handle.server.speaks_for(member) {
                return self.refuse(member, None, ChannelError::NotInScope(member.clone()));
            }
            if !self.players.contains_key(member) {
                return self.refuse(member, None, ChannelError::NotJoined(member.clone()));
            }
        }
        let declared_party = self
            .app
            .store
            .declare_party(
                &declared.party,
                &declared.leader,
                &declared.members,
                now.unix_ms,
            )
            .await;
        match declared_party {
            Ok(party) => {
                for member in &party.members {
                    if let Some(carried) = self.players.get_mut(member) {
                        let messages = carried.core.party_declared(&party);
                        self.push_all(member, &messages);
                    }
                }
            }
            Err(e) => self.refuse(&declared.leader, None, e),
        }
    }

    fn push(&self, player: &str, message: &ServerMessage) {
        self.handle.push(player, message);
    }

    fn push_all(&self, player: &str, messages: &[ServerMessage]) {
        for message in messages {
            self.push(player, message);
        }
    }

    fn refuse(&self, player: &str, id: Option<u64>, refusal: impl Into<Refusal>) {
        self.push(player, &refusal.into().to_message(id));
    }

    fn place(&mut self, placed: &Placed, now: Now) {
        if !self.handle.server.speaks_for(&placed.player) {
            return self.refuse(
                &placed.player,
                None,
                ChannelError::NotInScope(placed.player.clone()),
            );
        }
        match self.players.get_mut(&placed.player) {
            Some(carried) => {
                let messages = carried.core.place(placed.position, now);
                self.push_all(&placed.player, &messages);
            }
            None => {
                self.placed.insert(placed.player.clone(), placed.position);
            }
        }
    }

    async fn join(&mut self, player: &str, locale: Option<&str>, now: Now) {
        let app = self.app.clone();
        if !self.handle.server.speaks_for(player) {
            return self.refuse(player, None, ChannelError::NotInScope(player.to_owned()));
        }
        if self.players.contains_key(player) {
            return self.refuse(player, None, ChannelError::AlreadyJoined(player.to_owned()));
        }
        if self.players.len() >= app.config.channel_max_players {
            let full = ChannelError::ChannelFull(app.config.channel_max_players);
            return self.refuse(player, None, full);
        }
        let locale = match locale.map(Locale::parse).transpose() {
            Ok(locale) => locale,
            Err(e) => return self.refuse(player, None, SessionError::BadLocale(e)),
        };
        let carrier = Carrier::Channel(&self.handle.server.id);
        let deliver = life::Deliver::Channel(self.control.clone());
        let session = life::begin(&app, player, deliver, carrier);
        match life::load_and_claim(&app, player, session, carrier).await {
            Err(refusal) => {
                life::finish(&app, player, session, false).await;
                self.push(player, &refusal.to_message(None));
            }
            Ok(record) => {
                let mut core = SessionCore::new(app.clone(), player.to_owned(), session, record);
                core.set_locale(locale);
                core.set_engine_placed();
                if let Err(e) = core.load_party(now.unix_ms).await {
                    tracing::warn!(%player, error = %e, "party not read for the welcome");
                }
                self.push(player, &core.welcome());
                if let Some(position) = self.placed.remove(player) {
                    let messages = core.place(position, now);
                    self.push_all(player, &messages);
                }
                self.sessions.insert(session, player.to_owned());
                let frames = FrameCheck::new(&app.config.limits, now.mono);
                self.players.insert(
                    player.to_owned(),
                    Carried {
                        core,
                        frames,
                        session,
                    },
                );
            }
        }
    }

    async fn message(&mut self, player: &str, raw: &RawValue, now: Now) {
        let app = self.app.clone();
        let Some(carried) = self.players.get_mut(player) else {
            let id = ClientMessage::decode(raw.get()).map_or_else(|e| e.id, |m| m.id());
            return self.refuse(player, id, self.not_here(player));
        };
        match carried.frames.check_text(raw.get(), now.mono) {
            Checked::Message(message) => {
                let started = std::time::Instant::now();
                let messages = carried.core.handle(message, now).await;
                app.metrics.handled(started.elapsed());
                self.push_all(player, &messages);
            }
            Checked::Refused { id, kind, error } => {
                app.metrics
                    .message_type(crate::metrics::MessageType::Invalid);
                let answer = carried.core.refuse_frame(id, kind, error, now);
                self.push(player, &answer);
            }
            Checked::Flooding => {
                app.metrics
                    .message_type(crate::metrics::MessageType::Invalid);
                self.push(
                    player,
                    &ServerMessage::Bye {
                        reason: ByeReason::Flooding,
                        message: "too many messages".into(),
                    },
                );
                if let Some(carried) = self.remove(player) {
                    end_session(&app, carried, true, true, now).await;
                }
            }
            Checked::Ignore | Checked::Closed => {}
        }
    }

    async fn leave(&mut self, player: &str, now: Now) {
        match self.remove(player) {
            Some(carried) => end_session(&self.app, carried, false, true, now).await,
            None => self.refuse(player, None, self.not_here(player)),
        }
    }

    /// Why an item for a player not on the channel is refused: the scope first.
    fn not_here(&self, player: &str) -> ChannelError {
        if self.handle.server.speaks_for(player) {
            ChannelError::NotJoined(player.to_owned())
        } else {
            ChannelError::NotInScope(player.to_owned())
        }
    }

    fn remove(&mut self, player: &str) -> Option<Carried> {
        let carried = self.players.remove(player)?;
        self.sessions.remove(&carried.session);
        Some(carried)
    }

    /// What the hub tells one of the channel's players.
    async fn on_control(&mut self, session: u64, control: Control) {
        let Some(player) = self.sessions.get(&session).cloned() else {
            return;
        };
        match control {
            Control::Replaced => {
                self.push(
                    &player,
                    &ServerMessage::Bye {
                        reason: ByeReason::Replaced,
                        message: "the player connected again elsewhere".into(),
                    },
                );
                if let Some(carried) = self.remove(&player) {
                    let now = life::now(&self.app);
                    end_session(&self.app, carried, true, false, now).await;
                }
            }
            Control::Progress(effects) => {
                if let Some(carried) = self.players.get_mut(&player) {
                    let messages = carried.core.on_progress(effects).await;
                    self.push_all(&player, &messages);
                }
            }
            Control::Shared(event) => {
                if let Some(carried) = self.players.get_mut(&player) {
                    let messages = carried.core.on_shared(*event, life::now(&self.app)).await;
                    self.push_all(&player, &messages);
                }
            }
        }
    }
}

/// Ends one player's session: parks its open conversation when the end was not the player's
/// choice, then releases the player as a socket's end does.
/// Ends a carried player's session: parked if `parks`, the party's leadership handed on if
/// `hands_on` (not when another session took the player over).
async fn end_session(app: &SharedApp, carried: Carried, parks: bool, hands_on: bool, now: Now) {
    let Carried {
        mut core, session, ..
    } = carried;
    let player = core.player().to_owned();
    if hands_on {
        core.hand_on_leadership().await;
    }
    if parks {
        core.park(now).await;
    }
    core.end().await;
    drop(core);
    life::finish(app, &player, session, true).await;
}
