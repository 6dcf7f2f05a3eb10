//! Properties of `ballot::decide` (PROTOCOL.md section 17.3) over random ballots: it never picks
//! a response nobody voted for, it does not depend on the order of the votes, votes from outside
//! the participants change nothing, and each mode keeps its promise.

use banter_dialogue::ballot::{self, Decision};
use banter_dialogue::{ChoiceSpec, DialogueGraph, VertexId, build_conversation};
use banter_protocol::{ChoiceMode, DecidedBy, TieRule};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const CASES: u32 = 10_000;

const BOATS: &str = r#"{
  "FirstNode": "Boat", "Speaker": "Wren", "Shared": {},
  "Boat": { "Text": "Which boat?", "Responses": [
    { "Text": "One.", "NextNode": "Off" }, { "Text": "Two.", "NextNode": "Off" },
    { "Text": "Three.", "NextNode": "Off" }, { "Text": "Four.", "NextNode": "Off" },
    { "Text": "Five.", "NextNode": "Off" } ] },
  "Off": { "Text": "Off we go.", "Close": true }
}"#;

const NAMES: [&str; 10] = [
    "ana", "bo", "cy", "di", "ed", "fay", "gus", "hal", "eve", "max",
];

#[derive(Clone, Debug)]
struct Ballot {
    mode: ChoiceMode,
    tie: TieRule,
    /// How many of `NAMES` take part (the rest may still vote: they must not count).
    participants: usize,
    leader: usize,
    /// (voter, response index 1..=5), one per voter, in the order drawn.
    votes: Vec<(usize, u32)>,
    expired: bool,
    seed: u64,
}

fn ballot() -> impl Strategy<Value = Ballot> {
    (
        prop::sample::select(vec![
            ChoiceMode::Leader,
            ChoiceMode::Majority,
            ChoiceMode::Roll,
            ChoiceMode::All,
        ]),
        prop::sample::select(vec![TieRule::Leader, TieRule::First, TieRule::Roll]),
        1usize..=8,
        0usize..NAMES.len(),
        prop::collection::vec(prop::option::of(1u32..=5), NAMES.len()),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_flat_map(|(mode, tie, participants, leader, picks, expired, seed)| {
            let votes: Vec<(usize, u32)> = picks
                .iter()
                .enumerate()
                .filter_map(|(voter, pick)| pick.map(|r| (voter, r)))
                .collect();
            Just(votes).prop_shuffle().prop_map(move |votes| Ballot {
                mode,
                tie,
                participants,
                leader,
                votes,
                expired,
                seed,
            })
        })
}

fn graph() -> DialogueGraph {
    let (graph, diagnostics) = build_conversation("Boats", BOATS);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    graph
}

fn run(graph: &DialogueGraph, b: &Ballot, votes: &[(usize, u32)]) -> Option<Decision> {
    let rule = ChoiceSpec {
        mode: Some(b.mode),
        time_limit: None,
        tie: Some(b.tie),
    }
    .rule();
    let response = |i: u32| graph.find(&format!("Boat_r{i}")).expect("a response");
    let votes: Vec<(&str, VertexId)> = votes
        .iter()
        .map(|&(voter, r)| (NAMES[voter], response(r)))
        .collect();
    ballot::decide(
        graph,
        &rule,
        &NAMES[..b.participants],
        NAMES[b.leader],
        &votes,
        b.expired,
        b.seed,
    )
}

#[test]
fn a_decision_is_a_participants_vote_whatever_the_order_of_the_votes() {
    let graph = graph();
    let response = |i: u32| graph.find(&format!("Boat_r{i}")).expect("a response");
    let mut runner = TestRunner::new(Config::with_cases(CASES));
    runner
        .run(&ballot(), |b| {
            let decision = run(&graph, &b, &b.votes);
            let counted: Vec<(usize, u32)> = b
                .votes
                .iter()
                .copied()
                .filter(|&(voter, _)| voter < b.participants)
                .collect();
            // Outside votes change nothing, and neither does the order.
            prop_assert_eq!(&run(&graph, &b, &counted), &decision);
            let mut reversed = b.votes.clone();
            reversed.reverse();
            prop_assert_eq!(&run(&graph, &b, &reversed), &decision);
            let mut sorted = b.votes.clone();
            sorted.sort_unstable();
            prop_assert_eq!(&run(&graph, &b, &sorted), &decision);
            let Some(d) = decision else {
                return Ok(());
            };
            prop_assert!(
                counted.iter().any(|&(_, r)| response(r) == d.response),
                "nobody voted for the decision: {:?}",
                d
            );
            let count = |v: VertexId| counted.iter().filter(|&&(_, r)| response(r) == v).count();
            match d.by {
                DecidedBy::Leader => {
                    prop_assert_eq!(b.mode, ChoiceMode::Leader);
                    prop_assert!(
                        counted
                            .iter()
                            .any(|&(voter, r)| voter == b.leader && response(r) == d.response)
                    );
                }
                DecidedBy::Unanimous => {
                    prop_assert_eq!(counted.len(), b.participants);
                    prop_assert_eq!(count(d.response), b.participants);
                }
                DecidedBy::Majority => {
                    let most = counted.iter().map(|&(_, r)| count(response(r))).max();
                    prop_assert_eq!(Some(count(d.response)), most);
                    prop_assert!(b.expired || 2 * count(d.response) > b.participants);
                }
                DecidedBy::TieLeader | DecidedBy::TieFirst | DecidedBy::TieRoll => {
                    prop_assert!(b.expired);
                    let most = counted.iter().map(|&(_, r)| count(response(r))).max();
                    prop_assert_eq!(Some(count(d.response)), most);
                }
                DecidedBy::Roll => {
                    prop_assert_eq!(d.rolls.len(), counted.len());
                    prop_assert!(b.expired || counted.len() == b.participants);
                    let best = d.rolls.iter().map(|(_, r)| *r).max();
                    prop_assert!(d.rolls.iter().all(|(_, r)| (1..=100).contains(r)));
                    // The winner: the first of the highest rolls in join order.
                    let first_best = d.rolls.iter().position(|(_, r)| Some(*r) == best);
                    let winner = first_best.map(|k| &d.rolls[k].0);
                    let voted = counted
                        .iter()
                        .find(|&&(voter, _)| Some(&NAMES[voter].to_owned()) == winner)
                        .map(|&(_, r)| response(r));
                    prop_assert_eq!(voted, Some(d.response));
                }
            }
            if d.by != DecidedBy::Roll {
                prop_assert!(d.rolls.is_empty());
            }
            Ok(())
        })
        .expect("ballot properties");
}
