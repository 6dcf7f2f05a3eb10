//! Sessions end to end: one per player, one conversation at a time, a rate limit that ends in a
//! disconnect, dead peers found by ping, slow readers cut off instead of buffered, and each
//! session confined to its own player's data.

use std::time::Duration;

use banter_e2e::{ExpectRefused, PATIENCE, TestServer, messages_in};
use banter_protocol::{
    ActionType, ByeReason, ClientMessage, ErrorCode, QuestStatus, ServerMessage,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

const NEAR_PIM: [f64; 3] = [-640.0, 2.0, 910.0];
const QUEST: &str = "PimsTideTale";

#[tokio::test]
async fn a_player_who_connects_again_replaces_the_older_session() {
    let server = TestServer::start_with(|c| c.world.talk_cooldown = Duration::ZERO).await;
    let mut old = server.player_at("device-session-01", NEAR_PIM).await;
    old.talk("Pim")
        .await
        .expect("a conversation on the old session");

    let token = server.login("device-session-01").await;
    let mut new = server.connect(&token).await;

    // The old one is told why, then closed: the close frame, then the end of the connection.
    old.until_bye(ByeReason::Replaced).await;
    assert_eq!(server.metric("banter_open_sessions").await, 1.0);

    // The new one works, and starts from nothing the old one held open.
    new.move_to(NEAR_PIM).await.expect("spawned");
    let opened = new.talk("Pim").await.expect("talks on the new session");
    assert_eq!(opened.entry, "PimsTideTale_Greet");
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn talking_while_a_conversation_is_open_gets_conversation_open() {
    let server = TestServer::start_with(|c| c.world.talk_cooldown = Duration::ZERO).await;
    let (mut client, _) = server.player_talking_to_pim("device-session-02").await;
    client
        .talk("Pim")
        .await
        .expect_refused_alone(ErrorCode::ConversationOpen);
    // Checked before the NPC.
    client
        .talk("Nobody")
        .await
        .expect_refused(ErrorCode::ConversationOpen);

    // The open conversation is the same walk as before the refusals.
    let accepted = client.accept_pims_quest().await;
    assert_eq!(accepted.profile().expect("a profile").coins, 0);
    client
        .advance("PimsTideTale_Tale")
        .await
        .expect("still walking");
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_session_only_reads_and_changes_its_own_players_data() {
    let server = TestServer::start_with(|c| c.world.talk_cooldown = Duration::ZERO).await;
    let mut a = server.player_at("device-session-0a", NEAR_PIM).await;
    let mut b = server.player_at("device-session-0b", NEAR_PIM).await;

    // A hears the whole tale and is paid, while B's conversation is open next to it.
    a.talk("Pim").await.expect("A talks");
    let b_opened = b.talk("Pim").await.expect("B talks");
    assert_eq!(b_opened.entry, "PimsTideTale_Greet");
    a.accept_pims_quest().await;
    let paid = a.finish_pims_tale().await;
    assert_eq!(paid.profile().expect("a profile").coins, 30);

    // B's walk is B's: A's armings are not B's, and A's quest is not B's.
    // B was shown nothing that completes it.
    b.action(ActionType::CompleteQuest, QUEST)
        .await
        .expect_refused(ErrorCode::NotArmed);
    b.close_conversation().await.expect("B closes");
    let b_opened = b.talk("Pim").await.expect("B talks again");
    assert_eq!(b_opened.entry, "PimsTideTale_Greet");
    assert_eq!((b_opened.facts.coins, b_opened.facts.experience), (0, 0));
    assert!(!b_opened.facts.quests.contains_key(QUEST));

    // B accepts Pim's quest; A's completed quest and coins are untouched.
    let b_accepted = b.accept_pims_quest().await;
    assert_eq!(b_accepted.profile().expect("a profile").coins, 0);
    a.close_conversation().await.expect("A closes");
    let a_opened = a.talk("Pim").await.expect("A talks again");
    a_opened.assert_pims_quest_state("AllDone", QuestStatus::Completed, (30, 20));
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_client_that_keeps_flooding_is_rate_limited_then_disconnected() {
    // A token every 20 s: the burst is all this test gets, whatever the machine's load.
    let server = TestServer::start_with(|c| {
        c.limits.rate_per_sec = 0.05;
        c.limits.burst = 5.0;
        c.limits.flood_strikes = 10;
    })
    .await;
    let token = server.login("device-session-03").await;
    let mut client = server.connect(&token).await;
    for id in 1..=15 {
        client
            .send(&ClientMessage::SetAfk {
                id: Some(id),
                afk: false,
            })
            .await;
    }
    let frames = client.until_eof().await;
    let said = messages_in(&frames);
    assert_eq!(said.len(), 5 + 9 + 1, "{said:?}");
    for (i, message) in said[..5].iter().enumerate() {
        assert_eq!(*message, ServerMessage::Ack { id: i as u64 + 1 });
    }
    for message in &said[5..14] {
        assert!(
            matches!(
                message,
                ServerMessage::Error {
                    code: ErrorCode::RateLimited,
                    retryable: true,
                    ..
                }
            ),
            "{message:?}"
        );
    }
    assert!(
        matches!(
            said[14],
            ServerMessage::Bye {
                reason: ByeReason::Flooding,
                ..
            }
        ),
        "{:?}",
        said[14]
    );
    assert!(
        matches!(frames.last(), Some(Message::Close(_))),
        "{frames:?}"
    );
    assert_eq!(server.metric("banter_open_sessions").await, 0.0);
    assert_eq!(
        server
            .metric("banter_rejections_total{code=\"rate_limited\"}")
            .await,
        9.0
    );

    // Only that connection paid for it: the player connects again and is served.
    let mut again = server.connect(&token).await;
    again
        .request(ClientMessage::SetAfk {
            id: None,
            afk: false,
        })
        .await
        .expect("a new session has a full bucket");
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_peer_that_never_answers_pings_is_dropped_with_a_timeout_bye() {
    let server = TestServer::start_with(|c| {
        c.limits.ping_interval = Duration::from_millis(200);
        c.limits.idle_timeout = Duration::from_millis(600);
    })
    .await;
    let token = server.login("device-session-04").await;

    // A raw TCP client: the upgrade by hand, then it never writes again and only reads.
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    let upgrade = format!(
        "GET /v1/ws?token={token} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\n\r\n",
        server.addr
    );
    stream
        .write_all(upgrade.as_bytes())
        .await
        .expect("write the upgrade");
    let mut bytes = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut bytes))
        .await
        .expect("the server closes a dead peer in time")
        .expect("read to the end");

    let text = String::from_utf8_lossy(&bytes);
    assert!(text.starts_with("HTTP/1.1 101"), "{text}");
    assert!(text.contains(r#""type":"welcome""#), "{text}");
    // Server frames are unmasked: the pings (opcode 0x89, empty) and the bye read as-is.
    assert!(
        bytes.windows(2).any(|w| w == [0x89, 0x00]),
        "the server pinged first"
    );
    let bye = text.find(r#""reason":"timeout""#).expect("a timeout bye");
    assert!(text[..bye].contains(r#""type":"bye""#), "{text}");
    // The close frame (opcode 0x88) follows the bye.
    let after_bye = &bytes[bye..];
    assert!(after_bye.contains(&0x88), "a close frame after the bye");
    assert_eq!(server.metric("banter_open_sessions").await, 0.0);
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_client_that_answers_pings_outlives_the_idle_timeout() {
    let server = TestServer::start_with(|c| {
        c.limits.ping_interval = Duration::from_millis(100);
        c.limits.idle_timeout = Duration::from_millis(300);
    })
    .await;
    let token = server.login("device-session-05").await;
    let mut client = server.connect(&token).await;
    // Reading answers each ping with a pong; six pings span twice the idle timeout.
    let mut pings = 0;
    while pings < 6 {
        match client.next_frame().await {
            Some(Message::Ping(_)) => pings += 1,
            Some(Message::Pong(_)) => {}
            other => panic!("expected pings, got {other:?}"),
        }
    }
    client
        .request(ClientMessage::SetAfk {
            id: None,
            afk: true,
        })
        .await
        .expect("still connected");
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_client_that_stops_reading_is_disconnected_not_buffered() {
    stops_reading(|c| c.limits.outgoing_queue = 4, "device-session-06").await;
}

/// The byte bound alone: a queue long enough for every answer in messages still cuts the reader
/// off once the unread answers pass 16 KiB.
#[tokio::test]
async fn the_outgoing_queue_is_bounded_in_bytes_too() {
    stops_reading(
        |c| {
            c.limits.outgoing_queue = 1_000_000;
            c.limits.outgoing_queue_bytes = 16 * 1024;
            c.limits.socket_send_buffer_bytes = 4096;
        },
        "device-session-07",
    )
    .await;
}

async fn stops_reading(limits: impl FnOnce(&mut banter_server::config::Config), player: &str) {
    let server = TestServer::start_with(|c| {
        c.limits.rate_per_sec = 1_000_000.0;
        c.limits.burst = 1_000_000.0;
        limits(c);
    })
    .await;
    let token = server.login(player).await;
    // A small receive buffer, so what the client leaves unread backs up into the server soon.
    let mut client = server.connect_small_buffer(&token, 4096).await;
    let fetch = serde_json::to_string(&ClientMessage::FetchConversation {
        id: Some(1),
        conversation: "Fennick".into(),
    })
    .expect("encode");

    // Each answer is the whole merged conversation (several KB). Never read; stop when the
    // server has hung up, or after enough to overflow any socket buffer many times over.
    const REQUESTS: usize = 3000;
    let mut sent = 0;
    let send_all = async {
        while sent < REQUESTS {
            if client
                .try_send_frame(Message::Text(fetch.clone().into()))
                .await
                .is_err()
            {
                break;
            }
            sent += 1;
        }
    };
    tokio::time::timeout(PATIENCE * 3, send_all)
        .await
        .expect("the sends finish or fail in time");

    // Whatever was buffered before the cut, the connection then ends.
    let frames = client.until_eof().await;
    let answered = messages_in(&frames)
        .iter()
        .filter(|m| matches!(m, ServerMessage::Ack { .. }))
        .count();
    assert!(
        answered < sent,
        "the server answered all {sent} requests to a client that never read"
    );
    assert_eq!(server.metric("banter_open_sessions").await, 0.0);
    assert_eq!(server.metric("banter_sessions_total").await, 1.0);
    server.stop().await.expect("clean shutdown");
}
