//! The tutorial lockout end to end: during stages 1..=N every NPC except the one the tutorial
//! points at opens on the stage's lockout line; the pointed NPC resolves normally. The pointed NPC
//! comes from `banter_dialogue::tutorial::pointed_npc`, the function a client uses too.
//!
//! The sample content may not have a `tutorial.json` yet: the test runs on a copy with one.

use std::time::Duration;

use banter_dialogue::content::Content;
use banter_dialogue::tutorial;
use banter_e2e::{TestServer, copy_dir, temp_dir};
use banter_server::store::{self, ConnectOptions};

/// Grandpa Fennick stands at (14, 3, -42.5); Marisol at (-6, 3, -18).
const NEAR_FENNICK: [f64; 3] = [14.0, 3.0, -38.0];
const NEAR_MARISOL: [f64; 3] = [-6.0, 3.0, -14.0];

const TUTORIAL: &str = r#"{
  "Stages": [
    { "Stage": 1, "PointsAt": "fennick", "Lockout": "Tutorial_Stage1" },
    { "Stage": 2, "PointsAt": "fennick", "Lockout": "Tutorial_Stage2" },
    { "Stage": 3, "PointsAt": "marisol", "Lockout": "Tutorial_Stage3" }
  ]
}"#;

fn content_with_tutorial() -> std::path::PathBuf {
    let dir = temp_dir("tutorial-content");
    copy_dir(&banter_e2e::content_dir(), &dir);
    std::fs::write(dir.join("tutorial.json"), TUTORIAL).expect("write tutorial.json");
    dir
}

/// The entry a new player at `stage`, standing at `position`, gets from `npc`.
async fn entry_at_stage(
    server: &TestServer,
    device: &str,
    stage: i64,
    position: [f64; 3],
    npc: &str,
) -> String {
    let (token, player) = server.login_player(device).await;
    let store = store::connect(&server.config.database_url, ConnectOptions::default())
        .await
        .expect("store");
    store
        .set_tutorial_stage(&player, stage)
        .await
        .expect("stage set");
    store.close().await;
    let mut client = server.connect(&token).await;
    client.move_to(position).await.expect("spawned");
    let opened = client.talk(npc).await.expect("talk");
    assert_eq!(opened.facts.tutorial_stage, stage);
    opened.entry
}

#[test]
fn the_pointed_npc_comes_from_tutorial_json_and_nothing_outside_the_stages() {
    let dir = content_with_tutorial();
    let (content, diagnostics) = banter_dialogue::check::load_and_check(&dir);
    assert!(
        banter_dialogue::check::is_clean(&diagnostics),
        "{diagnostics:#?}"
    );
    assert_eq!(tutorial::pointed_npc(&content, 1), Some("fennick"));
    assert_eq!(tutorial::pointed_npc(&content, 3), Some("marisol"));
    assert_eq!(tutorial::pointed_npc(&content, 0), None);
    assert_eq!(tutorial::pointed_npc(&content, 4), None);
    assert_eq!(
        tutorial::lockout_entry(&content, 1, "marisol"),
        Some("Tutorial_Stage1")
    );
    assert_eq!(tutorial::lockout_entry(&content, 1, "fennick"), None);
    // No tutorial.json: no tutorial.
    assert_eq!(tutorial::pointed_npc(&Content::default(), 1), None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tutorial_that_points_at_nobody_or_locks_out_on_no_node_is_an_error() {
    let dir = content_with_tutorial();
    std::fs::write(
        dir.join("tutorial.json"),
        r#"{"Stages":[{"Stage":1,"PointsAt":"nobody","Lockout":"Tutorial_Nowhere"}]}"#,
    )
    .expect("write");
    let (_, diagnostics) = banter_dialogue::check::load_and_check(&dir);
    let errors: Vec<String> = diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.problem.to_string())
        .collect();
    assert!(
        errors.iter().any(|e| e.contains("unknown NPC `nobody`")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.contains("Tutorial_Nowhere")),
        "{errors:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn during_the_tutorial_only_the_pointed_npc_talks_normally() {
    let dir = content_with_tutorial();
    let server = TestServer::start_with(|c| {
        c.content = dir.clone();
        c.world.talk_cooldown = Duration::ZERO;
    })
    .await;

    // Stage 1 points at Fennick: he resolves normally, Marisol is locked out.
    assert_eq!(
        entry_at_stage(
            &server,
            "device-tutorial-01",
            1,
            NEAR_FENNICK,
            "Grandpa Fennick"
        )
        .await,
        "CopperSnappers_Greet"
    );
    assert_eq!(
        entry_at_stage(&server, "device-tutorial-02", 1, NEAR_MARISOL, "Marisol").await,
        "Tutorial_Stage1"
    );
    // Stage 3 points at Marisol: now Fennick is the one locked out.
    assert_eq!(
        entry_at_stage(
            &server,
            "device-tutorial-03",
            3,
            NEAR_FENNICK,
            "Grandpa Fennick"
        )
        .await,
        "Tutorial_Stage3"
    );
    let entry = entry_at_stage(&server, "device-tutorial-04", 3, NEAR_MARISOL, "Marisol").await;
    assert!(!entry.starts_with("Tutorial_"), "{entry}");
    // Past the last stage, no lockout.
    let entry = entry_at_stage(&server, "device-tutorial-05", 4, NEAR_MARISOL, "Marisol").await;
    assert!(!entry.starts_with("Tutorial_"), "{entry}");
    server.stop().await.expect("clean shutdown");
    let _ = std::fs::remove_dir_all(&dir);
}
