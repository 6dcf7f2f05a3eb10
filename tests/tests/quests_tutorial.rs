//! The tutorial end to end, on both backends, with the sample game's `content/tutorial.json`:
//! the game reports `tutorial_started`, and from then on every NPC except the one the tutorial
//! points at opens on the stage's lockout line, while the pointed NPC resolves normally. The
//! conversations move the stage on (accepting CopperSnappers, completing it, completing
//! HattiesShanty) until the player leaves the tutorial and everyone talks again.
//!
//! The pointed NPC comes from `banter_dialogue::tutorial::pointed_npc`, the function a client
//! uses too; the test asks it at every stage and checks the server agrees.

use std::time::Duration;

use banter_dialogue::content::Content;
use banter_dialogue::tutorial;
use banter_e2e::{Backend, Client, TestServer, content_dir, copy_dir, temp_dir};
use banter_protocol::{ActionType, Effect, ServerMessage};

/// Grandpa Fennick stands at (14, 3, -42.5), Marisol at (-6, 3, -18), Hattie at (60, 3, -10).
const NEAR_FENNICK: [f64; 3] = [14.0, 3.0, -38.0];
const NEAR_MARISOL: [f64; 3] = [-6.0, 3.0, -14.0];
const NEAR_HATTIE: [f64; 3] = [60.0, 3.0, -6.0];

#[test]
fn the_sample_tutorial_points_at_fennick_then_hattie_and_nothing_outside_the_stages() {
    let (content, diagnostics) = banter_dialogue::check::load_and_check(&content_dir());
    assert!(
        banter_dialogue::check::is_clean(&diagnostics),
        "{diagnostics:#?}"
    );
    assert_eq!(tutorial::first_stage(&content), Some(1));
    assert_eq!(tutorial::pointed_npc(&content, 1), Some("fennick"));
    assert_eq!(tutorial::pointed_npc(&content, 2), Some("fennick"));
    assert_eq!(tutorial::pointed_npc(&content, 3), Some("hattie"));
    assert_eq!(tutorial::pointed_npc(&content, 0), None);
    assert_eq!(tutorial::pointed_npc(&content, 4), None);
    assert_eq!(
        tutorial::lockout_entry(&content, 1, "marisol"),
        Some("Tutorial_Stage1")
    );
    assert_eq!(tutorial::lockout_entry(&content, 1, "fennick"), None);
    // No tutorial.json: no tutorial.
    assert_eq!(tutorial::pointed_npc(&Content::default(), 1), None);
}

#[test]
fn a_tutorial_that_points_at_nobody_locks_out_on_no_node_or_ends_elsewhere_is_an_error() {
    let dir = temp_dir("tutorial-content");
    copy_dir(&content_dir(), &dir);
    std::fs::write(
        dir.join("tutorial.json"),
        r#"{"Stages":[
            {"Stage":1,"PointsAt":"nobody","Lockout":"Tutorial_Nowhere"},
            {"Stage":2,"PointsAt":"fennick","Lockout":"Tutorial_Stage2",
             "Until":{"Completed":"HattiesShanty"}},
            {"Stage":3,"PointsAt":"fennick","Lockout":"Tutorial_Stage3",
             "Until":{"Accepted":"NoSuchQuest"}}]}"#,
    )
    .expect("write");
    let (_, diagnostics) = banter_dialogue::check::load_and_check(&dir);
    let errors: Vec<String> = diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.problem.to_string())
        .collect();
    for expected in [
        "unknown NPC `nobody`",
        "Tutorial_Nowhere",
        "given by `hattie`, but points at `fennick`",
        "unknown quest `NoSuchQuest`",
    ] {
        assert!(
            errors.iter().any(|e| e.contains(expected)),
            "{expected}: {errors:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

async fn post_event(server: &TestServer, body: serde_json::Value) -> serde_json::Value {
    let (status, text) = server.post_event(&body.to_string()).await;
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).expect("json")
}

/// The entry `npc` opens on now, and the tutorial stage the server's facts say.
async fn entry(client: &mut Client, position: [f64; 3], npc: &str) -> (String, i64) {
    client.move_to(position).await.expect("moved");
    let opened = client.talk(npc).await.expect("talk");
    client.close_conversation().await.expect("closed");
    (opened.entry, opened.facts.tutorial_stage)
}

/// At `stage`, the NPC `pointed_npc` names resolves normally and the other is locked out.
async fn assert_stage(client: &mut Client, content: &Content, stage: i64) {
    let pointed = tutorial::pointed_npc(content, stage).expect("in the tutorial");
    let (locked_npc, locked_at) = if pointed == "fennick" {
        ("Marisol", NEAR_MARISOL)
    } else {
        ("Grandpa Fennick", NEAR_FENNICK)
    };
    assert_eq!(
        entry(client, locked_at, locked_npc).await,
        (format!("Tutorial_Stage{stage}"), stage),
        "{locked_npc} is locked out at stage {stage}"
    );
}

fn stage_in(messages: &[ServerMessage]) -> Option<i64> {
    messages.iter().rev().find_map(|m| match m {
        ServerMessage::Effect { profile, .. } => Some(profile.tutorial_stage),
        _ => None,
    })
}

async fn the_tutorial_starts_moves_on_through_its_quests_and_ends(backend: Backend) {
    // The player walks between three NPCs at test speed: no cooldown, no speed limit, and no
    // rate limit (the walk sends over 40 messages in about a second, past the default burst).
    let server = TestServer::start_on_with(backend, |c| {
        c.world.talk_cooldown = Duration::ZERO;
        c.world.max_speed = 1.0e6;
        c.limits.rate_per_sec = 1.0e6;
        c.limits.burst = 1.0e6;
    })
    .await;
    let content = Content::load(&content_dir()).0;
    let (token, player) = server.login_player("device-tutorial-01").await;
    let mut client = server.connect(&token).await;

    // Before the game starts the intro, nobody is locked out.
    assert_eq!(
        entry(&mut client, NEAR_MARISOL, "Marisol").await,
        ("Marisol_Hello".to_owned(), 0)
    );
    let started = serde_json::json!({
        "event_id": "tutorial-1", "player": player, "kind": "tutorial_started",
        "island": "brinehollow",
    });
    assert_eq!(
        post_event(&server, started.clone()).await["tutorial_stage"],
        1
    );

    // Stage 1: Fennick offers his quest, Marisol sends the player to him.
    assert_stage(&mut client, &content, 1).await;
    assert_eq!(
        entry(&mut client, NEAR_FENNICK, "Grandpa Fennick").await,
        ("CopperSnappers_Greet".to_owned(), 1)
    );
    let accepted = client.accept_copper_snappers().await;
    assert_eq!(
        stage_in(&accepted.messages),
        Some(2),
        "accepting ends stage 1"
    );
    client.close_conversation().await.expect("closed");

    // A second delivery of the start, or a new one, never restarts the tutorial.
    let again = serde_json::json!({
        "event_id": "tutorial-2", "player": player, "kind": "tutorial_started",
        "island": "brinehollow",
    });
    assert!(
        post_event(&server, again)
            .await
            .get("tutorial_stage")
            .is_none()
    );

    // Stage 2: three snappers, the check passes, the completion ends the stage.
    assert_stage(&mut client, &content, 2).await;
    post_event(
        &server,
        serde_json::json!({
            "event_id": "catch-1", "player": player, "kind": "fish_caught",
            "species": "Copper Snapper", "island": "brinehollow", "amount": 3,
        }),
    )
    .await;
    client.move_to(NEAR_FENNICK).await.expect("moved");
    assert_eq!(
        client.talk("Grandpa Fennick").await.expect("talk").entry,
        "CopperSnappers_Check"
    );
    client.check_copper_snappers(true).await;
    let paid = client
        .action(ActionType::CompleteQuest, "CopperSnappers")
        .await
        .expect("paid");
    assert_eq!(stage_in(&paid.messages), Some(3), "completing ends stage 2");
    client.close_conversation().await.expect("closed");

    // Stage 3 points at Hattie: Fennick is locked out now; her shanty ends the tutorial.
    assert_stage(&mut client, &content, 3).await;
    client.move_to(NEAR_HATTIE).await.expect("moved");
    let (entry_node, messages) = client.play_through("Hattie Brackwater").await;
    assert_eq!(entry_node, "HattiesShanty_Greet");
    assert!(
        messages.iter().any(|m| matches!(
            m,
            ServerMessage::Effect { effect: Effect::QuestCompleted { quest, .. }, .. }
                if quest == "HattiesShanty"
        )),
        "{messages:?}"
    );
    assert_eq!(stage_in(&messages), Some(4), "the shanty ends the tutorial");
    assert_eq!(tutorial::pointed_npc(&content, 4), None);

    // Out of the tutorial: everyone talks normally again.
    assert_eq!(
        entry(&mut client, NEAR_MARISOL, "Marisol").await,
        ("Marisol_Hello".to_owned(), 4)
    );
    assert_eq!(
        entry(&mut client, NEAR_FENNICK, "Grandpa Fennick").await.0,
        "LostReel_Greet"
    );
    server.stop().await.expect("clean shutdown");
}

banter_e2e::on_both_backends!(the_tutorial_starts_moves_on_through_its_quests_and_ends);
