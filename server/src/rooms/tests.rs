//! The rooms of shared conversations as pure state (PROTOCOL.md sections 17.2 to 17.4): who is
//! told what, who leads, and how each ballot is decided, on the sample content's `Wren` and on
//! a small conversation with one line per choice rule. No store, no clock: `now` is a fixed
//! `Duration` and every seed is written down.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use banter_dialogue::ballot;
use banter_dialogue::{DialogueGraph, VertexId, build_conversation};
use banter_protocol::{DecidedBy, LeftReason, Roll, ServerMessage, Vote};

use super::{
    Deadline, Decided, GroupStep, Opening, Out, Participant, RoomError, Rooms, SharedEvent,
};
use crate::served::ContentVersion;
use crate::testing::sample_content;

/// Server time when a test's room opens.
const NOW: Duration = Duration::from_secs(1_000);
const SEED: u64 = 0x5EED_F00D;
const PARTY: &str = "pty_test";
const NPC: &str = "wren";

/// One line per choice rule, in a chain so every line is reached: `Pick` is `Majority` with a
/// `First` tie and 10 s; `Lead` is `Leader`; `Agree` is `All`; `Dice` is `Roll` with 15 s.
const MODES: &str = r#"{
  "FirstNode": "Pick", "Speaker": "Wren",
  "Shared": { "Mode": "Majority", "TimeLimit": 10, "Tie": "First" },
  "Pick": { "Text": "Which way?", "Responses": [
    { "Text": "North.", "NextNode": "Lead" },
    { "Text": "East.", "NextNode": "Lead" },
    { "Text": "South.", "NextNode": "Lead" } ] },
  "Lead": { "Text": "Your leader decides.", "Choice": { "Mode": "Leader" }, "Responses": [
    { "Text": "Go.", "NextNode": "Agree" },
    { "Text": "Wait.", "NextNode": "Agree" } ] },
  "Agree": { "Text": "All of you, agreed?", "Choice": { "Mode": "All" }, "Responses": [
    { "Text": "Yes.", "NextNode": "Dice" },
    { "Text": "No.", "NextNode": "Dice" } ] },
  "Dice": { "Text": "Roll for it.", "Choice": { "Mode": "Roll", "TimeLimit": 15 }, "Responses": [
    { "Text": "Heads.", "NextNode": "End" },
    { "Text": "Tails.", "NextNode": "End" } ] },
  "End": { "Text": "Done.", "Close": true }
}"#;

// ---- fixtures ----

/// The sample content, loaded once for every test.
fn library() -> Arc<ContentVersion> {
    static LIBRARY: OnceLock<Arc<ContentVersion>> = OnceLock::new();
    LIBRARY
        .get_or_init(|| {
            Arc::new(ContentVersion::load(&sample_content(), 1).expect("sample content loads"))
        })
        .clone()
}

/// The sample's shared conversation: `Majority`, 20 s, tie `Leader`; `Ferry_Rowing` is `Roll`.
fn wren() -> Arc<DialogueGraph> {
    library()
        .conversations
        .get("Wren")
        .expect("the sample content has Wren")
        .graph
        .clone()
}

fn modes() -> Arc<DialogueGraph> {
    static MODES_GRAPH: OnceLock<Arc<DialogueGraph>> = OnceLock::new();
    MODES_GRAPH
        .get_or_init(|| {
            let (graph, diagnostics) = build_conversation("Modes", MODES);
            let errors: Vec<_> = diagnostics.iter().filter(|d| d.is_error()).collect();
            assert!(errors.is_empty(), "{errors:?}");
            assert!(graph.shared().is_some(), "Modes is shared");
            Arc::new(graph)
        })
        .clone()
}

fn at(graph: &DialogueGraph, name: &str) -> VertexId {
    graph
        .find(name)
        .unwrap_or_else(|| panic!("no vertex `{name}`"))
}

fn who(player: &str) -> Participant {
    Participant {
        player: player.to_owned(),
        session: player.bytes().map(u64::from).sum(),
    }
}

fn opening(
    party: &str,
    graph: &Arc<DialogueGraph>,
    line: &str,
    party_leader: &str,
    opener: &str,
    members: &[&str],
) -> Opening {
    Opening {
        party: party.to_owned(),
        party_leader: party_leader.to_owned(),
        npc: NPC.to_owned(),
        conversation: "Wren".to_owned(),
        library: library(),
        graph: graph.clone(),
        opener: who(opener),
        line: at(graph, line),
        members: members.iter().map(|m| (*m).to_owned()).collect(),
    }
}

/// Opens `party`'s room on `line` with `players[0]` and joins the others in order. Returns what
/// the open caused (its invitations and its ballot's deadline).
fn room_of(
    rooms: &Rooms,
    party: &str,
    graph: &Arc<DialogueGraph>,
    line: &str,
    party_leader: &str,
    players: &[&str],
    seed: u64,
) -> Out {
    let (_, _, out) = rooms
        .open(
            opening(party, graph, line, party_leader, players[0], players),
            seed,
            NOW,
        )
        .expect("the party had no room");
    for p in &players[1..] {
        rooms.join(party, NPC, who(p)).expect("the room is open");
    }
    out
}

/// `PARTY`'s room on `line` of `graph`, `players[0]` leading (the party's leader takes no part).
fn room(graph: &Arc<DialogueGraph>, line: &str, players: &[&str]) -> Rooms {
    let rooms = Rooms::default();
    room_of(&rooms, PARTY, graph, line, "nobody", players, SEED);
    rooms
}

fn vote(rooms: &Rooms, player: &str, graph: &DialogueGraph, response: &str) -> Out {
    rooms
        .vote(PARTY, player, at(graph, response))
        .unwrap_or_else(|e| panic!("{player}'s vote for {response} refused: {e}"))
}

fn participants(rooms: &Rooms) -> Vec<String> {
    rooms.view(PARTY).expect("room open").shared.participants
}

fn leader(rooms: &Rooms) -> String {
    rooms.view(PARTY).expect("room open").shared.leader
}

fn votes(rooms: &Rooms) -> Vec<Vote> {
    rooms.view(PARTY).expect("room open").shared.votes
}

fn v(player: &str, response: &str) -> Vote {
    Vote {
        player: player.to_owned(),
        response: response.to_owned(),
    }
}

fn names(players: &[&str]) -> Vec<String> {
    players.iter().map(|p| (*p).to_owned()).collect()
}

// ---- reading an `Out` ----

fn recipients(out: &Out) -> Vec<&str> {
    out.deliveries.iter().map(|d| d.player.as_str()).collect()
}

/// The `Say`s, to whom.
fn says(out: &Out) -> Vec<(&str, &ServerMessage)> {
    out.deliveries
        .iter()
        .filter_map(|d| match &d.event {
            SharedEvent::Say(m) => Some((d.player.as_str(), m)),
            _ => None,
        })
        .collect()
}

/// The `Decide`s, to whom (each checked to name the party).
fn decides<'a>(out: &'a Out, party: &str) -> Vec<(&'a str, &'a Decided)> {
    out.deliveries
        .iter()
        .filter_map(|d| match &d.event {
            SharedEvent::Decide { party: p, decided } => {
                assert_eq!(p, party);
                Some((d.player.as_str(), decided))
            }
            _ => None,
        })
        .collect()
}

/// The one decision `out` sends, and to whom.
fn the_decision(out: &Out) -> (&str, &Decided) {
    let decides = decides(out, PARTY);
    assert_eq!(decides.len(), 1, "one decision in {out:?}");
    decides[0]
}

fn follows<'a>(out: &'a Out, party: &str) -> Vec<(&'a str, &'a GroupStep)> {
    out.deliveries
        .iter()
        .filter_map(|d| match &d.event {
            SharedEvent::Follow { party: p, step } => {
                assert_eq!(p, party);
                Some((d.player.as_str(), &**step))
            }
            _ => None,
        })
        .collect()
}

fn invites(out: &Out) -> Vec<(&str, &str)> {
    out.deliveries
        .iter()
        .filter_map(|d| match &d.event {
            SharedEvent::Invite { party } => Some((d.player.as_str(), party.as_str())),
            _ => None,
        })
        .collect()
}

fn voted(player: &str, response: &str) -> ServerMessage {
    ServerMessage::Voted {
        player: player.to_owned(),
        response: response.to_owned(),
    }
}

fn roster(
    leader: &str,
    participants: &[&str],
    joined: Option<&str>,
    left: Option<(&str, LeftReason)>,
) -> ServerMessage {
    ServerMessage::Participants {
        leader: leader.to_owned(),
        participants: names(participants),
        joined: joined.map(str::to_owned),
        left: left.map(|(p, _)| p.to_owned()),
        reason: left.map(|(_, r)| r),
    }
}

/// `message` to each of `to`, in that order, and nothing else.
fn assert_told(out: &Out, message: &ServerMessage, to: &[&str]) {
    let expected: Vec<(&str, &ServerMessage)> = to.iter().map(|p| (*p, message)).collect();
    assert_eq!(says(out), expected, "in {out:?}");
    assert_eq!(recipients(out), to, "nothing but the message in {out:?}");
}

// ---- open ----

#[test]
fn open_makes_the_opener_the_only_participant_and_leader_and_invites_the_other_members() {
    let rooms = Rooms::default();
    let graph = wren();
    let (view, generation, out) = rooms
        .open(
            opening(
                PARTY,
                &graph,
                "Ferry_Greet",
                "ana",
                "bo",
                &["ana", "bo", "cy", "di"],
            ),
            SEED,
            NOW,
        )
        .expect("opens");
    assert_eq!(view.party, PARTY);
    assert_eq!(view.participants, names(&["bo"]));
    // The party's leader takes no part yet: the opener leads.
    assert_eq!(view.leader, "bo");
    assert!(view.votes.is_empty());
    assert!(rooms.leads(PARTY, "bo"));
    assert!(!rooms.leads(PARTY, "ana"));
    assert_eq!(rooms.generation(PARTY), Some(generation));

    // Every other member is invited, the opener is not, nothing else is said.
    assert_eq!(
        invites(&out),
        vec![("ana", PARTY), ("cy", PARTY), ("di", PARTY)]
    );
    assert_eq!(out.deliveries.len(), 3);
    assert!(!out.emptied);

    // Ferry_Greet's ballot is Majority with 20 s.
    let deadline = out
        .deadline
        .clone()
        .expect("a Majority ballot has a time limit");
    assert_eq!(deadline.party, PARTY);
    assert_eq!(deadline.at, NOW + Duration::from_secs(20));
    assert_eq!(rooms.deadline(PARTY), Some(deadline));

    let room = rooms.view(PARTY).expect("open");
    assert_eq!(room.npc, NPC);
    assert_eq!(room.conversation, "Wren");
    assert_eq!(room.line, at(&graph, "Ferry_Greet"));
    assert!(Arc::ptr_eq(&room.graph, &graph));
    assert_eq!(room.shared, view);
}

#[test]
fn open_of_a_party_that_has_a_room_returns_none_and_changes_nothing() {
    let rooms = Rooms::default();
    let graph = wren();
    let (_, generation, _) = rooms
        .open(
            opening(PARTY, &graph, "Ferry_Greet", "ana", "ana", &["ana", "bo"]),
            SEED,
            NOW,
        )
        .expect("opens");
    let again = rooms.open(
        opening(PARTY, &graph, "Wren_Hello", "ana", "bo", &["ana", "bo"]),
        SEED,
        NOW,
    );
    assert!(again.is_none());
    assert_eq!(participants(&rooms), names(&["ana"]));
    assert_eq!(leader(&rooms), "ana");
    assert_eq!(
        rooms.view(PARTY).expect("open").line,
        at(&graph, "Ferry_Greet")
    );
    assert_eq!(rooms.generation(PARTY), Some(generation));

    // Another party opens a room of its own, of another generation.
    let (_, other, _) = rooms
        .open(
            opening("pty_other", &graph, "Ferry_Greet", "cy", "cy", &["cy"]),
            SEED,
            NOW,
        )
        .expect("another party opens");
    assert_ne!(other, generation);
}

#[test]
fn open_on_a_line_without_responses_or_without_a_time_limit_sets_no_deadline() {
    let graph = wren();
    // Ferry_Skiff goes on by NextNode: no ballot at all.
    let rooms = Rooms::default();
    let out = room_of(&rooms, PARTY, &graph, "Ferry_Skiff", "ana", &["ana"], SEED);
    assert_eq!(out.deadline, None);
    assert_eq!(rooms.deadline(PARTY), None);
    assert_eq!(
        rooms.vote(PARTY, "ana", at(&graph, "Ferry_Greet_r1")).err(),
        Some(RoomError::NotCurrent)
    );

    // Ferry_Rowing is Roll without a time limit: a ballot, no deadline.
    let rooms = Rooms::default();
    let out = room_of(&rooms, PARTY, &graph, "Ferry_Rowing", "ana", &["ana"], SEED);
    assert_eq!(out.deadline, None);
    assert_eq!(rooms.deadline(PARTY), None);

    // Modes' Agree is All, which never has one; its Dice is Roll with 15 s.
    let rooms = Rooms::default();
    let out = room_of(&rooms, PARTY, &modes(), "Agree", "ana", &["ana"], SEED);
    assert_eq!(out.deadline, None);
    let rooms = Rooms::default();
    let out = room_of(&rooms, PARTY, &modes(), "Dice", "ana", &["ana"], SEED);
    assert_eq!(
        out.deadline.map(|d| d.at),
        Some(NOW + Duration::from_secs(15))
    );
}

// ---- join ----

#[test]
fn a_joiner_is_added_in_order_and_everyone_else_is_told() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana"]);

    let (view, out) = rooms.join(PARTY, NPC, who("bo")).expect("joins");
    assert_eq!(view.shared.participants, names(&["ana", "bo"]));
    assert_eq!(view.shared.leader, "ana");
    assert_eq!(view.line, at(&graph, "Ferry_Greet"));
    assert_eq!(view.npc, NPC);
    assert_told(
        &out,
        &roster("ana", &["ana", "bo"], Some("bo"), None),
        &["ana"],
    );
    assert_eq!(out.deadline, None);

    let (view, out) = rooms.join(PARTY, NPC, who("cy")).expect("joins");
    assert_eq!(view.shared.participants, names(&["ana", "bo", "cy"]));
    assert_told(
        &out,
        &roster("ana", &["ana", "bo", "cy"], Some("cy"), None),
        &["ana", "bo"],
    );
}

#[test]
fn a_joiner_is_shown_the_votes_cast_so_far() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy"]);
    vote(&rooms, "bo", &graph, "Ferry_Greet_r2");
    let (view, _) = rooms.join(PARTY, NPC, who("di")).expect("joins");
    assert_eq!(view.shared.votes, vec![v("bo", "Ferry_Greet_r2")]);
}

#[test]
fn the_party_leader_joining_later_takes_the_conversations_lead() {
    let graph = wren();
    let rooms = Rooms::default();
    room_of(
        &rooms,
        PARTY,
        &graph,
        "Ferry_Greet",
        "cy",
        &["ana", "bo"],
        SEED,
    );
    assert_eq!(leader(&rooms), "ana");

    let (view, out) = rooms.join(PARTY, NPC, who("cy")).expect("joins");
    assert_eq!(view.shared.leader, "cy");
    assert_eq!(view.shared.participants, names(&["ana", "bo", "cy"]));
    assert_told(
        &out,
        &roster("cy", &["ana", "bo", "cy"], Some("cy"), None),
        &["ana", "bo"],
    );
    assert!(rooms.leads(PARTY, "cy"));
    assert!(!rooms.leads(PARTY, "ana"));
}

#[test]
fn join_of_a_party_without_a_room_or_with_another_npc_is_none() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana"]);
    assert!(rooms.join("pty_nobody", NPC, who("bo")).is_none());
    assert!(rooms.join(PARTY, "mara", who("bo")).is_none());
    assert_eq!(participants(&rooms), names(&["ana"]));
}

#[test]
fn a_participant_joining_again_keeps_its_place() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy"]);
    let (view, out) = rooms
        .join(
            PARTY,
            NPC,
            Participant {
                player: "ana".to_owned(),
                session: 999,
            },
        )
        .expect("joins");
    assert_eq!(view.shared.participants, names(&["ana", "bo", "cy"]));
    // The others hear of it as a join all the same.
    assert_told(
        &out,
        &roster("ana", &["ana", "bo", "cy"], Some("ana"), None),
        &["bo", "cy"],
    );
}

// ---- vote ----

#[test]
fn a_vote_from_outside_the_room_is_refused() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo"]);
    let r1 = at(&graph, "Ferry_Greet_r1");
    assert_eq!(
        rooms.vote(PARTY, "mallory", r1).err(),
        Some(RoomError::NotParticipant)
    );
    assert_eq!(
        rooms.vote("pty_nobody", "ana", r1).err(),
        Some(RoomError::NoRoom)
    );
    assert!(votes(&rooms).is_empty());
}

#[test]
fn a_vote_for_anything_but_the_current_lines_responses_is_not_current() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy"]);
    for other in [
        "Ferry_Rowing_r1",
        "Wren_Hello_r2",
        "Ferry_Greet",
        "Ferry_Skiff",
    ] {
        assert_eq!(
            rooms.vote(PARTY, "bo", at(&graph, other)).err(),
            Some(RoomError::NotCurrent),
            "{other}"
        );
    }
    assert!(votes(&rooms).is_empty());

    // Once decided, the ballot is closed until the leader's walk moves.
    vote(&rooms, "ana", &graph, "Ferry_Greet_r1");
    vote(&rooms, "bo", &graph, "Ferry_Greet_r1");
    assert_eq!(
        rooms.vote(PARTY, "cy", at(&graph, "Ferry_Greet_r2")).err(),
        Some(RoomError::NotCurrent)
    );
}

#[test]
fn everyone_but_the_voter_is_told_of_a_vote() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy", "di"]);
    let out = vote(&rooms, "bo", &graph, "Ferry_Greet_r2");
    assert_told(&out, &voted("bo", "Ferry_Greet_r2"), &["ana", "cy", "di"]);
    assert_eq!(out.deadline, None);
    assert!(!out.emptied);
    assert_eq!(votes(&rooms), vec![v("bo", "Ferry_Greet_r2")]);
}

#[test]
fn a_changed_vote_replaces_the_old_one_in_its_place() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy", "di"]);
    vote(&rooms, "bo", &graph, "Ferry_Greet_r2");
    vote(&rooms, "cy", &graph, "Ferry_Greet_r4");
    let out = vote(&rooms, "bo", &graph, "Ferry_Greet_r4");
    assert_told(&out, &voted("bo", "Ferry_Greet_r4"), &["ana", "cy", "di"]);
    assert_eq!(
        votes(&rooms),
        vec![v("bo", "Ferry_Greet_r4"), v("cy", "Ferry_Greet_r4")]
    );
}

#[test]
fn one_voter_voting_ten_times_counts_once() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy"]);
    for _ in 0..10 {
        let out = vote(&rooms, "bo", &graph, "Ferry_Greet_r2");
        assert!(
            decides(&out, PARTY).is_empty(),
            "one vote of three decides nothing"
        );
    }
    assert_eq!(votes(&rooms), vec![v("bo", "Ferry_Greet_r2")]);
    // Nor does it at the limit outweigh another single vote: a tie, broken by the leader.
    vote(&rooms, "ana", &graph, "Ferry_Greet_r1");
    let deadline = rooms.deadline(PARTY).expect("a time limit");
    let out = rooms.expire(PARTY, deadline.ballot);
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "ana");
    assert_eq!(decided.response, at(&graph, "Ferry_Greet_r1"));
    assert_eq!(decided.by, DecidedBy::TieLeader);
    assert_eq!(
        decided.votes,
        vec![v("bo", "Ferry_Greet_r2"), v("ana", "Ferry_Greet_r1")]
    );
}

// ---- Leader ----

#[test]
fn in_leader_mode_the_others_suggest_and_the_leaders_vote_decides() {
    let graph = modes();
    let rooms = room(&graph, "Lead", &["ana", "bo", "cy"]);
    let out = vote(&rooms, "bo", &graph, "Lead_r2");
    assert!(decides(&out, PARTY).is_empty());
    let out = vote(&rooms, "cy", &graph, "Lead_r2");
    assert!(
        decides(&out, PARTY).is_empty(),
        "two of three is no Majority here"
    );

    let out = vote(&rooms, "ana", &graph, "Lead_r1");
    // bo and cy hear ana's vote; ana (the leader) gets the decision.
    let said: Vec<&str> = says(&out).into_iter().map(|(p, _)| p).collect();
    assert_eq!(said, vec!["bo", "cy"]);
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "ana");
    assert_eq!(
        decided,
        &Decided {
            line: at(&graph, "Lead"),
            response: at(&graph, "Lead_r1"),
            by: DecidedBy::Leader,
            votes: vec![v("bo", "Lead_r2"), v("cy", "Lead_r2"), v("ana", "Lead_r1")],
            seed: SEED,
            rolls: Vec::new(),
        }
    );
    assert_eq!(out.deliveries.len(), 3);
    // Decided: the ballot is closed.
    assert!(votes(&rooms).is_empty());
    assert_eq!(rooms.deadline(PARTY), None);
}

// ---- Majority ----

#[test]
fn majority_decides_at_more_than_half_of_the_participants() {
    let graph = wren();
    // Three: two decide.
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy"]);
    assert!(decides(&vote(&rooms, "bo", &graph, "Ferry_Greet_r2"), PARTY).is_empty());
    let out = vote(&rooms, "cy", &graph, "Ferry_Greet_r2");
    let (to, decided) = the_decision(&out);
    assert_eq!(
        to, "ana",
        "the decision goes to the leader, who did not vote"
    );
    assert_eq!(decided.response, at(&graph, "Ferry_Greet_r2"));
    assert_eq!(decided.by, DecidedBy::Majority);
    assert_eq!(decided.line, at(&graph, "Ferry_Greet"));
    assert!(decided.rolls.is_empty());
    assert_eq!(
        rooms.deadline(PARTY),
        None,
        "a decided ballot has no deadline"
    );

    // Four: two do not (half is not more than half), three do.
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy", "di"]);
    assert!(decides(&vote(&rooms, "ana", &graph, "Ferry_Greet_r1"), PARTY).is_empty());
    assert!(decides(&vote(&rooms, "di", &graph, "Ferry_Greet_r1"), PARTY).is_empty());
    assert!(decides(&vote(&rooms, "bo", &graph, "Ferry_Greet_r4"), PARTY).is_empty());
    let out = vote(&rooms, "cy", &graph, "Ferry_Greet_r1");
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "ana");
    assert_eq!(
        (decided.response, decided.by),
        (at(&graph, "Ferry_Greet_r1"), DecidedBy::Majority)
    );
}

#[test]
fn with_two_participants_one_vote_does_not_decide() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo"]);
    let out = vote(&rooms, "ana", &graph, "Ferry_Greet_r1");
    assert!(decides(&out, PARTY).is_empty());
    assert_told(&out, &voted("ana", "Ferry_Greet_r1"), &["bo"]);
    let out = vote(&rooms, "bo", &graph, "Ferry_Greet_r2");
    assert!(decides(&out, PARTY).is_empty());
    // Both for the same: decided.
    let out = vote(&rooms, "bo", &graph, "Ferry_Greet_r1");
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "ana");
    assert_eq!(decided.by, DecidedBy::Majority);
}

#[test]
fn at_the_deadline_the_most_voted_response_wins() {
    let graph = wren();
    let rooms = Rooms::default();
    let open = room_of(
        &rooms,
        PARTY,
        &graph,
        "Ferry_Greet",
        "nobody",
        &["ana", "bo", "cy", "di", "ed"],
        SEED,
    );
    let deadline = open.deadline.expect("20 s");
    assert_eq!(deadline.at, NOW + Duration::from_secs(20));
    vote(&rooms, "ana", &graph, "Ferry_Greet_r2");
    vote(&rooms, "bo", &graph, "Ferry_Greet_r2");
    vote(&rooms, "cy", &graph, "Ferry_Greet_r1");
    vote(&rooms, "di", &graph, "Ferry_Greet_r4");
    // Votes do not move the deadline.
    assert_eq!(rooms.deadline(PARTY), Some(deadline.clone()));

    let out = rooms.expire(PARTY, deadline.ballot);
    let (to, decided) = the_decision(&out);
    assert_eq!(out.deliveries.len(), 1, "expire tells only the leader");
    assert_eq!(to, "ana");
    assert_eq!(decided.response, at(&graph, "Ferry_Greet_r2"));
    assert_eq!(decided.by, DecidedBy::Majority);
    assert_eq!(decided.votes.len(), 4);
    assert_eq!(out.deadline, None);
}

#[test]
fn a_tie_at_the_deadline_goes_to_the_leader_under_tie_leader() {
    // Wren: Tie Leader. The leader's pick is authored later than the other tied one.
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy", "di"]);
    vote(&rooms, "ana", &graph, "Ferry_Greet_r4");
    vote(&rooms, "bo", &graph, "Ferry_Greet_r2");
    vote(&rooms, "cy", &graph, "Ferry_Greet_r4");
    vote(&rooms, "di", &graph, "Ferry_Greet_r2");
    let deadline = rooms.deadline(PARTY).expect("20 s");
    let out = rooms.expire(PARTY, deadline.ballot);
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "ana");
    assert_eq!(
        (decided.response, decided.by),
        (at(&graph, "Ferry_Greet_r4"), DecidedBy::TieLeader)
    );

    // The leader voted for none of the tied: as First.
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy", "di", "ed"]);
    vote(&rooms, "ana", &graph, "Ferry_Greet_r1");
    vote(&rooms, "bo", &graph, "Ferry_Greet_r4");
    vote(&rooms, "cy", &graph, "Ferry_Greet_r4");
    vote(&rooms, "di", &graph, "Ferry_Greet_r2");
    vote(&rooms, "ed", &graph, "Ferry_Greet_r2");
    let deadline = rooms.deadline(PARTY).expect("20 s");
    let out = rooms.expire(PARTY, deadline.ballot);
    let (_, decided) = the_decision(&out);
    assert_eq!(
        (decided.response, decided.by),
        (at(&graph, "Ferry_Greet_r2"), DecidedBy::TieFirst)
    );
}

#[test]
fn a_tie_at_the_deadline_goes_to_the_first_authored_under_tie_first() {
    // Modes' Pick: Majority, 10 s, Tie First. The leader's pick is not what wins.
    let graph = modes();
    let rooms = Rooms::default();
    let open = room_of(
        &rooms,
        PARTY,
        &graph,
        "Pick",
        "nobody",
        &["ana", "bo", "cy", "di"],
        SEED,
    );
    let deadline = open.deadline.expect("10 s");
    assert_eq!(deadline.at, NOW + Duration::from_secs(10));
    vote(&rooms, "ana", &graph, "Pick_r3");
    vote(&rooms, "bo", &graph, "Pick_r3");
    vote(&rooms, "cy", &graph, "Pick_r2");
    vote(&rooms, "di", &graph, "Pick_r2");
    let out = rooms.expire(PARTY, deadline.ballot);
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "ana");
    assert_eq!(
        (decided.response, decided.by),
        (at(&graph, "Pick_r2"), DecidedBy::TieFirst)
    );
}

#[test]
fn with_no_vote_at_the_deadline_the_first_later_vote_decides() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy", "di"]);
    let deadline = rooms.deadline(PARTY).expect("20 s");
    let out = rooms.expire(PARTY, deadline.ballot);
    assert!(out.deliveries.is_empty(), "{out:?}");
    assert_eq!(out.deadline, None);
    // Still open for votes.
    assert_eq!(rooms.deadline(PARTY), Some(deadline));

    let out = vote(&rooms, "cy", &graph, "Ferry_Greet_r4");
    let said: Vec<&str> = says(&out).into_iter().map(|(p, _)| p).collect();
    assert_eq!(said, vec!["ana", "bo", "di"]);
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "ana");
    assert_eq!(
        (decided.response, decided.by),
        (at(&graph, "Ferry_Greet_r4"), DecidedBy::Majority)
    );
    assert_eq!(decided.votes, vec![v("cy", "Ferry_Greet_r4")]);
}

#[test]
fn an_expire_for_another_ballot_or_party_does_nothing() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy"]);
    vote(&rooms, "ana", &graph, "Ferry_Greet_r1");
    let deadline = rooms.deadline(PARTY).expect("20 s");
    assert!(
        rooms
            .expire(PARTY, deadline.ballot + 1)
            .deliveries
            .is_empty()
    );
    assert!(
        rooms
            .expire("pty_nobody", deadline.ballot)
            .deliveries
            .is_empty()
    );
    // Not expired by those: a second vote for another response still does not decide.
    let out = vote(&rooms, "bo", &graph, "Ferry_Greet_r2");
    assert!(decides(&out, PARTY).is_empty());

    // A ballot the walk moved past: its timer finds nothing to decide.
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo"]);
    let old = rooms.deadline(PARTY).expect("20 s");
    vote(&rooms, "ana", &graph, "Ferry_Greet_r1");
    rooms
        .moved(
            PARTY,
            "ana",
            GroupStep::Advanced {
                line: at(&graph, "Ferry_Greet"),
                node: Some(at(&graph, "Wren_Hello")),
            },
            Some(at(&graph, "Wren_Hello")),
            SEED,
            NOW + Duration::from_secs(5),
        )
        .expect("the leader moves");
    vote(&rooms, "bo", &graph, "Wren_Hello_r2");
    let new = rooms.deadline(PARTY).expect("Wren_Hello's ballot");
    assert_ne!(new.ballot, old.ballot);
    assert_eq!(new.at, NOW + Duration::from_secs(25));
    assert!(rooms.expire(PARTY, old.ballot).deliveries.is_empty());
    assert_eq!(votes(&rooms), vec![v("bo", "Wren_Hello_r2")]);
}

// ---- Roll ----

/// Ferry_Rowing with ana, bo, cy, everyone's vote cast in another order than they joined.
fn rowed(seed: u64) -> (Rooms, Out) {
    let graph = wren();
    let rooms = Rooms::default();
    room_of(
        &rooms,
        PARTY,
        &graph,
        "Ferry_Rowing",
        "nobody",
        &["ana", "bo", "cy"],
        seed,
    );
    let out = vote(&rooms, "cy", &graph, "Ferry_Rowing_r2");
    assert!(decides(&out, PARTY).is_empty());
    let out = vote(&rooms, "ana", &graph, "Ferry_Rowing_r1");
    assert!(decides(&out, PARTY).is_empty(), "a Roll waits for everyone");
    let out = vote(&rooms, "bo", &graph, "Ferry_Rowing_r2");
    (rooms, out)
}

#[test]
fn a_roll_decides_when_everyone_voted_with_every_roll_in_join_order() {
    let graph = wren();
    let (_, out) = rowed(SEED);
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "ana");
    assert_eq!(decided.by, DecidedBy::Roll);
    assert_eq!(decided.seed, SEED);
    let rolls: Vec<Roll> = ["ana", "bo", "cy"]
        .iter()
        .enumerate()
        .map(|(k, p)| Roll {
            player: (*p).to_owned(),
            roll: ballot::roll(SEED, k as u64),
        })
        .collect();
    assert_eq!(decided.rolls, rolls);
    // The highest roll wins, an equal highest going to the earlier joiner.
    let picks = ["Ferry_Rowing_r1", "Ferry_Rowing_r2", "Ferry_Rowing_r2"];
    let mut best = 0;
    for (k, r) in rolls.iter().enumerate() {
        if r.roll > rolls[best].roll {
            best = k;
        }
    }
    assert_eq!(decided.response, at(&graph, picks[best]));
    assert_eq!(
        decided.votes,
        vec![
            v("cy", "Ferry_Rowing_r2"),
            v("ana", "Ferry_Rowing_r1"),
            v("bo", "Ferry_Rowing_r2")
        ]
    );
}

#[test]
fn a_roll_is_the_same_for_the_same_seed() {
    for seed in [0, 1, SEED, u64::MAX] {
        let (_, first) = rowed(seed);
        let (_, second) = rowed(seed);
        assert_eq!(
            the_decision(&first).1,
            the_decision(&second).1,
            "seed {seed}"
        );
        assert_eq!(the_decision(&first).1.seed, seed);
    }
    // Some seed rolls differently from another.
    let rolls = |seed| the_decision(&rowed(seed).1).1.rolls.clone();
    assert!((1..20).any(|seed| rolls(seed) != rolls(0)));
}

#[test]
fn a_ballot_after_a_move_takes_the_seed_the_move_passed() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo"]);
    vote(&rooms, "ana", &graph, "Ferry_Greet_r1");
    let out = vote(&rooms, "bo", &graph, "Ferry_Greet_r1");
    let (_, decided) = the_decision(&out);
    assert_eq!(decided.seed, SEED, "the open's seed");
    let decided = decided.clone();
    let skiff = at(&graph, "Ferry_Skiff");
    let rowing = at(&graph, "Ferry_Rowing");
    rooms
        .moved(
            PARTY,
            "ana",
            GroupStep::Chosen {
                decided,
                node: Some(skiff),
            },
            Some(skiff),
            1,
            NOW,
        )
        .expect("the leader moves");
    rooms
        .moved(
            PARTY,
            "ana",
            GroupStep::Advanced {
                line: skiff,
                node: Some(rowing),
            },
            Some(rowing),
            777,
            NOW,
        )
        .expect("the leader advances");
    vote(&rooms, "bo", &graph, "Ferry_Rowing_r2");
    let out = vote(&rooms, "ana", &graph, "Ferry_Rowing_r1");
    let (_, decided) = the_decision(&out);
    assert_eq!(decided.seed, 777);
    assert_eq!(
        decided.rolls,
        vec![
            Roll {
                player: "ana".to_owned(),
                roll: ballot::roll(777, 0)
            },
            Roll {
                player: "bo".to_owned(),
                roll: ballot::roll(777, 1)
            },
        ]
    );
}

#[test]
fn a_fixed_seed_overrides_the_callers() {
    let graph = wren();
    let rooms = Rooms::default();
    rooms.fix_seed(Some(42));
    room_of(
        &rooms,
        PARTY,
        &graph,
        "Ferry_Rowing",
        "nobody",
        &["ana", "bo"],
        SEED,
    );
    vote(&rooms, "ana", &graph, "Ferry_Rowing_r1");
    let out = vote(&rooms, "bo", &graph, "Ferry_Rowing_r2");
    assert_eq!(the_decision(&out).1.seed, 42);

    rooms.fix_seed(None);
    let rooms2 = Rooms::default();
    room_of(
        &rooms2,
        PARTY,
        &graph,
        "Ferry_Rowing",
        "nobody",
        &["ana", "bo"],
        SEED,
    );
    vote(&rooms2, "ana", &graph, "Ferry_Rowing_r1");
    let out = vote(&rooms2, "bo", &graph, "Ferry_Rowing_r2");
    assert_eq!(the_decision(&out).1.seed, SEED);
}

#[test]
fn a_roll_with_a_time_limit_decides_at_it_with_the_votes_cast() {
    let graph = modes();
    let rooms = room(&graph, "Dice", &["ana", "bo", "cy"]);
    vote(&rooms, "cy", &graph, "Dice_r2");
    let deadline = rooms.deadline(PARTY).expect("15 s");
    let out = rooms.expire(PARTY, deadline.ballot);
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "ana");
    assert_eq!(decided.by, DecidedBy::Roll);
    assert_eq!(decided.response, at(&graph, "Dice_r2"));
    assert_eq!(
        decided.rolls,
        vec![Roll {
            player: "cy".to_owned(),
            roll: ballot::roll(SEED, 0)
        }]
    );
}

// ---- All ----

#[test]
fn all_decides_only_when_unanimous() {
    let graph = modes();
    let rooms = room(&graph, "Agree", &["ana", "bo", "cy"]);
    assert!(decides(&vote(&rooms, "ana", &graph, "Agree_r1"), PARTY).is_empty());
    assert!(decides(&vote(&rooms, "bo", &graph, "Agree_r1"), PARTY).is_empty());
    assert!(decides(&vote(&rooms, "cy", &graph, "Agree_r2"), PARTY).is_empty());
    assert!(decides(&vote(&rooms, "ana", &graph, "Agree_r2"), PARTY).is_empty());
    // All has no time limit.
    assert_eq!(rooms.deadline(PARTY), None);
    let out = vote(&rooms, "bo", &graph, "Agree_r2");
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "ana");
    assert_eq!(
        (decided.response, decided.by),
        (at(&graph, "Agree_r2"), DecidedBy::Unanimous)
    );
}

#[test]
fn all_waits_for_everyone_then_the_same_response() {
    let graph = modes();
    let rooms = room(&graph, "Agree", &["ana", "bo", "cy"]);
    vote(&rooms, "ana", &graph, "Agree_r1");
    vote(&rooms, "bo", &graph, "Agree_r1");
    let out = vote(&rooms, "cy", &graph, "Agree_r2");
    assert!(decides(&out, PARTY).is_empty(), "split");
    let out = vote(&rooms, "cy", &graph, "Agree_r1");
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "ana");
    assert_eq!(
        (decided.response, decided.by),
        (at(&graph, "Agree_r1"), DecidedBy::Unanimous)
    );
    assert_eq!(
        decided.votes,
        vec![
            v("ana", "Agree_r1"),
            v("bo", "Agree_r1"),
            v("cy", "Agree_r1")
        ]
    );
}

// ---- leave ----

#[test]
fn a_leaver_is_announced_to_everyone_else_with_the_reason() {
    let graph = wren();
    for reason in [
        LeftReason::Closed,
        LeftReason::WalkedAway,
        LeftReason::Dropped,
        LeftReason::LeftParty,
    ] {
        let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy"]);
        let out = rooms.leave(PARTY, "bo", reason);
        assert_told(
            &out,
            &roster("ana", &["ana", "cy"], None, Some(("bo", reason))),
            &["ana", "cy"],
        );
        assert!(!out.emptied);
        assert_eq!(participants(&rooms), names(&["ana", "cy"]));
    }
}

#[test]
fn a_leavers_vote_is_withdrawn() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy"]);
    vote(&rooms, "ana", &graph, "Ferry_Greet_r1");
    vote(&rooms, "cy", &graph, "Ferry_Greet_r2");
    let out = rooms.leave(PARTY, "cy", LeftReason::Closed);
    // One of two is not more than half.
    assert!(decides(&out, PARTY).is_empty());
    assert_eq!(votes(&rooms), vec![v("ana", "Ferry_Greet_r1")]);
}

#[test]
fn a_leaver_can_let_the_ballot_be_decided_by_those_who_remain() {
    // Majority: 2 of 4 is not enough; with the dissenter gone 2 of 3 is.
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy", "di"]);
    vote(&rooms, "ana", &graph, "Ferry_Greet_r1");
    vote(&rooms, "bo", &graph, "Ferry_Greet_r1");
    vote(&rooms, "cy", &graph, "Ferry_Greet_r2");
    let out = rooms.leave(PARTY, "cy", LeftReason::Dropped);
    let said: Vec<&str> = says(&out).into_iter().map(|(p, _)| p).collect();
    assert_eq!(said, vec!["ana", "bo", "di"]);
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "ana");
    assert_eq!(
        (decided.response, decided.by),
        (at(&graph, "Ferry_Greet_r1"), DecidedBy::Majority)
    );
    assert_eq!(
        decided.votes,
        vec![v("ana", "Ferry_Greet_r1"), v("bo", "Ferry_Greet_r1")]
    );

    // Roll: everyone who remains has voted.
    let rooms = room(&graph, "Ferry_Rowing", &["ana", "bo", "cy"]);
    vote(&rooms, "ana", &graph, "Ferry_Rowing_r1");
    vote(&rooms, "bo", &graph, "Ferry_Rowing_r2");
    let out = rooms.leave(PARTY, "cy", LeftReason::WalkedAway);
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "ana");
    assert_eq!(decided.by, DecidedBy::Roll);
    assert_eq!(decided.rolls.len(), 2);

    // All: the one who disagreed left.
    let graph = modes();
    let rooms = room(&graph, "Agree", &["ana", "bo", "cy"]);
    vote(&rooms, "ana", &graph, "Agree_r2");
    vote(&rooms, "bo", &graph, "Agree_r2");
    vote(&rooms, "cy", &graph, "Agree_r1");
    let out = rooms.leave(PARTY, "cy", LeftReason::Closed);
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "ana");
    assert_eq!(
        (decided.response, decided.by),
        (at(&graph, "Agree_r2"), DecidedBy::Unanimous)
    );
}

#[test]
fn the_leader_leaving_hands_the_lead_to_the_next_participant() {
    let graph = modes();
    let rooms = room(&graph, "Lead", &["ana", "bo", "cy"]);
    vote(&rooms, "cy", &graph, "Lead_r2");
    let out = rooms.leave(PARTY, "ana", LeftReason::Closed);
    assert_told(
        &out,
        &roster("bo", &["bo", "cy"], None, Some(("ana", LeftReason::Closed))),
        &["bo", "cy"],
    );
    assert!(rooms.leads(PARTY, "bo"));
    assert_eq!(leader(&rooms), "bo");
    // A Leader ballot waits for the new leader's vote.
    let out = vote(&rooms, "cy", &graph, "Lead_r1");
    assert!(decides(&out, PARTY).is_empty());
    let out = vote(&rooms, "bo", &graph, "Lead_r2");
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "bo");
    assert_eq!(
        (decided.response, decided.by),
        (at(&graph, "Lead_r2"), DecidedBy::Leader)
    );
}

#[test]
fn the_leader_leaving_lets_a_new_leader_who_voted_decide_at_once() {
    let graph = modes();
    let rooms = room(&graph, "Lead", &["ana", "bo", "cy"]);
    vote(&rooms, "bo", &graph, "Lead_r2");
    let out = rooms.leave(PARTY, "ana", LeftReason::Dropped);
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "bo");
    assert_eq!(
        (decided.response, decided.by),
        (at(&graph, "Lead_r2"), DecidedBy::Leader)
    );
}

#[test]
fn a_decision_waiting_for_a_leader_who_left_goes_to_the_new_leader() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy"]);
    vote(&rooms, "bo", &graph, "Ferry_Greet_r2");
    let out = vote(&rooms, "cy", &graph, "Ferry_Greet_r2");
    let (to, first) = the_decision(&out);
    assert_eq!(to, "ana");
    let first = first.clone();

    let out = rooms.leave(PARTY, "ana", LeftReason::Dropped);
    let (to, again) = the_decision(&out);
    assert_eq!(to, "bo");
    assert_eq!(again, &first);

    // The old leader's walk can no longer move the group; the new one's does.
    let step = GroupStep::Chosen {
        decided: first.clone(),
        node: Some(at(&graph, "Ferry_Barge")),
    };
    let barge = Some(at(&graph, "Ferry_Barge"));
    assert_eq!(
        rooms
            .moved(PARTY, "ana", step.clone(), barge, SEED, NOW)
            .map(|_| ()),
        Err(RoomError::NotLeader)
    );
    let out = rooms
        .moved(PARTY, "bo", step.clone(), barge, SEED, NOW)
        .expect("the new leader moves");
    assert_eq!(follows(&out, PARTY), vec![("cy", &step)]);
    // Applied: a later leader change sends nothing again.
    let out = rooms.leave(PARTY, "bo", LeftReason::Closed);
    assert!(decides(&out, PARTY).is_empty());
}

#[test]
fn the_last_one_out_closes_the_room() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo"]);
    let generation = rooms.generation(PARTY).expect("open");

    let out = rooms.leave(PARTY, "ana", LeftReason::Closed);
    assert!(!out.emptied);
    assert_told(
        &out,
        &roster("bo", &["bo"], None, Some(("ana", LeftReason::Closed))),
        &["bo"],
    );

    let deadline = rooms.deadline(PARTY).expect("still open");
    let out = rooms.leave(PARTY, "bo", LeftReason::Dropped);
    // Nobody is left to tell: the deliveries are empty and the room says it emptied.
    assert!(out.emptied);
    assert!(out.deliveries.is_empty(), "{out:?}");
    assert_eq!(out.deadline, None);

    assert!(rooms.view(PARTY).is_none());
    assert_eq!(rooms.generation(PARTY), None);
    assert_eq!(rooms.deadline(PARTY), None);
    assert!(!rooms.leads(PARTY, "bo"));
    assert_eq!(
        rooms.vote(PARTY, "bo", at(&graph, "Ferry_Greet_r1")).err(),
        Some(RoomError::NoRoom)
    );
    assert!(rooms.expire(PARTY, deadline.ballot).deliveries.is_empty());
    assert!(rooms.join(PARTY, NPC, who("bo")).is_none());
    let out = rooms.leave(PARTY, "bo", LeftReason::Dropped);
    assert!(!out.emptied && out.deliveries.is_empty());

    // The party may open another: a new generation.
    let (view, next, _) = rooms
        .open(
            opening(PARTY, &graph, "Wren_Hello", "bo", "bo", &["bo"]),
            SEED,
            NOW,
        )
        .expect("reopens");
    assert_ne!(next, generation);
    assert_eq!(view.participants, names(&["bo"]));
}

#[test]
fn leaving_a_room_one_is_not_in_does_nothing() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo"]);
    vote(&rooms, "bo", &graph, "Ferry_Greet_r1");
    let out = rooms.leave(PARTY, "mallory", LeftReason::Closed);
    assert!(out.deliveries.is_empty() && !out.emptied);
    let out = rooms.leave("pty_nobody", "ana", LeftReason::Closed);
    assert!(out.deliveries.is_empty() && !out.emptied);
    assert_eq!(participants(&rooms), names(&["ana", "bo"]));
    assert_eq!(votes(&rooms), vec![v("bo", "Ferry_Greet_r1")]);
}

// ---- party_changed ----

#[test]
fn a_new_party_leader_who_takes_part_leads_the_conversation() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy"]);
    assert_eq!(leader(&rooms), "ana");

    let out = rooms.party_changed(PARTY, "bo");
    assert_told(
        &out,
        &roster("bo", &["ana", "bo", "cy"], None, None),
        &["ana", "bo", "cy"],
    );
    assert!(rooms.leads(PARTY, "bo"));
    assert!(!rooms.leads(PARTY, "ana"));

    // The same leader again: nothing to say.
    assert!(rooms.party_changed(PARTY, "bo").deliveries.is_empty());
    // Unknown party: nothing.
    assert!(
        rooms
            .party_changed("pty_nobody", "bo")
            .deliveries
            .is_empty()
    );
}

#[test]
fn a_new_party_leader_who_takes_no_part_leaves_the_lead_to_the_first_participant() {
    let graph = wren();
    let rooms = Rooms::default();
    room_of(
        &rooms,
        PARTY,
        &graph,
        "Ferry_Greet",
        "bo",
        &["ana", "bo", "cy"],
        SEED,
    );
    assert_eq!(leader(&rooms), "bo");
    // Leadership of the party passes to someone outside the conversation: the first to join
    // leads it.
    let out = rooms.party_changed(PARTY, "zed");
    assert_told(
        &out,
        &roster("ana", &["ana", "bo", "cy"], None, None),
        &["ana", "bo", "cy"],
    );
    assert!(rooms.leads(PARTY, "ana"));

    // From one outsider to another: no change, nothing said.
    assert!(rooms.party_changed(PARTY, "yan").deliveries.is_empty());
    assert!(rooms.leads(PARTY, "ana"));
}

#[test]
fn a_new_leader_who_voted_decides_a_leader_ballot_at_once() {
    let graph = modes();
    let rooms = room(&graph, "Lead", &["ana", "bo", "cy"]);
    vote(&rooms, "cy", &graph, "Lead_r2");
    let out = rooms.party_changed(PARTY, "cy");
    let said: Vec<&str> = says(&out).into_iter().map(|(p, _)| p).collect();
    assert_eq!(said, vec!["ana", "bo", "cy"]);
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "cy");
    assert_eq!(
        (decided.response, decided.by),
        (at(&graph, "Lead_r2"), DecidedBy::Leader)
    );
}

#[test]
fn a_pending_decision_stays_its_deciders_when_the_party_leader_changes() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy"]);
    vote(&rooms, "bo", &graph, "Ferry_Greet_r2");
    let out = vote(&rooms, "cy", &graph, "Ferry_Greet_r2");
    let (to, first) = the_decision(&out);
    assert_eq!(to, "ana");
    let first = first.clone();
    // The lead passes to cy; ana's session may already have applied the decision, so it stays
    // hers to report: nothing is sent again, and her step is taken.
    let out = rooms.party_changed(PARTY, "cy");
    assert!(decides(&out, PARTY).is_empty());
    assert!(rooms.leads(PARTY, "cy"));
    let step = GroupStep::Chosen {
        decided: first.clone(),
        node: Some(at(&graph, "Ferry_Barge")),
    };
    let barge = Some(at(&graph, "Ferry_Barge"));
    assert_eq!(
        rooms
            .moved(PARTY, "cy", step.clone(), barge, SEED, NOW)
            .map(|_| ()),
        Err(RoomError::NotLeader),
        "the new leader did not take the decision"
    );
    let out = rooms
        .moved(PARTY, "ana", step.clone(), barge, SEED, NOW)
        .expect("the decider applies it");
    let mut followers: Vec<&str> = follows(&out, PARTY).into_iter().map(|(p, _)| p).collect();
    followers.sort_unstable();
    assert_eq!(followers, vec!["bo", "cy"]);
    // The next ballot is the new leader's.
    assert!(rooms.leads(PARTY, "cy"));
}

/// The party's leader joining takes the lead while a decision sent to the old leader is not yet
/// applied: the decision stays the old leader's (her walk may have moved already), her step is
/// taken and everyone else, the new leader included, follows it.
#[test]
fn a_decision_pending_when_the_party_leader_joins_stays_its_deciders() {
    let graph = wren();
    let rooms = Rooms::default();
    room_of(
        &rooms,
        PARTY,
        &graph,
        "Ferry_Greet",
        "cy",
        &["ana", "bo"],
        SEED,
    );
    vote(&rooms, "ana", &graph, "Ferry_Greet_r1");
    let out = vote(&rooms, "bo", &graph, "Ferry_Greet_r1");
    let (to, decided) = the_decision(&out);
    assert_eq!(to, "ana");
    let decided = decided.clone();

    let (_, out) = rooms.join(PARTY, NPC, who("cy")).expect("joins");
    assert!(rooms.leads(PARTY, "cy"));
    assert!(decides(&out, PARTY).is_empty());
    let skiff = Some(at(&graph, "Ferry_Skiff"));
    let step = GroupStep::Chosen {
        decided: decided.clone(),
        node: skiff,
    };
    let out = rooms
        .moved(PARTY, "ana", step, skiff, SEED, NOW)
        .expect("the decider's step is taken");
    let mut followers: Vec<&str> = follows(&out, PARTY).into_iter().map(|(p, _)| p).collect();
    followers.sort_unstable();
    assert_eq!(followers, vec!["bo", "cy"]);
}

// ---- moved ----

#[test]
fn every_other_participant_follows_the_leaders_step_and_the_next_line_opens_its_ballot() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo", "cy"]);
    vote(&rooms, "bo", &graph, "Ferry_Greet_r2");
    let out = vote(&rooms, "cy", &graph, "Ferry_Greet_r2");
    let decided = the_decision(&out).1.clone();
    let barge = at(&graph, "Ferry_Barge");
    let rowing = at(&graph, "Ferry_Rowing");

    let step = GroupStep::Chosen {
        decided,
        node: Some(barge),
    };
    let out = rooms
        .moved(PARTY, "ana", step.clone(), Some(barge), SEED, NOW)
        .expect("the leader moves");
    assert_eq!(follows(&out, PARTY), vec![("bo", &step), ("cy", &step)]);
    assert_eq!(out.deliveries.len(), 2);
    // Ferry_Barge has no responses: no ballot.
    assert_eq!(out.deadline, None);
    assert_eq!(rooms.view(PARTY).expect("open").line, barge);
    assert_eq!(
        rooms.vote(PARTY, "bo", at(&graph, "Ferry_Greet_r2")).err(),
        Some(RoomError::NotCurrent)
    );

    let step = GroupStep::Advanced {
        line: barge,
        node: Some(rowing),
    };
    let out = rooms
        .moved(PARTY, "ana", step.clone(), Some(rowing), SEED, NOW)
        .expect("the leader advances");
    assert_eq!(follows(&out, PARTY), vec![("bo", &step), ("cy", &step)]);
    assert_eq!(rooms.view(PARTY).expect("open").line, rowing);
    assert!(votes(&rooms).is_empty());
    vote(&rooms, "bo", &graph, "Ferry_Rowing_r1");

    // A quest check's jump back to a Majority line: a fresh ballot with its own deadline.
    let greet = at(&graph, "Ferry_Greet");
    let later = NOW + Duration::from_secs(60);
    let step = GroupStep::Jumped { node: greet };
    let out = rooms
        .moved(PARTY, "ana", step.clone(), Some(greet), SEED, later)
        .expect("the leader's check");
    assert_eq!(follows(&out, PARTY), vec![("bo", &step), ("cy", &step)]);
    let deadline = out.deadline.expect("a Majority line");
    assert_eq!(
        deadline,
        Deadline {
            party: PARTY.to_owned(),
            ballot: deadline.ballot,
            at: later + Duration::from_secs(20),
        }
    );
    assert!(votes(&rooms).is_empty(), "the old ballot's votes are gone");

    // The end: no line, no ballot; the room stays until its participants leave.
    let out = rooms
        .moved(
            PARTY,
            "ana",
            GroupStep::Advanced {
                line: greet,
                node: None,
            },
            None,
            SEED,
            later,
        )
        .expect("the leader ends it");
    assert_eq!(follows(&out, PARTY).len(), 2);
    assert_eq!(out.deadline, None);
    assert_eq!(rooms.deadline(PARTY), None);
    assert_eq!(
        rooms.vote(PARTY, "bo", at(&graph, "Ferry_Greet_r1")).err(),
        Some(RoomError::NotCurrent)
    );
}

#[test]
fn only_the_leader_moves_the_group() {
    let graph = wren();
    let rooms = room(&graph, "Ferry_Greet", &["ana", "bo"]);
    let step = GroupStep::Jumped {
        node: at(&graph, "Wren_Hello"),
    };
    let line = Some(at(&graph, "Wren_Hello"));
    for player in ["bo", "mallory"] {
        assert_eq!(
            rooms
                .moved(PARTY, player, step.clone(), line, SEED, NOW)
                .map(|_| ()),
            Err(RoomError::NotLeader),
            "{player}"
        );
    }
    assert_eq!(
        rooms
            .moved("pty_nobody", "ana", step, line, SEED, NOW)
            .map(|_| ()),
        Err(RoomError::NoRoom)
    );
    assert_eq!(
        rooms.view(PARTY).expect("open").line,
        at(&graph, "Ferry_Greet")
    );
}

// ---- cost ----

/// `n` participants of `party`, named after it.
fn members(party: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{party}_p{i}")).collect()
}

/// A Leader ballot with `n` participants (the first leads); the last one's vote, which decides
/// nothing when `n` > 1.
fn vote_among(rooms: &Rooms, party: &str, n: usize) -> Out {
    let graph = modes();
    let players = members(party, n);
    let refs: Vec<&str> = players.iter().map(String::as_str).collect();
    room_of(rooms, party, &graph, "Lead", "nobody", &refs, SEED);
    rooms
        .vote(party, &players[n - 1], at(&graph, "Lead_r1"))
        .expect("votes")
}

#[test]
fn a_vote_costs_one_delivery_per_other_participant_however_many_rooms_are_open() {
    let graph = modes();
    let crowded = Rooms::default();
    for i in 0..100 {
        let party = format!("pty_other{i}");
        let players = members(&party, 1 + i % 8);
        let refs: Vec<&str> = players.iter().map(String::as_str).collect();
        room_of(&crowded, &party, &graph, "Lead", "nobody", &refs, SEED);
        // Some of them mid-ballot.
        if refs.len() > 1 {
            crowded
                .vote(&party, refs[1], at(&graph, "Lead_r2"))
                .expect("votes");
        }
    }

    for n in 2..=8 {
        let party = format!("pty_n{n}");
        let alone = vote_among(&Rooms::default(), &party, n);
        let out = vote_among(&crowded, &party, n);
        assert_eq!(out.deliveries.len(), n - 1, "n = {n}");
        assert_eq!(out.deliveries.len(), alone.deliveries.len());
        let players = members(&party, n);
        let voter = &players[n - 1];
        let expected: Vec<&str> = players[..n - 1].iter().map(String::as_str).collect();
        assert_told(&out, &voted(voter, "Lead_r1"), &expected);

        // So do a step and a leave.
        let step = GroupStep::Advanced {
            line: at(&graph, "Lead"),
            node: Some(at(&graph, "Agree")),
        };
        let out = crowded
            .moved(
                &party,
                &players[0],
                step,
                Some(at(&graph, "Agree")),
                SEED,
                NOW,
            )
            .expect("the leader moves");
        assert_eq!(out.deliveries.len(), n - 1);
        assert!(
            recipients(&out)
                .iter()
                .all(|p| players[1..].iter().any(|q| q == p))
        );
        let out = crowded.leave(&party, voter, LeftReason::Closed);
        assert_eq!(out.deliveries.len(), n - 1);
        assert!(
            recipients(&out)
                .iter()
                .all(|p| players[..n - 1].iter().any(|q| q == p))
        );
    }

    // The other rooms are as they were.
    for i in 0..100 {
        let party = format!("pty_other{i}");
        let view = crowded.view(&party).expect("still open");
        assert_eq!(view.shared.participants, members(&party, 1 + i % 8));
        let expected = if i % 8 >= 1 {
            vec![Vote {
                player: format!("{party}_p1"),
                response: "Lead_r2".to_owned(),
            }]
        } else {
            Vec::new()
        };
        assert_eq!(view.shared.votes, expected);
    }
}

/// With a sink (as in the server), every call's events are handed over before the rooms' lock
/// is released: joins racing on two threads reach the first participant in the order they were
/// made, so each `participants` roster is longer than the one before it. The `Out` carries none.
#[test]
fn with_a_sink_rosters_reach_everyone_in_the_order_the_joins_were_made() {
    let graph = wren();
    for round in 0..200 {
        let told: Arc<std::sync::Mutex<Vec<super::Delivery>>> = Arc::default();
        let rooms = {
            let told = Arc::clone(&told);
            Arc::new(Rooms::delivering(move |d| {
                told.lock().expect("not poisoned").push(d);
            }))
        };
        room_of(
            &rooms,
            PARTY,
            &graph,
            "Ferry_Greet",
            "nobody",
            &["ana"],
            SEED,
        );
        let joiners: Vec<_> = ["bo", "cy", "di"]
            .into_iter()
            .map(|player| {
                let rooms = Arc::clone(&rooms);
                std::thread::spawn(move || {
                    let (_, out) = rooms.join(PARTY, NPC, who(player)).expect("joins");
                    assert!(out.deliveries.is_empty(), "the sink took them");
                })
            })
            .collect();
        for joiner in joiners {
            joiner.join().expect("no panic");
        }
        let sizes: Vec<usize> = told
            .lock()
            .expect("not poisoned")
            .iter()
            .filter(|d| d.player == "ana")
            .filter_map(|d| match &d.event {
                SharedEvent::Say(ServerMessage::Participants { participants, .. }) => {
                    Some(participants.len())
                }
                _ => None,
            })
            .collect();
        assert_eq!(sizes, vec![2, 3, 4], "round {round}");
    }
}
