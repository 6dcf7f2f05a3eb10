//! Shared conversations (PROTOCOL.md section 17): the rooms of this instance, one per party with
//! a shared conversation open here.
//!
//! A room is a state machine with no I/O and no clock, in the manner of the session core: the
//! sessions of its participants drive it (a vote, a step of the walk, a participant leaving, a
//! ballot's time limit passing) and each call returns what must be delivered to whom
//! ([`Out`]). The sessions deliver it through the hub, spawn the ballot timers and keep the
//! store's host row; this module knows nothing of them.
//!
//! The walk itself stays with each participant's session (its own `Walk`: armings, actions,
//! reach). The room holds only what is shared: who takes part, who leads, the current line and
//! its ballot. The leader's session moves its walk first (an advance, a decision, a quest
//! check's jump) and reports the step here, and the room tells every other participant to
//! follow it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use banter_dialogue::ChoiceRule;
use banter_dialogue::ballot::{self, Decision};
use banter_dialogue::{DialogueGraph, VertexId, VertexKind};
use banter_protocol::{DecidedBy, LeftReason, Roll, ServerMessage, SharedView, Vote};

use crate::served::ContentVersion;

/// One participant: a player and the session that walks for them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Participant {
    pub player: String,
    pub session: u64,
}

/// A message for one participant's session.
#[derive(Debug)]
pub struct Delivery {
    pub player: String,
    pub event: SharedEvent,
}

/// What a participant's (or party member's) session is told.
/// Events travel boxed (`hub::Control::Shared`), so the variants' sizes need not match.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum SharedEvent {
    /// The party's shared conversation opened: join it if free and within reach.
    Invite { party: String },
    /// Send this to the client as it is (`participants`, `voted`).
    Say(ServerMessage),
    /// To the leader: the ballot is decided; apply it to the walk and report the step.
    Decide { party: String, decided: Decided },
    /// To a follower: the leader's walk took this step; take it too and tell the client.
    Follow { party: String, step: Arc<GroupStep> },
}

/// A decided ballot, on its way to the leader's walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decided {
    pub line: VertexId,
    pub response: VertexId,
    pub by: DecidedBy,
    pub votes: Vec<Vote>,
    pub seed: u64,
    pub rolls: Vec<Roll>,
}

/// A step of the group's walk, as the leader's walk took it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupStep {
    /// A decision: `node` is the line shown next (absent: a jump is awaited, or the end).
    Chosen {
        decided: Decided,
        node: Option<VertexId>,
    },
    /// The leader advanced past `line` to `node` (absent: the end).
    Advanced {
        line: VertexId,
        node: Option<VertexId>,
    },
    /// A quest check's result.
    Jumped { node: VertexId },
}

/// When a ballot's time limit passes: the session layer calls [`Rooms::expire`] then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadline {
    pub party: String,
    pub ballot: u64,
    /// Server time (`App::now`).
    pub at: Duration,
}

/// What a call caused.
#[derive(Debug, Default)]
pub struct Out {
    pub deliveries: Vec<Delivery>,
    pub deadline: Option<Deadline>,
    /// The room closed (its last participant left): release the store's host row.
    pub emptied: bool,
}

/// Why a vote or a step is not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RoomError {
    #[error("the party has no shared conversation open here")]
    NoRoom,
    #[error("not a participant of the party's shared conversation")]
    NotParticipant,
    #[error("only the current line's responses can be voted for")]
    NotCurrent,
    #[error("only the conversation's leader advances")]
    NotLeader,
}

/// What a session needs to join a room.
#[derive(Clone)]
pub struct RoomView {
    pub npc: String,
    pub conversation: String,
    pub library: Arc<ContentVersion>,
    pub graph: Arc<DialogueGraph>,
    /// The last line the group was shown.
    pub line: VertexId,
    pub shared: SharedView,
}

struct Ballot {
    id: u64,
    line: VertexId,
    rule: ChoiceRule,
    /// The latest vote of each participant, in the order first cast.
    votes: Vec<(String, VertexId)>,
    seed: u64,
    /// When its time limit passes (server time), if it has one.
    deadline: Option<Duration>,
    expired: bool,
}

struct Room {
    party: String,
    npc: String,
    conversation: String,
    library: Arc<ContentVersion>,
    graph: Arc<DialogueGraph>,
    /// The party's leader as this instance last heard it.
    party_leader: String,
    participants: Vec<Participant>,
    line: VertexId,
    ballot: Option<Ballot>,
    /// A decision sent to the leader and not yet applied, and who it was sent to (the decider,
    /// whose walk applies it even if the lead has passed meanwhile; sent again to the new leader
    /// only if the decider leaves).
    deciding: Option<(Decided, String)>,
    /// Which room of the party this is (a party may open another after this one closes).
    generation: u64,
}

impl Room {
    /// The conversation's leader: the party's leader if taking part, else the first to join.
    fn leader(&self) -> Option<&Participant> {
        self.participants
            .iter()
            .find(|p| p.player == self.party_leader)
            .or_else(|| self.participants.first())
    }

    fn names(&self) -> Vec<&str> {
        self.participants
            .iter()
            .map(|p| p.player.as_str())
            .collect()
    }

    fn view(&self, party: &str) -> SharedView {
        SharedView {
            party: party.to_owned(),
            leader: self.leader().map(|p| p.player.clone()).unwrap_or_default(),
            participants: self.participants.iter().map(|p| p.player.clone()).collect(),
            votes: self.votes(),
        }
    }

    fn votes(&self) -> Vec<Vote> {
        self.ballot.as_ref().map_or_else(Vec::new, |b| {
            b.votes
                .iter()
                .map(|(player, response)| Vote {
                    player: player.clone(),
                    response: vertex_name(&self.graph, *response),
                })
                .collect()
        })
    }

    /// `message` to every participant but `except`.
    fn tell_all(&self, out: &mut Out, message: &ServerMessage, except: Option<&str>) {
        for p in &self.participants {
            if Some(p.player.as_str()) != except {
                out.deliveries.push(Delivery {
                    player: p.player.clone(),
                    event: SharedEvent::Say(message.clone()),
                });
            }
        }
    }

    fn roster(&self, joined: Option<&str>, left: Option<(&str, LeftReason)>) -> ServerMessage {
        ServerMessage::Participants {
            leader: self.leader().map(|p| p.player.clone()).unwrap_or_default(),
            participants: self.participants.iter().map(|p| p.player.clone()).collect(),
            joined: joined.map(str::to_owned),
            left: left.map(|(p, _)| p.to_owned()),
            reason: left.map(|(_, r)| r),
        }
    }

    /// Opens the ballot of `line` if the group is shown responses there.
    fn open_ballot(&mut self, party: &str, id: u64, seed: u64, now: Duration, out: &mut Out) {
        self.ballot = None;
        let has_responses = self.graph.outputs(self.line).iter().any(|&r| {
            self.graph
                .vertex(r)
                .is_some_and(|v| v.kind == VertexKind::Response)
        });
        let Some(rule) = self.graph.choice_rule(self.line).filter(|_| has_responses) else {
            return;
        };
        let deadline = rule
            .time_limit_secs
            .map(|limit| now + Duration::from_secs(u64::from(limit)));
        out.deadline = deadline.map(|at| Deadline {
            party: party.to_owned(),
            ballot: id,
            at,
        });
        self.ballot = Some(Ballot {
            id,
            line: self.line,
            rule,
            votes: Vec::new(),
            seed,
            deadline,
            expired: false,
        });
    }

    /// Decides the ballot if its rule says it is decided now, and sends the decision to the
    /// leader.
    fn evaluate(&mut self, out: &mut Out) {
        let Some(ballot) = &self.ballot else { return };
        let Some(leader) = self.leader() else { return };
        let names = self.names();
        let votes: Vec<(&str, VertexId)> =
            ballot.votes.iter().map(|(p, r)| (p.as_str(), *r)).collect();
        let Some(Decision {
            response,
            by,
            rolls,
        }) = ballot::decide(
            &self.graph,
            &ballot.rule,
            &names,
            &leader.player,
            &votes,
            ballot.expired,
            ballot.seed,
        )
        else {
            return;
        };
        let decided = Decided {
            line: ballot.line,
            response,
            by,
            votes: self.votes(),
            seed: ballot.seed,
            rolls: rolls
                .into_iter()
                .map(|(player, roll)| Roll { player, roll })
                .collect(),
        };
        self.ballot = None;
        self.deciding = Some((decided, String::new()));
        self.send_decision(out);
    }

    /// Sends the pending decision to the conversation's leader, who becomes its decider.
    fn send_decision(&mut self, out: &mut Out) {
        let Some(leader) = self.leader().map(|p| p.player.clone()) else {
            return;
        };
        let Some((decided, decider)) = &mut self.deciding else {
            return;
        };
        decider.clone_from(&leader);
        out.deliveries.push(Delivery {
            player: leader,
            event: SharedEvent::Decide {
                party: self.party.clone(),
                decided: decided.clone(),
            },
        });
    }

    /// Whether `player` may move the group: the leader, or the decider of a pending decision
    /// applying it (`chosen`).
    fn may_move(&self, player: &str, step: &GroupStep) -> bool {
        match (step, &self.deciding) {
            (GroupStep::Chosen { .. }, Some((_, decider))) => decider == player,
            (GroupStep::Chosen { .. }, None) => false,
            _ => self.leader().is_some_and(|p| p.player == player),
        }
    }
}

fn vertex_name(graph: &DialogueGraph, v: VertexId) -> String {
    graph
        .vertex(v)
        .map(|v| v.name.to_string())
        .unwrap_or_default()
}

/// Where a room's events go as they are made (the hub, in a server).
pub type Sink = Box<dyn Fn(Delivery) + Send + Sync>;

/// The rooms open on this instance, by party.
#[derive(Default)]
pub struct Rooms {
    rooms: Mutex<HashMap<String, Room>>,
    /// With a sink, each call hands its events to it before releasing the rooms' lock, so two
    /// calls' events reach every session in the order the calls were made (a `participants`
    /// roster never overtakes an older one); its `Out` then carries none. Without one (tests,
    /// benches), the events are in the `Out`.
    sink: Option<Sink>,
    next: std::sync::atomic::AtomicU64,
    /// The seed every ballot takes instead of its caller's (see [`Rooms::fix_seed`]).
    fixed_seed: Mutex<Option<u64>>,
}

/// Where a room's first line is and who opens it.
pub struct Opening {
    pub party: String,
    pub party_leader: String,
    pub npc: String,
    pub conversation: String,
    pub library: Arc<ContentVersion>,
    pub graph: Arc<DialogueGraph>,
    pub opener: Participant,
    pub line: VertexId,
    /// The other members of the party, invited to join.
    pub members: Vec<String>,
}

impl Rooms {
    /// Rooms whose events go to `sink` as they are made, in order.
    pub fn delivering(sink: impl Fn(Delivery) + Send + Sync + 'static) -> Rooms {
        Rooms {
            sink: Some(Box::new(sink)),
            ..Rooms::default()
        }
    }

    /// Hands `out`'s events to the sink, if there is one; the caller holds the lock.
    fn flush(&self, out: &mut Out) {
        if let Some(sink) = &self.sink {
            for delivery in out.deliveries.drain(..) {
                sink(delivery);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Room>> {
        self.rooms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn next_id(&self) -> u64 {
        self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
    }

    /// From now on every ballot opened takes `seed` instead of the one its caller drew (`None`:
    /// the caller's again). For the writer test plans, whose rolls must come out the same on
    /// every run; a server never calls it.
    pub fn fix_seed(&self, seed: Option<u64>) {
        *self
            .fixed_seed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = seed;
    }

    /// The seed a ballot (or a conversation's `Weighted` group) opened now takes: the fixed one
    /// if any, else the caller's.
    pub fn seed(&self, drawn: u64) -> u64 {
        self.fixed_seed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .unwrap_or(drawn)
    }

    /// The party's open ballot's time limit, if it has one: when the session layer's timer
    /// calls [`Rooms::expire`] (the writer test plans pass it on their own clock).
    pub fn deadline(&self, party: &str) -> Option<Deadline> {
        let rooms = self.lock();
        let ballot = rooms.get(party)?.ballot.as_ref()?;
        Some(Deadline {
            party: party.to_owned(),
            ballot: ballot.id,
            at: ballot.deadline?,
        })
    }

    /// The party's room, if one is open here.
    pub fn view(&self, party: &str) -> Option<RoomView> {
        let rooms = self.lock();
        let room = rooms.get(party)?;
        Some(RoomView {
            npc: room.npc.clone(),
            conversation: room.conversation.clone(),
            library: room.library.clone(),
            graph: room.graph.clone(),
            line: room.line,
            shared: room.view(party),
        })
    }

    /// Which room of the party is open (its generation), if one is.
    pub fn generation(&self, party: &str) -> Option<u64> {
        self.lock().get(party).map(|r| r.generation)
    }

    /// Opens the party's room with its opener as the only participant, and invites the other
    /// members. `None` if the party already has one here.
    pub fn open(
        &self,
        opening: Opening,
        seed: u64,
        now: Duration,
    ) -> Option<(SharedView, u64, Out)> {
        let seed = self.seed(seed);
        let mut rooms = self.lock();
        if rooms.contains_key(&opening.party) {
            return None;
        }
        let generation = self.next_id();
        let mut room = Room {
            party: opening.party.clone(),
            npc: opening.npc,
            conversation: opening.conversation,
            library: opening.library,
            graph: opening.graph,
            party_leader: opening.party_leader,
            participants: vec![opening.opener],
            line: opening.line,
            ballot: None,
            deciding: None,
            generation,
        };
        let mut out = Out::default();
        room.open_ballot(&opening.party, self.next_id(), seed, now, &mut out);
        for member in opening.members {
            if room.participants.iter().all(|p| p.player != member) {
                out.deliveries.push(Delivery {
                    player: member,
                    event: SharedEvent::Invite {
                        party: opening.party.clone(),
                    },
                });
            }
        }
        let view = room.view(&opening.party);
        rooms.insert(opening.party, room);
        self.flush(&mut out);
        Some((view, generation, out))
    }

    /// Adds a participant (a member who talked to the NPC, or took an invitation). Returns what
    /// the newcomer is shown and tells the others; `None` if the room is gone or it is not the
    /// NPC `npc`'s.
    pub fn join(
        &self,
        party: &str,
        npc: &str,
        participant: Participant,
    ) -> Option<(RoomView, Out)> {
        let mut rooms = self.lock();
        let room = rooms.get_mut(party).filter(|r| r.npc == npc)?;
        let mut out = Out::default();
        let player = participant.player.clone();
        match room.participants.iter_mut().find(|p| p.player == player) {
            Some(p) => p.session = participant.session,
            None => room.participants.push(participant),
        }
        let roster = room.roster(Some(&player), None);
        room.tell_all(&mut out, &roster, Some(&player));
        let view = RoomView {
            npc: room.npc.clone(),
            conversation: room.conversation.clone(),
            library: room.library.clone(),
            graph: room.graph.clone(),
            line: room.line,
            shared: room.view(party),
        };
        self.flush(&mut out);
        Some((view, out))
    }

    /// A participant's vote for `response` (which the caller checked was shown to them, under
    /// a line of the conversation). Tells every participant, and decides the ballot if the rule
    /// says so.
    pub fn vote(&self, party: &str, player: &str, response: VertexId) -> Result<Out, RoomError> {
        let mut rooms = self.lock();
        let room = rooms.get_mut(party).ok_or(RoomError::NoRoom)?;
        if room.participants.iter().all(|p| p.player != player) {
            return Err(RoomError::NotParticipant);
        }
        let graph = room.graph.clone();
        let ballot = room.ballot.as_mut().ok_or(RoomError::NotCurrent)?;
        if !graph.outputs(ballot.line).contains(&response) {
            return Err(RoomError::NotCurrent);
        }
        match ballot.votes.iter_mut().find(|(p, _)| p == player) {
            Some(vote) => vote.1 = response,
            None => ballot.votes.push((player.to_owned(), response)),
        }
        let mut out = Out::default();
        let voted = ServerMessage::Voted {
            player: player.to_owned(),
            response: vertex_name(&graph, response),
        };
        // The voter hears its own `voted` in its reply; the others hear it here.
        room.tell_all(&mut out, &voted, Some(player));
        room.evaluate(&mut out);
        self.flush(&mut out);
        Ok(out)
    }

    /// The ballot `ballot`'s time limit passed: decided now if any vote was cast (later, by the
    /// first vote, otherwise).
    pub fn expire(&self, party: &str, ballot: u64) -> Out {
        let mut rooms = self.lock();
        let mut out = Out::default();
        let Some(room) = rooms.get_mut(party) else {
            return out;
        };
        match &mut room.ballot {
            Some(b) if b.id == ballot => b.expired = true,
            _ => return out,
        }
        room.evaluate(&mut out);
        self.flush(&mut out);
        out
    }

    /// Whether `player` leads the party's room.
    pub fn leads(&self, party: &str, player: &str) -> bool {
        self.lock()
            .get(party)
            .and_then(Room::leader)
            .is_some_and(|p| p.player == player)
    }

    /// The leader's walk took `step`: every other participant follows it, and the line it
    /// shows (if any) opens its ballot. `line` is the line now on screen. Refused if `player`
    /// does not lead the room.
    pub fn moved(
        &self,
        party: &str,
        player: &str,
        step: GroupStep,
        line: Option<VertexId>,
        seed: u64,
        now: Duration,
    ) -> Result<Out, RoomError> {
        let seed = self.seed(seed);
        let mut rooms = self.lock();
        let room = rooms.get_mut(party).ok_or(RoomError::NoRoom)?;
        if !room.may_move(player, &step) {
            return Err(RoomError::NotLeader);
        }
        let mut out = Out::default();
        if matches!(step, GroupStep::Chosen { .. }) {
            room.deciding = None;
        }
        // One copy of the step, shared by every follower's event.
        let step = Arc::new(step);
        for p in &room.participants {
            if p.player != player {
                out.deliveries.push(Delivery {
                    player: p.player.clone(),
                    event: SharedEvent::Follow {
                        party: party.to_owned(),
                        step: Arc::clone(&step),
                    },
                });
            }
        }
        match line {
            Some(line) => {
                room.line = line;
                let id = self.next_id();
                room.open_ballot(party, id, seed, now, &mut out);
            }
            None => room.ballot = None,
        }
        self.flush(&mut out);
        Ok(out)
    }

    /// A participant leaves (closed, walked away, dropped, left the party). The others are
    /// told; the ballot loses their vote and may be decided by those who remain; a decision
    /// waiting for a leader who left goes to the new one. The last one out closes the room.
    pub fn leave(&self, party: &str, player: &str, reason: LeftReason) -> Out {
        let mut rooms = self.lock();
        let mut out = Out::default();
        let Some(room) = rooms.get_mut(party) else {
            return out;
        };
        let Some(at) = room.participants.iter().position(|p| p.player == player) else {
            return out;
        };
        let decided_by_leaver = room
            .deciding
            .as_ref()
            .is_some_and(|(_, decider)| decider == player);
        room.participants.remove(at);
        if room.participants.is_empty() {
            rooms.remove(party);
            out.emptied = true;
            return out;
        }
        if let Some(ballot) = &mut room.ballot {
            ballot.votes.retain(|(p, _)| p != player);
        }
        let roster = room.roster(None, Some((player, reason)));
        room.tell_all(&mut out, &roster, None);
        if decided_by_leaver {
            room.send_decision(&mut out);
        } else if room.deciding.is_none() {
            room.evaluate(&mut out);
        }
        self.flush(&mut out);
        out
    }

    /// The party's leadership changed on this instance: the room's leader may change with it.
    pub fn party_changed(&self, party: &str, party_leader: &str) -> Out {
        let mut rooms = self.lock();
        let mut out = Out::default();
        let Some(room) = rooms.get_mut(party) else {
            return out;
        };
        let before = room.leader().map(|p| p.player.clone());
        room.party_leader = party_leader.to_owned();
        let after = room.leader().map(|p| p.player.clone());
        if before != after {
            let roster = room.roster(None, None);
            room.tell_all(&mut out, &roster, None);
            // A pending decision stays its decider's to apply.
            if room.deciding.is_none() {
                room.evaluate(&mut out);
            }
        }
        self.flush(&mut out);
        out
    }
}

#[cfg(test)]
mod tests;
