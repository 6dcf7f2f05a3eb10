//! Parties and shared conversations, the session's side (PROTOCOL.md section 17).
//!
//! The party commands (`party_form`, `party_invite`, `party_accept`, `party_leave`) go to the
//! store, where membership lives, and the members connected here are told through the hub. A
//! shared conversation's walk is each participant's own `Walk` (armings, actions, reach, all as
//! in a solo conversation); what the group shares is in the instance's room (`crate::rooms`):
//! a participant's `choose` is a vote there, and the leader's walk moves first and the room
//! tells the others to follow. Everything the room returns is delivered by [`deliver`].

use std::time::Duration;

use banter_dialogue::{Shown, VertexId};
use banter_protocol::{CloseReason, InviteView, LeftReason, PartyView, ServerMessage, SharedView};

use super::core::{Audited, Now, SessionCore, open_mut};
use super::refusal::{FrameError, Refusal, SessionError};
use crate::app::SharedApp;
use crate::hub::Control;
use crate::quests::ServerFacts;
use crate::rooms::{Decided, GroupStep, Opening, Out, Participant, SharedEvent};
use crate::store::{Party, StoreError};

/// How often the instance hosting a shared conversation tells the store it still does.
const HOST_REFRESH: Duration = Duration::from_secs(30);
/// How soon after a room opens its host row is first checked.
const HOST_RECHECK: Duration = Duration::from_secs(1);

fn view(party: &Party) -> PartyView {
    PartyView {
        id: party.id.clone(),
        leader: party.leader.clone(),
        members: party.members.clone(),
    }
}

/// A new party id: `pty_` and 16 hex digits from the operating system's random source.
fn new_party_id() -> Result<String, Refusal> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)
        .map_err(|e| SessionError::Content(format!("no randomness: {e}")))?;
    Ok(format!("pty_{:016x}", u64::from_le_bytes(bytes)))
}

/// A ballot's seed, from the operating system's random source (0 if it has none: a ballot
/// still decides, with a seed everyone sees).
pub(super) fn new_seed() -> u64 {
    let mut bytes = [0u8; 8];
    match getrandom::fill(&mut bytes) {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => 0,
    }
}

/// Delivers what a room call caused: its events (the server's `Rooms` hand them to the hub
/// themselves, in order, so an `Out` from them carries none), the ballot's timer, and the
/// store's host row released when the room closed.
pub fn deliver(app: &SharedApp, party: &str, out: Out) {
    for delivery in out.deliveries {
        app.hub
            .notify(&delivery.player, Control::Shared(Box::new(delivery.event)));
    }
    if let Some(deadline) = out.deadline {
        let app = app.clone();
        tokio::spawn(async move {
            let wait = deadline.at.saturating_sub(app.now());
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = app.shutdown.cancelled() => return,
            }
            let out = app.rooms.expire(&deadline.party, deadline.ballot);
            deliver(&app, &deadline.party, out);
        });
    }
    if out.emptied {
        let app = app.clone();
        let party = party.to_owned();
        // Only a row claimed before the room closed is this room's to release.
        let closed_ms = crate::clock::unix_millis();
        tokio::spawn(async move {
            // A new room of the party opened here meanwhile: its row is this instance's still.
            if app.rooms.view(&party).is_some() {
                return;
            }
            if let Err(e) = app
                .store
                .release_shared(&party, &app.instance, closed_ms)
                .await
            {
                tracing::debug!(%party, error = %e, "shared conversation's host row not released");
            }
        });
    }
}

/// Keeps the store's host row of the party's room fresh while the room (this generation of
/// it) is open, so other instances know the conversation is here.
fn keep_host(app: &SharedApp, party: String, generation: u64) {
    let app = app.clone();
    tokio::spawn(async move {
        // The first check comes soon: a release of the party's previous room on this instance
        // may have raced this room's claim and deleted its row; it is claimed again then.
        let mut wait = HOST_RECHECK;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = app.shutdown.cancelled() => return,
            }
            wait = HOST_REFRESH;
            if app.rooms.generation(&party) != Some(generation) {
                return;
            }
            let now_ms = crate::clock::unix_millis();
            match app
                .store
                .refresh_shared(&party, &app.instance, now_ms)
                .await
            {
                Ok(true) => {}
                Ok(false) => reclaim_host(&app, &party, now_ms).await,
                Err(e) => {
                    tracing::debug!(%party, error = %e, "shared conversation's host row not refreshed");
                }
            }
        }
    });
}

/// The room's host row is gone (a release raced the claim): claims it again.
async fn reclaim_host(app: &SharedApp, party: &str, now_ms: i64) {
    let Some(room) = app.rooms.view(party) else {
        return;
    };
    if let Err(e) = app
        .store
        .host_shared(party, &room.npc, &room.conversation, &app.instance, now_ms)
        .await
    {
        tracing::warn!(%party, error = %e, "shared conversation's host row not claimed again");
    }
}

impl SessionCore {
    /// Reads the player's party and live invitations, for the `welcome`.
    pub async fn load_party(&mut self, now_ms: i64) -> Result<(), StoreError> {
        self.party = self.store_party(self.app.store.party_of(&self.player).await?);
        self.invites = self
            .app
            .store
            .party_invites(&self.player, now_ms)
            .await?
            .into_iter()
            .map(|i| InviteView {
                party: i.party,
                from: i.inviter,
            })
            .collect();
        Ok(())
    }

    fn store_party(&self, party: Option<Party>) -> Option<PartyView> {
        party.as_ref().map(view)
    }

    /// Tells the player and every other member of `party` connected here what it is now, and
    /// the party's room who leads.
    fn party_changed(&mut self, party: &Party) {
        let message = ServerMessage::Party {
            party: Some(view(party)),
        };
        self.party = Some(view(party));
        self.out.push(message.clone());
        for member in party.members.iter().filter(|m| **m != self.player) {
            self.app.hub.notify(
                member,
                Control::Shared(Box::new(SharedEvent::Say(message.clone()))),
            );
        }
        let out = self.app.rooms.party_changed(&party.id, &party.leader);
        deliver(&self.app, &party.id, out);
    }

    /// A game server declared the player's party (PROTOCOL.md section 17.1): the `party` to
    /// send, and the party's room told who leads.
    pub fn party_declared(&mut self, party: &Party) -> Vec<ServerMessage> {
        self.party = Some(view(party));
        let out = self.app.rooms.party_changed(&party.id, &party.leader);
        deliver(&self.app, &party.id, out);
        vec![ServerMessage::Party {
            party: Some(view(party)),
        }]
    }

    pub(super) async fn on_party_form(&mut self, now: Now) -> Result<Audited, Refusal> {
        let id = new_party_id()?;
        let party = self
            .app
            .store
            .form_party(&id, &self.player, now.unix_ms)
            .await?;
        self.party_changed(&party);
        Ok(Audited::Trail)
    }

    pub(super) async fn on_party_invite(
        &mut self,
        invitee: &str,
        now: Now,
    ) -> Result<Audited, Refusal> {
        if !crate::auth::valid_player_id(invitee) {
            return Err(FrameError::Malformed(
                "`player` is not a player id (1 to 64 letters, digits, `-`, `_`)".into(),
            )
            .into());
        }
        if invitee == self.player {
            return Err(StoreError::AlreadyInParty.into());
        }
        if self.app.store.party_of(&self.player).await?.is_none() {
            let id = new_party_id()?;
            self.app
                .store
                .form_party(&id, &self.player, now.unix_ms)
                .await?;
        }
        let invite = self
            .app
            .store
            .invite_to_party(&self.player, invitee, now.unix_ms)
            .await?;
        if let Some(party) = self.app.store.party_of(&self.player).await? {
            self.party = Some(view(&party));
            self.out.push(ServerMessage::Party {
                party: Some(view(&party)),
            });
        }
        self.app.hub.notify(
            invitee,
            Control::Shared(Box::new(SharedEvent::Say(ServerMessage::PartyInvited {
                party: invite.party,
                from: self.player.clone(),
            }))),
        );
        Ok(Audited::Trail)
    }

    pub(super) async fn on_party_accept(
        &mut self,
        party: &str,
        now: Now,
    ) -> Result<Audited, Refusal> {
        if !crate::auth::valid_player_id(party) {
            // No party has such an id, so no invite to it can exist; a member is told first
            // that it is in a party, as the store's checks order it.
            if self.app.store.party_of(&self.player).await?.is_some() {
                return Err(StoreError::AlreadyInParty.into());
            }
            return Err(StoreError::NoInvite.into());
        }
        let party = self
            .app
            .store
            .accept_invite(&self.player, party, now.unix_ms)
            .await?;
        self.invites.retain(|i| i.party != party.id);
        self.party_changed(&party);
        Ok(Audited::Trail)
    }

    pub(super) async fn on_party_leave(&mut self, now: Now) -> Result<Audited, Refusal> {
        let before = self.app.store.party_of(&self.player).await?;
        let after = self.app.store.leave_party(&self.player).await?;
        if let Some(open) = &self.conversation
            && open.shared.is_some()
            && before
                .as_ref()
                .is_some_and(|p| open.shared.as_deref() == Some(&p.id))
        {
            self.leave_shared(LeftReason::LeftParty, now.mono);
            self.close_conversation(CloseReason::Client, now.mono);
        }
        self.party = None;
        self.out.push(ServerMessage::Party { party: None });
        if let Some(party) = after {
            let message = ServerMessage::Party {
                party: Some(view(&party)),
            };
            for member in &party.members {
                self.app.hub.notify(
                    member,
                    Control::Shared(Box::new(SharedEvent::Say(message.clone()))),
                );
            }
            let out = self.app.rooms.party_changed(&party.id, &party.leader);
            deliver(&self.app, &party.id, out);
        }
        Ok(Audited::Trail)
    }

    /// The end of the session: a party leader's leadership passes to the next member
    /// (PROTOCOL.md section 17.1). Not for a session another took over.
    pub async fn hand_on_leadership(&mut self) {
        if self.party.as_ref().is_none_or(|p| p.leader != self.player) {
            return;
        }
        match self.app.store.hand_on_leadership(&self.player).await {
            Ok(Some(party)) => {
                let message = ServerMessage::Party {
                    party: Some(view(&party)),
                };
                for member in party.members.iter().filter(|m| **m != self.player) {
                    self.app.hub.notify(
                        member,
                        Control::Shared(Box::new(SharedEvent::Say(message.clone()))),
                    );
                }
                let out = self.app.rooms.party_changed(&party.id, &party.leader);
                deliver(&self.app, &party.id, out);
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(player = %self.player, error = %e, "party leadership not handed on");
            }
        }
    }

    /// A `talk` to an NPC whose conversation is shared, from a party member: joins the
    /// party's open conversation, or opens it. `Ok(None)`: not a shared conversation, or the
    /// player has no party: a talk as any other.
    pub(super) async fn talk_shared(
        &mut self,
        library: &std::sync::Arc<crate::served::ContentVersion>,
        npc: &banter_dialogue::content::NpcDef,
        cached: Option<&str>,
        now: Now,
    ) -> Result<Option<Audited>, Refusal> {
        let shared = library
            .conversations
            .get(&npc.conversation)
            .is_some_and(|p| p.graph.shared().is_some());
        if !shared {
            return Ok(None);
        }
        let Some(party) = self.app.store.party_of(&self.player).await? else {
            self.party = None;
            return Ok(None);
        };
        self.party = Some(view(&party));
        if let Some(room) = self.app.rooms.view(&party.id) {
            if room.npc != npc.id {
                return Err(StoreError::SharedElsewhere {
                    instance: self.app.instance.clone(),
                }
                .into());
            }
            self.join_room(&party.id, cached, now.mono)?;
            return Ok(Some(Audited::Trail));
        }
        self.app
            .store
            .host_shared(
                &party.id,
                &npc.id,
                &npc.conversation,
                &self.app.instance,
                now.unix_ms,
            )
            .await?;
        let opener = SharedView {
            party: party.id.clone(),
            leader: self.player.clone(),
            participants: vec![self.player.clone()],
            votes: Vec::new(),
        };
        let audited = self
            .open_conversation(library.clone(), npc.clone(), cached, now.mono, Some(opener))
            .await;
        let line = self
            .conversation
            .as_ref()
            .filter(|c| c.shared.is_some())
            .and_then(current_line);
        let Some(line) = line else {
            // A cutscene quest, or the walk did not open: no room.
            if let Err(e) = self
                .app
                .store
                .release_shared(&party.id, &self.app.instance, now.unix_ms.saturating_add(1))
                .await
            {
                tracing::debug!(party = %party.id, error = %e, "host row not released");
            }
            return audited.map(Some);
        };
        let Some(open) = &self.conversation else {
            return audited.map(Some);
        };
        let opening = Opening {
            party: party.id.clone(),
            party_leader: party.leader.clone(),
            npc: npc.id.clone(),
            conversation: npc.conversation.clone(),
            library: open.library.clone(),
            graph: open.graph.clone(),
            opener: Participant {
                player: self.player.clone(),
                session: self.id,
            },
            line,
            members: party.members.clone(),
        };
        match self.app.rooms.open(opening, new_seed(), now.mono) {
            Some((_, generation, out)) => {
                keep_host(&self.app, party.id.clone(), generation);
                deliver(&self.app, &party.id, out);
            }
            None => {
                // Another member's talk opened it a moment ago: this walk is theirs.
                self.conversation = None;
                self.dialogue.clear(&mut self.machine);
                self.out
                    .retain(|m| !matches!(m, ServerMessage::Opened { .. }));
                self.join_room(&party.id, cached, now.mono)?;
            }
        }
        audited.map(Some)
    }

    /// Joins the party's room where it is: the walk opens on the group's current line.
    fn join_room(
        &mut self,
        party: &str,
        cached: Option<&str>,
        now: Duration,
    ) -> Result<(), Refusal> {
        let Some(room) = self.app.rooms.view(party) else {
            return Err(SessionError::NoConversation.into());
        };
        let npc = room
            .library
            .npcs
            .by_id(&room.npc)
            .cloned()
            .ok_or_else(|| SessionError::Content(format!("no NPC `{}`", room.npc)))?;
        let participant = Participant {
            player: self.player.clone(),
            session: self.id,
        };
        let Some((room, out)) = self.app.rooms.join(party, &npc.id, participant) else {
            return Err(SessionError::NoConversation.into());
        };
        let started = self.start_walk(
            room.library.clone(),
            npc,
            room.line,
            cached,
            now,
            Some(room.shared.clone()),
        );
        if let Err(refusal) = started {
            let out = self
                .app
                .rooms
                .leave(party, &self.player, LeftReason::Closed);
            deliver(&self.app, party, out);
            return Err(refusal);
        }
        deliver(&self.app, party, out);
        Ok(())
    }

    /// The party's conversation opened here and this member was free: join it if within
    /// reach, not busy and not talking already. Nothing is said otherwise.
    fn on_invited(&mut self, party: &str, now: Duration) {
        if self.conversation.is_some() || self.party.as_ref().is_none_or(|p| p.id != party) {
            return;
        }
        let Some(room) = self.app.rooms.view(party) else {
            return;
        };
        let Some(npc) = room.library.npcs.by_id(&room.npc).cloned() else {
            return;
        };
        if self.check_free().is_err()
            || crate::world::check_reach(&self.app.config.world, &npc, &self.body).is_err()
        {
            return;
        }
        if let Err(refusal) = self.join_room(party, None, now) {
            tracing::debug!(player = %self.player, code = refusal.code.name(), "did not join");
        }
    }

    /// Leaves the open shared conversation's room (the conversation itself is closed or parked
    /// by the caller).
    pub(super) fn leave_shared(&mut self, reason: LeftReason, _now: Duration) {
        let Some(party) = self.conversation.as_ref().and_then(|c| c.shared.clone()) else {
            return;
        };
        let out = self.app.rooms.leave(&party, &self.player, reason);
        deliver(&self.app, &party, out);
        if let Some(open) = self.conversation.as_mut() {
            open.shared = None;
        }
    }

    /// A `choose` in a shared conversation: a vote for a response shown to the player under
    /// the ballot's line.
    pub(super) fn vote(&mut self, response: &str) -> Result<Audited, Refusal> {
        let open = open_mut(&mut self.conversation)?;
        let party = open.shared.clone().ok_or(SessionError::NoConversation)?;
        let vertex = open
            .graph
            .find(response)
            .ok_or_else(|| SessionError::UnknownVertex(response.to_owned()))?;
        let facts = ServerFacts {
            record: &self.record,
            machine: &self.machine,
            content: &open.library.content,
            conversation: &open.name,
        };
        // The walk's own rules say whether the player may pick it; the vote moves nothing.
        open.walk.clone().choose(&open.graph, vertex, &facts)?;
        let out = self.app.rooms.vote(&party, &self.player, vertex)?;
        self.out.push(ServerMessage::Voted {
            player: self.player.clone(),
            response: response.to_owned(),
        });
        open.tally.chose(vertex);
        deliver(&self.app, &party, out);
        Ok(Audited::Trail)
    }

    /// The leader's `advance` in a shared conversation, taken by its walk: every participant
    /// is told, and the others follow.
    pub(super) fn advanced_shared(
        &mut self,
        party: &str,
        line: VertexId,
        shown: Shown,
        now: Duration,
    ) -> Result<(), Refusal> {
        let Some(open) = self.conversation.as_ref() else {
            return Ok(());
        };
        let next = shown_line(shown);
        self.out.push(ServerMessage::Advanced {
            line: name(&open.graph, line),
            node: next.map(|v| name(&open.graph, v)),
        });
        let out = self.app.rooms.moved(
            party,
            &self.player,
            GroupStep::Advanced { line, node: next },
            next,
            new_seed(),
            now,
        )?;
        deliver(&self.app, party, out);
        Ok(())
    }

    /// The leader's quest check decided the group's next line: the others follow.
    pub(super) fn jumped_shared(&mut self, node: VertexId, now: Duration) {
        let Some(party) = self.conversation.as_ref().and_then(|c| c.shared.clone()) else {
            return;
        };
        match self.app.rooms.moved(
            &party,
            &self.player,
            GroupStep::Jumped { node },
            Some(node),
            new_seed(),
            now,
        ) {
            Ok(out) => deliver(&self.app, &party, out),
            Err(e) => tracing::debug!(player = %self.player, error = %e, "jump not shared"),
        }
    }

    /// Whether a quest check's `jump` is this participant's to take: in a shared conversation,
    /// only the leader's check moves the walk.
    pub(super) fn takes_own_jumps(&self) -> bool {
        match self.conversation.as_ref().and_then(|c| c.shared.as_deref()) {
            Some(party) => self.app.rooms.leads(party, &self.player),
            None => true,
        }
    }

    /// What the room (or another member's session) told this session.
    pub async fn on_shared(&mut self, event: SharedEvent, now: Now) -> Vec<ServerMessage> {
        match event {
            SharedEvent::Invite { party } => self.on_invited(&party, now.mono),
            SharedEvent::Say(message) => {
                if let ServerMessage::Party { party } = &message {
                    self.party.clone_from(party);
                }
                self.out.push(message);
            }
            SharedEvent::Decide { party, decided } => self.on_decide(&party, decided, now.mono),
            SharedEvent::Follow { party, step } => self.on_follow(&party, &step, now.mono),
        }
        std::mem::take(&mut self.out)
    }

    /// The leader's walk takes the group's decision, then the room tells the others.
    fn on_decide(&mut self, party: &str, decided: Decided, now: Duration) {
        let Some(open) = self.conversation.as_mut() else {
            return;
        };
        if open.shared.as_deref() != Some(party) {
            return;
        }
        let facts = ServerFacts {
            record: &self.record,
            machine: &self.machine,
            content: &open.library.content,
            conversation: &open.name,
        };
        let shown = match open
            .walk
            .group_choose(&open.graph, decided.response, &facts)
        {
            Ok(shown) => shown,
            Err(e) => {
                tracing::warn!(player = %self.player, error = %e, "a decision the walk refused");
                return;
            }
        };
        open.tally.stepped(&open.graph, &open.walk, shown, now);
        let node = shown_line(shown);
        self.out.push(chosen(&open.graph, &decided, node));
        match self.app.rooms.moved(
            party,
            &self.player,
            GroupStep::Chosen { decided, node },
            node,
            new_seed(),
            now,
        ) {
            Ok(out) => deliver(&self.app, party, out),
            Err(e) => tracing::debug!(player = %self.player, error = %e, "decision not shared"),
        }
    }

    /// A follower's walk takes the step the leader's took.
    fn on_follow(&mut self, party: &str, step: &GroupStep, now: Duration) {
        let Some(open) = self.conversation.as_mut() else {
            return;
        };
        if open.shared.as_deref() != Some(party) {
            return;
        }
        let facts = ServerFacts {
            record: &self.record,
            machine: &self.machine,
            content: &open.library.content,
            conversation: &open.name,
        };
        let graph = open.graph.clone();
        let (followed, message, shown) = match step {
            GroupStep::Chosen { decided, node } => (
                open.walk
                    .follow_chosen(&graph, decided.response, *node, &facts),
                chosen(&graph, decided, *node),
                *node,
            ),
            GroupStep::Advanced { line, node } => (
                open.walk.follow_advanced(&graph, *node, &facts),
                ServerMessage::Advanced {
                    line: name(&graph, *line),
                    node: node.map(|v| name(&graph, v)),
                },
                *node,
            ),
            GroupStep::Jumped { node } => (
                open.walk.jump_to(&graph, *node, &facts).map(|_| ()),
                ServerMessage::Jump {
                    node: name(&graph, *node),
                },
                Some(*node),
            ),
        };
        if let Err(e) = followed {
            tracing::warn!(player = %self.player, error = %e, "a group step the walk refused");
            return;
        }
        if let Some(line) = shown {
            open.tally.jumped(&graph, &open.walk, line, now);
        }
        self.out.push(message);
    }
}

/// The line a step put on screen, if any.
fn shown_line(shown: Shown) -> Option<VertexId> {
    match shown {
        Shown::Line(line) => Some(line),
        Shown::AwaitJump | Shown::End => None,
    }
}

/// The line a conversation just opened on (its walk's only line so far).
fn current_line(open: &super::core::OpenConversation) -> Option<VertexId> {
    open.walk.reachable().iter().copied().find(|&v| {
        open.graph
            .vertex(v)
            .is_some_and(|v| v.kind == banter_dialogue::VertexKind::Prompt)
    })
}

fn name(graph: &banter_dialogue::DialogueGraph, v: VertexId) -> String {
    graph
        .vertex(v)
        .map(|v| v.name.to_string())
        .unwrap_or_default()
}

fn chosen(
    graph: &banter_dialogue::DialogueGraph,
    decided: &Decided,
    node: Option<VertexId>,
) -> ServerMessage {
    let rolled = !decided.rolls.is_empty() || decided.by == banter_protocol::DecidedBy::TieRoll;
    ServerMessage::Chosen {
        line: name(graph, decided.line),
        response: name(graph, decided.response),
        node: node.map(|v| name(graph, v)),
        by: decided.by,
        votes: decided.votes.clone(),
        seed: rolled.then(|| decided.seed.to_string()),
        rolls: decided.rolls.clone(),
    }
}
