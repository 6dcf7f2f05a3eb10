//! Cutscene quests end to end (article section 5): talking to Keeper Ines while her current offer
//! is LanternsOfGullRock (`"Cutscene": "LanternLighting"`) opens no conversation; the quest is
//! accepted, the scene plays, and the reward lands once when the client reports it done.

use std::time::Duration;

use banter_e2e::{Backend, ExpectRefused, LANTERN_SCENE, LANTERNS_QUEST, TestServer};
use banter_protocol::{ActionType, Effect, ErrorCode, ServerMessage};
use banter_server::store::{self, ConnectOptions};

/// Keeper Ines stands at (870, 22, 260).
const NEAR_INES: [f64; 3] = [870.0, 22.0, 255.0];

async fn talking_to_ines_plays_the_lantern_cutscene_and_its_end_pays_once(backend: Backend) {
    let server =
        TestServer::start_on_with(backend, |c| c.world.talk_cooldown = Duration::ZERO).await;
    let mut client = server.player_at("device-cutscene-01", NEAR_INES).await;

    // Effects then the ack, and no `opened` at all: the quest accepted, the scene playing.
    let reply = client.start_the_lantern_cutscene().await;
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
    assert_eq!(reply.profile().expect("profile").coins, 0);

    // Talking during the scene is busy, and no conversation is open.
    client
        .expect_talk_refused("Keeper Ines", ErrorCode::Busy)
        .await;

    // The scene ends: the reward lands, with the new profile.
    let finished = client.cutscene_done(LANTERN_SCENE).await.expect("done");
    assert_eq!(
        finished.effects(),
        vec![Effect::QuestCompleted {
            quest: LANTERNS_QUEST.into(),
            coins: 200,
            experience: 80
        }]
    );
    assert_eq!(finished.profile().expect("profile").coins, 200);
    assert_eq!(finished.profile().expect("profile").experience, 80);

    // Reporting it again pays nothing.
    client
        .cutscene_done(LANTERN_SCENE)
        .await
        .expect_refused_alone(ErrorCode::NoCutscene);

    // Ines now opens a conversation on her next offer.
    let opened = client.talk("Keeper Ines").await.expect("talk");
    assert_eq!(opened.entry, "Voyage_Greet");
    assert_eq!(opened.facts.coins, 200);

    let store = store::connect(&server.config.database_url, ConnectOptions::default())
        .await
        .expect("store");
    assert_eq!(store.ledger_count(LANTERNS_QUEST).await.expect("ledger"), 1);
    store.close().await;
    server.stop().await.expect("clean shutdown");
}

async fn a_cutscene_done_with_no_cutscene_playing_is_no_cutscene(backend: Backend) {
    let server = TestServer::start_on(backend).await;
    let mut client = server.player_at("device-cutscene-02", NEAR_INES).await;
    client
        .cutscene_done(LANTERN_SCENE)
        .await
        .expect_refused(ErrorCode::NoCutscene);
    server.stop().await.expect("clean shutdown");
}

banter_e2e::on_both_backends!(
    talking_to_ines_plays_the_lantern_cutscene_and_its_end_pays_once,
    a_cutscene_done_with_no_cutscene_playing_is_no_cutscene,
);
