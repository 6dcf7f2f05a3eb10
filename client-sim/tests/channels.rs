//! The simulator's game servers against a real server on 127.0.0.1 port 0 (the e2e harness):
//! honest bots carried over channels (HTTP batches under a request budget, and one WebSocket per
//! game server) get no rejection and finish quests, and every channel cheat is refused.

use std::sync::Arc;
use std::time::Duration;

use banter_dialogue::content::Content;
use banter_e2e::TestServer;
use banter_sim::attack::{self, AttackOptions};
use banter_sim::channel::Transport;
use banter_sim::http::Endpoint;
use banter_sim::load::{self, GameServerLoad, LoadOptions};
use banter_sim::pace::ReadingPace;
use banter_sim::report::LoadReport;
use banter_sim::world;

fn endpoint(server: &TestServer) -> Endpoint {
    Endpoint::parse(&format!("http://{}", server.addr)).expect("the test server's address")
}

fn content() -> Arc<Content> {
    world::load_content(&banter_e2e::content_dir()).expect("the sample content")
}

/// Two game servers of three players each, for six seconds.
async fn game_servers(server: &TestServer, transport: Transport, run_id: &str) -> LoadReport {
    load::run(LoadOptions {
        endpoint: endpoint(server),
        locales: Vec::new(),
        bots: 0,
        duration: Duration::from_secs(6),
        rate_per_sec: 10.0,
        pace: ReadingPace::INSTANT,
        service_key: server.config.service_key.clone(),
        content: content(),
        progress: false,
        run_id: run_id.to_owned(),
        game_servers: Some(GameServerLoad {
            servers: 2,
            players_per_server: 3,
            transport,
            requests_per_minute: 120.0,
            long_poll: None,
        }),
        parties: None,
    })
    .await
    .expect("the load runs")
}

#[track_caller]
fn assert_clean_and_playing(report: &LoadReport) {
    let text = report.table();
    assert!(report.clean(), "{text}");
    assert_eq!(report.bots, 6, "{text}");
    assert_eq!(report.game_servers.len(), 2, "{text}");
    assert!(report.conversations > 0, "{text}");
    assert!(report.quests_completed > 0, "{text}");
    for g in &report.game_servers {
        assert_eq!(g.players, 3, "{text}");
        assert_eq!(g.rejections, 0, "{text}");
        assert!(g.rejections_by_code.is_empty(), "{text}");
        assert_eq!(g.errors, 0, "{text}");
        assert!(g.requests > 0 && g.items > 0, "{text}");
        // Every item was answered: joins, messages (leaves are answered by nothing).
        assert!(g.latency_us.messages > 0, "{text}");
        assert!(
            g.latency_us.latency.p50 <= g.latency_us.latency.p99,
            "{text}"
        );
        assert!(!g.channel.is_empty(), "{text}");
    }
    let paid: u64 = report.game_servers.iter().map(|g| g.quests_paid).sum();
    assert!(paid >= report.quests_completed, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn game_servers_carry_bots_over_http_batches_within_the_budget() {
    let server = TestServer::start().await;
    let report = game_servers(&server, Transport::Http, "channels-http").await;
    assert_clean_and_playing(&report);
    assert_eq!(report.transport.as_deref(), Some("http"));
    for g in &report.game_servers {
        // One request every 500 ms at most: 6 s of load plus the opening and the close.
        assert!(
            g.peak_requests_per_minute <= 20,
            "{}",
            report.game_servers_table()
        );
        assert_eq!(g.retries, 0, "{}", report.game_servers_table());
    }
    server.stop().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn game_servers_carry_bots_over_one_websocket_each() {
    let server = TestServer::start().await;
    let report = game_servers(&server, Transport::Ws, "channels-ws").await;
    assert_clean_and_playing(&report);
    assert_eq!(report.transport.as_deref(), Some("ws"));
    server.stop().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_channel_cheat_is_refused() {
    let server = TestServer::start().await;
    let report = attack::run_channel_cheats(AttackOptions {
        endpoint: endpoint(&server),
        content: content(),
        auth_secret: server.config.auth_secret.clone(),
        service_key: server.config.service_key.clone(),
        run_id: "channel-attack".to_owned(),
        second_endpoint: None,
    })
    .await;
    assert!(report.clean(), "{}", report.table());
    assert_eq!(report.passed_through, 0, "{}", report.table());
    assert_eq!(report.cheats, 10, "{}", report.table());
    // Each was judged by the facts the server reports afterwards, too.
    assert!(
        report
            .rows
            .iter()
            .all(|r| r.profile_unchanged == Some(true)),
        "{}",
        report.table()
    );
    server.stop().await.expect("clean shutdown");
}
