//! Cutscene quests end to end (article section 5): talking to Keeper Ines while her current offer
//! is LanternsOfGullRock (`"Cutscene": "LanternLighting"`) opens no conversation; the quest is
//! accepted, the scene plays, and the reward lands once when the client reports it done.

use std::time::Duration;

use banter_e2e::{Backend, TestServer};
use banter_protocol::{ActionType, ClientMessage, Effect, ErrorCode, ServerMessage};
use banter_server::store::{self, ConnectOptions};

/// Keeper Ines stands at (870, 22, 260).
const NEAR_INES: [f64; 3] = [870.0, 22.0, 255.0];

fn talk() -> ClientMessage {
    ClientMessage::Talk {
        id: None,
        npc: "Keeper Ines".into(),
        instance: None,
        cached: None,
    }
}

fn done(scene: &str) -> ClientMessage {
    ClientMessage::CutsceneDone {
        id: None,
        scene: scene.into(),
    }
}

async fn talking_to_ines_plays_the_lantern_cutscene_and_its_end_pays_once(backend: Backend) {
    let server =
        TestServer::start_on_with(backend, |c| c.world.talk_cooldown = Duration::ZERO).await;
    let mut client = server.player_at("device-cutscene-01", NEAR_INES).await;

    let reply = client.request(talk()).await.expect("talk");
    // Effects then the ack, and no `opened` at all.
    assert!(
        !reply
            .messages
            .iter()
            .any(|m| matches!(m, ServerMessage::Opened { .. })),
        "{:?}",
        reply.messages
    );
    let actions: Vec<ActionType> = reply
        .messages
        .iter()
        .filter_map(|m| match m {
            ServerMessage::Effect { action, .. } => Some(*action),
            _ => None,
        })
        .collect();
    assert_eq!(
        actions,
        vec![ActionType::AcceptQuest, ActionType::PlayCutscene]
    );
    assert_eq!(
        reply.effects(),
        vec![
            Effect::QuestAccepted {
                quest: "LanternsOfGullRock".into(),
                objectives: vec!["WatchTheLighting".into()]
            },
            Effect::PlayCutscene {
                scene: "LanternLighting".into()
            }
        ]
    );
    assert_eq!(reply.profile().expect("profile").coins, 0);

    // No conversation is open; talking during the scene is busy.
    assert_eq!(
        client
            .close_conversation()
            .await
            .expect_err("nothing open")
            .code,
        ErrorCode::NoConversation
    );
    assert_eq!(
        client.request(talk()).await.expect_err("busy").code,
        ErrorCode::Busy
    );

    // The scene ends: the reward lands, with the new profile.
    let finished = client.request(done("LanternLighting")).await.expect("done");
    assert_eq!(
        finished.effects(),
        vec![Effect::QuestCompleted {
            quest: "LanternsOfGullRock".into(),
            coins: 200,
            experience: 80
        }]
    );
    assert_eq!(finished.profile().expect("profile").coins, 200);
    assert_eq!(finished.profile().expect("profile").experience, 80);

    // Reporting it again pays nothing.
    let again = client
        .request(done("LanternLighting"))
        .await
        .expect_err("no cutscene playing");
    assert_eq!(again.code, ErrorCode::NoCutscene);
    assert!(again.before.is_empty(), "{:?}", again.before);

    // Ines now opens a conversation on her next offer.
    let opened = client.talk("Keeper Ines").await.expect("talk");
    assert_eq!(opened.entry, "Voyage_Greet");
    assert_eq!(opened.facts.coins, 200);

    let store = store::connect(&server.config.database_url, ConnectOptions::default())
        .await
        .expect("store");
    assert_eq!(
        store
            .ledger_count("LanternsOfGullRock")
            .await
            .expect("ledger"),
        1
    );
    store.close().await;
    server.stop().await.expect("clean shutdown");
}

async fn a_cutscene_done_with_no_cutscene_playing_is_no_cutscene(backend: Backend) {
    let server = TestServer::start_on(backend).await;
    let mut client = server.player_at("device-cutscene-02", NEAR_INES).await;
    let refused = client
        .request(done("LanternLighting"))
        .await
        .expect_err("nothing is playing");
    assert_eq!(refused.code, ErrorCode::NoCutscene);
    server.stop().await.expect("clean shutdown");
}

banter_e2e::on_both_backends!(
    talking_to_ines_plays_the_lantern_cutscene_and_its_end_pays_once,
    a_cutscene_done_with_no_cutscene_playing_is_no_cutscene,
);
