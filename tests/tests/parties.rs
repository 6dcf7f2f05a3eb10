//! Parties and shared conversations over real WebSockets (PROTOCOL.md section 17): forming,
//! inviting, leaving, leadership handed on; one walk several players follow, votes decided by
//! the content's rule, each participant's actions their own and paid once; and the refusals.
//!
//! The conversation is the test's own (`Raft`, written into a copy of the sample content), so
//! each rule can be pinned without depending on the sample's writing.

use std::path::PathBuf;
use std::time::Duration;

use banter_e2e::{Backend, Client, TestServer, content_copy};
use banter_protocol::{ActionType, ClientMessage, DecidedBy, ErrorCode, LeftReason, ServerMessage};

/// Where Oona's raft is moored (Brinehollow, away from every other NPC).
const RAFT: [f64; 3] = [300.0, 1.0, -300.0];
/// Within reach of the raft, but not at the same spot.
const NEAR_RAFT: [f64; 3] = [302.0, 1.0, -300.0];
/// At the edge of the raft's reach (Oona's range is 10 studs).
const EDGE: [f64; 3] = [308.0, 1.0, -300.0];
/// Out of reach (past the range and its 5-stud allowance), one short walk from the edge (a move
/// within the 10 studs of slack the teleport budget allows at once).
const AWAY: [f64; 3] = [316.0, 1.0, -300.0];

/// A copy of the sample content with a shared conversation: `Shared` majority, a 2 s limit and
/// ties to the first response; one response only a rich player sees; the last line's choice by
/// the leader.
fn raft_content(label: &str) -> PathBuf {
    let dir = content_copy(label);
    let world_path = dir.join("world.json");
    let mut world: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&world_path).expect("world")).expect("json");
    world["Npcs"]
        .as_array_mut()
        .expect("npcs")
        .push(serde_json::json!({
            "Id": "oona", "Name": "Oona", "Island": "brinehollow",
            "Position": RAFT, "Range": 10.0, "Conversation": "Raft"
        }));
    std::fs::write(&world_path, world.to_string()).expect("write world");
    let quests_path = dir.join("quests.json");
    let mut quests: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&quests_path).expect("quests"))
            .expect("json");
    quests
        .as_array_mut()
        .expect("quests")
        .push(serde_json::json!({
            "Id": "RaftRide", "Giver": "oona", "Kind": "side",
            "Objectives": [ { "Id": "Ride", "Kind": "talk", "Island": "brinehollow" } ],
            "Rewards": { "Coins": 25, "Experience": 10 },
            "Nodes": { "Greeting": "Raft_Hello", "Check": "Raft_Hello", "Completion": "Raft_Done" }
        }));
    std::fs::write(&quests_path, quests.to_string()).expect("write quests");
    let raft = serde_json::json!({
        "FirstNode": "Raft_Hello",
        "Speaker": "Oona",
        "Shared": { "Mode": "Majority", "TimeLimit": 2, "Tie": "First" },
        "Raft_Hello": {
            "LineId": "line:0a0a0a0a01",
            "Text": "One raft, room for two. Where to?",
            "Responses": [
                { "LineId": "line:0a0a0a0a02", "Text": "The reef.", "NextNode": "Raft_Reef" },
                { "LineId": "line:0a0a0a0a03", "Text": "The wreck.", "NextNode": "Raft_Wreck" },
                { "LineId": "line:0a0a0a0a04", "Text": "The captain's cove.",
                  "Conditions": "coins >= 1000", "NextNode": "Raft_Reef" }
            ]
        },
        "Raft_Reef": {
            "LineId": "line:0a0a0a0a05",
            "Text": "The reef it is. Hop on.",
            "Actions": [ { "Type": "AcceptQuest", "QuestId": "RaftRide" } ],
            "NextNode": "Raft_Ride"
        },
        "Raft_Wreck": {
            "LineId": "line:0a0a0a0a06",
            "Text": "The wreck! Brave.",
            "Actions": [ { "Type": "AcceptQuest", "QuestId": "RaftRide" } ],
            "NextNode": "Raft_Ride"
        },
        "Raft_Ride": {
            "LineId": "line:0a0a0a0a07",
            "Text": "Hold on to your hats.",
            "Actions": [ { "Type": "AdvanceObjective", "QuestId": "RaftRide",
                           "ObjectiveId": "Ride", "Amount": 1, "Island": "brinehollow" } ],
            "Choice": { "Mode": "Leader" },
            "Responses": [
                { "LineId": "line:0a0a0a0a08", "Text": "Faster!", "NextNode": "Raft_Done" },
                { "LineId": "line:0a0a0a0a09", "Text": "Slower!", "NextNode": "Raft_Done" }
            ]
        },
        "Raft_Done": {
            "LineId": "line:0a0a0a0a0a",
            "Text": "Here we are.",
            "Actions": [ { "Type": "CompleteQuest", "QuestId": "RaftRide" } ],
            "Close": true
        },
        "AllDone": {
            "LineId": "line:0a0a0a0a0b",
            "Text": "No more rides today.",
            "Close": true
        }
    });
    std::fs::write(
        dir.join("dialogue/base/Raft.json"),
        serde_json::to_string_pretty(&raft).expect("json"),
    )
    .expect("write raft");
    dir
}

async fn raft_server(label: &str, backend: Backend) -> TestServer {
    let dir = raft_content(label);
    TestServer::start_serving_on(backend, &dir, |c| c.world.talk_cooldown = Duration::ZERO).await
}

/// The next message that is not an `ack`, skipping `effect`s and `party` news when asked to.
async fn next_of(client: &mut Client, wanted: impl Fn(&ServerMessage) -> bool) -> ServerMessage {
    loop {
        let message = client.recv().await;
        if wanted(&message) {
            return message;
        }
    }
}

async fn form_party(a: &mut Client, b: &mut Client, b_id: &str) -> String {
    let reply = a
        .request(ClientMessage::PartyInvite {
            id: None,
            player: b_id.to_owned(),
        })
        .await
        .expect("invite");
    let party = reply
        .messages
        .iter()
        .find_map(|m| match m {
            ServerMessage::Party { party: Some(p) } => Some(p.id.clone()),
            _ => None,
        })
        .expect("the inviter's party");
    let invited = next_of(b, |m| matches!(m, ServerMessage::PartyInvited { .. })).await;
    assert!(matches!(&invited, ServerMessage::PartyInvited { party: p, .. } if *p == party));
    b.request(ClientMessage::PartyAccept {
        id: None,
        party: party.clone(),
    })
    .await
    .expect("accept");
    // The inviter hears that the party changed.
    let news = next_of(a, |m| matches!(m, ServerMessage::Party { .. })).await;
    assert!(matches!(&news, ServerMessage::Party { party: Some(p) } if p.members.len() == 2));
    party
}

fn is_chosen(m: &ServerMessage) -> bool {
    matches!(m, ServerMessage::Chosen { .. })
}

async fn send_action(client: &mut Client, action: ActionType, payload: &str) -> Vec<ServerMessage> {
    client
        .request(ClientMessage::Action {
            id: None,
            action,
            payload: payload.to_owned(),
        })
        .await
        .map(|r| r.messages)
        .unwrap_or_else(|refused| panic!("{action:?} {payload}: {refused:?}"))
}

async fn a_party_walks_one_conversation_and_each_member_is_paid_once(backend: Backend) {
    let server = raft_server("party-walk", backend).await;
    let (a_token, a_id) = server.login_player("device-party-a").await;
    let (b_token, b_id) = server.login_player("device-party-b").await;
    let mut a = server.connect(&a_token).await;
    let mut b = server.connect(&b_token).await;
    a.move_to(RAFT).await.expect("a moves");
    b.move_to(NEAR_RAFT).await.expect("b moves");
    let party = form_party(&mut a, &mut b, &b_id).await;

    // A talks: both are in the conversation, B without asking.
    let reply = a.talk_reply("Oona").await.expect("talk");
    let shared = reply
        .messages
        .iter()
        .find_map(|m| match m {
            ServerMessage::Opened { shared, entry, .. } => {
                assert_eq!(entry, "Raft_Hello");
                shared.clone()
            }
            _ => None,
        })
        .expect("a shared opened");
    assert_eq!(shared.party, party);
    assert_eq!(shared.leader, a_id);
    let b_opened = next_of(&mut b, |m| matches!(m, ServerMessage::Opened { .. })).await;
    let ServerMessage::Opened {
        shared: Some(b_shared),
        entry,
        ..
    } = b_opened
    else {
        panic!("b joins shared: {b_opened:?}")
    };
    assert_eq!(entry, "Raft_Hello");
    assert_eq!(b_shared.participants, vec![a_id.clone(), b_id.clone()]);
    let roster = next_of(&mut a, |m| matches!(m, ServerMessage::Participants { .. })).await;
    assert!(matches!(roster, ServerMessage::Participants { joined: Some(j), .. } if j == b_id));

    // A response shown to nobody poor cannot be voted for; a vote does not move the walk.
    let refused = b.choose("Raft_Hello_r3").await.expect_err("not shown to b");
    assert!(
        matches!(
            refused.code,
            ErrorCode::NotReachable | ErrorCode::ConditionFailed
        ),
        "{refused:?}"
    );
    let voted = a.choose("Raft_Hello_r2").await.expect("a votes");
    assert!(voted.messages.iter().any(
        |m| matches!(m, ServerMessage::Voted { player, response } if *player == a_id && response == "Raft_Hello_r2")
    ));
    // B sees A's vote, changes nothing by voting twice, and the two make a majority.
    let seen = next_of(&mut b, |m| matches!(m, ServerMessage::Voted { .. })).await;
    assert!(matches!(seen, ServerMessage::Voted { player, .. } if player == a_id));
    b.choose("Raft_Hello_r1").await.expect("b votes");
    b.choose("Raft_Hello_r2").await.expect("b changes its vote");
    for client in [&mut a, &mut b] {
        let chosen = next_of(client, is_chosen).await;
        let ServerMessage::Chosen {
            line,
            response,
            node,
            by,
            votes,
            ..
        } = chosen
        else {
            unreachable!()
        };
        assert_eq!(line, "Raft_Hello");
        assert_eq!(response, "Raft_Hello_r2");
        assert_eq!(node.as_deref(), Some("Raft_Wreck"));
        assert_eq!(by, DecidedBy::Majority);
        assert_eq!(votes.len(), 2);
    }

    // Each accepts the quest for themselves, once.
    for client in [&mut a, &mut b] {
        let effects = send_action(client, ActionType::AcceptQuest, "RaftRide").await;
        assert!(
            effects
                .iter()
                .any(|m| matches!(m, ServerMessage::Effect { .. })),
            "{effects:?}"
        );
        let again = client
            .request(ClientMessage::Action {
                id: None,
                action: ActionType::AcceptQuest,
                payload: "RaftRide".into(),
            })
            .await
            .expect_err("armed once");
        assert_eq!(again.code, ErrorCode::NotArmed);
    }

    // Only the leader advances; the follower is told to follow.
    let refused = b.advance("Raft_Wreck").await.expect_err("not the leader");
    assert_eq!(refused.code, ErrorCode::NotLeader);
    let advanced = a.advance("Raft_Wreck").await.expect("leader advances");
    assert!(
        advanced.messages.iter().any(
            |m| matches!(m, ServerMessage::Advanced { node: Some(n), .. } if n == "Raft_Ride")
        )
    );
    let followed = next_of(&mut b, |m| matches!(m, ServerMessage::Advanced { .. })).await;
    assert!(matches!(followed, ServerMessage::Advanced { node: Some(n), .. } if n == "Raft_Ride"));

    // The ride's objective is each player's own.
    for client in [&mut a, &mut b] {
        send_action(
            client,
            ActionType::AdvanceObjective,
            "RaftRide|Ride|1|brinehollow",
        )
        .await;
    }
    // This line's choice is the leader's: B's vote is a suggestion, A's decides.
    b.choose("Raft_Ride_r2").await.expect("b suggests");
    a.choose("Raft_Ride_r1").await.expect("a decides");
    for client in [&mut a, &mut b] {
        let chosen = next_of(client, is_chosen).await;
        assert!(
            matches!(&chosen, ServerMessage::Chosen { response, by: DecidedBy::Leader, node: Some(n), .. } if response == "Raft_Ride_r1" && n == "Raft_Done"),
            "{chosen:?}"
        );
    }
    // Each completes and is paid once; a second completion pays nothing.
    for client in [&mut a, &mut b] {
        let effects = send_action(client, ActionType::CompleteQuest, "RaftRide").await;
        let paid = effects.iter().any(|m| {
            matches!(
                m,
                ServerMessage::Effect {
                    effect: banter_protocol::Effect::QuestCompleted { coins: 25, .. },
                    ..
                }
            )
        });
        assert!(paid, "{effects:?}");
    }
    for player in [&a_id, &b_id] {
        let rows = server
            .database()
            .scalar(&format!(
                "SELECT COUNT(*) FROM reward_ledger WHERE player_id = '{player}'"
            ))
            .await;
        assert_eq!(rows, 1, "{player}");
    }
}

async fn a_tie_at_the_time_limit_goes_to_the_first_response(backend: Backend) {
    let server = raft_server("party-tie", backend).await;
    let (a_token, _) = server.login_player("device-tie-a").await;
    let (b_token, b_id) = server.login_player("device-tie-b").await;
    let mut a = server.connect(&a_token).await;
    let mut b = server.connect(&b_token).await;
    a.move_to(RAFT).await.expect("a moves");
    b.move_to(NEAR_RAFT).await.expect("b moves");
    form_party(&mut a, &mut b, &b_id).await;
    a.talk_reply("Oona").await.expect("talk");
    next_of(&mut b, |m| matches!(m, ServerMessage::Opened { .. })).await;
    b.choose("Raft_Hello_r2").await.expect("b votes the wreck");
    a.choose("Raft_Hello_r1").await.expect("a votes the reef");
    // No majority: the 2 s limit decides, the tie to the first authored response.
    for client in [&mut a, &mut b] {
        let chosen = next_of(client, is_chosen).await;
        assert!(
            matches!(&chosen, ServerMessage::Chosen { response, by: DecidedBy::TieFirst, node: Some(n), .. } if response == "Raft_Hello_r1" && n == "Raft_Reef"),
            "{chosen:?}"
        );
    }
}

async fn leaving_hands_the_conversation_and_the_party_on(backend: Backend) {
    let server = raft_server("party-leave", backend).await;
    let (a_token, a_id) = server.login_player("device-leave-a").await;
    let (b_token, b_id) = server.login_player("device-leave-b").await;
    let mut a = server.connect(&a_token).await;
    let mut b = server.connect(&b_token).await;
    a.move_to(EDGE).await.expect("a moves");
    b.move_to(NEAR_RAFT).await.expect("b moves");
    let party = form_party(&mut a, &mut b, &b_id).await;
    a.talk_reply("Oona").await.expect("talk");
    next_of(&mut b, |m| matches!(m, ServerMessage::Opened { .. })).await;
    // B votes; A walks away before deciding: B is told, leads, and decides alone.
    b.choose("Raft_Hello_r1").await.expect("b votes");
    let walked = a.move_to(AWAY).await.expect("a walks away");
    assert!(
        walked
            .messages
            .iter()
            .any(|m| matches!(m, ServerMessage::Closed { .. }))
    );
    let roster = next_of(&mut b, |m| matches!(m, ServerMessage::Participants { .. })).await;
    assert!(
        matches!(&roster, ServerMessage::Participants { leader, left: Some(l), reason: Some(LeftReason::WalkedAway), .. } if *leader == b_id && *l == a_id),
        "{roster:?}"
    );
    let chosen = next_of(&mut b, is_chosen).await;
    assert!(matches!(
        chosen,
        ServerMessage::Chosen {
            by: DecidedBy::Majority,
            ..
        }
    ));

    // The party's leader leaves the party: B leads it, and a reconnect says so.
    let left = a
        .request(ClientMessage::PartyLeave { id: None })
        .await
        .expect("leave");
    assert!(
        left.messages
            .iter()
            .any(|m| matches!(m, ServerMessage::Party { party: None }))
    );
    let news = next_of(&mut b, |m| matches!(m, ServerMessage::Party { .. })).await;
    assert!(
        matches!(&news, ServerMessage::Party { party: Some(p) } if p.leader == b_id && p.members == vec![b_id.clone()]),
        "{news:?}"
    );
    b.close().await;
    let (_b2, welcome) = server.connect_welcomed(&b_token).await;
    assert_eq!(
        welcome.party.as_ref().map(|p| p.id.as_str()),
        Some(party.as_str())
    );
    let refused = a
        .request(ClientMessage::PartyLeave { id: None })
        .await
        .expect_err("in none");
    assert_eq!(refused.code, ErrorCode::NotInParty);
}

async fn party_messages_are_refused_by_their_rules(backend: Backend) {
    let server = raft_server("party-rules", backend).await;
    let (a_token, a_id) = server.login_player("device-rules-a").await;
    let (c_token, _) = server.login_player("device-rules-c").await;
    let mut a = server.connect(&a_token).await;
    let mut c = server.connect(&c_token).await;
    a.request(ClientMessage::PartyForm { id: None })
        .await
        .expect("form");
    let again = a
        .request(ClientMessage::PartyForm { id: None })
        .await
        .expect_err("in one");
    assert_eq!(again.code, ErrorCode::AlreadyInParty);
    let myself = a
        .request(ClientMessage::PartyInvite {
            id: None,
            player: a_id.clone(),
        })
        .await
        .expect_err("oneself");
    assert_eq!(myself.code, ErrorCode::AlreadyInParty);
    // Accepting without an invitation, or into a party that does not exist.
    let no_invite = c
        .request(ClientMessage::PartyAccept {
            id: None,
            party: "pty_0000000000000000".into(),
        })
        .await
        .expect_err("no invite");
    assert_eq!(no_invite.code, ErrorCode::NoInvite);
    let bad = c
        .request(ClientMessage::PartyAccept {
            id: None,
            party: "not a party id!".into(),
        })
        .await
        .expect_err("bad id");
    // An id no party could have has no invite either.
    assert_eq!(bad.code, ErrorCode::NoInvite, "{bad:?}");
    // A vote from outside any conversation counts nothing.
    let outside = c
        .choose("Raft_Hello_r1")
        .await
        .expect_err("no conversation");
    assert_eq!(outside.code, ErrorCode::NoConversation);
}

/// A and B, on two instances of one database (PostgreSQL), in a party A leads, both by the
/// raft: pushes do not cross instances, so B learns the party id from A and accepts it.
async fn party_across_instances(
    first: &TestServer,
    second: &TestServer,
    label: &str,
) -> (Client, Client, String, String) {
    let (a_token, _) = first.login_player(&format!("device-{label}-a")).await;
    let (b_token, b_id) = first.login_player(&format!("device-{label}-b")).await;
    let mut a = first.connect(&a_token).await;
    let mut b = second.connect(&b_token).await;
    a.move_to(RAFT).await.expect("a moves");
    b.move_to(NEAR_RAFT).await.expect("b moves");
    let invited = a
        .request(ClientMessage::PartyInvite {
            id: None,
            player: b_id,
        })
        .await
        .expect("invite");
    let party = invited
        .messages
        .iter()
        .find_map(|m| match m {
            ServerMessage::Party { party: Some(p) } => Some(p.id.clone()),
            _ => None,
        })
        .expect("the inviter's party");
    let accepted = b
        .request(ClientMessage::PartyAccept {
            id: None,
            party: party.clone(),
        })
        .await
        .expect("b accepts on the other instance");
    assert!(accepted.messages.iter().any(
        |m| matches!(m, ServerMessage::Party { party: Some(p) } if p.members.len() == 2 && p.id == party)
    ));
    (a, b, party, a_token)
}

/// A party's membership and its one shared conversation hold across instances (PostgreSQL): a
/// member on another instance is refused `shared_elsewhere` (retryable) while the party's
/// conversation is hosted on the first, and opens it there once the first closed it; the party
/// itself is in every instance's `welcome`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_on_another_instance_is_told_the_conversation_is_elsewhere() {
    let first = raft_server("party-instances", Backend::Postgres).await;
    let second = first.another_instance().await;
    let (mut a, mut b, party, a_token) = party_across_instances(&first, &second, "instances").await;
    // A opens the party's conversation on the first instance; B cannot open a second one.
    a.talk_reply("Oona").await.expect("a talks");
    let elsewhere = b.talk_reply("Oona").await.expect_err("hosted elsewhere");
    assert_eq!(elsewhere.code, ErrorCode::SharedElsewhere, "{elsewhere:?}");
    assert!(elsewhere.code.retryable());
    // A closes: the host row goes, and B's retry opens the conversation on the second.
    a.request(ClientMessage::Close { id: None })
        .await
        .expect("a closes");
    let deadline = std::time::Instant::now() + banter_e2e::PATIENCE;
    loop {
        match b.talk_reply("Oona").await {
            Ok(reply) => {
                assert!(reply.messages.iter().any(|m| matches!(
                    m,
                    ServerMessage::Opened { shared: Some(s), .. } if s.party == party
                )));
                break;
            }
            Err(refused) if refused.code == ErrorCode::SharedElsewhere => {
                assert!(std::time::Instant::now() < deadline, "never released");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(refused) => panic!("{refused:?}"),
        }
    }
    // Membership is stored: a reconnect to either instance is welcomed into the party.
    drop(a);
    let (_, welcome) = second.connect_welcomed(&a_token).await;
    assert_eq!(welcome.party.map(|p| p.id), Some(party));
}

/// A party's conversation closed and reopened at once on one instance keeps its host row: the
/// closed room's release (a background task) never deletes the row the new room claimed, so a
/// member on another instance is still told `shared_elsewhere` (PostgreSQL; it used to open a
/// second conversation for the party in about one round in four).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_reopened_at_once_keeps_its_host_across_instances() {
    let first = raft_server("party-reopen", Backend::Postgres).await;
    let second = first.another_instance().await;
    let (mut a, mut b, _, _) = party_across_instances(&first, &second, "reopen").await;
    for round in 0..12u64 {
        a.talk_reply("Oona").await.expect("a talks");
        // Close and talk again back to back: the emptied room's release races the new claim.
        a.send(&ClientMessage::Close {
            id: Some(1_000 + round),
        })
        .await;
        a.send(&ClientMessage::Talk {
            id: Some(2_000 + round),
            npc: "Oona".into(),
            instance: None,
            cached: None,
        })
        .await;
        loop {
            match a.recv().await {
                ServerMessage::Ack { id } if id == 2_000 + round => break,
                ServerMessage::Error {
                    id: Some(id),
                    code,
                    message,
                    ..
                } if id >= 1_000 => {
                    panic!("round {round}: {code:?} {message}")
                }
                _ => {}
            }
        }
        // The release runs in the background and cannot be awaited from here: give it time
        // (and keep A under the rate limit).
        tokio::time::sleep(Duration::from_millis(100)).await;
        let elsewhere = b.talk_reply("Oona").await.expect_err("hosted on the first");
        assert_eq!(elsewhere.code, ErrorCode::SharedElsewhere, "round {round}");
        a.request(ClientMessage::Close { id: None })
            .await
            .expect("a closes");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A game server declares a party for the players it carries (PROTOCOL.md section 17.1): every
/// member is told; a declaration of the wrong shape is a `400` naming where, and one naming a
/// player out of the credential's scope is refused to that player.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_server_declares_its_players_party() {
    let server = raft_server("party-declared", Backend::Sqlite).await;
    let credential = server.issue_credential("raft-eu", &["rbx-"]).await;
    let mut channel = server.open_channel(&credential).await;
    let mut body = channel.next_body(
        vec![],
        vec![
            banter_e2e::join("rbx-raft-1"),
            banter_e2e::join("rbx-raft-2"),
        ],
        0,
    );
    body["parties"] = serde_json::json!([
        {"party": "crew-7", "leader": "rbx-raft-2", "members": ["rbx-raft-1", "rbx-raft-2"]}
    ]);
    let answer = channel.applied(&body).await;
    channel.seq += 1;
    for player in ["rbx-raft-1", "rbx-raft-2"] {
        let told = banter_e2e::messages_for(&answer.events, player);
        assert!(
            told.iter().any(|m| matches!(
                m,
                ServerMessage::Party { party: Some(p) }
                    if p.id == "crew-7" && p.leader == "rbx-raft-2" && p.members.len() == 2
            )),
            "{player}: {told:?}"
        );
    }
    // Wrong shapes: refused whole, nothing applied, the problem named.
    for (parties, named) in [
        (
            serde_json::json!([{"party": "crew-8", "leader": "rbx-raft-9", "members": ["rbx-raft-1"]}]),
            "parties[0].leader",
        ),
        (
            serde_json::json!([{"party": "crew 8", "leader": "rbx-raft-1", "members": ["rbx-raft-1"]}]),
            "parties[0].party",
        ),
        (
            serde_json::json!([{"party": "crew-8", "leader": "rbx-raft-1", "members": ["rbx-raft-1", "rbx-raft-1"]}]),
            "parties[0].members[1]",
        ),
        (
            serde_json::json!([{"party": "crew-8", "leader": "rbx-raft-1"}]),
            "members",
        ),
    ] {
        let mut bad = channel.next_body(vec![], vec![], 0);
        bad["parties"] = parties;
        let (status, answer) = channel.post(&bad).await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["error"], "bad_request", "{answer}");
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(message.contains(named), "{named}: {message}");
    }
    // A member out of the credential's scope: refused to that player, the party unchanged.
    let mut out_of_scope = channel.next_body(vec![], vec![], 0);
    out_of_scope["parties"] = serde_json::json!([
        {"party": "crew-7", "leader": "rbx-raft-1", "members": ["rbx-raft-1", "xbox-1"]}
    ]);
    let answer = channel.applied(&out_of_scope).await;
    channel.seq += 1;
    assert_eq!(
        banter_e2e::the_error(&answer.events, "xbox-1").0,
        ErrorCode::NotInScope
    );
    assert!(banter_e2e::messages_for(&answer.events, "rbx-raft-1").is_empty());
}

banter_e2e::on_both_backends!(
    a_party_walks_one_conversation_and_each_member_is_paid_once,
    a_tie_at_the_time_limit_goes_to_the_first_response,
    leaving_hands_the_conversation_and_the_party_on,
    party_messages_are_refused_by_their_rules,
);
