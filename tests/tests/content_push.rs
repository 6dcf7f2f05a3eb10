//! A content push strands nobody: a reload, or a start, on content that no longer has what
//! stored players hold (an active or tracked quest, an objective in progress, a parked
//! conversation) is refused, naming every such item, and changes nothing.

use std::time::Duration;

use banter_e2e::{Backend, TestServer};

/// What an older content gave a player and the content served now no longer has.
const RETIRED: &[&str] = &[
    "INSERT INTO profiles (player_id, tracked_quest) VALUES ('veteran', 'RetiredQuest')",
    "INSERT INTO quest_states (player_id, quest_id, status) VALUES ('veteran', 'RetiredQuest', 'active')",
    "INSERT INTO quest_states (player_id, quest_id, status) VALUES ('veteran', 'PimsTideTale', 'active')",
    "INSERT INTO objective_progress (player_id, quest_id, objective_id, progress) \
     VALUES ('veteran', 'PimsTideTale', 'OldObjective', 2)",
];

async fn reload(server: &TestServer) -> (u16, String) {
    let key = format!("Bearer {}", server.config.service_key);
    server
        .http("POST", "/admin/reload", &[("Authorization", &key)], "")
        .await
}

async fn content_push_that_strands_players_is_refused(backend: Backend) {
    let server =
        TestServer::start_on_with(backend, |c| c.world.talk_cooldown = Duration::ZERO).await;
    let (status, body) = reload(&server).await;
    assert_eq!((status, body.as_str()), (200, r#"{"version":2}"#));

    for sql in RETIRED {
        server.database().exec(sql).await;
    }
    let (status, body) = reload(&server).await;
    assert_eq!(status, 422, "{body}");
    for item in [
        "quest `RetiredQuest` is active for 1 player",
        "objective `OldObjective` of quest `PimsTideTale` has progress for 1 player",
        "quest `RetiredQuest` is tracked by 1 player",
    ] {
        assert!(body.contains(item), "`{item}` not named in {body}");
    }
    let (_, ready) = server.http("GET", "/readyz", &[], "").await;
    assert!(
        ready.contains(r#""content_version":2"#),
        "unchanged: {ready}"
    );

    // A start on that content is a push too.
    let database = server.database_handle();
    let config = server.config.clone();
    server.stop().await.expect("clean shutdown");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let started = banter_server::run(config.clone(), listener, async {}).await;
    let refused = started.expect_err("a start that strands players is refused");
    assert!(refused.to_string().contains("RetiredQuest"), "{refused}");

    // Once nobody holds it any more, the same content is served.
    database
        .exec("DELETE FROM objective_progress WHERE player_id = 'veteran'")
        .await;
    database
        .exec("DELETE FROM quest_states WHERE player_id = 'veteran'")
        .await;
    database
        .exec("UPDATE profiles SET tracked_quest = NULL WHERE player_id = 'veteran'")
        .await;
    let server = TestServer::start_config(config).await;
    let (status, body) = reload(&server).await;
    assert_eq!((status, body.as_str()), (200, r#"{"version":2}"#));
    server.stop().await.expect("clean shutdown");
}

banter_e2e::on_both_backends!(content_push_that_strands_players_is_refused);
