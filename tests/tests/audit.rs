//! The audit log end to end, on both backends: every conversation step a player took and every
//! refusal is in the store, in order, so support can replay what the player did through
//! `GET /admin/audit` (service key only).

use std::time::Duration;

use banter_e2e::{Backend, ExpectRefused, TestServer};
use banter_protocol::{ActionType, ErrorCode};

const NEAR_PIM: [f64; 3] = [-640.0, 2.0, 910.0];

async fn steps_and_refusals_are_recorded_and_support_can_read_them(backend: Backend) {
    let server =
        TestServer::start_on_with(backend, |c| c.world.talk_cooldown = Duration::ZERO).await;
    let (token, player) = server.login_player("device-audit-01").await;
    let mut client = server.connect(&token).await;
    client.move_to(NEAR_PIM).await.expect("spawned");
    client.talk("Pim").await.expect("talk");
    client.accept_pims_quest().await;
    // Never armed.
    client
        .action(ActionType::CompleteQuest, "PimsTideTale")
        .await
        .expect_refused(ErrorCode::NotArmed);
    client.close_conversation().await.expect("closed");
    client.close().await;

    // Stopping flushes the audit queue; a new process on the same database serves the trail.
    let server = server.restart().await;
    let path = format!("/admin/audit?player={player}");
    let (status, _) = server.http("GET", &path, &[], "").await;
    assert_eq!(status, 401, "no key, no trail");
    let player_token = format!("Bearer {token}");
    let (status, _) = server
        .http("GET", &path, &[("Authorization", &player_token)], "")
        .await;
    assert_eq!(status, 403, "a player token is not the service key");
    let key = format!("Bearer {}", server.config.service_key);
    let (status, body) = server
        .http("GET", &path, &[("Authorization", &key)], "")
        .await;
    assert_eq!(status, 200, "{body}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&body).expect("json rows");
    let seen: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["message"].as_str().unwrap_or_default().to_owned(),
                r["code"].as_str().unwrap_or("ok").to_owned(),
                r["detail"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("talk", "ok", "Pim"),
        ("choose", "ok", "PimsTideTale_Greet_r1"),
        ("action", "ok", "AcceptQuest PimsTideTale"),
        ("action", "not_armed", ""),
        ("close", "ok", ""),
    ];
    assert_eq!(seen.len(), expected.len(), "{seen:#?}");
    for ((message, code, detail), (want_message, want_code, want_detail)) in
        seen.iter().zip(expected)
    {
        assert_eq!((message.as_str(), code.as_str()), (want_message, want_code));
        if want_code == "ok" {
            assert_eq!(detail, want_detail);
        }
    }
    assert!(
        rows.iter()
            .take(4)
            .all(|r| r["conversation"].as_str().is_some()),
        "{rows:#?}"
    );
    let (status, _) = server
        .http(
            "GET",
            "/admin/audit?player=",
            &[("Authorization", &key)],
            "",
        )
        .await;
    assert_eq!(status, 400, "an empty player id is refused");
    server.stop().await.expect("clean shutdown");
}

banter_e2e::on_both_backends!(steps_and_refusals_are_recorded_and_support_can_read_them);
