//! The benchmark echo (`GET /bench/echo`, docs/PROTOCOL.md section 14): with `--bench-echo` it
//! echoes text frames on the same stack, behind the same token check, as `/v1/ws`; without the
//! flag the route does not exist, and production refuses the flag.

use banter_e2e::TestServer;
use banter_server::config::{Config, ConfigError};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::{self, Message};

fn echo_url(server: &TestServer, token: &str) -> String {
    format!("ws://{}/bench/echo?token={token}", server.addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_echo_sends_every_text_frame_back_in_order() {
    let server = TestServer::start_with(|c| c.bench_echo = true).await;
    let token = server.login("device-bench-echo-01").await;
    let (mut ws, _) = tokio_tungstenite::connect_async(echo_url(&server, &token))
        .await
        .expect("upgrade accepted");
    let frames = [
        r#"{"type":"choose","id":4,"response":"Marisol_Gossip_r1"}"#.to_owned(),
        "not even JSON".to_owned(),
        "x".repeat(4096),
    ];
    // Pipelined: all out, then all back, in order and byte for byte.
    for frame in &frames {
        ws.feed(Message::Text(frame.clone().into()))
            .await
            .expect("send");
    }
    ws.flush().await.expect("flush");
    for frame in &frames {
        let echoed = tokio::time::timeout(banter_e2e::PATIENCE, ws.next())
            .await
            .expect("an answer in time")
            .expect("a frame")
            .expect("not an error");
        assert_eq!(echoed, Message::Text(frame.clone().into()));
    }
    // No session, no welcome: the echo is the transport alone.
    assert_eq!(server.metric("banter_sessions_total").await, 0.0);
    ws.close(None).await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_echo_checks_the_token_like_a_session() {
    let server = TestServer::start_with(|c| c.bench_echo = true).await;
    for token in ["", "not-a-token"] {
        match tokio_tungstenite::connect_async(echo_url(&server, token)).await {
            Err(tungstenite::Error::Http(response)) => {
                assert_eq!(response.status().as_u16(), 401);
            }
            other => panic!("expected 401, got {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_echo_is_absent_by_default() {
    let server = TestServer::start().await;
    let token = server.login("device-bench-echo-02").await;
    let (status, _) = server
        .http("GET", &format!("/bench/echo?token={token}"), &[], "")
        .await;
    assert_eq!(status, 404);
    match tokio_tungstenite::connect_async(echo_url(&server, &token)).await {
        Err(tungstenite::Error::Http(response)) => assert_eq!(response.status().as_u16(), 404),
        other => panic!("expected 404, got {other:?}"),
    }
}

#[test]
fn production_refuses_the_echo() {
    let config = Config {
        production: true,
        bench_echo: true,
        auth_secret: "a-production-secret-of-at-least-32-bytes".to_owned(),
        service_key: "a-production-service-key".to_owned(),
        ..Config::default()
    };
    assert!(matches!(
        config.validate(),
        Err(ConfigError::BenchInProduction)
    ));
    let without = Config {
        bench_echo: false,
        ..config
    };
    assert!(without.validate().is_ok());
}
