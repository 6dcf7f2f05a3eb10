//! The walk of a shared conversation (PROTOCOL.md section 17), on a small hand-written graph:
//! the leader's walk applies the group's decision, every participant's walk follows it with its
//! own facts, and a client's own steps are votes and proposals that move nothing.

use banter_dialogue::{
    ClientWalk, DialogueGraph, Outgoing, Screen, SharedError, Shown, VertexId, Walk, WalkError,
    build_conversation,
};
use banter_protocol::{ActionType, FactSheet};

const CROSSING: &str = r#"{
  "FirstNode": "Dock",
  "Speaker": "Wren",
  "Shared": { "Mode": "Majority" },
  "Dock": { "Text": "Where to?", "Responses": [
    { "Text": "The island.", "NextNode": "Island",
      "Actions": [ { "Type": "AcceptQuest", "QuestId": "Ferry" } ] },
    { "Text": "I have coin.", "Conditions": "coins >= 100", "NextNode": "Rich",
      "Actions": [ { "Type": "TrackQuest", "QuestId": "Ferry" } ] },
    { "Text": "Check my ticket.",
      "Actions": [ { "Type": "CheckQuest", "QuestId": "Ferry", "SuccessNode": "Island", "FailureNode": "Dock" } ] },
    { "Text": "Never mind.", "Actions": [ { "Type": "OpenShop", "Shop": "Bait" } ] } ] },
  "Island": { "Text": "Here we are.", "NextNode": "Bye",
    "Actions": [ { "Type": "AdvanceObjective", "QuestId": "Ferry", "ObjectiveId": "Cross" } ] },
  "Rich": { "Text": "Fancy.", "NextNode": "Bye" },
  "Bye": { "Text": "Bye.", "Close": true },
  "Aside": { "Text": "Psst.", "Responses": [ { "Text": "What?", "NextNode": "Bye" } ] }
}"#;

fn graph() -> DialogueGraph {
    let (graph, diagnostics) = build_conversation("Crossing", CROSSING);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    graph
}

fn id(graph: &DialogueGraph, name: &str) -> VertexId {
    graph
        .find(name)
        .unwrap_or_else(|| panic!("no vertex {name}"))
}

fn coins(coins: i64) -> FactSheet {
    FactSheet {
        coins,
        ..FactSheet::default()
    }
}

/// The armed action types of a walk, as (type, how many times).
fn armed(graph: &DialogueGraph, walk: &Walk) -> Vec<(ActionType, u8)> {
    graph
        .all_actions()
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let n = walk.armed(banter_dialogue::ActionIndex(i as u32));
            (n > 0).then_some((a.action_type, n))
        })
        .collect()
}

#[test]
fn the_leader_applies_a_decision_it_was_not_shown_without_its_actions() {
    let g = graph();
    let poor = coins(0);
    let (mut leader, _) = Walk::open(&g, id(&g, "Dock"), &poor).expect("opens");
    let rich = id(&g, "Dock_r2");
    assert!(!leader.is_reachable(rich));
    // Won by the votes of those who saw it: the leader follows it to its line.
    assert_eq!(
        leader.group_choose(&g, rich, &poor),
        Ok(Shown::Line(id(&g, "Rich")))
    );
    assert!(armed(&g, &leader).is_empty(), "not shown, not armed");
    // A response the leader was shown arms its actions, as a choose would.
    let (mut leader, _) = Walk::open(&g, id(&g, "Dock"), &poor).expect("opens");
    assert_eq!(
        leader.group_choose(&g, id(&g, "Dock_r1"), &poor),
        Ok(Shown::Line(id(&g, "Island")))
    );
    assert_eq!(
        armed(&g, &leader),
        [
            (ActionType::AcceptQuest, 1),
            (ActionType::AdvanceObjective, 1)
        ]
    );
}

#[test]
fn a_decision_is_refused_unless_its_line_was_shown_and_nothing_changes() {
    let g = graph();
    let facts = coins(500);
    let (mut walk, _) = Walk::open(&g, id(&g, "Dock"), &facts).expect("opens");
    let before = walk.clone();
    for (response, error) in [
        (VertexId(9_999), WalkError::UnknownVertex),
        (id(&g, "Dock"), WalkError::NotAResponse),
        (id(&g, "Aside_r1"), WalkError::NotReachable),
    ] {
        assert_eq!(walk.group_choose(&g, response, &facts), Err(error));
        assert_eq!(
            walk.follow_chosen(&g, response, Some(id(&g, "Bye")), &facts),
            Err(error)
        );
        assert_eq!(walk, before);
    }
    // A node that is not a line.
    assert_eq!(
        walk.follow_chosen(&g, id(&g, "Dock_r1"), Some(id(&g, "Dock_r2")), &facts),
        Err(WalkError::BadJumpTarget)
    );
    assert_eq!(
        walk.follow_advanced(&g, Some(id(&g, "Dock_r2")), &facts),
        Err(WalkError::BadJumpTarget)
    );
    assert_eq!(
        walk.follow_advanced(&g, Some(VertexId(9_999)), &facts),
        Err(WalkError::UnknownVertex)
    );
    assert_eq!(walk, before);
    // While a quest check waits for its jump.
    assert_eq!(
        walk.group_choose(&g, id(&g, "Dock_r3"), &facts),
        Ok(Shown::AwaitJump)
    );
    let waiting = walk.clone();
    assert_eq!(
        walk.group_choose(&g, id(&g, "Dock_r1"), &facts),
        Err(WalkError::AwaitsJump)
    );
    assert_eq!(
        walk.follow_chosen(&g, id(&g, "Dock_r1"), None, &facts),
        Err(WalkError::AwaitsJump)
    );
    assert_eq!(
        walk.follow_advanced(&g, None, &facts),
        Err(WalkError::AwaitsJump)
    );
    assert_eq!(walk, waiting);
    // Closed.
    walk.close();
    let closed = walk.clone();
    assert_eq!(
        walk.follow_chosen(&g, id(&g, "Dock_r1"), None, &facts),
        Err(WalkError::Closed)
    );
    assert_eq!(
        walk.follow_advanced(&g, None, &facts),
        Err(WalkError::Closed)
    );
    assert_eq!(walk, closed);
}

#[test]
fn a_follower_arms_only_what_it_was_shown_and_shows_the_groups_line_with_its_own_facts() {
    let g = graph();
    let (poor, rich) = (coins(0), coins(500));
    let (mut alone, _) = Walk::open(&g, id(&g, "Dock"), &poor).expect("opens");
    let (mut seen, _) = Walk::open(&g, id(&g, "Dock"), &rich).expect("opens");
    let r2 = id(&g, "Dock_r2");
    alone
        .follow_chosen(&g, r2, Some(id(&g, "Rich")), &poor)
        .expect("follows");
    seen.follow_chosen(&g, r2, Some(id(&g, "Rich")), &rich)
        .expect("follows");
    assert!(armed(&g, &alone).is_empty());
    assert_eq!(armed(&g, &seen), [(ActionType::TrackQuest, 1)]);
    assert!(alone.is_reachable(id(&g, "Rich")) && seen.is_reachable(id(&g, "Rich")));
    // A response that stopped holding for this player is not armed either.
    let (mut lapsed, _) = Walk::open(&g, id(&g, "Dock"), &rich).expect("opens");
    lapsed
        .follow_chosen(&g, r2, Some(id(&g, "Rich")), &poor)
        .expect("follows");
    assert!(armed(&g, &lapsed).is_empty());
}

#[test]
fn a_follower_awaits_the_jump_after_a_check_and_ends_with_a_response_that_leads_nowhere() {
    let g = graph();
    let facts = coins(0);
    let (mut walk, _) = Walk::open(&g, id(&g, "Dock"), &facts).expect("opens");
    walk.follow_chosen(&g, id(&g, "Dock_r3"), None, &facts)
        .expect("follows");
    assert!(walk.awaits_jump());
    assert_eq!(armed(&g, &walk), [(ActionType::CheckQuest, 1)]);
    walk.jump_to(&g, id(&g, "Dock"), &facts).expect("jumps");
    assert!(!walk.awaits_jump());
    walk.follow_chosen(&g, id(&g, "Dock_r4"), None, &facts)
        .expect("follows");
    // The conversation ends there; the walk stays open for the response's actions.
    assert!(!walk.is_closed() && !walk.awaits_jump());
    assert!(armed(&g, &walk).contains(&(ActionType::OpenShop, 1)));
    // The leader advances past a line: shown with this player's facts, or the end.
    let (mut walk, _) = Walk::open(&g, id(&g, "Rich"), &facts).expect("opens");
    walk.follow_advanced(&g, Some(id(&g, "Bye")), &facts)
        .expect("follows");
    assert!(walk.is_reachable(id(&g, "Bye")));
    walk.follow_advanced(&g, None, &facts).expect("ends");
    assert!(!walk.is_closed());
}

#[test]
fn the_leaders_walk_and_a_follower_with_the_same_facts_stay_alike() {
    let g = graph();
    let facts = coins(500);
    let (mut leader, _) = Walk::open(&g, id(&g, "Dock"), &facts).expect("opens");
    let (mut follower, _) = Walk::open(&g, id(&g, "Dock"), &facts).expect("opens");
    for response in ["Dock_r2", "Dock_r1"] {
        let shown = leader
            .group_choose(&g, id(&g, response), &facts)
            .expect("decides");
        let node = match shown {
            Shown::Line(line) => Some(line),
            _ => None,
        };
        follower
            .follow_chosen(&g, id(&g, response), node, &facts)
            .expect("follows");
        assert_eq!(follower, leader);
        leader.jump_to(&g, id(&g, "Dock"), &facts).expect("back");
        follower.jump_to(&g, id(&g, "Dock"), &facts).expect("back");
    }
}

fn sends(out: &mut Vec<Outgoing>) -> Vec<Outgoing> {
    std::mem::take(out)
}

#[test]
fn a_clients_vote_and_proposal_send_their_message_and_move_nothing() {
    let g = graph();
    let (poor, rich) = (coins(0), coins(500));
    let mut out = Vec::new();
    let mut follower =
        ClientWalk::open_shared(&g, id(&g, "Dock"), &rich, false, &mut out).expect("opens");
    assert!(follower.is_shared() && !follower.is_leader());
    assert!(sends(&mut out).is_empty());
    let before = follower.walk().clone();
    let r2 = id(&g, "Dock_r2");
    assert_eq!(follower.vote(&g, r2, &rich, &mut out), Ok(()));
    assert_eq!(sends(&mut out), [Outgoing::Choose(r2)]);
    assert_eq!(follower.walk(), &before);
    assert_eq!(follower.screen(), Screen::Line(id(&g, "Dock")));
    // As a choose refuses it, then not under the line on screen.
    for (response, facts, error) in [
        (
            VertexId(9_999),
            &rich,
            SharedError::Walk(WalkError::UnknownVertex),
        ),
        (
            id(&g, "Aside_r1"),
            &rich,
            SharedError::Walk(WalkError::NotReachable),
        ),
        (
            id(&g, "Dock"),
            &rich,
            SharedError::Walk(WalkError::NotAResponse),
        ),
        (r2, &poor, SharedError::Walk(WalkError::ConditionFailed)),
    ] {
        assert_eq!(follower.vote(&g, response, facts, &mut out), Err(error));
        assert!(out.is_empty());
    }
    // Only the leader advances; the leader's advance is checked as an advance.
    assert_eq!(
        follower.propose_advance(&g, id(&g, "Dock"), &rich, &mut out),
        Err(SharedError::NotLeader)
    );
    assert!(!follower.can_advance(&g, &rich));
    follower.set_leader(true);
    assert_eq!(
        follower.propose_advance(&g, id(&g, "Dock"), &rich, &mut out),
        Err(SharedError::Walk(WalkError::AwaitsChoice))
    );
    assert_eq!(SharedError::NotLeader.code().name(), "not_leader");
    assert_eq!(SharedError::NotCurrent.code().name(), "not_current");
    assert!(out.is_empty());

    // The group picks "I have coin." (the follower saw it): its action is held while Rich is on
    // screen; a vote for Dock's response now is not current (Dock is still in R).
    follower
        .follow_chosen(&g, r2, Some(id(&g, "Rich")), &rich, &mut out)
        .expect("follows");
    assert!(sends(&mut out).is_empty());
    assert_eq!(follower.screen(), Screen::Line(id(&g, "Rich")));
    assert_eq!(
        follower.vote(&g, id(&g, "Dock_r1"), &rich, &mut out),
        Err(SharedError::NotCurrent)
    );
    // The leader (this player now) proposes the advance, which moves nothing until `advanced`.
    assert!(follower.can_advance(&g, &rich));
    follower
        .propose_advance(&g, id(&g, "Rich"), &rich, &mut out)
        .expect("proposed");
    assert_eq!(sends(&mut out), [Outgoing::Advance(id(&g, "Rich"))]);
    assert_eq!(follower.screen(), Screen::Line(id(&g, "Rich")));
    // `advanced`: the held action goes out, then Bye; `advanced` with no node ends it.
    follower
        .follow_advanced(&g, Some(id(&g, "Bye")), &rich, &mut out)
        .expect("follows");
    let track = g
        .all_actions()
        .iter()
        .position(|a| a.action_type == ActionType::TrackQuest)
        .map(|i| banter_dialogue::ActionIndex(i as u32))
        .expect("TrackQuest");
    assert_eq!(sends(&mut out), [Outgoing::Action(track)]);
    follower
        .follow_advanced(&g, None, &rich, &mut out)
        .expect("ends");
    assert_eq!(sends(&mut out), [Outgoing::Close]);
    assert_eq!(follower.screen(), Screen::Ended);
    assert_eq!(
        follower.vote(&g, r2, &rich, &mut out),
        Err(SharedError::Walk(WalkError::Closed))
    );
    assert_eq!(
        follower.propose_advance(&g, id(&g, "Rich"), &rich, &mut out),
        Err(SharedError::Walk(WalkError::Closed))
    );
}

#[test]
fn a_client_not_shown_the_winner_follows_it_without_its_actions() {
    let g = graph();
    let poor = coins(0);
    let mut out = Vec::new();
    let mut client =
        ClientWalk::open_shared(&g, id(&g, "Dock"), &poor, false, &mut out).expect("opens");
    client
        .follow_chosen(&g, id(&g, "Dock_r2"), Some(id(&g, "Rich")), &poor, &mut out)
        .expect("follows");
    client
        .follow_advanced(&g, Some(id(&g, "Bye")), &poor, &mut out)
        .expect("follows");
    assert!(
        sends(&mut out).is_empty(),
        "nothing was shown, nothing is sent"
    );
    // A check response: its CheckQuest goes out at once and the client waits for the jump.
    let mut client =
        ClientWalk::open_shared(&g, id(&g, "Dock"), &poor, true, &mut out).expect("opens");
    client
        .follow_chosen(&g, id(&g, "Dock_r3"), None, &poor, &mut out)
        .expect("follows");
    assert_eq!(client.screen(), Screen::Waiting);
    let sent = sends(&mut out);
    assert!(
        matches!(sent.as_slice(), [Outgoing::Action(i)] if g.action(*i).is_some_and(|a| a.action_type == ActionType::CheckQuest)),
        "{sent:?}"
    );
    client
        .jump(&g, id(&g, "Island"), &poor, &mut out)
        .expect("jumps");
    assert_eq!(client.screen(), Screen::Line(id(&g, "Island")));
    assert_eq!(sends(&mut out).len(), 1, "Island's AdvanceObjective");
    // A response with no next line: its actions, then close.
    let mut client =
        ClientWalk::open_shared(&g, id(&g, "Dock"), &poor, false, &mut out).expect("opens");
    client
        .follow_chosen(&g, id(&g, "Dock_r4"), None, &poor, &mut out)
        .expect("follows");
    let sent = sends(&mut out);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[1], Outgoing::Close);
    assert_eq!(client.screen(), Screen::Ended);
}
