//! Parties against a real server on 127.0.0.1 port 0 (the e2e harness): a small party load
//! (two parties of two and one of three ride Wren's ferry together, every member paid once, no
//! refusal), and the party cheats of the attack catalogue, each refused; with a second instance
//! on the same PostgreSQL database, the member talking on the other instance too.

use std::sync::Arc;
use std::time::Duration;

use banter_dialogue::content::Content;
use banter_e2e::{Backend, TestServer};
use banter_sim::attack::{self, AttackOptions, Verdict};
use banter_sim::http::Endpoint;
use banter_sim::load::{self, LoadOptions};
use banter_sim::pace::ReadingPace;
use banter_sim::party::PartySizes;
use banter_sim::world;

fn endpoint(server: &TestServer) -> Endpoint {
    Endpoint::parse(&format!("http://{}", server.addr)).expect("the test server's address")
}

fn content() -> Arc<Content> {
    world::load_content(&banter_e2e::content_dir()).expect("the sample content")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parties_ride_the_ferry_together_and_each_member_is_paid_once() {
    let server = TestServer::start().await;
    let report = load::run(LoadOptions {
        endpoint: endpoint(&server),
        locales: Vec::new(),
        // Two parties of two and one of three.
        bots: 7,
        duration: Duration::from_secs(3),
        rate_per_sec: 10.0,
        pace: ReadingPace::INSTANT,
        service_key: server.config.service_key.clone(),
        content: content(),
        progress: false,
        run_id: "live-parties".to_owned(),
        game_servers: None,
        parties: Some("2..3".parse::<PartySizes>().expect("sizes")),
    })
    .await
    .expect("the party load runs");
    let table = report.table();
    println!("{table}");
    assert!(report.clean(), "{table}");
    assert_eq!(report.rejections, 0, "{table}");
    let parties = report.parties.as_ref().expect("a party report");
    assert_eq!(parties.parties, 3, "{table}");
    assert_eq!(parties.formed, 3, "{table}");
    assert_eq!(parties.members, 7, "{table}");
    assert_eq!(parties.sizes.get(&2), Some(&2), "{table}");
    assert_eq!(parties.sizes.get(&3), Some(&1), "{table}");
    assert_eq!(parties.paid_once, 7, "{table}");
    assert_eq!(parties.paid_more, 0, "{table}");
    assert_eq!(parties.confirmed, 7, "{table}");
    // Every ride and every talk after it opened one conversation for its whole party.
    assert!(parties.shared_conversations >= 6, "{table}");
    assert!(
        parties.joined_by_server >= parties.shared_conversations,
        "{table}"
    );
    // The ferry's ballots: three majorities (the boat, the check, and the roll for the oars)
    // per party at least, none waiting for the 20 s limit.
    assert!(
        parties.ballots.get("majority").is_some_and(|&n| n >= 6),
        "{table}"
    );
    assert!(
        parties.ballots.get("roll").is_some_and(|&n| n >= 3),
        "{table}"
    );
    assert!(table.contains("7 of 7 members, each once"), "{table}");
    assert_eq!(report.quests_completed, 7, "{table}");
    server.stop().await.expect("clean shutdown");
}

fn attack_options(server: &TestServer, run_id: &str) -> AttackOptions {
    AttackOptions {
        endpoint: endpoint(server),
        content: content(),
        auth_secret: server.config.auth_secret.clone(),
        service_key: server.config.service_key.clone(),
        run_id: run_id.to_owned(),
        second_endpoint: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_party_cheat_is_refused() {
    let server = TestServer::start().await;
    let report = attack::run_party_cheats(attack_options(&server, "party-attack")).await;
    let table = report.table();
    println!("{table}");
    assert!(report.clean(), "{table}");
    assert_eq!(report.passed_through, 0, "{table}");
    assert!(report.cheats >= 10, "{table}");
    // One instance: the row that needs a second is skipped, and says so; every other ran.
    assert_eq!(report.skipped, 1, "{table}");
    let skipped = report
        .rows
        .iter()
        .find(|r| r.verdict == Verdict::Skipped)
        .expect("a skipped row");
    assert!(
        skipped.got.starts_with("skipped: needs a second instance"),
        "{table}"
    );
    assert_eq!(report.blocked, report.cheats - 1, "{table}");
    server.stop().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_on_another_instance_is_told_shared_elsewhere() {
    // Two instances on one PostgreSQL database (SQLite cannot share one between processes).
    let first = TestServer::start_on(Backend::Postgres).await;
    let second = first.another_instance().await;
    let mut options = attack_options(&first, "party-attack-pg");
    options.second_endpoint = Some(endpoint(&second));
    let report = attack::run_party_cheats(options).await;
    let table = report.table();
    println!("{table}");
    assert!(report.clean(), "{table}");
    assert_eq!(report.skipped, 0, "{table}");
    assert_eq!(report.blocked, report.cheats, "{table}");
    assert!(
        report
            .rows
            .iter()
            .any(|r| r.got == "shared_elsewhere" && r.verdict == Verdict::Blocked),
        "{table}"
    );
    second.stop().await.expect("clean shutdown");
    first.stop().await.expect("clean shutdown");
}
