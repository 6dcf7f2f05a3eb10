//! Reloads from where studios keep content: the folder watcher (`--watch-content`) reloads
//! after a change once the folder is quiet, with the same checks as `/admin/reload`, and
//! `POST /admin/reload?force=true` is the one way past the shrink guard.

use std::time::Duration;

use banter_e2e::TestServer;

async fn readyz_version(server: &TestServer) -> u64 {
    let (_, body) = server.http("GET", "/readyz", &[], "").await;
    let ready: serde_json::Value = serde_json::from_str(&body).expect("readyz JSON");
    ready["content_version"].as_u64().expect("content_version")
}

async fn refused_reloads(server: &TestServer) -> u64 {
    let (_, metrics) = server.http("GET", "/metrics", &[], "").await;
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(r#"banter_content_reloads_total{result="refused"} "#))
        .and_then(|n| n.parse().ok())
        .expect("the refused reloads series")
}

/// Polls `probe` until it says yes: the watcher's reload is asynchronous by design, and nothing
/// tells a test it ran but what the server serves. Gives up after 60 s: a debug build loads
/// and checks the content on a blocking thread, which the rest of the suite's test binaries
/// (run at once on two cores) can slow well past the watcher's quiet period.
async fn eventually<F, Fut>(what: &str, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..1200 {
        if probe().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not happen within 60 s");
}

#[tokio::test]
async fn the_watcher_reloads_a_changed_folder_and_refuses_a_broken_one() {
    let content = banter_e2e::content_copy("watched");
    let server = TestServer::start_with(|c| {
        c.content = content.clone();
        c.watch_content = Some(Duration::from_millis(100));
    })
    .await;
    assert_eq!(readyz_version(&server).await, 1);

    let world = content.join("world.json");
    let text = std::fs::read_to_string(&world).expect("world.json");
    std::fs::write(
        &world,
        text.replacen("\"Name\": \"Pim\"", "\"Name\": \"Pim the Watched\"", 1),
    )
    .expect("edit");
    eventually("the reload of the edited folder", || async {
        readyz_version(&server).await == 2
    })
    .await;
    let (_, world_view) = server.http("GET", "/playground/api/world", &[], "").await;
    assert!(world_view.contains("Pim the Watched"), "{world_view}");

    // A broken save is refused like a broken `/admin/reload`: the served content stays.
    std::fs::write(&world, "{ not json").expect("break");
    eventually("the refusal of the broken folder", || async {
        refused_reloads(&server).await == 1
    })
    .await;
    assert_eq!(
        readyz_version(&server).await,
        2,
        "the broken folder is not served"
    );
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn force_is_a_yes_or_no_and_the_shrink_guard_leaves_ordinary_pushes_alone() {
    let server = TestServer::start().await;
    let key = format!("Bearer {}", server.config.service_key);
    let auth = [("Authorization", key.as_str())];
    let (status, body) = server.http("POST", "/admin/reload", &auth, "").await;
    assert_eq!((status, body.as_str()), (200, r#"{"version":2}"#));
    let (status, body) = server
        .http("POST", "/admin/reload?force=true", &auth, "")
        .await;
    assert_eq!((status, body.as_str()), (200, r#"{"version":3}"#));
    let (status, body) = server
        .http("POST", "/admin/reload?force=maybe", &auth, "")
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = server
        .http("POST", "/admin/reload?forced=1", &auth, "")
        .await;
    assert_eq!(status, 400, "an unknown field: {body}");
    assert_eq!(readyz_version(&server).await, 3);
    server.stop().await.expect("clean shutdown");
}
