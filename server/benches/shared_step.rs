//! Shared conversations (PROTOCOL.md section 17, issue 35): the server's cost of one step of a
//! party's shared conversation, by party size, against a solo step in the same run. A step is
//! one client message processed, with everything it causes in every participant's session. The
//! target: a step's cost grows with its participants (linearly), not with the world.
//!
//! The steps, all on the sample content's `Wren`:
//!
//! - `vote/N`: one vote that does not decide (`Ferry_Rowing`, a `Roll` ballot: decided once
//!   everyone voted), the last one before the deciding vote, so N-2 votes are in before it:
//!   the voter's walk check on a clone, `Rooms::vote` (which runs `ballot::decide`), the
//!   `voted` relayed through the hub to the N-1 others, the voter's `voted` and `ack`. A party
//!   of one has no such vote (its only vote decides, in every mode), so there is no `vote/1`.
//! - `decide/N`: the vote that decides the same ballot (N-1 votes in before it): as `vote`, then
//!   the `Decide` to the leader (`Walk::group_choose`, `Rooms::moved`), the `Follow` to each
//!   follower (`Walk::follow_chosen`), and a `chosen` for everyone, listing every vote and roll.
//! - `advance/N`: the leader's `advance` past `Ferry_FarBar` (a line without responses) to
//!   `Ferry_Check` (`Walk::advance`, `Rooms::moved`, which opens `Ferry_Check`'s ballot), and
//!   each follower's `Walk::follow_advanced`; an `advanced` for everyone and the leader's `ack`.
//! - `ballot/N`: for context, a whole `Roll` ballot where all N vote: N messages, i.e. N-1
//!   `vote`s and one `decide`.
//! - `chosen/N`: building and encoding one `chosen` of a `Roll` ballot of N (N votes, N rolls),
//!   the part of `decide/N` that each of the N participants pays once.
//! - `follow clone/N`: the copy of that decision (N votes, N rolls) `Rooms::moved` puts in each
//!   of the N-1 followers' `Follow` events, made and freed.
//! - `evaluate/N`: `ballot::decide` on that ballot with N-1 votes in (not decided), as
//!   `Rooms::vote` runs it in `vote/N`: it matches each participant against the votes.
//!
//! In each step: the hub's delivery of every event to each participant's control queue, each
//! session's analytics tally, and the JSON encoding of every message each participant is sent.
//! Left out: the sockets, the ballot timer the server spawns when a ballot with a time limit
//! opens (`advance` opens one; one per step, whatever the party's size), the audit trail and
//! the metrics counters (`hot_paths`), and the store (each player's actions are their own
//! steps). Each step is timed on a room brought to the state before it untimed.
//!
//! ```sh
//! cargo bench -p banter-server --bench shared_step
//! ```
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use banter_dialogue::{DialogueGraph, Shown, VertexId, Walk, ballot};
use banter_player::PlayerStateMachine;
use banter_protocol::{DecidedBy, LeftReason, Roll, ServerMessage, Vote};
use banter_server::analytics::ConversationTally;
use banter_server::hub::{Control, ControlQueue, Hub};
use banter_server::quests::ServerFacts;
use banter_server::rooms::{Decided, GroupStep, Opening, Out, Participant, Rooms, SharedEvent};
use banter_server::served::ContentVersion;
use banter_server::store::PlayerRecord;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// Server time of every step (`App::now`): no timer runs here.
const NOW: Duration = Duration::from_secs(1_000);
/// Every ballot's seed.
const SEED: u64 = 0x5EED_0035;
/// Steps timed back to back between two readings of the clock; their rooms are opened and
/// brought to the state before the step ahead of the clock, and closed after it.
const BATCH: u64 = 32;
/// The party sizes measured (`MAX_PARTY_SIZE` is 8).
const SIZES: [usize; 4] = [1, 2, 4, 8];
/// The world of the `among 1000 rooms` cases: this many other rooms of this many participants,
/// open in the same `Rooms`, their players registered in the same hub.
const OTHER_ROOMS: usize = 999;
const OTHER_PARTY: usize = 4;
const BIG_PARTY: usize = 4;

/// `Ferry_Rowing`: a `Roll` ballot, decided once every participant has voted. Its responses
/// lead to `Ferry_FarBar`.
const BALLOT_LINE: &str = "Ferry_Rowing";
const RESPONSE: &str = "Ferry_Rowing_r1";
const DECIDED_LINE: &str = "Ferry_FarBar";
/// `Ferry_FarBar`: a line without responses, so its walk moves on by the leader's `advance`,
/// to `Ferry_Check`, whose ballot (the conversation's `Majority`, 20 s) opens then.
const ADVANCE_LINE: &str = "Ferry_FarBar";
const ADVANCED_TO: &str = "Ferry_Check";

/// A step of the shared conversation, timed alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// The last vote before the deciding one.
    Vote,
    /// The deciding vote.
    Decide,
    /// The leader's advance.
    Advance,
    /// Every participant's vote, the last deciding: N steps.
    Ballot,
}

impl Step {
    fn line(self) -> &'static str {
        match self {
            Step::Advance => ADVANCE_LINE,
            Step::Vote | Step::Decide | Step::Ballot => BALLOT_LINE,
        }
    }

    /// How many votes are cast, untimed, before the step.
    fn votes_before(self, size: usize) -> usize {
        match self {
            Step::Vote => {
                assert!(size >= 2, "a party of one has no vote that does not decide");
                size - 2
            }
            Step::Decide => size - 1,
            Step::Advance | Step::Ballot => 0,
        }
    }
}

static NEXT: AtomicU64 = AtomicU64::new(1);

fn next() -> u64 {
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The sample content and a new player's facts (every participant's: the conditions on these
/// lines read only quests nobody accepted yet).
struct Fixture {
    library: Arc<ContentVersion>,
    graph: Arc<DialogueGraph>,
    record: PlayerRecord,
    machine: PlayerStateMachine,
}

impl Fixture {
    fn load() -> Fixture {
        let content = Path::new(env!("CARGO_MANIFEST_DIR")).join("../content");
        let library =
            Arc::new(ContentVersion::load(&content, 1).expect("the sample content loads"));
        let graph = library.conversations["Wren"].graph.clone();
        assert!(graph.shared().is_some(), "Wren is a shared conversation");
        Fixture {
            library,
            graph,
            record: PlayerRecord::default(),
            machine: PlayerStateMachine::new().0,
        }
    }

    fn facts(&self) -> ServerFacts<'_> {
        ServerFacts {
            record: &self.record,
            machine: &self.machine,
            content: &self.library.content,
            conversation: "Wren",
        }
    }

    fn vertex(&self, name: &str) -> VertexId {
        self.graph.find(name).expect("a vertex of Wren")
    }
}

/// One participant's session: its walk and tally, its control queue in the hub, what it is
/// about to send and what it sent.
struct Member {
    player: String,
    session: u64,
    walk: Walk,
    tally: ConversationTally,
    queue: Arc<ControlQueue>,
    out: Vec<ServerMessage>,
    sent: Vec<String>,
}

impl Member {
    fn new(fx: &Fixture, player: String, line: VertexId) -> Member {
        let (walk, shown) = Walk::open(&fx.graph, line, &fx.facts()).unwrap();
        assert_eq!(shown, Shown::Line(line));
        let tally = ConversationTally::opened(&fx.graph, &walk, line, NOW);
        Member {
            player,
            session: next(),
            walk,
            tally,
            queue: Arc::new(ControlQueue::default()),
            out: Vec::new(),
            sent: Vec::new(),
        }
    }

    /// The socket's writer: each message its own JSON text frame (`session/socket.rs`).
    fn flush(&mut self) -> usize {
        let mut bytes = 0;
        for message in self.out.drain(..) {
            let text = serde_json::to_string(&message).unwrap();
            bytes += text.len();
            self.sent.push(text);
        }
        bytes
    }

    /// How many of the messages it sent are of type `kind`.
    fn count(&self, kind: &str) -> usize {
        let tag = format!("\"type\":\"{kind}\"");
        self.sent.iter().filter(|t| t.contains(&tag)).count()
    }
}

/// The instance: its rooms and its hub.
#[derive(Default)]
struct World {
    rooms: Rooms,
    hub: Hub,
}

/// A party with its room open on `line`, every member joined and registered.
struct Party {
    world: Arc<World>,
    id: String,
    members: Vec<Member>,
}

impl Party {
    fn open(fx: &Fixture, world: Arc<World>, size: usize, line: &str) -> Party {
        let id = format!("pty_{:016x}", next());
        let line = fx.vertex(line);
        let members: Vec<Member> = (0..size)
            .map(|i| Member::new(fx, format!("{id}-p{i}"), line))
            .collect();
        for m in &members {
            world.hub.register(&m.player, m.session, m.queue.clone());
        }
        let participant = |m: &Member| Participant {
            player: m.player.clone(),
            session: m.session,
        };
        let opening = Opening {
            party: id.clone(),
            party_leader: members[0].player.clone(),
            npc: "wren".to_owned(),
            conversation: "Wren".to_owned(),
            library: fx.library.clone(),
            graph: fx.graph.clone(),
            opener: participant(&members[0]),
            line,
            members: members.iter().map(|m| m.player.clone()).collect(),
        };
        // Setup: the invitations and rosters are not delivered.
        world.rooms.open(opening, SEED, NOW).expect("a new room");
        for m in &members[1..] {
            world
                .rooms
                .join(&id, "wren", participant(m))
                .expect("joins");
        }
        Party { world, id, members }
    }

    /// The room in the state before `step`: the votes before it cast (as the step casts its
    /// own), and every message so far forgotten.
    fn prepare(fx: &Fixture, world: Arc<World>, size: usize, step: Step) -> Party {
        let mut party = Party::open(fx, world, size, step.line());
        for voter in 0..step.votes_before(size) {
            let (_, decided) = vote(fx, &mut party, voter);
            assert!(!decided, "a vote before the step decides nothing");
        }
        for m in &mut party.members {
            m.sent.clear();
        }
        party
    }

    /// The step itself. Returns the bytes sent.
    fn run(&mut self, fx: &Fixture, step: Step) -> usize {
        let size = self.members.len();
        match step {
            Step::Vote | Step::Decide => vote(fx, self, step.votes_before(size)).0,
            Step::Advance => advance(fx, self),
            Step::Ballot => {
                let mut bytes = 0;
                for voter in 0..size {
                    let (sent, decided) = vote(fx, self, voter);
                    bytes += sent;
                    if decided {
                        break;
                    }
                }
                bytes
            }
        }
    }

    /// Leaves the room (the last one out closes it) and the hub.
    fn close(self) {
        for m in &self.members {
            let _ = self
                .world
                .rooms
                .leave(&self.id, &m.player, LeftReason::Closed);
            self.world.hub.unregister(&m.player, m.session);
        }
    }
}

/// `session/shared.rs`'s `deliver`, without the ballot timer: every event to its player's
/// control queue. Returns whether a decision went out.
fn deliver(hub: &Hub, out: Out) -> bool {
    let mut decided = false;
    for delivery in out.deliveries {
        decided |= matches!(delivery.event, SharedEvent::Decide { .. });
        hub.notify(&delivery.player, Control::Shared(Box::new(delivery.event)));
    }
    decided
}

fn name(graph: &DialogueGraph, v: VertexId) -> String {
    graph
        .vertex(v)
        .map(|v| v.name.to_string())
        .unwrap_or_default()
}

fn shown_line(shown: Shown) -> Option<VertexId> {
    match shown {
        Shown::Line(line) => Some(line),
        Shown::AwaitJump | Shown::End => None,
    }
}

/// `session/shared.rs`'s `chosen`.
fn chosen(graph: &DialogueGraph, decided: &Decided, node: Option<VertexId>) -> ServerMessage {
    let rolled = !decided.rolls.is_empty() || decided.by == DecidedBy::TieRoll;
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

/// `SessionCore::on_shared` for one event, as `on_decide` and `on_follow` handle it.
fn on_shared(fx: &Fixture, world: &World, party: &str, m: &mut Member, event: SharedEvent) {
    let graph = &*fx.graph;
    let facts = fx.facts();
    match event {
        SharedEvent::Say(message) => m.out.push(message),
        SharedEvent::Decide { decided, .. } => {
            let shown = m
                .walk
                .group_choose(graph, decided.response, &facts)
                .unwrap();
            m.tally.stepped(graph, &m.walk, shown, NOW);
            let node = shown_line(shown);
            m.out.push(chosen(graph, &decided, node));
            let step = GroupStep::Chosen { decided, node };
            let out = world
                .rooms
                .moved(party, &m.player, step, node, SEED, NOW)
                .unwrap();
            deliver(&world.hub, out);
        }
        SharedEvent::Follow { step, .. } => {
            let (message, shown) = match &*step {
                GroupStep::Chosen { decided, node } => {
                    m.walk
                        .follow_chosen(graph, decided.response, *node, &facts)
                        .unwrap();
                    (chosen(graph, decided, *node), *node)
                }
                GroupStep::Advanced { line, node } => {
                    m.walk.follow_advanced(graph, *node, &facts).unwrap();
                    let message = ServerMessage::Advanced {
                        line: name(graph, *line),
                        node: node.map(|v| name(graph, v)),
                    };
                    (message, *node)
                }
                GroupStep::Jumped { .. } => panic!("no quest check here"),
            };
            if let Some(line) = shown {
                m.tally.jumped(graph, &m.walk, line, NOW);
            }
            m.out.push(message);
        }
        SharedEvent::Invite { .. } => panic!("not part of a step"),
    }
}

/// Every session takes what its control queue holds and sends what it caused, until no queue
/// holds anything.
fn drain(fx: &Fixture, world: &World, party: &str, members: &mut [Member]) -> usize {
    let mut bytes = 0;
    loop {
        let mut any = false;
        for m in members.iter_mut() {
            while let Some(control) = m.queue.try_recv() {
                any = true;
                match control {
                    Control::Shared(event) => on_shared(fx, world, party, m, *event),
                    other => panic!("not part of a step: {other:?}"),
                }
            }
            bytes += m.flush();
        }
        if !any {
            return bytes;
        }
    }
}

/// Member `voter`'s `choose` of `RESPONSE` (`SessionCore::vote`, with an id) and everything it
/// causes. Returns the bytes sent and whether it decided the ballot.
fn vote(fx: &Fixture, party: &mut Party, voter: usize) -> (usize, bool) {
    let Party { world, id, members } = party;
    let graph = &*fx.graph;
    let facts = fx.facts();
    let m = &mut members[voter];
    let vertex = graph.find(RESPONSE).unwrap();
    m.walk.clone().choose(graph, vertex, &facts).unwrap();
    let out = world.rooms.vote(id, &m.player, vertex).unwrap();
    m.out.push(ServerMessage::Voted {
        player: m.player.clone(),
        response: RESPONSE.to_owned(),
    });
    m.tally.chose(vertex);
    let decided = deliver(&world.hub, out);
    m.out.push(ServerMessage::Ack { id: voter as u64 });
    let mut bytes = m.flush();
    bytes += drain(fx, world, id, members);
    (bytes, decided)
}

/// The leader's `advance` past `ADVANCE_LINE` (`SessionCore::advance_shared`, with an id) and
/// everything it causes. Returns the bytes sent.
fn advance(fx: &Fixture, party: &mut Party) -> usize {
    let Party { world, id, members } = party;
    let graph = &*fx.graph;
    let facts = fx.facts();
    let m = &mut members[0];
    assert!(world.rooms.leads(id, &m.player));
    let line = graph.find(ADVANCE_LINE).unwrap();
    let shown = m.walk.advance(graph, line, &facts).unwrap();
    m.tally.stepped(graph, &m.walk, shown, NOW);
    let next = shown_line(shown);
    m.out.push(ServerMessage::Advanced {
        line: ADVANCE_LINE.to_owned(),
        node: next.map(|v| name(graph, v)),
    });
    let step = GroupStep::Advanced { line, node: next };
    let out = world
        .rooms
        .moved(id, &m.player, step, next, SEED, NOW)
        .unwrap();
    deliver(&world.hub, out);
    m.out.push(ServerMessage::Ack { id: 1 });
    let mut bytes = m.flush();
    bytes += drain(fx, world, id, members);
    bytes
}

/// A solo session's `choose` (`SessionCore::on_choose`) and its `ack`.
fn solo_choose(fx: &Fixture, m: &mut Member) -> usize {
    let graph = &*fx.graph;
    let facts = fx.facts();
    let vertex = graph.find(RESPONSE).unwrap();
    let shown = m.walk.choose(graph, vertex, &facts).unwrap();
    m.tally.chose(vertex);
    m.tally.stepped(graph, &m.walk, shown, NOW);
    m.out.push(ServerMessage::Ack { id: 1 });
    m.flush()
}

/// A solo session's `advance` (`SessionCore::on_advance`) and its `ack`.
fn solo_advance(fx: &Fixture, m: &mut Member) -> usize {
    let graph = &*fx.graph;
    let facts = fx.facts();
    let line = graph.find(ADVANCE_LINE).unwrap();
    let shown = m.walk.advance(graph, line, &facts).unwrap();
    m.tally.stepped(graph, &m.walk, shown, NOW);
    m.out.push(ServerMessage::Ack { id: 1 });
    m.flush()
}

/// The `Decided` of a `Roll` ballot of `size` that all voted for `RESPONSE` in join order, as
/// `Rooms` makes it.
fn roll_decided(fx: &Fixture, size: usize) -> Decided {
    let players: Vec<String> = (0..size)
        .map(|i| format!("pty_{:016x}-p{i}", u64::MAX - 1))
        .collect();
    Decided {
        line: fx.vertex(BALLOT_LINE),
        response: fx.vertex(RESPONSE),
        by: DecidedBy::Roll,
        votes: players
            .iter()
            .map(|p| Vote {
                player: p.clone(),
                response: RESPONSE.to_owned(),
            })
            .collect(),
        seed: SEED,
        rolls: players
            .iter()
            .enumerate()
            .map(|(k, p)| Roll {
                player: p.clone(),
                roll: ballot::roll(SEED, k as u64),
            })
            .collect(),
    }
}

/// `Room::evaluate`'s call of `ballot::decide` on a `Roll` ballot of `size` participants with
/// all but the last one's votes in: not decided.
fn evaluate(fx: &Fixture, names: &[String], votes: &[(String, VertexId)]) -> bool {
    let rule = fx.graph.choice_rule(fx.vertex(BALLOT_LINE)).unwrap();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let votes: Vec<(&str, VertexId)> = votes.iter().map(|(p, r)| (p.as_str(), *r)).collect();
    ballot::decide(&fx.graph, &rule, &names, names[0], &votes, false, SEED).is_some()
}

/// One participant's `chosen` of a `Roll` ballot of `size`: built and encoded.
fn encode_chosen(fx: &Fixture, decided: &Decided) -> usize {
    let node = Some(fx.vertex(DECIDED_LINE));
    serde_json::to_string(&chosen(&fx.graph, decided, node))
        .unwrap()
        .len()
}

/// Once, untimed: the step does what the server's does. Each participant was sent what
/// PROTOCOL.md section 17 says, every walk and the room are where they should be. Prints the
/// messages and bytes of the step; returns the bytes of one `chosen`, if any was sent.
fn check(fx: &Fixture, world: Arc<World>, size: usize, step: Step) -> Option<usize> {
    let mut party = Party::prepare(fx, world, size, step);
    let rooms = &party.world.rooms;
    let id = party.id.clone();
    let before = rooms.view(&id).expect("the room is open");
    assert_eq!(before.line, fx.vertex(step.line()));
    assert_eq!(before.shared.votes.len(), step.votes_before(size));
    let bytes = party.run(fx, step);
    let rooms = &party.world.rooms;
    let view = rooms.view(&id).expect("the room is open");
    let voter = step.votes_before(size);
    let mut chosen_bytes = None;
    for (i, m) in party.members.iter().enumerate() {
        assert!(m.queue.try_recv().is_none(), "{} took everything", m.player);
        let leader = i == 0;
        match step {
            Step::Vote => {
                // Not decided: the room holds one vote more, nobody moved.
                assert_eq!(view.line, fx.vertex(BALLOT_LINE));
                assert_eq!(view.shared.votes.len(), voter + 1);
                assert!(!m.walk.is_reachable(fx.vertex(DECIDED_LINE)));
                assert_eq!(m.count("voted"), 1, "{}: {:?}", m.player, m.sent);
                assert_eq!(m.count("ack"), usize::from(i == voter), "{}", m.player);
                assert_eq!(m.sent.len(), 1 + usize::from(i == voter), "{}", m.player);
            }
            Step::Decide | Step::Ballot => {
                let voters = if step == Step::Ballot { size } else { 1 };
                assert_eq!(view.line, fx.vertex(DECIDED_LINE));
                assert!(m.walk.is_reachable(fx.vertex(DECIDED_LINE)), "{}", m.player);
                assert_eq!(m.count("voted"), voters, "{}: {:?}", m.player, m.sent);
                let acks = if step == Step::Ballot {
                    1
                } else {
                    usize::from(i == voter)
                };
                assert_eq!(m.count("ack"), acks, "{}", m.player);
                assert_eq!(m.count("chosen"), 1, "{}: {:?}", m.player, m.sent);
                assert_eq!(m.sent.len(), voters + acks + 1, "{}", m.player);
                let chosen = m.sent.iter().find(|t| t.contains("\"chosen\"")).unwrap();
                assert!(chosen.contains(DECIDED_LINE), "{chosen}");
                assert_eq!(chosen.matches("\"roll\":").count(), size, "{chosen}");
                chosen_bytes = Some(chosen.len());
            }
            Step::Advance => {
                // Moved; `Ferry_Check`'s ballot is open, with its time limit.
                assert_eq!(view.line, fx.vertex(ADVANCED_TO));
                assert!(rooms.deadline(&id).is_some(), "a ballot with a time limit");
                assert!(m.walk.is_reachable(fx.vertex(ADVANCED_TO)), "{}", m.player);
                assert_eq!(m.count("advanced"), 1, "{}: {:?}", m.player, m.sent);
                assert_eq!(m.count("ack"), usize::from(leader), "{}", m.player);
                assert_eq!(m.sent.len(), 1 + usize::from(leader), "{}", m.player);
            }
        }
    }
    let messages: usize = party.members.iter().map(|m| m.sent.len()).sum();
    let sent: usize = party
        .members
        .iter()
        .flat_map(|m| &m.sent)
        .map(String::len)
        .sum();
    assert_eq!(sent, bytes);
    let chosen = chosen_bytes.map_or_else(String::new, |b| format!(" (a `chosen`: {b})"));
    println!("{step:?}, {size} participant(s): {messages} messages sent, {bytes} bytes{chosen}");
    party.close();
    chosen_bytes
}

fn check_solo(fx: &Fixture) {
    let mut m = Member::new(fx, "solo".to_owned(), fx.vertex(BALLOT_LINE));
    solo_choose(fx, &mut m);
    assert!(m.walk.is_reachable(fx.vertex(DECIDED_LINE)));
    assert_eq!(m.sent, ["{\"type\":\"ack\",\"id\":1}"]);
    let mut m = Member::new(fx, "solo".to_owned(), fx.vertex(ADVANCE_LINE));
    solo_advance(fx, &mut m);
    assert!(m.walk.is_reachable(fx.vertex(ADVANCED_TO)));
    assert_eq!(m.sent, ["{\"type\":\"ack\",\"id\":1}"]);
}

/// A world of `OTHER_ROOMS` open rooms of `OTHER_PARTY` participants each.
fn big_world(fx: &Fixture) -> Arc<World> {
    let world = Arc::new(World::default());
    let parties: Vec<Party> = (0..OTHER_ROOMS)
        .map(|_| Party::open(fx, world.clone(), OTHER_PARTY, BALLOT_LINE))
        .collect();
    for party in &parties {
        assert!(world.rooms.generation(&party.id).is_some(), "open");
        for m in &party.members {
            assert_eq!(world.hub.current(&m.player), Some(m.session), "registered");
        }
    }
    // Their sessions live on elsewhere in the process; only the rooms and the hub matter here.
    drop(parties);
    world
}

/// Times `BATCH` steps at a time on rooms brought to the state before the step ahead of the
/// clock and closed after it.
fn time_step(
    fx: &Fixture,
    iters: u64,
    size: usize,
    step: Step,
    world: Option<&Arc<World>>,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let k = left.min(BATCH);
        let mut parties: Vec<Party> = (0..k)
            .map(|_| {
                let world = world.cloned().unwrap_or_default();
                Party::prepare(fx, world, size, step)
            })
            .collect();
        let start = Instant::now();
        for party in &mut parties {
            black_box(party.run(fx, step));
        }
        total += start.elapsed();
        for party in parties {
            party.close();
        }
        left -= k;
    }
    total
}

/// Times `BATCH` solo steps at a time on walks opened ahead of the clock.
fn time_solo(
    fx: &Fixture,
    iters: u64,
    line: &str,
    step: fn(&Fixture, &mut Member) -> usize,
) -> Duration {
    let line = fx.vertex(line);
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let k = left.min(BATCH);
        let mut members: Vec<Member> = (0..k)
            .map(|_| Member::new(fx, "solo".to_owned(), line))
            .collect();
        let start = Instant::now();
        for m in &mut members {
            black_box(step(fx, m));
        }
        total += start.elapsed();
        left -= k;
    }
    total
}

fn shared_steps(c: &mut Criterion) {
    let fx = Fixture::load();
    check_solo(&fx);
    let world = big_world(&fx);
    for step in [Step::Vote, Step::Decide, Step::Advance, Step::Ballot] {
        for size in SIZES {
            if step == Step::Vote && size == 1 {
                continue;
            }
            let chosen = check(&fx, Arc::default(), size, step);
            if step == Step::Decide {
                // `chosen/N` below encodes the same message (the same lengths of names).
                let decided = roll_decided(&fx, size);
                assert_eq!(Some(encode_chosen(&fx, &decided)), chosen, "chosen/{size}");
            }
        }
        if step != Step::Ballot {
            check(&fx, world.clone(), BIG_PARTY, step);
        }
    }

    let mut group = c.benchmark_group("shared_step");
    group.throughput(Throughput::Elements(1));
    group.bench_function("solo/choose", |b| {
        b.iter_custom(|iters| time_solo(&fx, iters, BALLOT_LINE, solo_choose))
    });
    group.bench_function("solo/advance", |b| {
        b.iter_custom(|iters| time_solo(&fx, iters, ADVANCE_LINE, solo_advance))
    });
    for (label, step) in [
        ("vote", Step::Vote),
        ("decide", Step::Decide),
        ("advance", Step::Advance),
    ] {
        for size in SIZES {
            if step == Step::Vote && size == 1 {
                continue;
            }
            // Elements: participants, so criterion's throughput is participants a second.
            group.throughput(Throughput::Elements(size as u64));
            group.bench_with_input(BenchmarkId::new(label, size), &size, |b, &size| {
                b.iter_custom(|iters| time_step(&fx, iters, size, step, None))
            });
        }
        group.throughput(Throughput::Elements(BIG_PARTY as u64));
        let id = BenchmarkId::new(label, format!("{BIG_PARTY} among 1000 rooms"));
        group.bench_function(id, |b| {
            b.iter_custom(|iters| time_step(&fx, iters, BIG_PARTY, step, Some(&world)))
        });
    }
    for size in SIZES {
        group.throughput(Throughput::Elements(size as u64));
        group.bench_with_input(BenchmarkId::new("ballot", size), &size, |b, &size| {
            b.iter_custom(|iters| time_step(&fx, iters, size, Step::Ballot, None))
        });
    }
    for size in SIZES {
        let names: Vec<String> = roll_decided(&fx, size)
            .votes
            .into_iter()
            .map(|v| v.player)
            .collect();
        let votes: Vec<(String, VertexId)> = names[..size - 1]
            .iter()
            .map(|p| (p.clone(), fx.vertex(RESPONSE)))
            .collect();
        assert!(!evaluate(&fx, &names, &votes), "not decided");
        group.throughput(Throughput::Elements(1));
        group.bench_with_input(BenchmarkId::new("evaluate", size), &size, |b, _| {
            b.iter(|| evaluate(&fx, black_box(&names), black_box(&votes)))
        });
    }
    for size in SIZES {
        let decided = roll_decided(&fx, size);
        group.throughput(Throughput::Elements(1));
        group.bench_with_input(BenchmarkId::new("chosen", size), &decided, |b, decided| {
            b.iter(|| encode_chosen(&fx, black_box(decided)))
        });
        let step = GroupStep::Chosen {
            decided,
            node: Some(fx.vertex(DECIDED_LINE)),
        };
        let id = BenchmarkId::new("follow clone", size);
        group.bench_with_input(id, &step, |b, step| b.iter(|| black_box(step).clone()));
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = shared_steps
}
criterion_main!(benches);
