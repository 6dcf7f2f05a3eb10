//! How a shared conversation's group picks a response (PROTOCOL.md section 17.3), as a pure
//! function of the ballot: the rule, who takes part, who leads, the votes, whether the time
//! limit has passed and the ballot's seed. The server calls [`decide`] after every vote, at the
//! time limit and when a participant leaves; a client may call it to explain a decision (a
//! `chosen` names its `seed` and `rolls`). `conformance/ballots.json` fixes every rule.
//!
//! The only randomness is the seed the server drew when the ballot opened: [`draw`] is
//! splitmix64, so any language reproduces a roll from the seed alone.

use banter_protocol::{ChoiceMode, DecidedBy, TieRule};

use crate::graph::{DialogueGraph, VertexId, VertexKind};
use crate::model::ChoiceRule;

/// splitmix64's increment (the golden ratio, 2^64 / φ).
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The sides of a roll: each voter rolls 1 to this.
pub const ROLL_SIDES: u64 = 100;

/// splitmix64 of `x`, all arithmetic wrapping.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The `k`-th draw (from 0) of a ballot's seed: `splitmix64(seed + k * 0x9E3779B97F4A7C15)`,
/// wrapping.
pub fn draw(seed: u64, k: u64) -> u64 {
    splitmix64(seed.wrapping_add(k.wrapping_mul(GAMMA)))
}

/// The roll of voter `k` (0-based, in join order among the voters): 1 to 100.
pub fn roll(seed: u64, k: u64) -> u8 {
    // Below 101, so the cast never truncates.
    (1 + draw(seed, k) % ROLL_SIDES) as u8
}

/// A decided ballot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The winning response.
    pub response: VertexId,
    /// How it was decided (`chosen.by`).
    pub by: DecidedBy,
    /// A `Roll` ballot's rolls: every voter's, in join order. Empty for every other way.
    pub rolls: Vec<(String, u8)>,
}

/// One counted vote: the voter's place in the join order, and the response.
#[derive(Clone, Copy)]
struct Counted {
    joined: usize,
    response: VertexId,
}

/// Decides a ballot, or `None` while it waits for more votes (or for the time limit).
///
/// `participants` are in join order; `leader` is the conversation's leader; `votes` hold each
/// participant's latest vote, in any order (the result does not depend on it). A vote from
/// anyone not in `participants`, or for something that is not a response of `graph`, does not
/// count; of two votes by one participant, the later in `votes` counts. `expired`: the rule's
/// time limit has passed. `seed`: the ballot's seed, for `Roll` and a `Tie` of `Roll`.
///
/// A decision always names a response somebody voted for. Responses are ordered by their
/// priority (the order they are written in), which is what "first" means in a tie.
pub fn decide(
    graph: &DialogueGraph,
    rule: &ChoiceRule,
    participants: &[&str],
    leader: &str,
    votes: &[(&str, VertexId)],
    expired: bool,
    seed: u64,
) -> Option<Decision> {
    // Each participant once, at their first place in the join order.
    let mut joined: Vec<&str> = Vec::with_capacity(participants.len());
    for &p in participants {
        if !joined.contains(&p) {
            joined.push(p);
        }
    }
    let is_response = |r: VertexId| {
        graph
            .vertex(r)
            .is_some_and(|v| v.kind == VertexKind::Response)
    };
    // The counted votes, one per participant, in join order.
    let mut counted: Vec<Counted> = Vec::with_capacity(votes.len());
    for (at, &player) in joined.iter().enumerate() {
        let latest = votes
            .iter()
            .rev()
            .find(|(voter, _)| *voter == player)
            .map(|&(_, response)| response)
            .filter(|&r| is_response(r));
        if let Some(response) = latest {
            counted.push(Counted {
                joined: at,
                response,
            });
        }
    }
    let leader_vote = counted
        .iter()
        .find(|c| joined.get(c.joined) == Some(&leader))
        .map(|c| c.response);
    let decided = |response: VertexId, by: DecidedBy| Decision {
        response,
        by,
        rolls: Vec::new(),
    };
    match rule.mode {
        ChoiceMode::Leader => leader_vote.map(|r| decided(r, DecidedBy::Leader)),
        ChoiceMode::All => {
            let first = counted.first()?.response;
            let unanimous =
                counted.len() == joined.len() && counted.iter().all(|c| c.response == first);
            unanimous.then(|| decided(first, DecidedBy::Unanimous))
        }
        ChoiceMode::Majority => {
            let tally = tally(graph, &counted);
            let most = tally.iter().map(|&(n, _)| n).max()?;
            // More than half of the participants: decided at once.
            if let Some(&(_, r)) = tally.iter().find(|(n, _)| 2 * n > joined.len()) {
                return Some(decided(r, DecidedBy::Majority));
            }
            if !expired {
                return None;
            }
            // At the limit: the most votes; the tied in priority order.
            let tied: Vec<VertexId> = tally
                .iter()
                .filter(|(n, _)| *n == most)
                .map(|&(_, r)| r)
                .collect();
            let first = *tied.first()?;
            if tied.len() == 1 {
                return Some(decided(first, DecidedBy::Majority));
            }
            Some(match rule.tie {
                TieRule::Leader => match leader_vote.filter(|r| tied.contains(r)) {
                    Some(r) => decided(r, DecidedBy::TieLeader),
                    None => decided(first, DecidedBy::TieFirst),
                },
                TieRule::First => decided(first, DecidedBy::TieFirst),
                TieRule::Roll => {
                    // `tied` is never empty here, so the index is within it.
                    let at = (draw(seed, 0) % tied.len() as u64) as usize;
                    decided(tied.get(at).copied().unwrap_or(first), DecidedBy::TieRoll)
                }
            })
        }
        ChoiceMode::Roll => {
            // Decided once everyone has voted, or at the time limit once anyone has.
            let everyone = counted.len() == joined.len();
            if counted.is_empty() || !(everyone || expired) {
                return None;
            }
            let rolls: Vec<(String, u8)> = counted
                .iter()
                .enumerate()
                .map(|(k, c)| (joined[c.joined].to_owned(), roll(seed, k as u64)))
                .collect();
            // The highest roll; an equal highest goes to the earlier joiner (the first found).
            let mut best = 0;
            for (k, (_, r)) in rolls.iter().enumerate() {
                if *r > rolls[best].1 {
                    best = k;
                }
            }
            Some(Decision {
                response: counted[best].response,
                by: DecidedBy::Roll,
                rolls,
            })
        }
    }
}

/// How many votes each response got, in priority order (ties of priority, which only votes
/// under different lines could make, by vertex id).
fn tally(graph: &DialogueGraph, counted: &[Counted]) -> Vec<(usize, VertexId)> {
    let mut responses: Vec<VertexId> = counted.iter().map(|c| c.response).collect();
    let priority = |r: &VertexId| (graph.vertex(*r).map_or(u32::MAX, |v| v.priority), *r);
    responses.sort_unstable_by_key(priority);
    responses.dedup();
    responses
        .into_iter()
        .map(|r| (counted.iter().filter(|c| c.response == r).count(), r))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build_conversation;
    use crate::model::ChoiceSpec;

    const FERRY: &str = r#"{
      "FirstNode": "Boat", "Speaker": "Wren", "Shared": { "Mode": "Majority" },
      "Boat": { "Text": "Which boat?", "Responses": [
        { "Text": "The dinghy.", "NextNode": "Off" },
        { "Text": "The barge.", "NextNode": "Off" },
        { "Text": "The raft.", "NextNode": "Off" } ] },
      "Off": { "Text": "Off we go.", "Close": true }
    }"#;

    fn graph() -> DialogueGraph {
        let (graph, diagnostics) = build_conversation("Ferry", FERRY);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        graph
    }

    fn rule(mode: ChoiceMode, tie: Option<TieRule>) -> ChoiceRule {
        ChoiceSpec {
            mode: Some(mode),
            time_limit: None,
            tie,
        }
        .rule()
    }

    const PARTY: [&str; 4] = ["ana", "bo", "cy", "di"];

    #[test]
    fn draw_is_splitmix64_of_the_seed_stepped_by_the_golden_gamma() {
        // splitmix64's reference outputs for seed 0 (the first three of its stream).
        assert_eq!(draw(0, 0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(draw(0, 1), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(draw(0, 2), 0x06C4_5D18_8009_454F);
        assert_eq!(
            draw(u64::MAX, 3),
            splitmix64(u64::MAX.wrapping_add(3u64.wrapping_mul(GAMMA)))
        );
        for seed in [0, 1, 42, u64::MAX] {
            for k in 0..8 {
                assert!((1..=100).contains(&roll(seed, k)));
            }
        }
    }

    #[test]
    fn every_mode_decides_as_section_17_3_says() {
        let g = graph();
        let r = |i: u32| g.find(&format!("Boat_r{i}")).expect("response");
        // Leader: the leader's vote, and only it.
        let leader = rule(ChoiceMode::Leader, None);
        assert_eq!(
            decide(&g, &leader, &PARTY, "bo", &[("ana", r(1))], false, 0),
            None
        );
        let d = decide(
            &g,
            &leader,
            &PARTY,
            "bo",
            &[("ana", r(1)), ("bo", r(3))],
            false,
            0,
        );
        assert_eq!(
            d.map(|d| (d.response, d.by)),
            Some((r(3), DecidedBy::Leader))
        );
        // Majority: more than half at once; 2 of 4 is not more than half.
        let majority = rule(ChoiceMode::Majority, None);
        let two = [("ana", r(2)), ("bo", r(2))];
        assert_eq!(decide(&g, &majority, &PARTY, "ana", &two, false, 0), None);
        let three = [("ana", r(2)), ("bo", r(2)), ("cy", r(2))];
        let d = decide(&g, &majority, &PARTY, "ana", &three, false, 0).expect("decided");
        assert_eq!((d.response, d.by), (r(2), DecidedBy::Majority));
        // At the limit: the most votes.
        let d = decide(&g, &majority, &PARTY, "ana", &two, true, 0).expect("decided");
        assert_eq!((d.response, d.by), (r(2), DecidedBy::Majority));
        // All: everyone, the same.
        let all = rule(ChoiceMode::All, None);
        assert_eq!(
            decide(&g, &all, &PARTY[..3], "ana", &three[..2], true, 0),
            None
        );
        let d = decide(&g, &all, &PARTY[..3], "ana", &three, false, 0).expect("decided");
        assert_eq!(d.by, DecidedBy::Unanimous);
        let split = [("ana", r(2)), ("bo", r(2)), ("cy", r(1))];
        assert_eq!(decide(&g, &all, &PARTY[..3], "ana", &split, true, 0), None);
    }

    #[test]
    fn ties_at_the_limit_go_by_the_tie_rule() {
        let g = graph();
        let r = |i: u32| g.find(&format!("Boat_r{i}")).expect("response");
        let votes = [("ana", r(3)), ("bo", r(2)), ("cy", r(3)), ("di", r(2))];
        let by = |tie, leader: &str| {
            decide(
                &g,
                &rule(ChoiceMode::Majority, Some(tie)),
                &PARTY,
                leader,
                &votes,
                true,
                7,
            )
            .map(|d| (d.response, d.by))
        };
        assert_eq!(
            by(TieRule::Leader, "ana"),
            Some((r(3), DecidedBy::TieLeader))
        );
        assert_eq!(by(TieRule::First, "ana"), Some((r(2), DecidedBy::TieFirst)));
        let tied = [r(2), r(3)];
        let picked = tied[(draw(7, 0) % 2) as usize];
        assert_eq!(by(TieRule::Roll, "ana"), Some((picked, DecidedBy::TieRoll)));
        // The leader voted for no tied response (or not at all): as First.
        let votes = [("ana", r(1)), ("bo", r(2)), ("cy", r(3))];
        let d = decide(
            &g,
            &rule(ChoiceMode::Majority, Some(TieRule::Leader)),
            &PARTY,
            "di",
            &votes,
            true,
            0,
        );
        assert_eq!(
            d.map(|d| (d.response, d.by)),
            Some((r(1), DecidedBy::TieFirst))
        );
    }

    #[test]
    fn a_roll_waits_for_everyone_and_the_highest_roll_wins() {
        let g = graph();
        let r = |i: u32| g.find(&format!("Boat_r{i}")).expect("response");
        let roll_rule = rule(ChoiceMode::Roll, None);
        let votes = [("cy", r(3)), ("ana", r(1))];
        assert_eq!(
            decide(&g, &roll_rule, &PARTY[..3], "ana", &votes, false, 5),
            None
        );
        let d = decide(&g, &roll_rule, &PARTY[..3], "ana", &votes, true, 5).expect("decided");
        // Voters in join order: ana (k 0), cy (k 1).
        assert_eq!(
            d.rolls,
            vec![
                ("ana".to_owned(), roll(5, 0)),
                ("cy".to_owned(), roll(5, 1))
            ]
        );
        let winner = if roll(5, 1) > roll(5, 0) { r(3) } else { r(1) };
        assert_eq!((d.response, d.by), (winner, DecidedBy::Roll));
    }

    #[test]
    fn nobody_outside_the_participants_counts_and_no_vote_decides_nothing() {
        let g = graph();
        let r = |i: u32| g.find(&format!("Boat_r{i}")).expect("response");
        let majority = rule(ChoiceMode::Majority, None);
        let votes = [("eve", r(1)), ("mallory", r(1)), ("ana", r(2))];
        let d = decide(&g, &majority, &PARTY[..2], "bo", &votes, true, 0).expect("decided");
        assert_eq!((d.response, d.by), (r(2), DecidedBy::Majority));
        for mode in [
            ChoiceMode::Leader,
            ChoiceMode::Majority,
            ChoiceMode::Roll,
            ChoiceMode::All,
        ] {
            assert_eq!(
                decide(&g, &rule(mode, None), &PARTY, "ana", &[], true, 0),
                None
            );
            // A vote for a line, or for no vertex at all, is no vote.
            let bogus = [("ana", VertexId(1)), ("bo", VertexId(999))];
            assert_eq!(
                decide(&g, &rule(mode, None), &PARTY, "ana", &bogus, true, 0),
                None
            );
        }
    }
}
