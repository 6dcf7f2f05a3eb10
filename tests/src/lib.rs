//! The end-to-end harness: a real server on 127.0.0.1 port 0 with a fresh database and the sample
//! content, and a real WebSocket client that speaks the wire protocol. The WebSocket client here
//! is raw on purpose (tests send malformed frames, hold sockets, reset connections); HTTP calls,
//! device login and tokens go through the client library, `banter-client`.
//!
//! The database is a private SQLite file by default, or a private PostgreSQL schema
//! ([`TestServer::start_on`], [`on_both_backends!`]): the quest scenarios run on both.
//!
//! Nothing here sleeps to wait for something: every wait is on a message, with a timeout that
//! only exists to turn a hang into a failure.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use banter_client::{Endpoint, Http};
use banter_dialogue::{ClientWalk, DialogueGraph, Outgoing, Screen, build_conversation};
use banter_protocol::{ClientMessage, ErrorCode, ServerMessage};
use banter_server::config::Config;
pub use banter_test_db::{Backend, TestDb};
use futures_util::{SinkExt, StreamExt};
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

/// Runs each named scenario, an `async fn(Backend)` in the calling file, as two tests: one on
/// SQLite (`sqlite::name`) and one on PostgreSQL (`postgres::name`, which fails when
/// `TEST_DATABASE_URL` is unreachable; it never skips).
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::Backend::Sqlite).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::Backend::Postgres).await;
                }
            )*
        }
    };
}

/// A running server.
pub struct TestServer {
    pub addr: SocketAddr,
    pub config: Config,
    /// The test's private database, shared by every instance started on it and removed when the
    /// last one is dropped.
    database: Option<Arc<TestDb>>,
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
        Self::start_on_with(Backend::Sqlite, adjust).await
    }

    /// A server with the sample content and a fresh database of `backend`.
    pub async fn start_on(backend: Backend) -> TestServer {
        Self::start_on_with(backend, |_| {}).await
    }

    /// Like [`TestServer::start_on`], with the configuration adjusted first.
    pub async fn start_on_with(backend: Backend, adjust: impl FnOnce(&mut Config)) -> TestServer {
        let database = Arc::new(TestDb::new(backend, "e2e").await);
        let mut config = Config {
            database_url: database.url(),
            content: content_dir(),
            ..Config::default()
        };
        adjust(&mut config);
        let mut server = Self::start_config(config).await;
        server.database = Some(database);
        server
    }

    /// A second, independent server process on the same database and configuration, on its
    /// own port: another instance, sharing nothing with this one but the database.
    pub async fn another_instance(&self) -> TestServer {
        let mut server = Self::start_config(self.config.clone()).await;
        server.database = self.database.clone();
        server
    }

    /// Stops this server and starts a new one on the same database and configuration (on a new
    /// port): what a deploy or a crash-and-restart looks like to the data.
    pub async fn restart(self) -> TestServer {
        let config = self.config.clone();
        let database = self.database.clone();
        self.stop().await.expect("the server stops cleanly");
        let mut server = Self::start_config(config).await;
        server.database = database;
        server
    }

    /// The test's database, to look behind the server (ledger rows, profiles).
    pub fn database(&self) -> &TestDb {
        self.database
            .as_deref()
            .expect("a server started by `start_on` or `start_with` has a test database")
    }

    pub async fn start_config(config: Config) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(banter_server::run(config.clone(), listener, async move {
            let _ = rx.await;
        }));
        // The listener is bound already, so this request waits in the backlog until the server
        // has loaded its content and serves: a started server is a ready one. A server that
        // failed to start simply drops the connection; the test then sees the failure.
        let _ = probe(addr, "/healthz").await;
        TestServer {
            addr,
            config,
            database: None,
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
    pub async fn http(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String) {
        http(self.addr, method, path, headers, body).await
    }

    /// Posts a game event to `/internal/events` as the trusted game server (with the service
    /// key); the status and the body.
    pub async fn post_event(&self, body: &str) -> (u16, String) {
        let auth = format!("Bearer {}", self.config.service_key);
        self.http(
            "POST",
            "/internal/events",
            &[
                ("Content-Type", "application/json"),
                ("Authorization", &auth),
            ],
            body,
        )
        .await
    }

    /// Logs in a device through the development endpoint and returns its token.
    pub async fn login(&self, device: &str) -> String {
        self.login_player(device).await.0
    }

    /// Logs in a device; its token and player id.
    pub async fn login_player(&self, device: &str) -> (String, String) {
        let login = banter_client::device_login(&http_client(self.addr), device)
            .await
            .unwrap_or_else(|e| panic!("login failed: {e}"));
        (login.token, login.player)
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
        self.try_recv()
            .await
            .expect("a message before the connection closed")
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

/// An HTTP client for the server at `addr`: the client library's, one connection per request
/// (as the server's connection counts in tests expect).
pub fn http_client(addr: SocketAddr) -> Http {
    let endpoint = Endpoint::parse(&addr.to_string()).expect("a socket address is an endpoint");
    Http::unpooled(endpoint).expect("an HTTP client")
}

/// One GET that never panics: the answer, or `None` if there was none.
async fn probe(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    http_client(addr).get(path, None).await.ok()
}

/// One HTTP request through the client library; the status and the body.
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    http_client(addr)
        .request(method, path, headers, body)
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// Helpers for the rejection-path tests: typed shortcuts over `request`, metrics, raw upgrades.
// ---------------------------------------------------------------------------------------------

/// What an `opened` message carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    pub conversation: String,
    pub npc: banter_protocol::NpcRef,
    pub entry: String,
    pub hash: String,
    pub content: Option<String>,
    pub facts: banter_protocol::FactSheet,
}

impl Reply {
    /// The `opened` message among the replies, if any.
    pub fn opened(&self) -> Option<Opened> {
        self.messages.iter().find_map(|m| match m {
            ServerMessage::Opened {
                conversation,
                npc,
                entry,
                hash,
                content,
                facts,
                ..
            } => Some(Opened {
                conversation: conversation.clone(),
                npc: npc.clone(),
                entry: entry.clone(),
                hash: hash.clone(),
                content: content.clone(),
                facts: facts.clone(),
            }),
            _ => None,
        })
    }

    /// Every effect among the replies, in order.
    pub fn effects(&self) -> Vec<banter_protocol::Effect> {
        self.messages
            .iter()
            .filter_map(|m| match m {
                ServerMessage::Effect { effect, .. } => Some(effect.clone()),
                _ => None,
            })
            .collect()
    }

    /// The profile carried by the last effect among the replies.
    pub fn profile(&self) -> Option<banter_protocol::Profile> {
        self.messages.iter().rev().find_map(|m| match m {
            ServerMessage::Effect { profile, .. } => Some(profile.clone()),
            _ => None,
        })
    }
}

impl Client {
    /// Opens a conversation with `npc` (no instance hint); the `opened` message.
    pub async fn talk(&mut self, npc: &str) -> Result<Opened, Refused> {
        self.talk_hinted(npc, None).await
    }

    /// Opens a conversation with `npc` and an instance hint; the `opened` message.
    pub async fn talk_hinted(
        &mut self,
        npc: &str,
        instance: Option<&str>,
    ) -> Result<Opened, Refused> {
        let reply = self
            .request(ClientMessage::Talk {
                id: None,
                npc: npc.to_owned(),
                instance: instance.map(str::to_owned),
                cached: None,
            })
            .await?;
        Ok(reply.opened().expect("an accepted talk sends `opened`"))
    }

    /// Moves the body.
    pub async fn move_to(&mut self, position: [f64; 3]) -> Result<Reply, Refused> {
        self.request(ClientMessage::Move { id: None, position })
            .await
    }

    /// Advances past the NPC line `node`.
    pub async fn advance(&mut self, node: &str) -> Result<Reply, Refused> {
        self.request(ClientMessage::Advance {
            id: None,
            node: node.to_owned(),
        })
        .await
    }

    /// Picks the response `response`.
    pub async fn choose(&mut self, response: &str) -> Result<Reply, Refused> {
        self.request(ClientMessage::Choose {
            id: None,
            response: response.to_owned(),
        })
        .await
    }

    /// Runs an action with its payload.
    pub async fn action(
        &mut self,
        action: banter_protocol::ActionType,
        payload: &str,
    ) -> Result<Reply, Refused> {
        self.request(ClientMessage::Action {
            id: None,
            action,
            payload: payload.to_owned(),
        })
        .await
    }

    /// Closes the open conversation.
    pub async fn close_conversation(&mut self) -> Result<Reply, Refused> {
        self.request(ClientMessage::Close { id: None }).await
    }

    /// Sends a frame; the error instead of a panic if the connection is gone.
    pub async fn try_send_frame(&mut self, frame: Message) -> Result<(), tungstenite::Error> {
        self.ws.send(frame).await
    }

    /// Sends a raw text frame as-is (it need not be a valid message).
    pub async fn send_text(&mut self, text: &str) {
        self.send_frame(Message::Text(text.to_owned().into())).await;
    }

    /// The next message, which must be an error; its code and id.
    pub async fn recv_error(&mut self) -> (ErrorCode, Option<u64>) {
        match self.recv().await {
            ServerMessage::Error { code, id, .. } => (code, id),
            other => panic!("expected an error, got {other:?}"),
        }
    }

    /// Reads until the server closes the connection; every protocol message seen before.
    pub async fn until_closed(&mut self) -> Vec<ServerMessage> {
        let mut seen = Vec::new();
        while let Some(message) = self.try_recv().await {
            seen.push(message);
        }
        seen
    }
}

impl TestServer {
    /// The `/metrics` text.
    pub async fn metrics(&self) -> String {
        let (status, body) = self.http("GET", "/metrics", &[], "").await;
        assert_eq!(status, 200, "metrics: {body}");
        body
    }

    /// One sample of `/metrics` by its exact series (`name` or `name{label="v"}`).
    pub async fn metric(&self, series: &str) -> f64 {
        let text = self.metrics().await;
        metric_value(&text, series).unwrap_or_else(|| panic!("no series `{series}` in:\n{text}"))
    }

    /// Opens a WebSocket with a request built by the caller (headers, path); the upgrade's
    /// error if the server refused it. No welcome is read.
    pub async fn connect_request(
        &self,
        request: tungstenite::handshake::client::Request,
    ) -> Result<Client, tungstenite::Error> {
        let (ws, _) = tokio_tungstenite::connect_async(request).await?;
        Ok(Client { ws, next_id: 0 })
    }

    /// Like [`TestServer::connect`], over a socket whose kernel receive buffer is `bytes`: a
    /// client that stops reading fills it quickly.
    pub async fn connect_small_buffer(&self, token: &str, bytes: u32) -> Client {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_recv_buffer_size(bytes).expect("SO_RCVBUF");
        let stream = socket.connect(self.addr).await.expect("connect");
        let url = format!("ws://{}/v1/ws?token={token}", self.addr);
        let (ws, _) = tokio_tungstenite::client_async(url, MaybeTlsStream::Plain(stream))
            .await
            .expect("upgrade accepted");
        let mut client = Client { ws, next_id: 0 };
        match client.recv().await {
            ServerMessage::Welcome { .. } => client,
            other => panic!("expected welcome, got {other:?}"),
        }
    }
}

/// The value of one series in a Prometheus text exposition.
pub fn metric_value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            (name == series).then(|| value.parse().ok()).flatten()
        })
}

/// Copies a folder tree (content, for tests that edit it).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for entry in std::fs::read_dir(from).expect("read the folder") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// Seconds since the Unix epoch, as the server's token check reads the clock.
pub use banter_client::token::unix_now;

impl Client {
    /// The next WebSocket frame of any kind (pings and close frames included); `None` once the
    /// stream has ended.
    pub async fn next_frame(&mut self) -> Option<Message> {
        let frame = tokio::time::timeout(PATIENCE, self.ws.next())
            .await
            .expect("a frame in time");
        match frame {
            None | Some(Err(_)) => None,
            Some(Ok(frame)) => Some(frame),
        }
    }

    /// Reads every frame until the connection ends (past the close frame, to the TCP end):
    /// once this returns, the server has let go of the connection.
    pub async fn until_eof(&mut self) -> Vec<Message> {
        let mut frames = Vec::new();
        while let Some(frame) = self.next_frame().await {
            frames.push(frame);
        }
        frames
    }
}

/// The protocol messages among raw frames.
pub fn messages_in(frames: &[Message]) -> Vec<ServerMessage> {
    frames
        .iter()
        .filter_map(|f| match f {
            Message::Text(text) => {
                Some(serde_json::from_str(text.as_str()).expect("a protocol message"))
            }
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Playing whole conversations with the client rules (banter-dialogue's ClientWalk).
// ---------------------------------------------------------------------------------------------

impl Client {
    /// Opens a conversation and builds the graph from the content the server sent.
    pub async fn open_conversation(
        &mut self,
        npc: &str,
    ) -> (DialogueGraph, String, banter_protocol::FactSheet) {
        let reply = self
            .request(ClientMessage::Talk {
                id: None,
                npc: npc.into(),
                instance: None,
                cached: None,
            })
            .await
            .expect("talk accepted");
        let opened = reply
            .messages
            .into_iter()
            .find_map(|m| match m {
                ServerMessage::Opened {
                    conversation,
                    entry,
                    content,
                    facts,
                    ..
                } => Some((conversation, entry, content, facts)),
                _ => None,
            })
            .expect("opened");
        let (name, entry, content, facts) = opened;
        let (graph, diagnostics) = build_conversation(&name, &content.expect("content sent"));
        assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
        (graph, entry, facts)
    }

    /// Sends what the client walk queued, in order, and collects the effects.
    pub async fn send_queued(
        &mut self,
        graph: &DialogueGraph,
        out: &mut Vec<Outgoing>,
    ) -> Vec<ServerMessage> {
        let mut seen = Vec::new();
        for message in out.drain(..) {
            let wire = match message {
                Outgoing::Advance(v) => ClientMessage::Advance {
                    id: None,
                    node: graph.vertex(v).expect("vertex").name.to_string(),
                },
                Outgoing::Choose(v) => ClientMessage::Choose {
                    id: None,
                    response: graph.vertex(v).expect("vertex").name.to_string(),
                },
                Outgoing::Action(i) => {
                    let a = graph.action(i).expect("action");
                    ClientMessage::Action {
                        id: None,
                        action: a.action_type,
                        payload: a.payload.to_string(),
                    }
                }
            };
            let reply = self.request(wire.clone()).await;
            let reply = reply.unwrap_or_else(|e| panic!("{wire:?} refused: {e:?}"));
            seen.extend(reply.messages);
        }
        seen
    }

    /// Talks to `npc` and plays the conversation to its end with the client rules, always
    /// taking the first response offered and following the server's jumps. The entry node and
    /// every message the server sent on the way.
    pub async fn play_through(&mut self, npc: &str) -> (String, Vec<ServerMessage>) {
        let (graph, entry, facts) = self.open_conversation(npc).await;
        let mut out = Vec::new();
        let first = graph.find(&entry).expect("the entry is in the graph");
        let mut walk = ClientWalk::open(&graph, first, &facts, &mut out).expect("opens");
        let mut seen = Vec::new();
        loop {
            let replies = self.send_queued(&graph, &mut out).await;
            for message in &replies {
                if let ServerMessage::Jump { node, .. } = message {
                    let to = graph.find(node).expect("the jump target is in the graph");
                    walk.jump(&graph, to, &facts, &mut out).expect("jump");
                }
            }
            seen.extend(replies);
            if !out.is_empty() {
                continue;
            }
            match walk.screen() {
                Screen::Ended => break,
                _ if walk.can_advance(&graph) => {
                    walk.advance(&graph, &facts, &mut out).expect("advance");
                }
                _ => {
                    let choice = walk.choices(&graph).next().expect("a choice");
                    walk.choose(&graph, choice, &facts, &mut out)
                        .expect("choose");
                }
            }
        }
        self.request(ClientMessage::Close { id: None })
            .await
            .expect("closed");
        (entry, seen)
    }
}

// ---------------------------------------------------------------------------------------------
// Racing sessions and dropped connections: connecting from a task, bounded waits that report
// instead of panicking, and a connection that drops without a goodbye.
// ---------------------------------------------------------------------------------------------

/// Opens a WebSocket to the server at `addr` with a token, reading nothing: what
/// [`TestServer::connect_raw`] does, for a spawned task that holds no reference to the server.
pub async fn connect_raw_at(addr: SocketAddr, token: &str) -> Result<Client, tungstenite::Error> {
    let url = format!("ws://{addr}/v1/ws?token={token}");
    let (ws, _) = tokio_tungstenite::connect_async(url).await?;
    Ok(Client { ws, next_id: 0 })
}

impl Client {
    /// The next protocol message if one arrives within `wait` (pings and pongs skipped):
    /// `Ok(Some(message))`, `Ok(None)` once the server closed the connection, `Err` if nothing
    /// came in time. Unlike [`Client::try_recv`] a quiet connection is an answer, not a panic,
    /// so a test can wait on many connections and tell which stayed silent.
    pub async fn recv_within(
        &mut self,
        wait: Duration,
    ) -> Result<Option<ServerMessage>, tokio::time::error::Elapsed> {
        tokio::time::timeout(wait, async {
            loop {
                match self.ws.next().await {
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return None,
                    Some(Ok(Message::Text(text))) => {
                        return Some(
                            serde_json::from_str(text.as_str()).expect("a protocol message"),
                        );
                    }
                    Some(Ok(_)) => continue,
                }
            }
        })
        .await
    }

    /// Drops the connection the way a lost network or a killed client does: no WebSocket Close
    /// frame, and the TCP connection reset (`SO_LINGER` 0) instead of shut down. The server sees
    /// the stream fail, never a clean close, so it treats the session as dropped (and parks an
    /// open conversation for a `resume`).
    pub fn abort(self) {
        if let MaybeTlsStream::Plain(stream) = self.ws.get_ref() {
            // If the option cannot be set the socket still closes without a Close frame.
            let _ = stream.set_zero_linger();
        }
        drop(self);
    }
}
