//! The connection layer against abusive peers (server/src/listen.rs): a slowloris upgrade that
//! never finishes its request head is closed at the handshake deadline, connections past the
//! handshake cap are closed at accept, and honest players connect throughout.

use std::time::Duration;

use banter_e2e::{PATIENCE, TestServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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
