//! The connection layer against abusive peers (server/src/listen.rs): a slowloris upgrade that
//! never finishes its request head is closed at the handshake deadline, connections past the
//! handshake cap are closed at accept, and honest players connect throughout; upgrades past the
//! session-start cap wait, then are refused.

use std::str::FromStr;
use std::time::Duration;

use banter_e2e::{PATIENCE, TestServer};
use banter_protocol::ServerMessage;
use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite;

/// Reads until the server closes the connection (end of stream or a reset); panics if it is
/// still open after `PATIENCE`.
async fn closed_by_server(stream: &mut TcpStream) {
    let mut buf = [0u8; 1024];
    tokio::time::timeout(PATIENCE, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .expect("the server closes the connection");
}

#[tokio::test]
async fn a_slowloris_upgrade_is_closed_at_the_handshake_deadline() {
    let server =
        TestServer::start_with(|c| c.limits.handshake_timeout = Duration::from_millis(300)).await;
    let mut slow = TcpStream::connect(server.addr).await.expect("connect");
    // The start of an upgrade request, and one more header line: never the blank line.
    slow.write_all(b"GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .expect("write");
    slow.write_all(b"Upgrade: websocket\r\n")
        .await
        .expect("write");
    closed_by_server(&mut slow).await;
    assert_eq!(
        server.metric("banter_handshakes_timed_out_total").await,
        1.0
    );

    // The server kept serving the whole time.
    let mut honest = server
        .player_at("device-handshake-01", [0.0, 0.0, 0.0])
        .await;
    honest.move_to([1.0, 0.0, 0.0]).await.expect("a move");
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_at_the_deadline_too() {
    let server =
        TestServer::start_with(|c| c.limits.handshake_timeout = Duration::from_millis(300)).await;
    let mut idle = TcpStream::connect(server.addr).await.expect("connect");
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .expect("write");
    // The answer comes, then nothing more is asked: the next request head never starts.
    closed_by_server(&mut idle).await;
}

#[tokio::test]
async fn connections_past_the_handshake_cap_are_closed_at_accept() {
    let server = TestServer::start_with(|c| {
        c.limits.max_handshakes = 2;
        // Long enough that the two holders stay in their handshake for the whole test.
        c.limits.handshake_timeout = Duration::from_secs(60);
    })
    .await;
    let mut holders = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(server.addr).await.expect("connect");
        stream
            .write_all(b"GET /v1/ws HTTP/1.1\r\n")
            .await
            .expect("write");
        holders.push(stream);
    }
    // The listener accepts in order, so the third connection finds both permits taken.
    let mut third = TcpStream::connect(server.addr).await.expect("connect");
    closed_by_server(&mut third).await;

    // Closing the holders frees their permits; the server answers again.
    drop(holders);
    let mut attempts = 0;
    let status = loop {
        attempts += 1;
        assert!(attempts < 10_000, "the permits were never freed");
        // A connection refused at accept reads as an error here; the permits free up as soon
        // as the server notices the holders are gone.
        if let Ok(status) = tokio::time::timeout(PATIENCE, async {
            let mut stream = TcpStream::connect(server.addr).await.ok()?;
            stream
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .await
                .ok()?;
            let mut answer = String::new();
            stream.read_to_string(&mut answer).await.ok()?;
            answer.split(' ').nth(1).map(str::to_owned)
        })
        .await
        {
            if let Some(status) = status {
                break status;
            }
            tokio::task::yield_now().await;
        } else {
            panic!("the server never answered again");
        }
    };
    assert_eq!(status, "200");
    assert!(server.metric("banter_handshakes_refused_total").await >= 1.0);
}

/// At most `--max-session-starts` sessions load and claim their player at once. Here the one
/// start allowed is held in the store: another connection holds SQLite's write lock, as a storm
/// of session starts would. The next upgrade waits for a slot (2 s), gets `503`, and is counted;
/// once the lock is released the held session starts and the slot serves the next player.
#[tokio::test]
async fn an_upgrade_past_the_session_start_cap_is_refused_while_the_store_holds_a_start() {
    let server = TestServer::start_with(|c| c.limits.max_session_starts = 1).await;
    let first = server.login("device-starts-01").await;
    let second = server.login("device-starts-02").await;
    let options =
        SqliteConnectOptions::from_str(&server.database().url()).expect("the test database URL");
    let mut lock_holder = SqliteConnection::connect_with(&options)
        .await
        .expect("a raw SQLite connection");
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut lock_holder)
        .await
        .expect("take the write lock");

    // Upgraded at once; its start (the claim is a write) waits for the lock.
    let mut held = server
        .connect_raw(&first)
        .await
        .expect("the first upgrade takes the one slot");
    match server.connect_raw(&second).await {
        Err(tungstenite::Error::Http(response)) => assert_eq!(response.status().as_u16(), 503),
        Ok(_) => panic!("a second session started past the cap"),
        Err(other) => panic!("expected 503, got {other:?}"),
    }
    assert_eq!(
        server.metric("banter_session_starts_refused_total").await,
        1.0
    );

    sqlx::query("COMMIT")
        .execute(&mut lock_holder)
        .await
        .expect("release the write lock");
    match held.recv().await {
        ServerMessage::Welcome { .. } => {}
        other => panic!("expected welcome, got {other:?}"),
    }
    let _second = server.connect(&second).await;
    assert_eq!(server.metric("banter_open_sessions").await, 2.0);
    server.stop().await.expect("clean shutdown");
}
