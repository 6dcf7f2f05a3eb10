//! The payout race end to end, on both backends: one player with a session on each of two server
//! instances (sharing nothing but the database), both at CopperSnappers' armed CompleteQuest,
//! fire it at the same moment. Exactly one pays; the other is refused with `quest_state`; the
//! ledger holds one row and the profile the reward once. Run many rounds: a race that pays twice
//! once in a while must fail here.
//!
//! Normally the newer session's claim closes the older one within milliseconds (see
//! `scale_out.rs`). These servers run with that coordination off, to model the window in which
//! the takeover notification is late: then only the database stands between two live sessions
//! and a double payment, and that is what this test proves.

use std::time::Duration;

use banter_e2e::{Backend, Client, TestServer};
use banter_protocol::{ActionType, ErrorCode};

/// Grandpa Fennick stands at (14, 3, -42.5).
const NEAR_FENNICK: [f64; 3] = [14.0, 3.0, -38.0];
const ROUNDS: usize = 12;

async fn catch_three(server: &TestServer, event_id: &str, player: &str) {
    let body = serde_json::json!({
        "event_id": event_id,
        "player": player,
        "kind": "fish_caught",
        "species": "Copper Snapper",
        "island": "brinehollow",
        "amount": 3,
    })
    .to_string();
    let (status, text) = server.post_event(&body).await;
    assert_eq!(status, 200, "{text}");
}

/// Talks to Fennick and passes the quest check: CompleteQuest is armed.
async fn at_the_armed_completion(server: &TestServer, token: &str) -> Client {
    let mut client = server.connect(token).await;
    client.move_to(NEAR_FENNICK).await.expect("spawned");
    let opened = client.talk("Grandpa Fennick").await.expect("talk");
    assert_eq!(opened.entry, "CopperSnappers_Check");
    client.check_copper_snappers(true).await;
    client
}

async fn two_instances_complete_the_same_quest_at_once_and_it_pays_once(backend: Backend) {
    let first = TestServer::start_on_with(backend, |c| {
        c.world.talk_cooldown = Duration::ZERO;
        c.coordinate_sessions = false;
    })
    .await;
    let second = first.another_instance().await;
    for round in 0..ROUNDS {
        let (token, player) = first.login_player(&format!("device-race-{round:04}")).await;

        // Accept through a conversation on the first instance; the catch arrives on the second.
        let mut client = first.connect(&token).await;
        client.move_to(NEAR_FENNICK).await.expect("spawned");
        client.accept_copper_snappers().await;
        client.close().await;
        catch_three(&second, &format!("race-{round}"), &player).await;

        let mut on_first = at_the_armed_completion(&first, &token).await;
        let mut on_second = at_the_armed_completion(&second, &token).await;
        let (a, b) = tokio::join!(
            on_first.action(ActionType::CompleteQuest, "CopperSnappers"),
            on_second.action(ActionType::CompleteQuest, "CopperSnappers"),
        );
        let (paid, refused) = match (a, b) {
            (Ok(paid), Err(refused)) | (Err(refused), Ok(paid)) => (paid, refused),
            (Ok(_), Ok(_)) => panic!("round {round}: both completions were paid"),
            (Err(a), Err(b)) => panic!("round {round}: neither completion was paid: {a:?} {b:?}"),
        };
        paid.assert_copper_snappers_paid();
        assert_eq!(refused.code, ErrorCode::QuestState, "{}", refused.message);
        assert!(refused.before.is_empty(), "{:?}", refused.before);

        let quoted = player.replace('\'', "''");
        let db = first.database();
        assert_eq!(
            db.scalar(&format!(
                "SELECT COUNT(*) FROM reward_ledger WHERE player_id = '{quoted}'"
            ))
            .await,
            1,
            "round {round}: one ledger row"
        );
        assert_eq!(
            db.scalar(&format!(
                "SELECT coins FROM profiles WHERE player_id = '{quoted}'"
            ))
            .await,
            120,
            "round {round}: the reward once"
        );
        on_first.close().await;
        on_second.close().await;
    }
    second.stop().await.expect("clean shutdown");
    first.stop().await.expect("clean shutdown");
}

banter_e2e::on_both_backends!(two_instances_complete_the_same_quest_at_once_and_it_pays_once);
