//! Every walk rule on small hand-written graphs (article sections 6.1, 7.2, 7.3).

use banter_dialogue::{
    ClientWalk, Counter, DialogueGraph, Facts, NoFacts, Outgoing, QuestStatus, Screen, Shown,
    VertexId, Walk, WalkError, build_conversation,
};
use banter_protocol::ActionType;

const QUEST_FLOW: &str = r#"{
  "FirstNode": "Greet",
  "Speaker": "Mara",
  "Greet": { "Text": "Need a hand with the nets?", "Responses": [
    { "Text": "Sure.", "NextNode": "Accepted",
      "Actions": [ { "Type": "AcceptQuest", "QuestId": "Nets" } ] },
    { "Text": "I could pay someone.", "NextNode": "Bye", "Conditions": "coins >= 100" },
    { "Text": "Not today.", "NextNode": "Bye" }
  ] },
  "Accepted": { "Text": "Grand.", "NextNode": "Bye",
    "Actions": [ { "Type": "TrackQuest", "QuestId": "Nets" } ] },
  "Bye": { "Text": "Fair winds.", "Close": true },
  "Check": { "Text": "Nets mended?", "Responses": [
    { "Text": "Have a look.", "Actions": [
      { "Type": "CheckQuest", "QuestId": "Nets", "SuccessNode": "Paid", "FailureNode": "NotYet" } ] },
    { "Text": "Later.", "NextNode": "Bye" }
  ] },
  "NotYet": { "Text": "Still holes in them.", "NextNode": "Check" },
  "Paid": { "Text": "Lovely work. Here.", "Close": true,
    "Actions": [ { "Type": "CompleteQuest", "QuestId": "Nets" } ] },
  "Route": { "Text": "Hm, let me think.", "NextNode": [ "RichLine", "PoorLine" ] },
  "RichLine": { "Text": "You look prosperous.", "Conditions": "coins >= 100" },
  "PoorLine": { "Text": "You look tired." },
  "SelfCheck": { "Text": "Let me see your catch.",
    "Actions": [ { "Type": "CheckQuest", "QuestId": "Nets", "SuccessNode": "Paid", "FailureNode": "NotYet" } ] }
}"#;

struct Rich(i64);

impl Facts for Rich {
    fn quest_status(&self, _: &str) -> QuestStatus {
        QuestStatus::Active
    }
    fn objective_progress(&self, _: &str, _: &str) -> u32 {
        0
    }
    fn has(&self, _: &str) -> bool {
        false
    }
    fn counter(&self, c: Counter) -> i64 {
        if c == Counter::Coins { self.0 } else { 0 }
    }
}

fn graph() -> DialogueGraph {
    let (graph, diagnostics) = build_conversation("QuestFlow", QUEST_FLOW);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    graph
}

fn id(graph: &DialogueGraph, name: &str) -> VertexId {
    graph
        .find(name)
        .unwrap_or_else(|| panic!("no vertex {name}"))
}

fn open(graph: &DialogueGraph, entry: &str) -> Walk {
    Walk::open(graph, id(graph, entry), &NoFacts)
        .expect("opens")
        .0
}

const NETS_CHECK: &str = "Nets|Paid|NotYet";

#[test]
fn opening_shows_the_entry_line_and_its_responses_whose_conditions_hold() {
    let g = graph();
    let walk = open(&g, "Greet");
    assert!(walk.is_reachable(id(&g, "Greet")));
    assert!(walk.is_reachable(id(&g, "Greet_r1")));
    assert!(
        !walk.is_reachable(id(&g, "Greet_r2")),
        "coins < 100 hides it"
    );
    assert!(walk.is_reachable(id(&g, "Greet_r3")));
    assert!(!walk.is_reachable(id(&g, "Accepted")));
    let choices: Vec<_> = walk.choices(&g, id(&g, "Greet"), &NoFacts).collect();
    assert_eq!(choices, vec![id(&g, "Greet_r1"), id(&g, "Greet_r3")]);

    let rich = Walk::open(&g, id(&g, "Greet"), &Rich(150))
        .expect("opens")
        .0;
    assert!(rich.is_reachable(id(&g, "Greet_r2")));
}

#[test]
fn choosing_a_response_arms_its_actions_and_shows_the_reply() {
    let g = graph();
    let mut walk = open(&g, "Greet");
    let shown = walk.choose(&g, id(&g, "Greet_r1"), &NoFacts);
    assert_eq!(shown, Ok(Shown::Line(id(&g, "Accepted"))));
    // The reply's own node action is armed by showing it.
    assert!(walk.take_action(&g, ActionType::TrackQuest, "Nets").is_ok());
    assert!(
        walk.take_action(&g, ActionType::AcceptQuest, "Nets")
            .is_ok()
    );
    assert_eq!(
        walk.take_action(&g, ActionType::AcceptQuest, "Nets"),
        Err(WalkError::NotArmed),
        "an arming runs once"
    );
}

#[test]
fn a_payload_that_differs_from_the_authored_one_is_refused() {
    let g = graph();
    let mut walk = open(&g, "Greet");
    walk.choose(&g, id(&g, "Greet_r1"), &NoFacts)
        .expect("chosen");
    let before = walk.clone();
    assert_eq!(
        walk.take_action(&g, ActionType::AcceptQuest, "SomeOtherQuest"),
        Err(WalkError::PayloadMismatch)
    );
    assert_eq!(
        walk.take_action(&g, ActionType::CompleteQuest, "Nets"),
        Err(WalkError::NotArmed)
    );
    assert_eq!(walk, before, "rejections change nothing");
}

#[test]
fn advancing_is_only_valid_from_a_shown_line_that_waits_for_the_player() {
    let g = graph();
    let mut walk = open(&g, "Greet");
    let before = walk.clone();
    assert_eq!(
        walk.advance(&g, id(&g, "Greet"), &NoFacts),
        Err(WalkError::AwaitsChoice)
    );
    assert_eq!(
        walk.advance(&g, id(&g, "Accepted"), &NoFacts),
        Err(WalkError::NotReachable)
    );
    assert_eq!(
        walk.advance(&g, id(&g, "Greet_r1"), &NoFacts),
        Err(WalkError::NotALine)
    );
    assert_eq!(
        walk.advance(&g, VertexId(10_000), &NoFacts),
        Err(WalkError::UnknownVertex)
    );
    assert_eq!(walk, before);

    walk.choose(&g, id(&g, "Greet_r1"), &NoFacts)
        .expect("chosen");
    assert_eq!(
        walk.advance(&g, id(&g, "Accepted"), &NoFacts),
        Ok(Shown::Line(id(&g, "Bye")))
    );
    assert_eq!(walk.advance(&g, id(&g, "Bye"), &NoFacts), Ok(Shown::End));
}

#[test]
fn choosing_is_only_valid_for_a_shown_response_whose_conditions_still_hold() {
    let g = graph();
    let mut walk = Walk::open(&g, id(&g, "Greet"), &Rich(150))
        .expect("opens")
        .0;
    let before = walk.clone();
    assert_eq!(
        walk.choose(&g, id(&g, "Greet"), &Rich(150)),
        Err(WalkError::NotAResponse)
    );
    assert_eq!(
        walk.choose(&g, id(&g, "Check_r1"), &Rich(150)),
        Err(WalkError::NotReachable)
    );
    // Shown while rich; spent the coins since: the server re-evaluates.
    assert_eq!(
        walk.choose(&g, id(&g, "Greet_r2"), &Rich(10)),
        Err(WalkError::ConditionFailed)
    );
    assert_eq!(walk, before);
    assert!(walk.choose(&g, id(&g, "Greet_r2"), &Rich(150)).is_ok());
}

#[test]
fn a_check_quest_response_waits_for_the_servers_jump() {
    let g = graph();
    let mut walk = open(&g, "Check");
    assert_eq!(
        walk.choose(&g, id(&g, "Check_r1"), &NoFacts),
        Ok(Shown::AwaitJump)
    );
    assert!(!walk.is_reachable(id(&g, "NotYet")));
    assert!(!walk.is_reachable(id(&g, "Paid")));
    assert!(
        walk.take_action(&g, ActionType::CheckQuest, NETS_CHECK)
            .is_ok()
    );
    assert_eq!(
        walk.jump_to(&g, id(&g, "NotYet"), &NoFacts),
        Ok(Shown::Line(id(&g, "NotYet")))
    );
    assert!(walk.is_reachable(id(&g, "NotYet")));
    assert_eq!(
        walk.jump_to(&g, id(&g, "Check_r1"), &NoFacts),
        Err(WalkError::BadJumpTarget)
    );
}

#[test]
fn a_line_carrying_check_quest_cannot_be_advanced_past() {
    let g = graph();
    let mut walk = open(&g, "SelfCheck");
    assert_eq!(
        walk.advance(&g, id(&g, "SelfCheck"), &NoFacts),
        Err(WalkError::AwaitsJump)
    );
    assert!(
        walk.take_action(&g, ActionType::CheckQuest, NETS_CHECK)
            .is_ok()
    );
}

#[test]
fn the_quest_check_loop_re_arms_but_never_stockpiles_more_than_two() {
    let g = graph();
    let mut walk = open(&g, "Check");
    for _ in 0..10 {
        walk.choose(&g, id(&g, "Check_r1"), &NoFacts)
            .expect("check");
        walk.jump_to(&g, id(&g, "NotYet"), &NoFacts).expect("jump");
        assert_eq!(
            walk.advance(&g, id(&g, "NotYet"), &NoFacts),
            Ok(Shown::Line(id(&g, "Check")))
        );
    }
    let runs = (0..10)
        .filter(|_| {
            walk.take_action(&g, ActionType::CheckQuest, NETS_CHECK)
                .is_ok()
        })
        .count();
    assert_eq!(
        runs, 2,
        "ten passes through the loop stockpile at most two runs"
    );
}

#[test]
fn a_branch_falls_through_to_the_first_target_whose_conditions_hold() {
    let g = graph();
    let mut poor = open(&g, "Route");
    assert_eq!(
        poor.advance(&g, id(&g, "Route"), &NoFacts),
        Ok(Shown::Line(id(&g, "PoorLine")))
    );
    assert!(!poor.is_reachable(id(&g, "RichLine")));
    let mut rich = Walk::open(&g, id(&g, "Route"), &Rich(500))
        .expect("opens")
        .0;
    assert_eq!(
        rich.advance(&g, id(&g, "Route"), &Rich(500)),
        Ok(Shown::Line(id(&g, "RichLine")))
    );
}

#[test]
fn a_closed_conversation_refuses_everything() {
    let g = graph();
    let mut walk = open(&g, "Greet");
    walk.close();
    assert_eq!(
        walk.choose(&g, id(&g, "Greet_r1"), &NoFacts),
        Err(WalkError::Closed)
    );
    assert_eq!(
        walk.take_action(&g, ActionType::AcceptQuest, "Nets"),
        Err(WalkError::Closed)
    );
}

#[test]
fn the_client_sends_node_actions_on_show_and_response_actions_after_the_reply() {
    let g = graph();
    let mut out = Vec::new();
    let mut client = ClientWalk::open(&g, id(&g, "Greet"), &NoFacts, &mut out).expect("opens");
    assert!(out.is_empty(), "Greet has no node actions");
    client
        .choose(&g, id(&g, "Greet_r1"), &NoFacts, &mut out)
        .expect("chosen");
    let track = g.actions(id(&g, "Accepted")).next().expect("track").0;
    let accept = g.actions(id(&g, "Greet_r1")).next().expect("accept").0;
    assert_eq!(
        out,
        vec![
            Outgoing::Choose(id(&g, "Greet_r1")),
            Outgoing::Action(track)
        ],
        "AcceptQuest is held until the player advances past the reply"
    );
    out.clear();
    client
        .advance_current(&g, &NoFacts, &mut out)
        .expect("advance");
    assert_eq!(
        out,
        vec![
            Outgoing::Advance(id(&g, "Accepted")),
            Outgoing::Action(accept)
        ]
    );
    assert_eq!(client.screen(), Screen::Line(id(&g, "Bye")));
}

#[test]
fn the_client_waits_for_the_jump_after_a_check_quest_response() {
    let g = graph();
    let mut out = Vec::new();
    let mut client = ClientWalk::open(&g, id(&g, "Check"), &NoFacts, &mut out).expect("opens");
    client
        .choose(&g, id(&g, "Check_r1"), &NoFacts, &mut out)
        .expect("chosen");
    let check = g.actions(id(&g, "Check_r1")).next().expect("check").0;
    assert_eq!(
        out,
        vec![
            Outgoing::Choose(id(&g, "Check_r1")),
            Outgoing::Action(check)
        ]
    );
    assert_eq!(client.screen(), Screen::Waiting);
    assert!(!client.can_advance(&g, &NoFacts));
    // Until the jump, the walk (the server's, and so the client's) refuses every step, even a
    // response that is still in `R`.
    assert_eq!(
        client.choose(&g, id(&g, "Check_r1"), &NoFacts, &mut out),
        Err(WalkError::AwaitsJump)
    );
    assert_eq!(
        client.advance(&g, id(&g, "Check"), &NoFacts, &mut out),
        Err(WalkError::AwaitsJump)
    );
    out.clear();
    client
        .jump(&g, id(&g, "Paid"), &NoFacts, &mut out)
        .expect("jump");
    let complete = g.actions(id(&g, "Paid")).next().expect("complete").0;
    assert_eq!(out, vec![Outgoing::Action(complete)]);
}

#[test]
fn per_conversation_state_is_small() {
    let g = graph();
    let mut walk = open(&g, "Greet");
    walk.choose(&g, id(&g, "Greet_r1"), &NoFacts)
        .expect("chosen");
    walk.advance(&g, id(&g, "Accepted"), &NoFacts)
        .expect("advance");
    // A whole accept flow: a handful of vertices, two armings and the visits it counted
    // (issue 36 added the counts, the showing sequence, the draws and the seed: 208 bytes).
    assert!(walk.footprint() <= 224, "{} bytes", walk.footprint());
}

#[test]
fn a_snapshot_takes_the_walk_back_exactly_and_a_tampered_one_is_refused() {
    let g = graph();
    let mut walk = open(&g, "Greet");
    walk.choose(&g, id(&g, "Greet_r1"), &NoFacts)
        .expect("chosen");
    let snapshot = walk.snapshot();
    let text = serde_json::to_string(&snapshot).expect("json");
    let back: banter_dialogue::WalkSnapshot = serde_json::from_str(&text).expect("parsed");
    assert_eq!(Walk::restore(&g, &back), Ok(walk.clone()));
    // The taken-back walk runs the armed action, once, like the original.
    let mut taken_back = Walk::restore(&g, &back).expect("restored");
    assert!(
        taken_back
            .take_action(&g, ActionType::AcceptQuest, "Nets")
            .is_ok()
    );
    assert_eq!(
        taken_back.take_action(&g, ActionType::AcceptQuest, "Nets"),
        Err(WalkError::NotArmed)
    );

    let vertices = u32::try_from(g.len()).expect("small");
    let mut far = snapshot.clone();
    far.reachable.push(vertices);
    assert_eq!(
        Walk::restore(&g, &far),
        Err(banter_dialogue::SnapshotError::UnknownVertex(vertices))
    );
    let mut forged = snapshot.clone();
    forged.armed.push((9_999, 1));
    assert_eq!(
        Walk::restore(&g, &forged),
        Err(banter_dialogue::SnapshotError::UnknownAction(9_999))
    );
    let mut stockpiled = snapshot;
    stockpiled.armed[0].1 = 200;
    assert!(matches!(
        Walk::restore(&g, &stockpiled),
        Err(banter_dialogue::SnapshotError::OverArmed { .. })
    ));
}

#[test]
fn a_response_shown_earlier_may_be_picked_again_and_a_line_advanced_again() {
    let g = graph();
    let mut out = Vec::new();
    let mut client = ClientWalk::open(&g, id(&g, "Greet"), &NoFacts, &mut out).expect("opens");
    client
        .choose(&g, id(&g, "Greet_r3"), &NoFacts, &mut out)
        .expect("chosen");
    // `Greet_r1` is no longer on screen, but it is in `R`: the server accepts it, so the
    // client does too, and the held actions go out with it.
    out.clear();
    client
        .choose(&g, id(&g, "Greet_r1"), &NoFacts, &mut out)
        .expect("picked again");
    assert_eq!(out.first(), Some(&Outgoing::Choose(id(&g, "Greet_r1"))));
    assert_eq!(client.screen(), Screen::Line(id(&g, "Accepted")));
}

#[test]
fn a_line_whose_responses_all_fail_now_is_advanced_past_and_ends_the_conversation() {
    let (g, diagnostics) = build_conversation(
        "Purse",
        r#"{ "FirstNode": "Offer", "Offer": { "Text": "Buy a lamp?", "Responses": [
            { "Text": "Here's 100.", "Conditions": "coins >= 100", "NextNode": "Sold" } ] },
            "Sold": { "Text": "A fine lamp.", "Close": true } }"#,
    );
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    let offer = id(&g, "Offer");
    let (mut walk, _) = Walk::open(&g, offer, &Rich(150)).expect("opens");
    assert_eq!(
        walk.clone().advance(&g, offer, &Rich(150)),
        Err(WalkError::AwaitsChoice)
    );
    // The player spent the coins elsewhere: the response shown with the line no longer holds,
    // so it is not a choice, picking it is refused, and the line waits for nothing: advancing
    // past it is accepted (no soft lock) and, a line with responses having no other exit, ends
    // the conversation.
    assert_eq!(walk.choices(&g, offer, &Rich(0)).count(), 0);
    assert_eq!(
        walk.choose(&g, id(&g, "Offer_r1"), &Rich(0)),
        Err(WalkError::ConditionFailed)
    );
    assert_eq!(walk.advance(&g, offer, &Rich(0)), Ok(Shown::End));
    // Shown to a poor player in the first place, the line has no choice at all: the same.
    let (mut poor, _) = Walk::open(&g, offer, &Rich(0)).expect("opens");
    assert_eq!(poor.advance(&g, offer, &Rich(0)), Ok(Shown::End));
}

#[test]
fn the_end_of_the_walk_sends_the_held_actions_then_close() {
    let g = graph();
    let mut out = Vec::new();
    let mut client = ClientWalk::open(&g, id(&g, "Greet"), &NoFacts, &mut out).expect("opens");
    client
        .choose(&g, id(&g, "Greet_r1"), &NoFacts, &mut out)
        .expect("chosen");
    client
        .advance_current(&g, &NoFacts, &mut out)
        .expect("advance");
    out.clear();
    client
        .advance_current(&g, &NoFacts, &mut out)
        .expect("advance past the last line");
    assert_eq!(out.last(), Some(&Outgoing::Close));
    assert_eq!(client.screen(), Screen::Ended);
    assert_eq!(
        client.advance(&g, id(&g, "Bye"), &NoFacts, &mut out),
        Err(WalkError::Closed),
        "closed: no_conversation, as the server answers after `close`"
    );
}
