//! The library's own echo, to measure Banter's `/bench/echo` against in the same run: a bare
//! tokio-tungstenite server (no HTTP router, no token check, the library's default settings)
//! that echoes every text frame with the same loop as the server's echo (everything already
//! received is fed before one flush).
//!
//! A published figure for tokio-tungstenite (~228,000 echoed messages per core-second on one
//! desktop core) says little about a virtualised core shared with other work; this process,
//! run beside the server on the same core and driven by the same client in alternating phases,
//! is the baseline the echo's server CPU per message is compared with
//! ([`super::throughput`]'s `baseline`).

use futures_util::{FutureExt, SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;

use crate::error::Result;

/// Accepts WebSocket connections on `listener` until it fails, echoing each on its own task.
/// The request's path and query are ignored, so the bench's echo URLs work unchanged.
pub async fn serve_tungstenite_echo(listener: TcpListener) -> Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(echo_connection(stream));
    }
}

/// The loop of the server's `echo` (`server/src/http.rs`) over the library's own types rather
/// than axum's: written twice on purpose, since the baseline must not go through the server's
/// stack and `banter-sim` does not depend on the server. Keep the two in step.
async fn echo_connection(stream: TcpStream) {
    // As the server does for its sockets (`listen.rs`): answers are not held back by Nagle.
    if stream.set_nodelay(true).is_err() {
        return;
    }
    let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    'read: while let Some(Ok(first)) = ws.next().await {
        let mut frame = Some(first);
        while let Some(next) = frame.take() {
            let text = match next {
                Message::Text(text) => text,
                Message::Close(_) => break 'read,
                // Pings are answered by the library; nothing else is echoed.
                _ => continue,
            };
            if ws.feed(Message::Text(text)).await.is_err() {
                break 'read;
            }
            frame = match ws.next().now_or_never() {
                Some(Some(Ok(frame))) => Some(frame),
                Some(Some(Err(_)) | None) => break 'read,
                None => None,
            };
        }
        if ws.flush().await.is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_text_frame_comes_back_and_a_binary_one_does_not() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(serve_tungstenite_echo(listener));
        let (mut ws, _) =
            tokio_tungstenite::connect_async(format!("ws://{addr}/bench/echo?token=x"))
                .await
                .expect("connect");
        ws.send(Message::Binary(vec![1, 2].into()))
            .await
            .expect("send");
        for text in ["one", "two"] {
            ws.send(Message::Text(text.into())).await.expect("send");
        }
        for text in ["one", "two"] {
            let echoed = ws.next().await.expect("a frame").expect("ok");
            assert_eq!(echoed, Message::Text(text.into()));
        }
    }
}
