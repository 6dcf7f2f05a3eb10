//! A content push strands nobody: a reload, or a start, on content that no longer has what
//! stored players hold (an active or tracked quest, an objective in progress, a parked
//! conversation) is refused, naming every such item, and changes nothing; a content migration
//! (`content/migrations.json`) moves the players with the content, once.

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

/// Renames every `from` to `to` in a content file.
fn rename_in(path: &std::path::Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).expect("read");
    assert!(text.contains(from), "`{from}` not in {}", path.display());
    std::fs::write(path, text.replace(from, to)).expect("write");
}

async fn count(server: &TestServer, sql: &str) -> i64 {
    server.database().scalar(sql).await
}

async fn a_content_migration_moves_the_players_once(backend: Backend) {
    let content = banter_e2e::content_copy("content");
    let served = content.clone();
    let server = TestServer::start_on_with(backend, move |c| {
        c.content = served;
        c.world.talk_cooldown = Duration::ZERO;
    })
    .await;
    let (token, player) = server.login_player("device-migrated").await;
    let mut client = server.connect(&token).await;
    client.move_to([-640.0, 2.0, 910.0]).await.expect("spawned");
    client.talk("Pim").await.expect("talk");
    client.hear_pims_tale().await;
    client.close_conversation().await.expect("closed");

    // The writers rename the quest (and its nodes) everywhere.
    rename_in(&content.join("quests.json"), "PimsTideTale", "PimsTale");
    rename_in(
        &content.join("dialogue/base/Pim.json"),
        "PimsTideTale",
        "PimsTale",
    );
    let (status, body) = reload(&server).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("quest `PimsTideTale` is active for 1 player")
            && body.contains("migrations.json"),
        "{body}"
    );

    // With a migration the push goes through, and the player's quest moves with it.
    std::fs::write(
        content.join("migrations.json"),
        r#"[{ "Id": "pim-renamed", "RenameQuests": { "PimsTideTale": "PimsTale" } }]"#,
    )
    .expect("write");
    let (status, body) = reload(&server).await;
    assert_eq!((status, body.as_str()), (200, r#"{"version":2}"#));
    let held = |quest: &str| {
        format!(
            "SELECT COUNT(*) FROM quest_states WHERE player_id = '{player}' AND quest_id = '{quest}' AND status = 'active'"
        )
    };
    assert_eq!(count(&server, &held("PimsTale")).await, 1);
    assert_eq!(count(&server, &held("PimsTideTale")).await, 0);
    // The player's live session read the moved quest again: Pim opens on its check line, not
    // on an offer of a quest the player already has.
    assert_eq!(
        client.talk("Pim").await.expect("talk").entry,
        "PimsTale_Check"
    );
    client.close_conversation().await.expect("closed");
    assert_eq!(
        count(
            &server,
            &format!("SELECT COUNT(*) FROM objective_progress WHERE player_id = '{player}' AND quest_id = 'PimsTale' AND progress = 1")
        )
        .await,
        1,
        "the tale heard stays heard"
    );

    // Retiring the quest with a reward pays it once, however often the content is pushed.
    std::fs::write(
        content.join("migrations.json"),
        r#"[{ "Id": "pim-renamed", "RenameQuests": { "PimsTideTale": "PimsTale" } },
            { "Id": "pim-retired", "RemoveQuests": { "PimsTale": { "Pay": { "Coins": 7, "Experience": 3 } } } }]"#,
    )
    .expect("write");
    for version in [3, 4] {
        let (status, body) = reload(&server).await;
        assert_eq!((status, body), (200, format!(r#"{{"version":{version}}}"#)));
    }
    assert_eq!(
        count(&server, "SELECT COUNT(*) FROM applied_migrations").await,
        2
    );
    assert_eq!(
        count(
            &server,
            &format!("SELECT coins FROM profiles WHERE player_id = '{player}'")
        )
        .await,
        7
    );
    assert_eq!(
        count(
            &server,
            &format!("SELECT COUNT(*) FROM reward_ledger WHERE player_id = '{player}' AND quest_id = 'PimsTale' AND coins = 7")
        )
        .await,
        1
    );
    assert_eq!(count(&server, &held("PimsTale")).await, 0, "completed");
    drop(client);
    server.stop().await.expect("clean shutdown");
}

banter_e2e::on_both_backends!(
    content_push_that_strands_players_is_refused,
    a_content_migration_moves_the_players_once
);
