//! Shared conversations (PROTOCOL.md section 17, issue 35): the server's whole cost of one
//! decided step of a party's shared conversation, by party size, against a solo `choose` in the
//! same run. The target: a step's cost grows with its participants, not with the world.
//!
//! Everything the server does in process, without sockets or the store, as `session/shared.rs`
//! does it: each voter's `choose` (the walk's own check on a clone, `Rooms::vote`, which runs
//! `ballot::decide`, the `voted` and the `ack`), the hub's delivery of every event to each
//! participant's control queue, the leader's `Walk::group_choose` and `Rooms::moved`, every
//! follower's `Walk::follow_chosen`, each session's analytics tally, and the JSON encoding of
//! every message each participant is sent. Left out: the ballot timer the server spawns when the
//! next line opens a ballot (one per step, whatever the party's size), the audit trail and the
//! metrics counters (`hot_paths`), and the store (each player's actions are their own steps).
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

use banter_dialogue::{DialogueGraph, Shown, VertexId, Walk};
use banter_player::PlayerStateMachine;
use banter_protocol::{DecidedBy, LeftReason, ServerMessage};
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
/// Steps timed back to back between two readings of the clock; their rooms are opened before
/// and closed after, untimed.
const BATCH: u64 = 32;
/// The world of the `among 1000 rooms` case: this many other rooms of this many participants,
/// open in the same `Rooms`, their players registered in the same hub.
const OTHER_ROOMS: usize = 999;
const OTHER_PARTY: usize = 4;

/// A line of `Wren` the group decides on, the response everyone votes for and the line it shows.
#[derive(Clone, Copy)]
struct Scenario {
    line: &'static str,
    response: &'static str,
    next: &'static str,
}

/// `Ferry_Rowing` is a `Roll` ballot: decided once every participant has voted, so every
/// participant casts a vote. Its responses lead to `Ferry_FarBar`, a line without responses.
const ROLL: Scenario = Scenario {
    line: "Ferry_Rowing",
    response: "Ferry_Rowing_r1",
    next: "Ferry_FarBar",
};

/// `Wren_Hello` is a `Majority` ballot (the conversation's default): decided by the vote that
/// makes a majority (1 of 1, 2 of 2, 3 of 4, 5 of 8), and `Ferry_Greet` opens the next ballot.
const MAJORITY: Scenario = Scenario {
    line: "Wren_Hello",
    response: "Wren_Hello_r1",
    next: "Ferry_Greet",
};

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
}

/// The instance: its rooms and its hub.
#[derive(Default)]
struct World {
    rooms: Rooms,
    hub: Hub,
}

/// A party with its room open on `scenario.line`, every member joined and registered.
struct Party {
    world: Arc<World>,
    id: String,
    members: Vec<Member>,
}

impl Party {
    fn open(fx: &Fixture, world: Arc<World>, size: usize, scenario: Scenario) -> Party {
        let id = format!("pty_{:016x}", next());
        let line = fx.vertex(scenario.line);
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

/// `SessionCore::on_shared` for one event, as `on_decide` and `on_follow` handle a decision.
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
        SharedEvent::Follow {
            step: GroupStep::Chosen { decided, node },
            ..
        } => {
            m.walk
                .follow_chosen(graph, decided.response, node, &facts)
                .unwrap();
            if let Some(line) = node {
                m.tally.jumped(graph, &m.walk, line, NOW);
            }
            m.out.push(chosen(graph, &decided, node));
        }
        other => panic!("not part of a decided step: {other:?}"),
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
                    other => panic!("not part of a decided step: {other:?}"),
                }
            }
            bytes += m.flush();
        }
        if !any {
            return bytes;
        }
    }
}

/// One decided step: participants vote in join order until the ballot is decided, then the
/// leader's walk takes the decision and every follower's follows. Returns the bytes sent.
fn shared_step(fx: &Fixture, party: &mut Party, scenario: Scenario) -> usize {
    let Party { world, id, members } = party;
    let graph = &*fx.graph;
    let facts = fx.facts();
    let mut bytes = 0;
    for voter in 0..members.len() {
        // `SessionCore::vote`, for a `choose` with an id.
        let m = &mut members[voter];
        let vertex = graph.find(scenario.response).unwrap();
        m.walk.clone().choose(graph, vertex, &facts).unwrap();
        let out = world.rooms.vote(id, &m.player, vertex).unwrap();
        m.out.push(ServerMessage::Voted {
            player: m.player.clone(),
            response: scenario.response.to_owned(),
        });
        m.tally.chose(vertex);
        let decided = deliver(&world.hub, out);
        m.out.push(ServerMessage::Ack { id: voter as u64 });
        bytes += m.flush();
        bytes += drain(fx, world, id, members);
        if decided {
            break;
        }
    }
    bytes
}

/// A solo session's `choose` (`SessionCore::on_choose`) and its `ack`.
fn solo_step(fx: &Fixture, m: &mut Member, scenario: Scenario) -> usize {
    let graph = &*fx.graph;
    let facts = fx.facts();
    let vertex = graph.find(scenario.response).unwrap();
    let shown = m.walk.choose(graph, vertex, &facts).unwrap();
    m.tally.chose(vertex);
    m.tally.stepped(graph, &m.walk, shown, NOW);
    m.out.push(ServerMessage::Ack { id: 1 });
    m.flush()
}

/// Once, untimed: the step is decided, every walk moved to the next line, and each
/// participant was sent every `voted` but its own, its `ack` if it voted, and the `chosen`.
fn check_shared(fx: &Fixture, world: Arc<World>, size: usize, scenario: Scenario) {
    let mut party = Party::open(fx, world, size, scenario);
    let next = fx.vertex(scenario.next);
    let before: Vec<bool> = party
        .members
        .iter()
        .map(|m| m.walk.is_reachable(next))
        .collect();
    assert!(before.iter().all(|r| !r), "{} not shown yet", scenario.next);
    shared_step(fx, &mut party, scenario);
    let view = party.world.rooms.view(&party.id).expect("the room is open");
    assert_eq!(view.line, next, "the room moved to {}", scenario.next);
    let voters = if scenario.line == ROLL.line {
        size
    } else {
        size / 2 + 1
    };
    for (i, m) in party.members.iter().enumerate() {
        assert!(m.walk.is_reachable(next), "{} moved", m.player);
        assert!(m.queue.try_recv().is_none(), "{} took everything", m.player);
        let count = |kind: &str| {
            m.sent
                .iter()
                .filter(|t| t.contains(&format!("\"type\":\"{kind}\"")))
                .count()
        };
        // Its own in its reply if it voted, every other voter's through the room.
        assert_eq!(count("voted"), voters, "{}", m.player);
        assert_eq!(count("ack"), usize::from(i < voters), "{}", m.player);
        assert_eq!(count("chosen"), 1, "{}: {:?}", m.player, m.sent);
        let chosen = m.sent.iter().find(|t| t.contains("\"chosen\"")).unwrap();
        assert!(chosen.contains(scenario.next), "{chosen}");
    }
    party.close();
}

fn check_solo(fx: &Fixture) {
    let mut m = Member::new(fx, "solo".to_owned(), fx.vertex(ROLL.line));
    solo_step(fx, &mut m, ROLL);
    assert!(m.walk.is_reachable(fx.vertex(ROLL.next)));
    assert_eq!(m.sent, ["{\"type\":\"ack\",\"id\":1}"]);
}

/// A world of `OTHER_ROOMS` open rooms of `OTHER_PARTY` participants each.
fn big_world(fx: &Fixture, scenario: Scenario) -> Arc<World> {
    let world = Arc::new(World::default());
    let parties: Vec<Party> = (0..OTHER_ROOMS)
        .map(|_| Party::open(fx, world.clone(), OTHER_PARTY, scenario))
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

/// Times `BATCH` steps at a time on parties opened before and closed after the clock.
fn time_shared(
    fx: &Fixture,
    iters: u64,
    size: usize,
    scenario: Scenario,
    world: Option<&Arc<World>>,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let k = left.min(BATCH);
        let mut parties: Vec<Party> = (0..k)
            .map(|_| {
                let world = world.cloned().unwrap_or_default();
                Party::open(fx, world, size, scenario)
            })
            .collect();
        let start = Instant::now();
        for party in &mut parties {
            black_box(shared_step(fx, party, scenario));
        }
        total += start.elapsed();
        for party in parties {
            party.close();
        }
        left -= k;
    }
    total
}

fn shared_steps(c: &mut Criterion) {
    let fx = Fixture::load();
    check_solo(&fx);
    for scenario in [ROLL, MAJORITY] {
        for size in [1, 2, 4, 8] {
            check_shared(&fx, Arc::default(), size, scenario);
        }
    }
    let world = big_world(&fx, ROLL);
    check_shared(&fx, world.clone(), 4, ROLL);

    let mut group = c.benchmark_group("shared_step");
    group.throughput(Throughput::Elements(1));
    group.bench_function("solo", |b| {
        let line = fx.vertex(ROLL.line);
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let k = left.min(BATCH);
                let mut members: Vec<Member> = (0..k)
                    .map(|_| Member::new(&fx, "solo".to_owned(), line))
                    .collect();
                let start = Instant::now();
                for m in &mut members {
                    black_box(solo_step(&fx, m, ROLL));
                }
                total += start.elapsed();
                left -= k;
            }
            total
        })
    });
    for size in [1usize, 2, 4, 8] {
        // Elements: participants, so criterion's throughput is participants a second.
        group.throughput(Throughput::Elements(size as u64));
        group.bench_with_input(BenchmarkId::new("shared", size), &size, |b, &size| {
            b.iter_custom(|iters| time_shared(&fx, iters, size, ROLL, None))
        });
    }
    group.throughput(Throughput::Elements(4));
    group.bench_function(BenchmarkId::new("shared", "4 among 1000 rooms"), |b| {
        b.iter_custom(|iters| time_shared(&fx, iters, 4, ROLL, Some(&world)))
    });
    for size in [1usize, 2, 4, 8] {
        group.throughput(Throughput::Elements(size as u64));
        group.bench_with_input(
            BenchmarkId::new("shared majority", size),
            &size,
            |b, &size| b.iter_custom(|iters| time_shared(&fx, iters, size, MAJORITY, None)),
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = shared_steps
}
criterion_main!(benches);
