//! An error message quotes at most a short prefix of what the client sent: on the WebSocket
//! (an `error`'s `message`) and over HTTP (an error body's `message`), whatever the input's size.

use banter_e2e::*;
use banter_protocol::{MAX_ERROR_MESSAGE_CHARS, QUOTED_INPUT_CHARS, ServerMessage};

/// `message` is within the length bound and quotes no more than a short prefix of `long`.
fn assert_bounded(message: &str, long: &str) {
    assert!(
        message.chars().count() <= MAX_ERROR_MESSAGE_CHARS + 1,
        "{} characters: {message}",
        message.chars().count()
    );
    assert!(
        !message.contains(&long[..QUOTED_INPUT_CHARS + 1]),
        "{message}"
    );
}

#[tokio::test]
async fn a_websocket_error_quotes_a_bounded_prefix_of_the_frame() {
    let server = TestServer::start().await;
    let token = server.login("device-bounded-errors").await;
    let mut client = server.connect(&token).await;
    let long = "x".repeat(3_000);
    for frame in [
        // serde's own message quotes the unknown variant, the unknown field, the bad value.
        format!(r#"{{"type":"{long}","id":1}}"#),
        format!(r#"{{"type":"close","id":2,"{long}":1}}"#),
        format!(r#"{{"type":"talk","id":3,"npc":{long}}}"#),
        // The session's own messages quote names.
        format!(r#"{{"type":"talk","id":4,"npc":"{long}"}}"#),
        format!(r#"{{"type":"fetch_conversation","id":5,"conversation":"{long}"}}"#),
        format!(r#"{{"type":"set_locale","id":6,"locale":"{long}"}}"#),
    ] {
        client.send_text(&frame).await;
        match client.recv().await {
            ServerMessage::Error { message, .. } => assert_bounded(&message, &long),
            other => panic!("expected an error, got {other:?}"),
        }
    }
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn an_http_error_is_json_and_quotes_a_bounded_prefix() {
    let server = TestServer::start_with(|c| c.playground = true).await;
    let long = "y".repeat(3_000);
    let key = format!("Bearer {}", server.config.service_key);
    for (method, target, headers, body) in [
        ("GET", format!("/playground/{long}"), vec![], String::new()),
        (
            "GET",
            format!("/playground/client/{long}.js"),
            vec![],
            String::new(),
        ),
        (
            "GET",
            format!("/playground/api/graph/{long}.svg"),
            vec![],
            String::new(),
        ),
        (
            "GET",
            format!("/admin/analytics?{long}=1"),
            vec![("Authorization", key.as_str())],
            String::new(),
        ),
        (
            "POST",
            "/internal/events".to_owned(),
            vec![
                ("Authorization", key.as_str()),
                ("Content-Type", "application/json"),
            ],
            format!(r#"{{"{long}":1}}"#),
        ),
        ("GET", format!("/no/such/{long}"), vec![], String::new()),
    ] {
        let (status, text) = server.http(method, &target, &headers, &body).await;
        assert!(matches!(status, 400 | 404), "{status} {text}");
        let body: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{method} {target}: not JSON ({e}): {text}"));
        assert_bounded(body["message"].as_str().expect("a message"), &long);
    }
    server.stop().await.expect("clean shutdown");
}
