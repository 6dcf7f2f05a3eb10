//! The simulator against a real server on 127.0.0.1 port 0 (the e2e harness): honest bots get
//! no refusals and finish quests, every cheat in the catalogue is blocked, a scripted person
//! plays Pim's tale through the terminal client, and a session reconnects when dropped.

use std::sync::Arc;
use std::time::Duration;

use banter_dialogue::content::Content;
use banter_e2e::TestServer;
use banter_protocol::ClientMessage;
use banter_sim::attack::{self, AttackOptions};
use banter_sim::http::Endpoint;
use banter_sim::load::{self, LoadOptions};
use banter_sim::pace::ReadingPace;
use banter_sim::play::{self, Input, PlayOptions};
use banter_sim::session::{Session, SessionOptions};
use banter_sim::world;

fn endpoint(server: &TestServer) -> Endpoint {
    Endpoint::parse(&format!("http://{}", server.addr)).expect("the test server's address")
}

fn content() -> Arc<Content> {
    world::load_content(&banter_e2e::content_dir()).expect("the sample content")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honest_bots_play_quests_with_no_refusal_and_no_error() {
    let server = TestServer::start().await;
    // Bots spread over three locales (and the pseudo-locale): the text differs, the walk and
    // every verdict must not.
    let report = load::run(LoadOptions {
        endpoint: endpoint(&server),
        locales: ["ja", "ar", "en", "en-XA"].map(String::from).to_vec(),
        bots: 8,
        duration: Duration::from_secs(5),
        rate_per_sec: 10.0,
        pace: ReadingPace::INSTANT,
        service_key: server.config.service_key.clone(),
        content: content(),
        progress: false,
        run_id: "live-load".to_owned(),
        game_servers: None,
        parties: None,
    })
    .await
    .expect("the load test runs");
    assert!(report.clean(), "{}", report.table());
    assert!(report.messages > 0, "{}", report.table());
    assert!(report.conversations > 0, "{}", report.table());
    assert!(report.quests_completed > 0, "{}", report.table());
    assert!(report.latency_us.p50 > 0 && report.latency_us.p50 <= report.latency_us.max);
    // Every answered request is in exactly one of the figures: its kind's, or the wind-down's.
    let by_kind: u64 = report.latency_by_kind_us.values().map(|k| k.messages).sum();
    assert_eq!(
        by_kind + report.wind_down_us.messages,
        report.messages,
        "{}",
        report.table()
    );
    server.stop().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_cheat_in_the_catalogue_is_blocked() {
    let server = TestServer::start().await;
    let report = attack::run(AttackOptions {
        endpoint: endpoint(&server),
        content: content(),
        auth_secret: server.config.auth_secret.clone(),
        service_key: server.config.service_key.clone(),
        run_id: "live-attack".to_owned(),
        second_endpoint: None,
    })
    .await;
    assert!(report.clean(), "{}", report.table());
    assert_eq!(report.passed_through, 0);
    assert!(report.cheats >= 20, "{}", report.table());
    server.stop().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_player_hears_pims_tale_and_is_paid() {
    let server = TestServer::start().await;
    // Talk to Pim, say "Go on, tell me.", advance three lines, quit.
    let input = Input::spawn(std::io::Cursor::new("pim\n1\n\n\n\nq\n"));
    let mut out = Vec::new();
    play::run(
        PlayOptions {
            endpoint: endpoint(&server),
            player: "scripted".to_owned(),
            content: content(),
            service_key: server.config.service_key.clone(),
            letter_interval: Duration::ZERO,
            spawn: Some("pim".to_owned()),
        },
        input,
        &mut out,
    )
    .await
    .expect("plays");
    let text = String::from_utf8(out).expect("utf-8");
    for expected in [
        "Pim: Do you want to hear about the night the tide went out",
        "1) Go on, tell me.",
        "★ Quest accepted: PimsTideTale",
        "★ PimsTideTale: HearTheTale 1/1",
        "★ Quest completed: PimsTideTale (+30 coins, +20 xp)",
        "Bye! Coins 30 · XP 20",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    server.stop().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_session_reconnects_on_the_next_request() {
    let server = TestServer::start().await;
    let mut session = Session::start(
        SessionOptions {
            endpoint: endpoint(&server),
            device: "sim-reconnect-0001".to_owned(),
            rate_per_sec: 0.0,
            content: content(),
        },
        None,
    )
    .await
    .expect("logged in");
    let spot = [-640.0, 2.0, 910.0];
    session.move_to(spot).await.expect("spawned");
    // The same player connects elsewhere: the server ends the first session (`bye replaced`).
    let token = server.login("sim-reconnect-0001").await;
    let other = server.connect(&token).await;
    // The first request after that either meets the closed connection (an error) or, when the
    // `bye` has already arrived, reconnects by itself: both are the replaced session being gone.
    let first = session
        .request(ClientMessage::Move {
            id: None,
            position: spot,
        })
        .await;
    if let Ok(reply) = &first {
        assert_eq!(
            session.metrics.reconnects, 1,
            "answered only after a reconnect: {reply:?}"
        );
    }
    other.close().await;
    let reply = session
        .move_to(spot)
        .await
        .expect("the next request reconnects");
    assert!(reply.answer.is_ok(), "{reply:?}");
    assert_eq!(session.metrics.reconnects, 1);
    server.stop().await.expect("clean shutdown");
}
