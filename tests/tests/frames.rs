//! The frame layer end to end: what arrives must be a small JSON text frame naming a known
//! message. Every refusal here is answered with an error (without an id, or with the frame's id
//! where the server could still read one), the connection survives, and nothing the refused frame
//! asked for happened: each refused frame is a `move` that would take the body out of Pim's reach.

use banter_e2e::{Client, TestServer};
use banter_protocol::{ClientMessage, ErrorCode, MAX_CLIENT_FRAME_BYTES};
use tokio_tungstenite::tungstenite::Message;

/// Where Pim stands.
const PIM: [f64; 3] = [-640.0, 2.0, 915.0];
/// Five studs from Pim: close enough to talk.
const NEAR_PIM: [f64; 3] = [-640.0, 2.0, 910.0];
/// Fifteen studs from Pim (too far to talk), but one legal step from `NEAR_PIM`.
const STEP_AWAY: [f64; 3] = [-640.0, 2.0, 900.0];

/// A JSON object as text, padded with spaces before its closing brace to `len` bytes.
fn padded(mut text: String, len: usize) -> String {
    serde_json::from_str::<ClientMessage>(&text).expect("a valid message");
    while text.len() < len {
        text.insert(text.len() - 1, ' ');
    }
    text
}

/// A `move` to `STEP_AWAY` as JSON text, padded with spaces to `len` bytes.
fn move_away(id: u64, len: usize) -> String {
    padded(
        format!(r#"{{"type":"move","id":{id},"position":{STEP_AWAY:?}}}"#),
        len,
    )
}

/// The next message is an error with `code`, answering the frame that had `frame_id` (a frame
/// refused before or instead of decoding may or may not get its id back).
async fn assert_frame_refused(client: &mut Client, code: ErrorCode, frame_id: u64) {
    let (got, id) = client.recv_error().await;
    assert_eq!(got, code);
    assert!(id.is_none() || id == Some(frame_id), "{id:?}");
}

/// The connection still works and the body still stands near Pim: a talk opens.
async fn assert_nothing_moved(client: &mut Client) {
    let opened = client
        .talk("Pim")
        .await
        .expect("the body never left Pim's side");
    assert_eq!(opened.npc.id, "pim");
    client.close_conversation().await.expect("closed");
}

#[tokio::test]
async fn a_frame_over_4_kib_gets_frame_too_large_and_the_connection_survives() {
    let server = TestServer::start().await;
    let mut client = server.player_at("device-frames-01", NEAR_PIM).await;
    let big = move_away(7, MAX_CLIENT_FRAME_BYTES + 1);
    assert_eq!(big.len(), MAX_CLIENT_FRAME_BYTES + 1);
    client.send_text(&big).await;
    assert_frame_refused(&mut client, ErrorCode::FrameTooLarge, 7).await;

    // The connection survives, and exactly 4 KiB is still read: the limit is "over 4 KiB".
    let at_limit = padded(
        r#"{"type":"set_afk","id":8,"afk":false}"#.to_owned(),
        MAX_CLIENT_FRAME_BYTES,
    );
    assert_eq!(at_limit.len(), MAX_CLIENT_FRAME_BYTES);
    client.send_text(&at_limit).await;
    assert_eq!(
        client.recv().await,
        banter_protocol::ServerMessage::Ack { id: 8 }
    );

    assert_nothing_moved(&mut client).await;
    assert!(
        server
            .metric("banter_rejections_total{code=\"frame_too_large\"}")
            .await
            >= 1.0
    );
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_binary_frame_gets_binary_frame_and_the_connection_survives() {
    let server = TestServer::start().await;
    let mut client = server.player_at("device-frames-02", NEAR_PIM).await;
    client
        .send_frame(Message::Binary(move_away(7, 0).into_bytes().into()))
        .await;
    assert_frame_refused(&mut client, ErrorCode::BinaryFrame, 7).await;
    assert_nothing_moved(&mut client).await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn malformed_json_gets_malformed_and_the_connection_survives() {
    let server = TestServer::start().await;
    let mut client = server.player_at("device-frames-03", NEAR_PIM).await;
    for text in [
        r#"{"type":"move","id":7,"position":[-640.0,2.0,900.0]"#,
        "not json at all",
        "",
        r#"{"type":"move","id":7,"position":"far away"}"#,
        r#"{"type":"move","id":7,"position":[-640.0,2.0]}"#,
        r#"{"id":7,"position":[-640.0,2.0,900.0]}"#,
        r#"[{"type":"move","id":7,"position":[-640.0,2.0,900.0]}]"#,
        // The nearest JSON gets to a non-finite coordinate: out of range for an f64.
        r#"{"type":"move","id":7,"position":[-640.0,2.0,1e999]}"#,
        r#"{"type":"move","id":7,"position":[-640.0,2.0,null]}"#,
    ] {
        client.send_text(text).await;
        let (code, id) = client.recv_error().await;
        assert_eq!(code, ErrorCode::Malformed, "{text}");
        assert!(id.is_none() || id == Some(7), "{text}: {id:?}");
    }
    assert_nothing_moved(&mut client).await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn an_unknown_message_type_gets_malformed_and_the_connection_survives() {
    let server = TestServer::start().await;
    let mut client = server.player_at("device-frames-04", NEAR_PIM).await;
    client
        .send_text(r#"{"type":"teleport","id":7,"position":[-640.0,2.0,900.0]}"#)
        .await;
    assert_frame_refused(&mut client, ErrorCode::Malformed, 7).await;
    client
        .send_text(r#"{"type":"Move","id":8,"position":[-640.0,2.0,900.0]}"#)
        .await;
    // Types are snake_case.
    assert_frame_refused(&mut client, ErrorCode::Malformed, 8).await;
    assert_nothing_moved(&mut client).await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn an_unknown_field_gets_malformed_and_nothing_is_applied() {
    let server = TestServer::start().await;
    let mut client = server.player_at("device-frames-05", NEAR_PIM).await;
    // A valid move with one field too many is refused whole, not applied without the field.
    client
        .send_text(r#"{"type":"move","id":7,"position":[-640.0,2.0,900.0],"speed":9000}"#)
        .await;
    assert_frame_refused(&mut client, ErrorCode::Malformed, 7).await;
    // The same for a flag: the Afk tag is not set.
    client
        .send_text(r#"{"type":"set_afk","id":8,"afk":true,"admin":true}"#)
        .await;
    assert_frame_refused(&mut client, ErrorCode::Malformed, 8).await;

    let opened = client.talk("Pim").await.expect("still near Pim");
    assert!(
        !opened.facts.has.iter().any(|h| h == "Afk"),
        "{:?}",
        opened.facts.has
    );
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_client_that_floods_binary_frames_is_rate_limited_and_disconnected_too() {
    let server = TestServer::start_with(|c| {
        c.limits.rate_per_sec = 0.01;
        c.limits.burst = 3.0;
        c.limits.flood_strikes = 5;
    })
    .await;
    let token = server.login("device-frames-06").await;
    let mut client = server.connect(&token).await;
    // Well past burst + strikes: a flood of frames the protocol refuses is still a flood.
    const FRAMES: usize = 20;
    for _ in 0..FRAMES {
        if client
            .try_send_frame(Message::Binary(vec![0u8; 16].into()))
            .await
            .is_err()
        {
            break;
        }
    }
    // One answer per frame at most: read until the server closes or has answered them all.
    let mut seen = Vec::new();
    while seen.len() < FRAMES {
        match client.try_recv().await {
            Some(message) => seen.push(message),
            None => break,
        }
    }
    let codes: Vec<ErrorCode> = seen
        .iter()
        .filter_map(|m| match m {
            banter_protocol::ServerMessage::Error { code, .. } => Some(*code),
            _ => None,
        })
        .collect();
    assert!(
        codes.contains(&ErrorCode::RateLimited),
        "the flood was never rate limited: {codes:?}"
    );
    assert!(
        matches!(
            seen.last(),
            Some(banter_protocol::ServerMessage::Bye {
                reason: banter_protocol::ByeReason::Flooding,
                ..
            })
        ),
        "the flood was never disconnected: {:?}",
        seen.last()
    );
    server.stop().await.expect("clean shutdown");
}

#[test]
fn pim_stands_where_the_tests_think() {
    let world =
        std::fs::read_to_string(banter_e2e::content_dir().join("world.json")).expect("world.json");
    let world: serde_json::Value = serde_json::from_str(&world).expect("json");
    let pim = world["Npcs"]
        .as_array()
        .expect("npcs")
        .iter()
        .find(|n| n["Id"] == "pim")
        .expect("pim");
    let position: Vec<f64> = pim["Position"]
        .as_array()
        .expect("a position")
        .iter()
        .map(|c| c.as_f64().expect("a number"))
        .collect();
    assert_eq!(position, PIM);
}
