//! Game events end to end: `POST /internal/events` from the trusted game server advances the
//! player's active objectives, exactly once per event id, and the connected session hears of it.

use std::time::Duration;

use banter_e2e::{Backend, Client, TestServer};
use banter_protocol::{ActionType, Effect, ServerMessage};
use banter_server::store::{self, ConnectOptions};

/// Grandpa Fennick stands at (14, 3, -42.5).
const NEAR_FENNICK: [f64; 3] = [14.0, 3.0, -38.0];

async fn server(backend: Backend) -> TestServer {
    TestServer::start_on_with(backend, |c| c.world.talk_cooldown = Duration::ZERO).await
}

/// Posts an event with the service key; status and parsed body.
async fn post_event(server: &TestServer, body: &str) -> (u16, serde_json::Value) {
    let auth = format!("Bearer {}", server.config.service_key);
    post_event_as(server, Some(&auth), body).await
}

async fn post_event_as(
    server: &TestServer,
    authorization: Option<&str>,
    body: &str,
) -> (u16, serde_json::Value) {
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(a) = authorization {
        headers.push(("Authorization", a));
    }
    let (status, text) = server
        .http("POST", "/internal/events", &headers, body)
        .await;
    let value = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
    (status, value)
}

fn catch(event_id: &str, player: &str, species: &str, amount: i64) -> String {
    serde_json::json!({
        "event_id": event_id,
        "player": player,
        "kind": "fish_caught",
        "species": species,
        "rarity": "common",
        "island": "brinehollow",
        "amount": amount,
    })
    .to_string()
}

/// A connected player who accepted CopperSnappers from Fennick.
async fn snapper_hunter(server: &TestServer, device: &str) -> (Client, String) {
    let (token, player) = server.login_player(device).await;
    let mut client = server.connect(&token).await;
    client.move_to(NEAR_FENNICK).await.expect("spawned");
    client.accept_copper_snappers().await;
    client.close_conversation().await.expect("closed");
    (client, player)
}

/// The event was applied and advanced Copper Snappers' catch, and nothing else, to `progress`.
fn assert_snappers_advanced_to(status: u16, body: &serde_json::Value, progress: u64) {
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        advanced(body),
        vec![("CopperSnappers/CatchSnappers".to_owned(), progress)]
    );
}

fn advanced(value: &serde_json::Value) -> Vec<(String, u64)> {
    value["advanced"]
        .as_array()
        .expect("an `advanced` list")
        .iter()
        .map(|a| {
            (
                format!(
                    "{}/{}",
                    a["quest"].as_str().unwrap_or_default(),
                    a["objective"].as_str().unwrap_or_default()
                ),
                a["progress"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

/// The connected session was told its objective advanced to `progress`.
async fn assert_pushed_progress(client: &mut Client, progress: u32) {
    let pushed = pushed_effect(client).await;
    assert!(
        matches!(pushed, Effect::ObjectiveAdvanced { progress: p, .. } if p == progress),
        "{pushed:?}"
    );
}

async fn pushed_effect(client: &mut Client) -> Effect {
    match client.recv().await {
        ServerMessage::Effect {
            action: ActionType::AdvanceObjective,
            effect,
            ..
        } => effect,
        other => panic!("expected a pushed effect, got {other:?}"),
    }
}

async fn catch_events_advance_copper_snappers_then_the_check_passes_and_pays_once(
    backend: Backend,
) {
    let server = server(backend).await;
    let (mut client, player) = snapper_hunter(&server, "device-events-01").await;

    // Two snappers: the objective advances and the connected session is told.
    let (status, body) = post_event(&server, &catch("ev-1", &player, "Copper Snapper", 2)).await;
    assert_snappers_advanced_to(status, &body, 2);
    assert_eq!(
        pushed_effect(&mut client).await,
        Effect::ObjectiveAdvanced {
            quest: "CopperSnappers".into(),
            objective: "CatchSnappers".into(),
            progress: 2,
            target: 3
        }
    );

    // The same delivery again changes nothing.
    let (status, body) = post_event(&server, &catch("ev-1", &player, "Copper Snapper", 2)).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "duplicate");
    // A fish that matches no filter advances nothing (and is still recorded).
    let (status, body) = post_event(&server, &catch("ev-2", &player, "Sardine", 1)).await;
    assert_eq!(status, 200, "{body}");
    assert!(advanced(&body).is_empty(), "{body}");

    // Check with two of three: failure.
    let opened = client.talk("Grandpa Fennick").await.expect("talk");
    assert_eq!(opened.entry, "CopperSnappers_Check");
    assert_eq!(
        opened.facts.progress.get("CopperSnappers/CatchSnappers"),
        Some(&2)
    );
    client.check_copper_snappers(false).await;
    client.look_at_the_snappers_again().await;

    // The third snapper arrives while the conversation is open.
    let (status, body) = post_event(&server, &catch("ev-3", &player, "Copper Snapper", 5)).await;
    assert_snappers_advanced_to(status, &body, 3);
    assert_pushed_progress(&mut client, 3).await;
    client.run_the_snapper_check(true).await;
    client
        .action(ActionType::CompleteQuest, "CopperSnappers")
        .await
        .expect("paid")
        .assert_copper_snappers_paid();
    assert!(
        client
            .action(ActionType::CompleteQuest, "CopperSnappers")
            .await
            .is_err()
    );

    // After completion, a catch advances nothing; the ledger holds one row.
    let (status, body) = post_event(&server, &catch("ev-4", &player, "Copper Snapper", 1)).await;
    assert_eq!(status, 200, "{body}");
    assert!(advanced(&body).is_empty(), "{body}");
    let store = store::connect(&server.config.database_url, ConnectOptions::default())
        .await
        .expect("store");
    assert_eq!(store.ledger(&player).await.expect("ledger").len(), 1);
    assert_eq!(
        store
            .load_player(&player)
            .await
            .expect("player")
            .profile
            .coins,
        120
    );
    store.close().await;
    server.stop().await.expect("clean shutdown");
}

async fn an_event_for_an_unknown_player_is_404_and_creates_nobody(backend: Backend) {
    let server = server(backend).await;
    for _ in 0..2 {
        let (status, body) = post_event(
            &server,
            &catch("ev-x", "nobody-at-all", "Copper Snapper", 1),
        )
        .await;
        assert_eq!(status, 404, "{body}");
        assert_eq!(body["error"], "unknown_player");
    }
    server.stop().await.expect("clean shutdown");
}

async fn a_player_token_or_no_key_never_reaches_the_events_endpoint(backend: Backend) {
    let server = server(backend).await;
    let (mut client, player) = snapper_hunter(&server, "device-events-02").await;
    let (token, _) = server.login_player("device-events-02").await;
    let body = catch("ev-auth", &player, "Copper Snapper", 3);
    let (status, _) = post_event_as(&server, None, &body).await;
    assert_eq!(status, 401);
    let bearer = format!("Bearer {token}");
    let (status, _) = post_event_as(&server, Some(&bearer), &body).await;
    assert_eq!(status, 403);
    let wrong = format!("Bearer {}x", server.config.service_key);
    let (status, _) = post_event_as(&server, Some(&wrong), &body).await;
    assert_eq!(status, 403);

    // Nothing was applied: the same event id is still new, and progress starts from zero.
    let (status, body) = post_event(&server, &body).await;
    assert_snappers_advanced_to(status, &body, 3);
    assert_pushed_progress(&mut client, 3).await;
    server.stop().await.expect("clean shutdown");
}

async fn bad_bodies_and_zero_negative_or_huge_amounts_are_400_and_change_nothing(backend: Backend) {
    let server = server(backend).await;
    let (_client, player) = snapper_hunter(&server, "device-events-03").await;
    for amount in [0, -1, -5_000_000_000, 1_000_001, i64::MAX] {
        let (status, body) = post_event(
            &server,
            &catch("ev-amount", &player, "Copper Snapper", amount),
        )
        .await;
        assert_eq!(status, 400, "{amount}: {body}");
        assert_eq!(body["error"], "bad_request");
    }
    let bad = [
        "not json".to_owned(),
        serde_json::json!({"event_id":"ev-b","player":player,"kind":"fish_jumped","island":"brinehollow"}).to_string(),
        serde_json::json!({"event_id":"ev-b","player":player,"kind":"fish_caught","island":"brinehollow"}).to_string(),
        serde_json::json!({"event_id":"ev-b","player":player,"kind":"item_found","island":"brinehollow"}).to_string(),
        serde_json::json!({"event_id":"ev-b","player":player,"kind":"tutorial_started","island":"brinehollow","amount":2}).to_string(),
        serde_json::json!({"event_id":"ev-b","player":player,"kind":"tutorial_started","island":"brinehollow","species":"Sprat"}).to_string(),
        serde_json::json!({"event_id":"","player":player,"kind":"item_found","item":"reel","island":"gullrock"}).to_string(),
        serde_json::json!({"event_id":"ev-b","player":player,"kind":"item_found","item":"reel","island":"gullrock","extra":1}).to_string(),
        r#"{"event_id":"ev-b","player":"p","kind":"fish_caught","species":"x","island":"i","amount":99999999999999999999999}"#.to_owned(),
    ];
    for body in &bad {
        let (status, answer) = post_event(&server, body).await;
        assert_eq!(status, 400, "{body}: {answer}");
    }
    // The refused amount recorded nothing: that id still applies, once.
    let (status, body) =
        post_event(&server, &catch("ev-amount", &player, "Copper Snapper", 1)).await;
    assert_snappers_advanced_to(status, &body, 1);
    server.stop().await.expect("clean shutdown");
}

banter_e2e::on_both_backends!(
    catch_events_advance_copper_snappers_then_the_check_passes_and_pays_once,
    an_event_for_an_unknown_player_is_404_and_creates_nobody,
    a_player_token_or_no_key_never_reaches_the_events_endpoint,
    bad_bodies_and_zero_negative_or_huge_amounts_are_400_and_change_nothing,
);
