//! Model-based property tests of the walk, over generated graphs and the sample content.
//!
//! - An honest client following the client rules is never rejected.
//! - Forged messages (unknown vertices, responses never shown, lines not yet shown, altered
//!   payloads, actions replayed past their arming, actions of another conversation) are always
//!   rejected and change nothing.
//! - Over any message sequence, the executions of each authored action never exceed its armings.
//! - The client walk and the server's walk give the same answer to every input, honest or not:
//!   a client refuses exactly what the server would refuse, with the same code.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use banter_dialogue::content::Content;
use banter_dialogue::{
    ActionIndex, ClientWalk, Counter, DialogueGraph, Facts, Outgoing, QuestStatus, Screen, Shown,
    VertexId, VertexKind, Walk, WalkError, build_conversation,
};
use banter_protocol::Action;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const CASES: u32 = 10_000;

/// Facts drawn per case; fixed for the whole conversation.
#[derive(Clone, Debug)]
struct World {
    coins: i64,
    night: bool,
    q0: QuestStatus,
}

impl Facts for World {
    fn quest_status(&self, quest: &str) -> QuestStatus {
        if quest == "Q0" {
            self.q0
        } else {
            QuestStatus::Available
        }
    }
    fn objective_progress(&self, _: &str, _: &str) -> u32 {
        0
    }
    fn has(&self, name: &str) -> bool {
        name == "Night" && self.night
    }
    fn counter(&self, c: Counter) -> i64 {
        if c == Counter::Coins { self.coins } else { 0 }
    }
}

fn world() -> impl Strategy<Value = World> {
    (
        0i64..200,
        any::<bool>(),
        prop::sample::select(QuestStatus::ALL.to_vec()),
    )
        .prop_map(|(coins, night, q0)| World { coins, night, q0 })
}

const CONDITIONS: [&str; 5] = [
    "coins >= 100",
    "has(Night)",
    "quest(Q0) == active",
    "!has(Night) || coins < 50",
    "true",
];

fn action_json(kind: u8, n: usize) -> String {
    let target = |i: usize| format!("N{}", i % n);
    match kind % 5 {
        0 => r#"{"Type":"AcceptQuest","QuestId":"Q0"}"#.to_owned(),
        1 => r#"{"Type":"CompleteQuest","QuestId":"Q0"}"#.to_owned(),
        2 => format!(
            r#"{{"Type":"CheckQuest","QuestId":"Q0","SuccessNode":"{}","FailureNode":"{}"}}"#,
            target(kind as usize),
            target(kind as usize + 1)
        ),
        3 => r#"{"Type":"AdvanceObjective","QuestId":"Q|0","ObjectiveId":"O","Amount":2,"Island":"Reef"}"#
            .to_owned(),
        _ => r#"{"Type":"OpenShop","Shop":"Rods"}"#.to_owned(),
    }
}

/// A generated response: its target, its actions, its condition, whether it is once-only.
type GenResponse = (Option<usize>, Vec<u8>, Option<usize>, bool);

/// A raw description of a generated conversation, turned into canonical JSON.
#[derive(Clone, Debug)]
struct GenNode {
    exit: u8,
    targets: Vec<usize>,
    responses: Vec<GenResponse>,
    actions: Vec<u8>,
    condition: Option<usize>,
    /// `"Once": true` (docs/CONTENT.md "Once"): a spent line is passed over, a spent response
    /// hidden, and neither arms again.
    once: bool,
}

fn gen_node() -> impl Strategy<Value = GenNode> {
    (
        0u8..4,
        prop::collection::vec(0usize..64, 1..4),
        prop::collection::vec(
            (
                prop::option::of(0usize..64),
                prop::collection::vec(any::<u8>(), 0..2),
                prop::option::weighted(0.3, 0usize..CONDITIONS.len()),
                prop::bool::weighted(0.2),
            ),
            1..4,
        ),
        prop::collection::vec(any::<u8>(), 0..2),
        prop::option::weighted(0.2, 0usize..CONDITIONS.len()),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(exit, targets, responses, actions, condition, once)| GenNode {
                exit,
                targets,
                responses,
                actions,
                condition,
                once,
            },
        )
}

fn to_json(nodes: &[GenNode]) -> String {
    let n = nodes.len();
    let name = |i: usize| format!("\"N{}\"", i % n);
    let actions = |kinds: &[u8]| {
        let list: Vec<String> = kinds.iter().map(|&k| action_json(k, n)).collect();
        format!("[{}]", list.join(","))
    };
    let mut parts = vec![r#""FirstNode":"N0","Speaker":"Gen""#.to_owned()];
    for (i, node) in nodes.iter().enumerate() {
        let mut fields = vec![format!("\"Text\":\"line {i}\"")];
        if !node.actions.is_empty() {
            fields.push(format!("\"Actions\":{}", actions(&node.actions)));
        }
        // The entry keeps no condition so every case opens.
        if let Some(c) = node.condition.filter(|_| i != 0) {
            fields.push(format!("\"Conditions\":\"{}\"", CONDITIONS[c]));
        }
        if node.once {
            fields.push("\"Once\":true".to_owned());
        }
        match node.exit {
            0 => {}
            1 => fields.push("\"Close\":true".to_owned()),
            2 if node.targets.len() == 1 => {
                fields.push(format!("\"NextNode\":{}", name(node.targets[0])))
            }
            2 => {
                let list: Vec<String> = node.targets.iter().map(|&t| name(t)).collect();
                fields.push(format!("\"NextNode\":[{}]", list.join(",")));
            }
            _ => {
                let responses: Vec<String> = node
                    .responses
                    .iter()
                    .enumerate()
                    .map(|(j, (next, acts, cond, once))| {
                        let mut r = vec![format!("\"Text\":\"answer {j}\"")];
                        if let Some(t) = next {
                            r.push(format!("\"NextNode\":{}", name(*t)));
                        }
                        if !acts.is_empty() {
                            r.push(format!("\"Actions\":{}", actions(acts)));
                        }
                        if let Some(c) = cond {
                            r.push(format!("\"Conditions\":\"{}\"", CONDITIONS[*c]));
                        }
                        if *once {
                            r.push("\"Once\":true".to_owned());
                        }
                        format!("{{{}}}", r.join(","))
                    })
                    .collect();
                fields.push(format!("\"Responses\":[{}]", responses.join(",")));
            }
        }
        parts.push(format!("\"N{i}\":{{{}}}", fields.join(",")));
    }
    format!("{{{}}}", parts.join(","))
}

fn generated_graph() -> impl Strategy<Value = Arc<DialogueGraph>> {
    prop::collection::vec(gen_node(), 1..10).prop_map(|nodes| {
        let (graph, diagnostics) = build_conversation("Generated", &to_json(&nodes));
        assert!(
            diagnostics.iter().all(|d| !d.is_error()),
            "generator made bad content: {diagnostics:?}"
        );
        Arc::new(graph)
    })
}

/// The sample game's conversations, when the content folder is there.
fn sample_graphs() -> Vec<Arc<DialogueGraph>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../content");
    let (content, _) = Content::load(&root);
    content.conversations.values().cloned().collect()
}

fn any_graph() -> BoxedStrategy<Arc<DialogueGraph>> {
    let samples = sample_graphs();
    if samples.is_empty() {
        generated_graph().boxed()
    } else {
        prop_oneof![
            3 => generated_graph(),
            1 => prop::sample::select(samples),
        ]
        .boxed()
    }
}

/// A random entry line (the resolver may open on any node).
fn entry(graph: &DialogueGraph, pick: usize) -> VertexId {
    let prompts: Vec<VertexId> = graph
        .vertices()
        .filter(|(_, v)| v.kind == VertexKind::Prompt)
        .map(|(id, _)| id)
        .collect();
    prompts[pick % prompts.len()]
}

/// The CheckQuest targets the server may jump to from an armed check.
fn check_targets(graph: &DialogueGraph, index: ActionIndex) -> Vec<VertexId> {
    match graph.action(index).map(|a| &a.action) {
        Some(Action::CheckQuest {
            success_node,
            failure_node,
            ..
        }) => [success_node, failure_node]
            .into_iter()
            .filter_map(|n| graph.find(n))
            .collect(),
        _ => Vec::new(),
    }
}

/// Plays an honest client against a server walk; returns the first rejection, if any.
fn play_honest(
    graph: &DialogueGraph,
    facts: &World,
    start: usize,
    picks: &[usize],
) -> Result<(), String> {
    let first = entry(graph, start);
    let mut out = Vec::new();
    let mut client = ClientWalk::open(graph, first, facts, &mut out).map_err(|e| e.to_string())?;
    let (mut server, _) = Walk::open(graph, first, facts).map_err(|e| e.to_string())?;
    let mut pending_jump: Vec<VertexId> = Vec::new();
    for &pick in picks {
        // Deliver what the client sent, in order, to the server.
        for message in out.drain(..) {
            let result = match message {
                Outgoing::Advance(v) => server.advance(graph, v, facts).map(|_| ()),
                Outgoing::Choose(r) => server.choose(graph, r, facts).map(|_| ()),
                Outgoing::Action(i) => {
                    let a = graph.action(i).ok_or("unknown action")?;
                    server
                        .take_action(graph, a.action_type, &a.payload)
                        .map(|ran| {
                            pending_jump.extend(check_targets(graph, ran));
                        })
                }
                Outgoing::Close => {
                    server.close();
                    Ok(())
                }
            };
            result.map_err(|e| format!("honest {message:?} rejected: {e}"))?;
        }
        if !pending_jump.is_empty() {
            let target = pending_jump[pick % pending_jump.len()];
            pending_jump.clear();
            server
                .jump_to(graph, target, facts)
                .map_err(|e| e.to_string())?;
            client
                .jump(graph, target, facts, &mut out)
                .map_err(|e| e.to_string())?;
            continue;
        }
        match client.screen() {
            Screen::Ended | Screen::Waiting => break,
            Screen::Line(_) => {
                let choices: Vec<VertexId> = client.choices(graph, facts).collect();
                if !choices.is_empty() {
                    client
                        .choose(graph, choices[pick % choices.len()], facts, &mut out)
                        .map_err(|e| e.to_string())?;
                } else if client.can_advance(graph, facts) {
                    client
                        .advance_current(graph, facts, &mut out)
                        .map_err(|e| e.to_string())?;
                } else {
                    break; // a line awaiting a jump whose check target is dangling
                }
            }
        }
    }
    Ok(())
}

/// Checks `property` on `CASES` random walks, each a graph, a world, an entry pick and the
/// `steps` drawn by `step`; `what` names the property when it fails.
fn check_walks<S>(
    what: &str,
    step: S,
    steps: std::ops::Range<usize>,
    property: impl Fn((Arc<DialogueGraph>, World, usize, Vec<S::Value>)) -> Result<(), TestCaseError>,
) where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    let mut runner = TestRunner::new(Config::with_cases(CASES));
    let strategy = (
        any_graph(),
        world(),
        any::<usize>(),
        prop::collection::vec(step, steps),
    );
    runner.run(&strategy, property).expect(what);
}

#[test]
fn an_honest_client_is_never_rejected() {
    check_walks(
        "honest play",
        any::<usize>(),
        1..40,
        |(graph, facts, start, picks)| {
            play_honest(&graph, &facts, start, &picks).map_err(TestCaseError::fail)
        },
    );
}

/// A message an attacker might send, drawn without regard to what was shown.
#[derive(Clone, Debug)]
enum Message {
    Advance(u32),
    Choose(u32),
    /// An authored action of this graph, by index.
    Action(u32),
    /// An authored action with its payload altered.
    Altered(u32),
    /// An action authored in another conversation.
    Foreign(u8),
    Jump(u32),
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (0u32..80).prop_map(Message::Advance),
        (0u32..80).prop_map(Message::Choose),
        (0u32..40).prop_map(Message::Action),
        (0u32..40).prop_map(Message::Altered),
        any::<u8>().prop_map(Message::Foreign),
        (0u32..80).prop_map(Message::Jump),
    ]
}

/// Actions that exist only in the "other" conversation.
const FOREIGN: [(banter_protocol::ActionType, &str); 3] = [
    (banter_protocol::ActionType::CompleteQuest, "Elsewhere"),
    (banter_protocol::ActionType::AcceptQuest, "Q9"),
    (banter_protocol::ActionType::OpenShop, "Bait"),
];

#[test]
fn forged_messages_are_rejected_and_executions_never_exceed_armings() {
    check_walks(
        "forged play",
        message(),
        1..60,
        |(graph, facts, start, messages)| {
            let g = &*graph;
            let (mut walk, _) = Walk::open(g, entry(g, start), &facts).expect("opens");
            let mut armings: HashMap<ActionIndex, u32> = HashMap::new();
            let mut runs: HashMap<ActionIndex, u32> = HashMap::new();
            // The model: uncapped arming events, and the capped counters the spec describes.
            let mut model: HashMap<ActionIndex, u8> = HashMap::new();
            let arm = |v: VertexId,
                       armings: &mut HashMap<ActionIndex, u32>,
                       model: &mut HashMap<ActionIndex, u8>| {
                for (i, _) in g.actions(v) {
                    *armings.entry(i).or_default() += 1;
                    let slot = model.entry(i).or_default();
                    *slot = (*slot + 1).min(banter_dialogue::ARM_CAP);
                }
            };
            arm(entry(g, start), &mut armings, &mut model);
            let total_actions = g.all_actions().len() as u32;
            for message in messages {
                let before = walk.clone();
                match message {
                    Message::Advance(v) => {
                        let v = VertexId(v);
                        let legit = walk.is_reachable(v)
                            && g.vertex(v).is_some_and(|x| x.kind == VertexKind::Prompt);
                        match walk.advance(g, v, &facts) {
                            Ok(Shown::Line(m)) => {
                                prop_assert!(legit, "advance from a line never shown: {v:?}");
                                arm(m, &mut armings, &mut model);
                            }
                            Ok(_) => prop_assert!(legit),
                            Err(_) => prop_assert_eq!(&walk, &before),
                        }
                    }
                    Message::Choose(r) => {
                        let r = VertexId(r);
                        let legit = walk.is_reachable(r)
                            && g.vertex(r).is_some_and(|x| x.kind == VertexKind::Response);
                        match walk.choose(g, r, &facts) {
                            Ok(shown) => {
                                prop_assert!(legit, "chose a response never shown: {r:?}");
                                arm(r, &mut armings, &mut model);
                                if let Shown::Line(m) = shown {
                                    arm(m, &mut armings, &mut model);
                                }
                            }
                            Err(_) => prop_assert_eq!(&walk, &before),
                        }
                    }
                    Message::Action(i) | Message::Altered(i) if total_actions > 0 => {
                        let index = ActionIndex(i % total_actions);
                        let authored = g.action(index).expect("in range");
                        let payload = match message {
                            Message::Altered(_) => format!("{}x", authored.payload),
                            _ => authored.payload.to_string(),
                        };
                        match walk.take_action(g, authored.action_type, &payload) {
                            Ok(ran) => {
                                prop_assert!(matches!(message, Message::Action(_)));
                                *runs.entry(ran).or_default() += 1;
                                let slot = model.entry(ran).or_default();
                                prop_assert!(*slot > 0, "ran {ran:?} with no arming left");
                                *slot -= 1;
                                // Same type and payload may be authored twice; the walk runs
                                // one of them, which must be an exact twin.
                                let twin = g.action(ran).expect("ran exists");
                                prop_assert_eq!(&twin.payload, &authored.payload);
                            }
                            Err(e) => {
                                prop_assert!(matches!(
                                    e,
                                    WalkError::NotArmed | WalkError::PayloadMismatch
                                ));
                                prop_assert_eq!(&walk, &before);
                            }
                        }
                    }
                    Message::Action(_) | Message::Altered(_) => {}
                    Message::Foreign(k) => {
                        let (t, p) = FOREIGN[k as usize % FOREIGN.len()];
                        prop_assert!(walk.take_action(g, t, p).is_err());
                        prop_assert_eq!(&walk, &before);
                    }
                    Message::Jump(t) => {
                        // The server's own decision; only a line is a valid target.
                        let t = VertexId(t);
                        match walk.jump_to(g, t, &facts) {
                            Ok(_) => arm(t, &mut armings, &mut model),
                            Err(_) => prop_assert_eq!(&walk, &before),
                        }
                    }
                }
                for (index, &ran) in &runs {
                    let armed = armings.get(index).copied().unwrap_or(0);
                    prop_assert!(ran <= armed, "{index:?} ran {ran} times, armed {armed}");
                }
                for i in (0..total_actions).map(ActionIndex) {
                    let modelled = model.get(&i).copied().unwrap_or(0);
                    prop_assert_eq!(walk.armed(i), modelled, "counter of {:?}", i);
                }
            }
            Ok(())
        },
    );
}

/// Inputs a player (or a buggy client) gives, named without regard to what is on screen.
#[derive(Clone, Debug)]
enum Input {
    Advance(u32),
    Choose(u32),
    /// The server's answer to a pending quest check: one of its two targets.
    Jump(bool),
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        (0u32..80).prop_map(Input::Advance),
        (0u32..80).prop_map(Input::Choose),
        any::<bool>().prop_map(Input::Jump),
    ]
}

/// The client walk answers every input as the server's walk answers the message it sends: the
/// same refusal code, or acceptance with the same walk after it (the client's sends replayed on
/// the server, in order, are all accepted).
#[test]
fn the_client_walk_and_the_server_answer_every_input_alike() {
    check_walks(
        "client and server agree",
        input(),
        1..60,
        |(graph, facts, start, inputs)| {
            let g = &*graph;
            let first = entry(g, start);
            let mut out = Vec::new();
            let mut client = ClientWalk::open(g, first, &facts, &mut out).expect("opens");
            let (mut server, _) = Walk::open(g, first, &facts).expect("opens");
            let mut pending: Vec<VertexId> = Vec::new();
            let deliver = |server: &mut Walk,
                           pending: &mut Vec<VertexId>,
                           out: &mut Vec<Outgoing>|
             -> Result<(), TestCaseError> {
                for message in out.drain(..) {
                    let result = match message {
                        Outgoing::Advance(v) => server.advance(g, v, &facts).map(|_| ()),
                        Outgoing::Choose(r) => server.choose(g, r, &facts).map(|_| ()),
                        Outgoing::Action(i) => {
                            let a = g.action(i).expect("an authored action");
                            server
                                .take_action(g, a.action_type, &a.payload)
                                .map(|ran| pending.extend(check_targets(g, ran)))
                        }
                        Outgoing::Close => {
                            server.close();
                            Ok(())
                        }
                    };
                    prop_assert!(result.is_ok(), "the server refused {message:?}: {result:?}");
                }
                Ok(())
            };
            deliver(&mut server, &mut pending, &mut out)?;
            for input in inputs {
                match input {
                    Input::Advance(v) => {
                        let v = VertexId(v);
                        let mut alone = server.clone();
                        let expected = alone.advance(g, v, &facts).map(|_| ());
                        let got = client.advance(g, v, &facts, &mut out);
                        prop_assert_eq!(got, expected, "advance {:?}", v);
                    }
                    Input::Choose(r) => {
                        let r = VertexId(r);
                        let mut alone = server.clone();
                        let expected = alone.choose(g, r, &facts).map(|_| ());
                        let got = client.choose(g, r, &facts, &mut out);
                        prop_assert_eq!(got, expected, "choose {:?}", r);
                    }
                    Input::Jump(success) => {
                        if pending.len() != 2 {
                            pending.clear();
                            continue;
                        }
                        let target = pending[usize::from(!success)];
                        pending.clear();
                        let expected = server.jump_to(g, target, &facts).map(|_| ());
                        let got = client.jump(g, target, &facts, &mut out);
                        prop_assert_eq!(got, expected, "jump {:?}", target);
                    }
                }
                deliver(&mut server, &mut pending, &mut out)?;
                // The armings differ by design (the client sends actions, the server spends
                // them); what is shown, awaited and closed may not.
                let mirror = client.walk();
                prop_assert_eq!(mirror.reachable(), server.reachable(), "R drifted apart");
                prop_assert_eq!(mirror.awaits_jump(), server.awaits_jump());
                prop_assert_eq!(mirror.is_closed(), server.is_closed());
            }
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Shared conversations (PROTOCOL.md section 17): the leader's walk decides, every participant's
// walk follows with its own facts.

/// The model's counters after an arming of every action authored on `v`, capped.
fn model_arm(g: &DialogueGraph, v: VertexId, model: &mut HashMap<ActionIndex, u8>) {
    for (i, _) in g.actions(v) {
        let slot = model.entry(i).or_default();
        *slot = (*slot + 1).min(banter_dialogue::ARM_CAP);
    }
}

/// A once response this walk already counted: no longer a choice, and it arms nothing.
fn spent(g: &DialogueGraph, walk: &Walk, r: VertexId) -> bool {
    g.vertex(r).is_some_and(|v| v.once)
        && walk.counted().iter().any(|c| c.vertex == r && c.count > 0)
}

/// `walk`'s counters are the model's, and every action armed on a response was armed on a
/// response the player was shown.
fn armings_match(
    g: &DialogueGraph,
    walk: &Walk,
    model: &HashMap<ActionIndex, u8>,
) -> Result<(), TestCaseError> {
    for (i, authored) in g.all_actions().iter().enumerate() {
        let index = ActionIndex(i as u32);
        let modelled = model.get(&index).copied().unwrap_or(0);
        prop_assert_eq!(walk.armed(index), modelled, "counter of {:?}", index);
        let on_response = g
            .vertex(authored.vertex)
            .is_some_and(|v| v.kind == VertexKind::Response);
        if on_response && walk.armed(index) > 0 {
            prop_assert!(
                walk.is_reachable(authored.vertex),
                "{:?} armed on a response never shown",
                index
            );
        }
    }
    Ok(())
}

/// A group's step, drawn without regard to what is on screen.
#[derive(Clone, Debug)]
enum GroupInput {
    /// The ballot on the line on screen is won by its response `pick` (modulo their number),
    /// whoever was shown it.
    Decide(usize),
    /// The leader advances past the line on screen.
    Advance,
    /// The server's answer to the pending quest check.
    Jump(bool),
}

fn group_input() -> impl Strategy<Value = GroupInput> {
    prop_oneof![
        3 => any::<usize>().prop_map(GroupInput::Decide),
        1 => Just(GroupInput::Advance),
        1 => any::<bool>().prop_map(GroupInput::Jump),
    ]
}

/// The quest-check targets authored on `v`.
fn checks_on(g: &DialogueGraph, v: VertexId) -> Vec<VertexId> {
    g.actions(v)
        .flat_map(|(i, _)| check_targets(g, i))
        .collect()
}

/// A leader and a follower with their own facts walk the same conversation: the leader's walk
/// applies every decision (a response either of them may not have been shown), the follower's
/// follows it and is never refused, and arms a response's actions only if it was shown that
/// response and it holds for it: its counters are the model's after every step.
#[test]
fn a_followers_walk_follows_every_group_step_and_arms_only_what_it_was_shown() {
    let mut runner = TestRunner::new(Config::with_cases(CASES));
    let strategy = (
        any_graph(),
        world(),
        world(),
        any::<usize>(),
        prop::collection::vec(group_input(), 1..40),
    );
    runner
        .run(
            &strategy,
            |(graph, lead_facts, own_facts, start, inputs)| {
                let g = &*graph;
                let first = entry(g, start);
                let (mut leader, _) = Walk::open(g, first, &lead_facts).expect("opens");
                let (mut follower, _) = Walk::open(g, first, &own_facts).expect("opens");
                let mut model: HashMap<ActionIndex, u8> = HashMap::new();
                model_arm(g, first, &mut model);
                let mut line = Some(first);
                let mut pending: Vec<VertexId> = checks_on(g, first);
                for input in inputs {
                    match input {
                        GroupInput::Decide(pick) => {
                            let Some(on) = line.filter(|_| !leader.awaits_jump()) else {
                                continue;
                            };
                            let responses: Vec<VertexId> = g
                                .outputs(on)
                                .iter()
                                .copied()
                                .filter(|&r| {
                                    g.vertex(r).is_some_and(|v| v.kind == VertexKind::Response)
                                })
                                .collect();
                            if responses.is_empty() {
                                continue;
                            }
                            let r = responses[pick % responses.len()];
                            let shown = leader.group_choose(g, r, &lead_facts).map_err(|e| {
                                TestCaseError::fail(format!("leader refused {r:?}: {e}"))
                            })?;
                            let node = match shown {
                                Shown::Line(n) => Some(n),
                                Shown::AwaitJump | Shown::End => None,
                            };
                            let mine = follower.is_reachable(r)
                                && !spent(g, &follower, r)
                                && g.condition(r).is_none_or(|c| c.eval(&own_facts));
                            follower
                                .follow_chosen(g, r, node, &own_facts)
                                .map_err(|e| {
                                    TestCaseError::fail(format!("follower refused {r:?}: {e}"))
                                })?;
                            if mine {
                                model_arm(g, r, &mut model);
                            }
                            match shown {
                                Shown::Line(n) => {
                                    model_arm(g, n, &mut model);
                                    pending = checks_on(g, n);
                                    line = Some(n);
                                }
                                Shown::AwaitJump => pending = checks_on(g, r),
                                Shown::End => line = None,
                            }
                        }
                        GroupInput::Advance => {
                            let Some(on) = line else { continue };
                            let Ok(shown) = leader.advance(g, on, &lead_facts) else {
                                continue;
                            };
                            let node = match shown {
                                Shown::Line(n) => Some(n),
                                _ => None,
                            };
                            follower.follow_advanced(g, node, &own_facts).map_err(|e| {
                                TestCaseError::fail(format!("follower refused the advance: {e}"))
                            })?;
                            if let Some(n) = node {
                                model_arm(g, n, &mut model);
                                pending = checks_on(g, n);
                            }
                            line = node;
                        }
                        GroupInput::Jump(success) => {
                            if !leader.awaits_jump() || pending.is_empty() {
                                continue;
                            }
                            let target = pending[usize::from(!success) % pending.len()];
                            leader.jump_to(g, target, &lead_facts).expect("a line");
                            follower.jump_to(g, target, &own_facts).expect("a line");
                            model_arm(g, target, &mut model);
                            pending = checks_on(g, target);
                            line = Some(target);
                        }
                    }
                    prop_assert_eq!(follower.awaits_jump(), leader.awaits_jump());
                    armings_match(g, &follower, &model)?;
                }
                Ok(())
            },
        )
        .expect("a follower's walk");
}

/// A group step the server might (wrongly) send, drawn without regard to the walk.
#[derive(Clone, Debug)]
enum Followed {
    Chosen(u32, Option<u32>),
    Advanced(Option<u32>),
    Decided(u32),
    Jump(u32),
}

fn followed() -> impl Strategy<Value = Followed> {
    prop_oneof![
        3 => (0u32..80, prop::option::of(0u32..80)).prop_map(|(r, n)| Followed::Chosen(r, n)),
        1 => prop::option::of(0u32..80).prop_map(Followed::Advanced),
        1 => (0u32..80).prop_map(Followed::Decided),
        1 => (0u32..40).prop_map(Followed::Jump),
    ]
}

/// Whatever it is told, a follower's walk arms a response's actions only if it was shown that
/// response and it holds, follows only a decision on a line it was shown, and every refusal
/// leaves it exactly as it was.
#[test]
fn a_followers_walk_refuses_what_cannot_follow_and_changes_nothing_when_it_does() {
    check_walks(
        "follower refusals",
        followed(),
        1..60,
        |(graph, facts, start, steps)| {
            let g = &*graph;
            let first = entry(g, start);
            let (mut walk, _) = Walk::open(g, first, &facts).expect("opens");
            let mut model: HashMap<ActionIndex, u8> = HashMap::new();
            model_arm(g, first, &mut model);
            for step in steps {
                let before = walk.clone();
                let decided_on_a_shown_line =
                    |r: VertexId| g.line_of(r).is_some_and(|l| before.is_reachable(l));
                let mine = |r: VertexId| {
                    before.is_reachable(r)
                        && !spent(g, &before, r)
                        && g.condition(r).is_none_or(|c| c.eval(&facts))
                };
                let result = match step {
                    Followed::Chosen(r, node) => {
                        let r = VertexId(r);
                        let node = node.map(VertexId);
                        let result = walk.follow_chosen(g, r, node, &facts);
                        if result.is_ok() {
                            prop_assert!(decided_on_a_shown_line(r), "followed {r:?}");
                            if mine(r) {
                                model_arm(g, r, &mut model);
                            }
                            if let Some(n) = node {
                                model_arm(g, n, &mut model);
                            }
                        }
                        result
                    }
                    Followed::Decided(r) => {
                        let r = VertexId(r);
                        let result = walk.group_choose(g, r, &facts).map(|shown| {
                            if mine(r) {
                                model_arm(g, r, &mut model);
                            }
                            if let Shown::Line(n) = shown {
                                model_arm(g, n, &mut model);
                            }
                        });
                        if result.is_ok() {
                            prop_assert!(decided_on_a_shown_line(r), "decided {r:?}");
                        }
                        result
                    }
                    Followed::Advanced(node) => {
                        let node = node.map(VertexId);
                        let result = walk.follow_advanced(g, node, &facts);
                        if let (Ok(()), Some(n)) = (result, node) {
                            model_arm(g, n, &mut model);
                        }
                        result
                    }
                    Followed::Jump(t) => {
                        let t = VertexId(t);
                        let result = walk.jump_to(g, t, &facts).map(|_| ());
                        if result.is_ok() {
                            model_arm(g, t, &mut model);
                        }
                        result
                    }
                };
                if result.is_err() {
                    prop_assert_eq!(&walk, &before);
                }
                armings_match(g, &walk, &model)?;
            }
            Ok(())
        },
    );
}
