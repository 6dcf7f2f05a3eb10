//! Operations end to end: health, readiness, metrics, content hot reload through the admin
//! endpoint (atomic, version-pinned for open conversations, refused whole when broken, only for
//! the service key), and graceful shutdown.

use std::path::{Path, PathBuf};
use std::time::Duration;

use banter_e2e::{ExpectRefused, TestServer, metric_value};
use banter_protocol::{ActionType, ByeReason, ErrorCode};

const OLD_TALE: &str = "The sea went so far out you could walk to Gull Rock.";
const NEW_TALE: &str = "The sea went so far out you could walk to Mistral Reef.";

/// A private copy of the sample content, and its Pim file.
fn content_copy() -> (PathBuf, PathBuf) {
    let dir = banter_e2e::content_copy("content");
    let pim = dir.join("dialogue/base/Pim.json");
    assert!(read(&pim).contains(OLD_TALE), "the sample tale changed");
    (dir, pim)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("read")
}

/// Replaces `from` (which must be there) with `to` in a content file.
fn edit(path: &Path, from: &str, to: &str) {
    let text = read(path);
    assert!(text.contains(from), "`{from}` not in {}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).expect("write");
}

/// A server on `content` with no talk cooldown, once it has loaded that content (the server
/// task loads it before it answers any request, so a test may edit the files after this).
async fn server_on(content: &Path) -> TestServer {
    let server =
        TestServer::start_serving(content, |c| c.world.talk_cooldown = Duration::ZERO).await;
    assert_eq!(content_version(&server).await, 1);
    server
}

async fn reload(server: &TestServer, key: Option<&str>) -> (u16, String) {
    let header = key.map(|k| format!("Bearer {k}"));
    let headers: Vec<(&str, &str)> = header
        .as_deref()
        .map(|h| vec![("Authorization", h)])
        .unwrap_or_default();
    server.http("POST", "/admin/reload", &headers, "").await
}

async fn content_version(server: &TestServer) -> u64 {
    let (status, body) = server.http("GET", "/readyz", &[], "").await;
    assert_eq!(status, 200, "{body}");
    let value: serde_json::Value = serde_json::from_str(&body).expect("json");
    value["content_version"].as_u64().expect("a version")
}

#[tokio::test]
async fn healthz_answers_200() {
    let server = TestServer::start().await;
    let (status, body) = server.http("GET", "/healthz", &[], "").await;
    assert_eq!((status, body.as_str()), (200, "ok"));
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn readyz_answers_200_with_the_store_ok_and_the_content_version() {
    let server = TestServer::start().await;
    let (status, body) = server.http("GET", "/readyz", &[], "").await;
    assert_eq!(status, 200, "{body}");
    let value: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(value["store"], "ok", "{body}");
    assert_eq!(value["backend"], "sqlite", "{body}");
    assert_eq!(value["content_version"], 1, "{body}");
    assert_eq!(value["open_sessions"], 0, "{body}");
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn metrics_count_messages_rejections_by_code_and_handling_latency() {
    let server = TestServer::start().await;
    let text = server.metrics().await;
    for family in [
        "banter_open_sessions",
        "banter_messages_total",
        "banter_rejections_total",
        "banter_actions_total",
        "banter_message_handling_seconds",
    ] {
        assert!(
            text.contains(&format!("# TYPE {family} ")),
            "{family} missing:\n{text}"
        );
    }
    let rejected = "banter_rejections_total{code=\"not_reachable\"}";
    assert_eq!(metric_value(&text, rejected), Some(0.0));

    let (mut client, _) = server.player_talking_to_pim("device-ops-01").await;
    client
        .advance("PimsTideTale_Tale")
        .await
        .expect_refused(ErrorCode::NotReachable);
    client.accept_pims_quest().await;

    let text = server.metrics().await;
    let value = |series: &str| {
        metric_value(&text, series).unwrap_or_else(|| panic!("no {series} in:\n{text}"))
    };
    assert_eq!(value(rejected), 1.0);
    assert_eq!(value("banter_open_sessions"), 1.0);
    assert_eq!(value("banter_messages_total{type=\"move\"}"), 1.0);
    assert_eq!(value("banter_messages_total{type=\"talk\"}"), 1.0);
    assert_eq!(value("banter_messages_total{type=\"advance\"}"), 1.0);
    assert_eq!(value("banter_messages_total{type=\"choose\"}"), 1.0);
    assert_eq!(value("banter_messages_total{type=\"action\"}"), 1.0);
    assert_eq!(value("banter_actions_total{action=\"AcceptQuest\"}"), 1.0);
    assert_eq!(value("banter_conversations_opened_total"), 1.0);
    // Every handled message is timed: five so far, all within the +Inf bucket.
    assert_eq!(value("banter_message_handling_seconds_count"), 5.0);
    assert_eq!(
        value("banter_message_handling_seconds_bucket{le=\"+Inf\"}"),
        5.0
    );
    assert!(text.contains("banter_message_handling_seconds_bucket{le=\"0.001\"}"));
    assert!(value("banter_message_handling_seconds_sum") > 0.0);
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_reload_swaps_new_content_in_while_an_open_conversation_keeps_its_version() {
    let (content, pim) = content_copy();
    let server = server_on(&content).await;
    // A conversation on version 1.
    let (mut client, before) = server.player_talking_to_pim("device-ops-02").await;
    assert!(
        before
            .content
            .as_deref()
            .expect("content")
            .contains(OLD_TALE)
    );

    edit(&pim, OLD_TALE, NEW_TALE);
    let (status, body) = reload(&server, Some(&server.config.service_key)).await;
    assert_eq!(status, 200, "{body}");
    let value: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(value["version"], 2, "{body}");
    assert_eq!(content_version(&server).await, 2);

    // The conversation opened on version 1 walks on to its end, actions and all.
    client.hear_pims_tale().await;
    client
        .action(ActionType::CompleteQuest, "PimsTideTale")
        .await
        .expect("paid");
    client.close_conversation().await.expect("closed");

    // A new conversation gets the new version: new text, new hash.
    let after = client.talk("Pim").await.expect("talk on version 2");
    let text = after.content.as_deref().expect("content");
    assert!(text.contains(NEW_TALE), "{text}");
    assert!(!text.contains(OLD_TALE), "{text}");
    assert_ne!(after.hash, before.hash);
    assert_eq!(after.facts.coins, 30);
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_reload_of_broken_content_gets_422_and_the_old_content_stays() {
    let (content, pim) = content_copy();
    let server = server_on(&content).await;
    // A conversation on version 1.
    let (mut client, before) = server.player_talking_to_pim("device-ops-03").await;

    // A valid text change and a NextNode to nowhere: the reload is refused whole.
    edit(&pim, OLD_TALE, NEW_TALE);
    edit(
        &pim,
        r#""NextNode": "PimsTideTale_Ending""#,
        r#""NextNode": "Nowhere""#,
    );
    let (status, body) = reload(&server, Some(&server.config.service_key)).await;
    assert_eq!(status, 422, "{body}");
    let value: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(value["error"], "content_refused", "{body}");
    assert!(
        value["message"].as_str().expect("why").contains("Nowhere"),
        "the refusal says why: {body}"
    );
    assert_eq!(content_version(&server).await, 1);
    assert_eq!(
        server
            .metric("banter_content_reloads_total{result=\"refused\"}")
            .await,
        1.0
    );

    // The open conversation and new ones are on the old content.
    client.choose("PimsTideTale_Greet_r1").await.expect("yes");
    client.close_conversation().await.expect("closed");
    let after = client.talk("Pim").await.expect("talk");
    assert_eq!(after.hash, before.hash);
    let text = after.content.as_deref().expect("content");
    assert!(
        text.contains(OLD_TALE) && !text.contains(NEW_TALE),
        "{text}"
    );
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_reload_without_the_service_key_gets_401_or_403_and_reloads_nothing() {
    let (content, pim) = content_copy();
    let server = server_on(&content).await;
    edit(&pim, OLD_TALE, NEW_TALE);

    let player_token = server.login("device-ops-04").await;
    let wrong = format!("{}x", server.config.service_key);
    for (key, expected) in [
        (None, 401),
        (Some(player_token.as_str()), 403),
        (Some(wrong.as_str()), 403),
    ] {
        let (status, body) = reload(&server, key).await;
        assert_eq!(status, expected, "{key:?}: {body}");
    }
    let (status, _) = server
        .http(
            "POST",
            "/admin/reload",
            &[("Authorization", &server.config.service_key)],
            "",
        )
        .await;
    assert_eq!(
        status, 401,
        "the key without `Bearer ` is not a bearer token"
    );

    assert_eq!(content_version(&server).await, 1);
    let (_client, opened) = server.player_talking_to_pim("device-ops-04").await;
    let text = opened.content.as_deref().expect("content");
    assert!(text.contains(OLD_TALE), "{text}");
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_graceful_shutdown_says_bye_to_every_session_then_closes() {
    let server = TestServer::start().await;
    // A conversation open.
    let (mut client, _) = server.player_talking_to_pim("device-ops-05").await;
    let addr = server.addr;

    let stopping = tokio::spawn(server.stop());
    client.until_bye(ByeReason::Shutdown).await;
    tokio::time::timeout(banter_e2e::PATIENCE * 3, stopping)
        .await
        .expect("stops in time")
        .expect("no panic")
        .expect("stop() returns Ok");
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "no longer listening"
    );
}
