//! The server walks the graph too (article sections 7.2 and 7.3), end to end: every step a
//! client could make up is refused with its code, and leaves the walk and the profile as they
//! were: the honest next step still succeeds, and a later talk shows the same facts.
//!
//! Pim's conversation, as the resolver opens it for a new player:
//!
//! ```text
//! PimsTideTale_Greet ─ r1 "Go on, tell me." [AcceptQuest PimsTideTale] ─▶ PimsTideTale_Tale
//!                    └ r2 "Another time, Pim." ─▶ PimsTideTale_Declined ─▶ Pim_Hello
//! PimsTideTale_Tale ─▶ PimsTideTale_Ending [AdvanceObjective PimsTideTale|HearTheTale|1|mistral_cay]
//!                   ─▶ PimsTideTale_Complete [CompleteQuest PimsTideTale] (close)
//! ```

use std::time::Duration;

use banter_e2e::{Client, ExpectRefused, TestServer};
use banter_protocol::{ActionType, Effect, ErrorCode, QuestStatus};

const NEAR_PIM: [f64; 3] = [-640.0, 2.0, 910.0];
const QUEST: &str = "PimsTideTale";
const OBJECTIVE: &str = "PimsTideTale|HearTheTale|1|mistral_cay";

/// A server without the talk cooldown, so a test can look at the facts again right away.
async fn server() -> TestServer {
    TestServer::start_with(|c| c.world.talk_cooldown = Duration::ZERO).await
}

/// A new player in a conversation with Pim, on the greeting.
async fn talking_to_pim(server: &TestServer, device: &str) -> Client {
    let (client, opened) = server.player_talking_to_pim(device).await;
    assert_eq!(opened.entry, "PimsTideTale_Greet");
    assert_eq!(opened.facts.coins, 0);
    client
}

/// Closes the conversation and talks to Pim again: the facts the server holds now.
async fn facts_after(client: &mut Client) -> banter_e2e::Opened {
    client.close_conversation().await.expect("closed");
    client.talk("Pim").await.expect("talk again")
}

/// The player is exactly as new: nothing accepted, nothing paid.
async fn assert_untouched(client: &mut Client) {
    let opened = facts_after(client).await;
    assert_eq!(
        opened.entry, "PimsTideTale_Greet",
        "the quest is still on offer"
    );
    assert!(
        !opened.facts.quests.contains_key(QUEST),
        "{:?}",
        opened.facts
    );
    assert!(opened.facts.progress.is_empty(), "{:?}", opened.facts);
    assert_eq!(opened.facts.coins, 0);
    assert_eq!(opened.facts.experience, 0);
}

#[tokio::test]
async fn advancing_a_line_never_shown_gets_not_reachable() {
    let server = server().await;
    let mut client = talking_to_pim(&server, "device-walk-01").await;
    for line in [
        "PimsTideTale_Tale",
        "PimsTideTale_Complete",
        "Pim_Bye",
        "AllDone",
    ] {
        client
            .advance(line)
            .await
            .expect_refused_alone(ErrorCode::NotReachable);
    }
    // The refusals showed nothing: the tale is still out of reach until the player says yes.
    client
        .advance("PimsTideTale_Tale")
        .await
        .expect_refused_alone(ErrorCode::NotReachable);
    client.choose("PimsTideTale_Greet_r1").await.expect("yes");
    client
        .advance("PimsTideTale_Tale")
        .await
        .expect("shown now");
    assert_untouched(&mut client).await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn choosing_a_response_never_shown_gets_not_reachable() {
    let server = server().await;
    let mut client = talking_to_pim(&server, "device-walk-02").await;
    // Pim_Hello was never shown (the resolver opened on the greeting), nor its responses.
    for response in ["Pim_Hello_r1", "Pim_Hello_r2", "Pim_Hello_r3"] {
        client
            .choose(response)
            .await
            .expect_refused_alone(ErrorCode::NotReachable);
    }
    // Nothing the refused responses lead to was shown.
    for line in ["Pim_Bye", "Pim_Ines"] {
        client
            .advance(line)
            .await
            .expect_refused_alone(ErrorCode::NotReachable);
    }
    client
        .choose("PimsTideTale_Greet_r2")
        .await
        .expect("another time");
    client
        .advance("PimsTideTale_Declined")
        .await
        .expect("the decline line");
    assert_untouched(&mut client).await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn advancing_a_line_that_waits_for_a_choice_gets_awaits_choice() {
    let server = server().await;
    let mut client = talking_to_pim(&server, "device-walk-03").await;
    client
        .advance("PimsTideTale_Greet")
        .await
        .expect_refused_alone(ErrorCode::AwaitsChoice);
    // Advancing did not skip the choice: the line after it is still out of reach.
    client
        .advance("PimsTideTale_Tale")
        .await
        .expect_refused_alone(ErrorCode::NotReachable);
    client
        .choose("PimsTideTale_Greet_r1")
        .await
        .expect("the choice is still open");
    assert_untouched(&mut client).await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn choosing_an_npc_line_gets_not_a_response() {
    let server = server().await;
    let mut client = talking_to_pim(&server, "device-walk-04").await;
    client
        .choose("PimsTideTale_Greet")
        .await
        .expect_refused_alone(ErrorCode::NotAResponse);
    client
        .choose("PimsTideTale_Greet_r1")
        .await
        .expect("a real response");
    assert_untouched(&mut client).await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn advancing_a_response_gets_not_a_line() {
    let server = server().await;
    let mut client = talking_to_pim(&server, "device-walk-05").await;
    client
        .advance("PimsTideTale_Greet_r1")
        .await
        .expect_refused_alone(ErrorCode::NotALine);
    // Advancing past the response did not pick it: nothing is armed.
    client
        .action(ActionType::AcceptQuest, QUEST)
        .await
        .expect_refused_alone(ErrorCode::NotArmed);
    client
        .choose("PimsTideTale_Greet_r1")
        .await
        .expect("picked properly");
    assert_untouched(&mut client).await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn an_unknown_node_name_gets_unknown_vertex() {
    let server = server().await;
    let mut client = talking_to_pim(&server, "device-walk-06").await;
    for name in [
        "NoSuchNode",
        "PimsTideTale_Greet_r9",
        "pimstidetale_greet",
        "",
        "Fennick_Hello",
    ] {
        client
            .advance(name)
            .await
            .expect_refused_alone(ErrorCode::UnknownVertex);
        client
            .choose(name)
            .await
            .expect_refused_alone(ErrorCode::UnknownVertex);
    }
    client.choose("PimsTideTale_Greet_r1").await.expect("yes");
    assert_untouched(&mut client).await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_forged_action_never_armed_gets_not_armed_and_pays_nothing() {
    let server = server().await;
    let mut client = talking_to_pim(&server, "device-walk-07").await;
    // Right after opening nothing is armed: the article's hole, closed.
    for action in [ActionType::CompleteQuest, ActionType::AcceptQuest] {
        client
            .action(action, QUEST)
            .await
            .expect_refused_alone(ErrorCode::NotArmed);
    }

    // With the quest honestly accepted, the engine would take these (the quest is active);
    // the walk refuses them because the player was never shown the lines that carry them.
    let accepted = client.accept_pims_quest().await;
    assert_eq!(accepted.profile().expect("a profile").coins, 0);
    for (action, payload) in [
        (ActionType::AdvanceObjective, OBJECTIVE),
        (ActionType::CompleteQuest, QUEST),
        (ActionType::OpenShop, "DunmoreBoatyard"),
    ] {
        client
            .action(action, payload)
            .await
            .expect_refused_alone(ErrorCode::NotArmed);
    }

    let opened = facts_after(&mut client).await;
    opened.assert_pims_quest_state("PimsTideTale_Check", QuestStatus::Active, (0, 0));
    assert_eq!(
        opened.facts.progress.get("PimsTideTale/HearTheTale"),
        Some(&0)
    );
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn an_armed_action_with_an_altered_payload_gets_payload_mismatch() {
    let server = server().await;
    let mut client = talking_to_pim(&server, "device-walk-08").await;
    client.choose("PimsTideTale_Greet_r1").await.expect("yes");
    for payload in [
        "CopperSnappers",
        "PimsTideTale ",
        "pimstidetale",
        "PimsTideTale|x",
        "",
    ] {
        client
            .action(ActionType::AcceptQuest, payload)
            .await
            .expect_refused_alone(ErrorCode::PayloadMismatch);
    }
    // The refusals spent nothing: the authored payload still runs, once.
    let reply = client
        .action(ActionType::AcceptQuest, QUEST)
        .await
        .expect("the authored payload");
    assert_eq!(
        reply.effects(),
        vec![Effect::QuestAccepted {
            quest: QUEST.into(),
            objectives: vec!["HearTheTale".into()]
        }]
    );
    let opened = facts_after(&mut client).await;
    let taken: Vec<&String> = opened
        .facts
        .quests
        .iter()
        .filter(|(_, s)| matches!(s, QuestStatus::Active | QuestStatus::Completed))
        .map(|(q, _)| q)
        .collect();
    assert_eq!(taken, vec![QUEST], "no other quest was accepted");
    assert_eq!(opened.facts.coins, 0);
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn replaying_an_action_past_its_arming_gets_not_armed() {
    let server = server().await;
    let mut client = talking_to_pim(&server, "device-walk-09").await;
    client.choose("PimsTideTale_Greet_r1").await.expect("yes");
    client
        .action(ActionType::AcceptQuest, QUEST)
        .await
        .expect("the first run");
    client
        .action(ActionType::AcceptQuest, QUEST)
        .await
        .expect_refused_alone(ErrorCode::NotArmed);
    // The walk goes on as before the replay.
    client.advance("PimsTideTale_Tale").await.expect("the tale");
    let opened = facts_after(&mut client).await;
    assert_eq!(opened.facts.quests.get(QUEST), Some(&QuestStatus::Active));
    assert_eq!(opened.facts.coins, 0);
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn completing_a_quest_twice_pays_once() {
    let server = server().await;
    let mut client = talking_to_pim(&server, "device-walk-10").await;
    client.accept_pims_quest().await;
    let paid = client.finish_pims_tale().await;
    let profile = paid.profile().expect("a profile");
    assert_eq!((profile.coins, profile.experience), (30, 20));

    let again = client
        .action(ActionType::CompleteQuest, QUEST)
        .await
        .expect_err("paid already");
    assert!(
        matches!(again.code, ErrorCode::NotArmed | ErrorCode::QuestState),
        "{again:?}"
    );
    assert!(again.before.is_empty(), "{:?}", again.before);

    let opened = facts_after(&mut client).await;
    opened.assert_pims_quest_state("AllDone", QuestStatus::Completed, (30, 20));
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn an_action_with_no_conversation_open_gets_no_conversation() {
    let server = server().await;
    let mut client = server.player_at("device-walk-11", NEAR_PIM).await;
    client
        .action(ActionType::AcceptQuest, QUEST)
        .await
        .expect_refused_alone(ErrorCode::NoConversation);
    // Nor after a conversation that armed it has closed.
    client.talk("Pim").await.expect("talk");
    client.choose("PimsTideTale_Greet_r1").await.expect("yes");
    client.close_conversation().await.expect("closed");
    client
        .action(ActionType::AcceptQuest, QUEST)
        .await
        .expect_refused_alone(ErrorCode::NoConversation);
    let opened = client.talk("Pim").await.expect("talk again");
    assert_eq!(opened.entry, "PimsTideTale_Greet");
    assert!(
        !opened.facts.quests.contains_key(QUEST),
        "{:?}",
        opened.facts
    );
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn advancing_after_close_gets_no_conversation() {
    let server = server().await;
    let mut client = talking_to_pim(&server, "device-walk-12").await;
    client.choose("PimsTideTale_Greet_r1").await.expect("yes");
    client.close_conversation().await.expect("closed");
    client
        .advance("PimsTideTale_Tale")
        .await
        .expect_refused_alone(ErrorCode::NoConversation);
    client
        .choose("PimsTideTale_Greet_r2")
        .await
        .expect_refused_alone(ErrorCode::NoConversation);
    client
        .close_conversation()
        .await
        .expect_refused_alone(ErrorCode::NoConversation);
    // A new talk starts a new walk from the resolver's entry, with nothing carried over.
    let opened = client.talk("Pim").await.expect("talk again");
    assert_eq!(opened.entry, "PimsTideTale_Greet");
    client
        .advance("PimsTideTale_Tale")
        .await
        .expect_refused_alone(ErrorCode::NotReachable);
    client
        .action(ActionType::AcceptQuest, QUEST)
        .await
        .expect_refused_alone(ErrorCode::NotArmed);
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn an_action_the_quest_state_refuses_gets_quest_state_and_keeps_its_arming() {
    let server = server().await;
    let mut client = talking_to_pim(&server, "device-walk-13").await;
    client.accept_pims_quest().await;
    client.advance("PimsTideTale_Tale").await.expect("the tale");
    // The client skips the objective and goes straight to the reward: the walk allows the
    // step (both lines were shown), the quest engine refuses it (an objective is left).
    client
        .advance("PimsTideTale_Ending")
        .await
        .expect("the ending");
    client
        .action(ActionType::CompleteQuest, QUEST)
        .await
        .expect_refused_alone(ErrorCode::QuestState);

    // Nothing was spent: the objective, then the reward, still run once each.
    let heard = client
        .action(ActionType::AdvanceObjective, OBJECTIVE)
        .await
        .expect("the objective is still armed");
    assert_eq!(heard.profile().expect("a profile").coins, 0);
    let paid = client
        .action(ActionType::CompleteQuest, QUEST)
        .await
        .expect("the refused reward kept its arming");
    assert_eq!(paid.profile().expect("a profile").coins, 30);
    client
        .action(ActionType::CompleteQuest, QUEST)
        .await
        .expect_refused_alone(ErrorCode::NotArmed);
    server.stop().await.expect("clean shutdown");
}

/// Grandpa Fennick stands at (14, 3, -42.5).
const NEAR_FENNICK: [f64; 3] = [14.0, 3.0, -38.0];

#[tokio::test]
async fn after_a_failed_quest_check_the_success_line_stays_unreachable() {
    let server = server().await;
    let mut client = server.player_at("device-walk-14", NEAR_FENNICK).await;
    client.accept_copper_snappers().await;
    client.close_conversation().await.expect("closed");

    let opened = client.talk("Grandpa Fennick").await.expect("talk again");
    assert_eq!(opened.entry, "CopperSnappers_Check");
    // Before the check, neither outcome is reachable; picking the check waits for the server.
    client
        .advance("CopperSnappers_Complete")
        .await
        .expect_refused_alone(ErrorCode::NotReachable);
    let picked = client
        .choose("CopperSnappers_Check_r1")
        .await
        .expect("have a look");
    assert!(picked.messages.is_empty(), "{:?}", picked.messages);
    client
        .advance("CopperSnappers_NotYet")
        .await
        .expect_refused_alone(ErrorCode::NotReachable);

    // No snappers caught: the server jumps to the failure line.
    let checked = client.run_the_snapper_check(false).await;
    assert!(
        checked.messages.iter().any(|m| *m
            == banter_protocol::ServerMessage::Jump {
                node: "CopperSnappers_NotYet".into()
            }),
        "{:?}",
        checked.messages
    );
    // The client cannot take the other branch, nor the reward on it.
    client
        .advance("CopperSnappers_Complete")
        .await
        .expect_refused_alone(ErrorCode::NotReachable);
    client
        .action(ActionType::CompleteQuest, "CopperSnappers")
        .await
        .expect_refused_alone(ErrorCode::NotArmed);
    // The failure line's loop goes back to the check, honestly.
    client.look_at_the_snappers_again().await;
    let opened = {
        client.close_conversation().await.expect("closed");
        client.talk("Grandpa Fennick").await.expect("talk")
    };
    assert_eq!(opened.entry, "CopperSnappers_Check");
    assert_eq!(opened.facts.coins, 0);
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn fetching_an_unknown_conversation_gets_unknown_conversation() {
    let server = server().await;
    let mut client = talking_to_pim(&server, "device-walk-15").await;
    client
        .fetch_conversation("NoSuchConversation")
        .await
        .expect_refused_alone(ErrorCode::UnknownConversation);
    // A known one is sent (a `conversation` message, alone), and the open walk is untouched.
    client
        .fetch_conversation("Pim")
        .await
        .expect("Pim's conversation")
        .fetched();
    client.choose("PimsTideTale_Greet_r1").await.expect("yes");
    assert_untouched(&mut client).await;
    server.stop().await.expect("clean shutdown");
}
