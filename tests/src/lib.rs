//! The end-to-end harness: a real server on 127.0.0.1 port 0 with a fresh SQLite file and the
//! sample content, and a real WebSocket client that speaks the wire protocol.
//!
//! Nothing here sleeps to wait for something: every wait is on a message, with a timeout that
//! only exists to turn a hang into a failure.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use banter_protocol::{ClientMessage, ErrorCode, ServerMessage};
use banter_server::config::Config;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long any single wait may take before the test fails instead of hanging.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// The workspace's sample content.
pub fn content_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../content")
}

/// A fresh, unique temporary folder.
pub fn temp_dir(label: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "banter-e2e-{label}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// A running server.
pub struct TestServer {
    pub addr: SocketAddr,
    pub config: Config,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), banter_server::ServerError>>>,
}

impl TestServer {
    /// A server with the sample content and a fresh SQLite database.
    pub async fn start() -> TestServer {
        Self::start_with(|_| {}).await
    }

    /// Like [`TestServer::start`], with the configuration adjusted first.
    pub async fn start_with(adjust: impl FnOnce(&mut Config)) -> TestServer {
        let dir = temp_dir("db");
        let mut config = Config {
            database_url: format!("sqlite://{}", dir.join("banter.db").display()),
            content: content_dir(),
            ..Config::default()
        };
        adjust(&mut config);
        Self::start_config(config).await
    }

    pub async fn start_config(config: Config) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(banter_server::run(config.clone(), listener, async move {
            let _ = rx.await;
        }));
        TestServer {
            addr,
            config,
            shutdown: Some(tx),
            task: Some(task),
        }
    }

    /// Asks the server to shut down and waits until it has.
    pub async fn stop(mut self) -> Result<(), banter_server::ServerError> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let task = self.task.take().expect("running");
        tokio::time::timeout(PATIENCE * 2, task)
            .await
            .expect("the server stops in time")
            .expect("the server task does not panic")
    }

    /// A plain HTTP request; returns the status and the body.
    pub async fn http(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        http(self.addr, method, path, headers, body).await
    }

    /// Logs in a device through the development endpoint and returns its token.
    pub async fn login(&self, device: &str) -> String {
        let body = format!(r#"{{"device_id":"{device}"}}"#);
        let (status, text) = self
            .http("POST", "/v1/auth/device", &[("Content-Type", "application/json")], &body)
            .await;
        assert_eq!(status, 200, "login failed: {text}");
        let value: serde_json::Value = serde_json::from_str(&text).expect("json");
        value["token"].as_str().expect("token").to_owned()
    }

    /// Opens a WebSocket with a token and reads the welcome.
    pub async fn connect(&self, token: &str) -> Client {
        let mut client = self.connect_raw(token).await.expect("upgrade accepted");
        match client.recv().await {
            ServerMessage::Welcome { .. } => client,
            other => panic!("expected welcome, got {other:?}"),
        }
    }

    /// Opens a WebSocket; the upgrade's error if the server refused it.
    pub async fn connect_raw(&self, token: &str) -> Result<Client, tungstenite::Error> {
        let url = format!("ws://{}/v1/ws?token={token}", self.addr);
        let (ws, _) = tokio_tungstenite::connect_async(url).await?;
        Ok(Client { ws, next_id: 0 })
    }

    /// A logged-in, connected player whose body stands at `position`.
    pub async fn player_at(&self, device: &str, position: [f64; 3]) -> Client {
        let token = self.login(device).await;
        let mut client = self.connect(&token).await;
        client
            .request(ClientMessage::Move { id: None, position })
            .await
            .expect("spawned");
        client
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// What the server answered to one request: what came before the ack, and the ack or error.
#[derive(Debug)]
pub struct Reply {
    pub messages: Vec<ServerMessage>,
}

/// A refused request.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub code: ErrorCode,
    pub message: String,
    pub before: Vec<ServerMessage>,
}

pub struct Client {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
}

impl Client {
    /// Sends any WebSocket frame.
    pub async fn send_frame(&mut self, frame: Message) {
        self.ws.send(frame).await.expect("send");
    }

    /// Sends a message as-is (no id added).
    pub async fn send(&mut self, message: &ClientMessage) {
        let text = serde_json::to_string(message).expect("encode");
        self.send_frame(Message::Text(text.into())).await;
    }

    /// The next protocol message; pings and pongs are skipped.
    pub async fn recv(&mut self) -> ServerMessage {
        self.try_recv().await.expect("a message before the connection closed")
    }

    /// The next protocol message, or `None` once the server closed the connection.
    pub async fn try_recv(&mut self) -> Option<ServerMessage> {
        loop {
            let frame = tokio::time::timeout(PATIENCE, self.ws.next())
                .await
                .expect("a frame in time");
            match frame {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return None,
                Some(Ok(Message::Text(text))) => {
                    return Some(serde_json::from_str(text.as_str()).expect("a protocol message"));
                }
                Some(Ok(_)) => continue,
            }
        }
    }

    /// Sends a message with a fresh id and collects everything up to its ack or error.
    pub async fn request(&mut self, message: ClientMessage) -> Result<Reply, Refused> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&message.with_id(id)).await;
        let mut messages = Vec::new();
        loop {
            match self.recv().await {
                ServerMessage::Ack { id: acked } if acked == id => return Ok(Reply { messages }),
                ServerMessage::Error {
                    id: Some(failed),
                    code,
                    message,
                    ..
                } if failed == id => {
                    return Err(Refused {
                        code,
                        message,
                        before: messages,
                    });
                }
                other => messages.push(other),
            }
        }
    }

    /// Closes the socket from the client's side.
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}

/// A minimal HTTP/1.1 client: enough for JSON endpoints and metrics, with no extra dependency.
pub async fn http(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut response))
        .await
        .expect("a response in time")
        .expect("read");
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_owned();
    (status, body)
}
