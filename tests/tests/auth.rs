//! Auth end to end: an upgrade needs a valid signed token (HTTP 401 and no session otherwise),
//! the token may come in the `Authorization` header, and the device login is a development
//! convenience that production turns off.

use banter_e2e::{Client, TestServer, unix_now};
use banter_protocol::ServerMessage;
use banter_server::auth::{TokenKey, player_for_device};
use banter_server::config::DEV_SECRET;
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// The upgrade was refused with an HTTP status; which one.
fn refused_status(result: Result<Client, tungstenite::Error>) -> u16 {
    match result {
        Ok(_) => panic!("the upgrade was accepted"),
        Err(tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(other) => panic!("expected an HTTP refusal, got {other:?}"),
    }
}

/// Asserts an upgrade with `token` gets 401, and that no session was opened or counted.
async fn assert_refused(server: &TestServer, token: &str) {
    let failures = server.metric("banter_auth_failures_total").await;
    assert_eq!(refused_status(server.connect_raw(token).await), 401);
    assert_eq!(server.metric("banter_open_sessions").await, 0.0);
    assert_eq!(server.metric("banter_sessions_total").await, 0.0);
    assert_eq!(
        server.metric("banter_auth_failures_total").await,
        failures + 1.0
    );
}

/// A token with its payload swapped for another player's claims and the signature kept.
fn tamper(token: &str, forged_payload: &str) -> String {
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "a JWT");
    format!("{}.{}.{}", parts[0], forged_payload, parts[2])
}

#[tokio::test]
async fn an_upgrade_without_a_token_gets_401_and_no_session() {
    let server = TestServer::start().await;
    assert_refused(&server, "").await;

    // No query string at all, no header: the same.
    let url = format!("ws://{}/v1/ws", server.addr);
    let request = url.into_client_request().expect("a request");
    assert_eq!(refused_status(server.connect_request(request).await), 401);
    assert_eq!(server.metric("banter_open_sessions").await, 0.0);
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn an_expired_token_gets_401() {
    let server = TestServer::start().await;
    let player = player_for_device("device-expired-01");
    let token = TokenKey::new(DEV_SECRET).mint(&player, unix_now() - 100, 10);
    assert_refused(&server, &token).await;

    // The same player with a live token is let in: only the expiry was wrong.
    let live = TokenKey::new(DEV_SECRET).mint(&player, unix_now(), 60);
    let client = server.connect(&live).await;
    client.close().await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_token_with_a_tampered_payload_gets_401() {
    let server = TestServer::start().await;
    let token = server.login("device-tamper-01").await;
    let now = unix_now();
    let forged = {
        use base64_like::encode;
        encode(&format!(
            r#"{{"sub":"{}","iat":{now},"exp":{}}}"#,
            player_for_device("device-victim-01"),
            now + 3600
        ))
    };
    assert_refused(&server, &tamper(&token, &forged)).await;

    // The untampered token still works.
    let client = server.connect(&token).await;
    client.close().await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_token_with_the_none_algorithm_gets_401() {
    let server = TestServer::start().await;
    let now = unix_now();
    let header = base64_like::encode(r#"{"alg":"none","typ":"JWT"}"#);
    let claims = base64_like::encode(&format!(
        r#"{{"sub":"{}","iat":{now},"exp":{}}}"#,
        player_for_device("device-nonealg-1"),
        now + 3600
    ));
    assert_refused(&server, &format!("{header}.{claims}.")).await;
    // Nor does keeping a real signature under a header that names another algorithm help.
    let token = server.login("device-nonealg-1").await;
    let parts: Vec<&str> = token.split('.').collect();
    let hs512 = base64_like::encode(r#"{"alg":"HS512","typ":"JWT"}"#);
    assert_refused(&server, &format!("{hs512}.{}.{}", parts[1], parts[2])).await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_token_signed_with_another_secret_gets_401() {
    let server = TestServer::start().await;
    let player = player_for_device("device-wrongkey-1");
    let token =
        TokenKey::new("another-secret-that-is-long-enough-for-hs256").mint(&player, unix_now(), 60);
    assert_refused(&server, &token).await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_token_in_the_authorization_header_is_accepted() {
    let server = TestServer::start().await;
    let token = server.login("device-header-01").await;
    let mut client = server
        .connect_with_bearer(&token)
        .await
        .expect("upgrade accepted");
    match client.recv().await {
        ServerMessage::Welcome { player, .. } => {
            assert_eq!(player, player_for_device("device-header-01"));
        }
        other => panic!("expected welcome, got {other:?}"),
    }
    assert_eq!(server.metric("banter_open_sessions").await, 1.0);
    client.close().await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn device_login_is_off_in_production() {
    let secret = "a-production-secret-that-is-long-enough-0001";
    let server = TestServer::start_with(|c| {
        c.production = true;
        c.auth_secret = secret.to_owned();
        c.service_key = "a-production-service-key-that-is-long-0001".to_owned();
    })
    .await;
    let (status, body) = server
        .http(
            "POST",
            "/v1/auth/device",
            &[("Content-Type", "application/json")],
            r#"{"device_id":"device-prod-0001"}"#,
        )
        .await;
    assert_eq!(status, 404, "{body}");

    // The server is up and takes tokens from the game's account service (signed with its
    // secret); a token signed with the development secret is refused.
    let player = player_for_device("device-prod-0001");
    let dev = TokenKey::new(DEV_SECRET).mint(&player, unix_now(), 60);
    assert_refused(&server, &dev).await;
    let token = TokenKey::new(secret).mint(&player, unix_now(), 60);
    let client = server.connect(&token).await;
    client.close().await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn device_login_with_a_bad_device_id_gets_400() {
    let server = TestServer::start().await;
    let json = [("Content-Type", "application/json")];
    for body in [
        r#"{"device_id":"short"}"#,
        r#"{"device_id":"has spaces in it"}"#,
        r#"{"device_id":""}"#,
        r#"{"device":"device-0000001"}"#,
        r#"{"device_id":"device-0000001","admin":true}"#,
        "not json",
    ] {
        let (status, text) = server.http("POST", "/v1/auth/device", &json, body).await;
        assert_eq!(status, 400, "{body}: {text}");
        assert!(
            !text.contains("token"),
            "no token minted for {body}: {text}"
        );
    }
    server.stop().await.expect("clean shutdown");
}

/// URL-safe base64 without padding, as JWT segments are written (no extra dependency).
mod base64_like {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

    pub fn encode(text: &str) -> String {
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(bytes.len() * 4 / 3 + 3);
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                chunk.get(1).copied().unwrap_or(0),
                chunk.get(2).copied().unwrap_or(0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            let chars = chunk.len() + 1;
            for i in 0..chars {
                let index = (n >> (18 - 6 * i)) & 0x3f;
                out.push(char::from(ALPHABET[index as usize]));
            }
        }
        out
    }
}
