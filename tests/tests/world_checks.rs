//! The world checks end to end (article section 7.4, and the player's state): who may talk to
//! which NPC, from where, how often, and when. Each refusal names its code and leaves the
//! player able to take the honest next step.

use std::time::Duration;

use banter_e2e::{ExpectRefused, LANTERN_SCENE, LANTERNS_QUEST, TestServer};
use banter_protocol::{ErrorCode, QuestStatus};

/// Pim stands at (-640, 2, 915) with the default range of 8; the reach is 8 + 5 = 13.
const NEAR_PIM: [f64; 3] = [-640.0, 2.0, 910.0];
/// Keeper Ines stands at (870, 22, 260).
const NEAR_INES: [f64; 3] = [870.0, 22.0, 255.0];
/// The Gull Rock Skipper Dunmore stands at (812, 1.5, 233); the Brinehollow one at
/// (40, 1.5, -60).
const NEAR_GULLROCK_SKIPPER: [f64; 3] = [812.0, 1.5, 228.0];

#[tokio::test]
async fn a_player_with_no_body_cannot_talk_and_gets_no_body() {
    let server = TestServer::start().await;
    let token = server.login("device-world-01").await;
    let mut client = server.connect(&token).await;
    // Nothing opened (no conversation, no cooldown): spawn next to Pim and talk at once.
    client.expect_talk_refused("Pim", ErrorCode::NoBody).await;
    client.move_to(NEAR_PIM).await.expect("spawned");
    client.talk("Pim").await.expect("talks once it has a body");
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn talking_from_14_studs_is_too_far_and_from_12_9_is_fine() {
    let server = TestServer::start().await;
    let mut client = server
        .player_at("device-world-02", [-640.0, 2.0, 901.0])
        .await;
    client.expect_talk_refused("Pim", ErrorCode::TooFar).await;

    // The refusal opened nothing and started no cooldown (the default 1.5 s applies here):
    // one step closer, the talk opens at once.
    client
        .move_to([-640.0, 2.0, 902.1])
        .await
        .expect("a short step");
    let opened = client
        .talk("Pim")
        .await
        .expect("12.9 studs is within 8 + 5");
    assert_eq!(opened.npc.id, "pim");
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn talking_again_within_the_cooldown_gets_talk_cooldown() {
    let server = TestServer::start().await;
    let (mut client, _) = server.player_talking_to_pim("device-world-03").await;
    // The server set its cooldown clock before it acknowledged the talk.
    let acked = tokio::time::Instant::now();
    client.close_conversation().await.expect("closed");

    // The refused talk opened nothing.
    client
        .expect_talk_refused("Pim", ErrorCode::TalkCooldown)
        .await;

    // The refusal did not restart the cooldown: 1.5 s after the first talk, talking works.
    // (A timed rule: this waits out the rule's own duration, not for an event.)
    tokio::time::sleep_until(acked + server.config.world.talk_cooldown).await;
    client
        .talk("Pim")
        .await
        .expect("the cooldown ran from the first talk");
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn talking_to_an_unknown_npc_gets_unknown_npc() {
    let server = TestServer::start().await;
    let mut client = server.player_at("device-world-04", NEAR_PIM).await;
    for name in ["Nobody", "pim", "PIM", ""] {
        client
            .talk(name)
            .await
            .expect_refused(ErrorCode::UnknownNpc);
    }
    // An instance hint does not make up an NPC either.
    client
        .talk_hinted("Nobody", Some("pim"))
        .await
        .expect_refused(ErrorCode::UnknownNpc);
    // Nothing opened, no cooldown started.
    client.talk("Pim").await.expect("the real Pim");
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_move_of_5000_studs_is_a_teleport_and_the_last_valid_position_stays() {
    let server = TestServer::start().await;
    let mut client = server.player_at("device-world-05", NEAR_PIM).await;
    client
        .move_to([4360.0, 2.0, 910.0])
        .await
        .expect_refused(ErrorCode::Teleport);

    // Still next to Pim: talking works, and an honest step from the old place is accepted.
    client
        .move_to([-640.0, 2.0, 911.0])
        .await
        .expect("a short step from the last valid position");
    let opened = client.talk("Pim").await.expect("still near Pim");
    assert_eq!(opened.npc.id, "pim");
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_valid_instance_hint_is_used_even_when_that_instance_is_far() {
    let server = TestServer::start().await;
    let mut client = server
        .player_at("device-world-06", NEAR_GULLROCK_SKIPPER)
        .await;
    let refused = client
        .talk_hinted("Skipper Dunmore", Some("skipper_brinehollow"))
        .await
        .expect_refused(ErrorCode::TooFar);
    assert!(
        refused.message.contains("skipper_brinehollow"),
        "{}",
        refused.message
    );

    // Nothing opened, no cooldown: the hint naming the near one opens at once.
    let opened = client
        .talk_hinted("Skipper Dunmore", Some("skipper_gullrock"))
        .await
        .expect("the Gull Rock skipper is right here");
    assert_eq!(opened.npc.id, "skipper_gullrock");
    assert_eq!(opened.npc.island, "gullrock");
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_bogus_instance_hint_is_ignored_and_the_nearest_npc_of_that_name_talks() {
    let server = TestServer::start().await;
    let mut client = server
        .player_at("device-world-07", NEAR_GULLROCK_SKIPPER)
        .await;
    // `pim` is a real instance, but not one named Skipper Dunmore: the hint is verified.
    let opened = client
        .talk_hinted("Skipper Dunmore", Some("pim"))
        .await
        .expect("the nearest Skipper Dunmore");
    assert_eq!(opened.npc.id, "skipper_gullrock");
    assert_eq!(opened.conversation, "Skipper");
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn talking_during_a_cutscene_gets_busy_until_the_cutscene_is_done() {
    let server = TestServer::start_with(|c| c.world.talk_cooldown = Duration::ZERO).await;
    let mut client = server.player_at("device-world-08", NEAR_INES).await;
    // Ines's current offer is a cutscene quest: talking opens no conversation, the quest is
    // accepted and the scene starts (article section 5).
    client.start_the_lantern_cutscene().await;

    client
        .expect_talk_refused("Keeper Ines", ErrorCode::Busy)
        .await;

    // A cutscene that is not playing cannot be reported done.
    client
        .cutscene_done("SomethingElse")
        .await
        .expect_refused(ErrorCode::NoCutscene);
    client
        .talk("Keeper Ines")
        .await
        .expect_refused(ErrorCode::Busy);

    client.cutscene_done(LANTERN_SCENE).await.expect("done");
    let opened = client.talk("Keeper Ines").await.expect("free again");
    // The scene ended: the quest is completed and paid, and Ines offers what comes next.
    assert_eq!(opened.entry, "Voyage_Greet");
    assert_eq!(
        opened.facts.quests.get(LANTERNS_QUEST),
        Some(&QuestStatus::Completed)
    );
    assert_eq!(opened.facts.coins, 200);
    assert!(
        !opened.facts.has.iter().any(|h| h.contains("Cutscene")),
        "{:?}",
        opened.facts.has
    );
    server.stop().await.expect("clean shutdown");
}
