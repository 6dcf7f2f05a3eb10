//! `TestServer`: a real server on 127.0.0.1 port 0, on a private database of either backend.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use banter_protocol::{ClientMessage, Position, ServerMessage};
use banter_server::config::Config;
use banter_test_db::{Backend, TestDb};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::{self};

use crate::*;

/// A running server.
pub struct TestServer {
    pub addr: SocketAddr,
    pub config: Config,
    /// The test's private database, shared by every instance started on it and removed when the
    /// last one is dropped.
    pub(crate) database: Option<Arc<TestDb>>,
    pub(crate) shutdown: Option<oneshot::Sender<()>>,
    pub(crate) task: Option<JoinHandle<Result<(), banter_server::ServerError>>>,
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

    /// Like [`TestServer::start_with`], serving the content folder `content` (a copy the test
    /// edits) instead of the sample content.
    pub async fn start_serving(content: &Path, adjust: impl FnOnce(&mut Config)) -> TestServer {
        let content = content.to_owned();
        Self::start_with(move |c| {
            c.content = content;
            adjust(c);
        })
        .await
    }

    /// Like [`TestServer::start_serving`], on a fresh database of `backend`.
    pub async fn start_serving_on(
        backend: Backend,
        content: &Path,
        adjust: impl FnOnce(&mut Config),
    ) -> TestServer {
        let content = content.to_owned();
        Self::start_on_with(backend, move |c| {
            c.content = content;
            adjust(c);
        })
        .await
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

    /// The test's database, kept alive past [`TestServer::stop`].
    pub fn database_handle(&self) -> Arc<TestDb> {
        self.database
            .clone()
            .expect("a server started by `start_on` or `start_with` has a test database")
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
        if probe(addr, "/healthz").await.is_none() {
            // Nothing answered: the server failed to start; say why.
            match tokio::time::timeout(PATIENCE, task)
                .await
                .expect("the server stops")
            {
                Ok(Err(e)) => panic!("the server did not start: {e}"),
                Ok(Ok(())) => panic!("the server stopped as it started"),
                Err(e) => panic!("the server task panicked: {e}"),
            }
        }
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

    /// Reloads the content through the admin endpoint with the service key, as an operator
    /// does; the status and the body.
    pub async fn reload_content(&self) -> (u16, String) {
        let auth = format!("Bearer {}", self.config.service_key);
        self.http("POST", "/admin/reload", &[("Authorization", &auth)], "")
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
        self.connect_welcomed(token).await.0
    }

    /// Opens a WebSocket with a token; the client and what its welcome said.
    pub async fn connect_welcomed(&self, token: &str) -> (Client, Welcome) {
        self.connect_query_welcomed(&format!("token={token}")).await
    }

    /// Opens a WebSocket with this query string (`token=...&locale=...`); the client and what
    /// its welcome said.
    pub async fn connect_query_welcomed(&self, query: &str) -> (Client, Welcome) {
        let mut client = self.connect_query(query).await.expect("upgrade accepted");
        match client.recv().await {
            ServerMessage::Welcome {
                resume_token,
                position,
                cutscene,
                locale,
                locales,
                party,
                ..
            } => {
                let welcome = Welcome {
                    resume_token,
                    position,
                    cutscene,
                    locale,
                    locales,
                    party,
                };
                (client, welcome)
            }
            other => panic!("expected welcome, got {other:?}"),
        }
    }

    /// Opens a WebSocket; the upgrade's error if the server refused it.
    pub async fn connect_raw(&self, token: &str) -> Result<Client, tungstenite::Error> {
        self.connect_query(&format!("token={token}")).await
    }

    /// Opens a WebSocket with this query string (`token=...&locale=...`).
    pub async fn connect_query(&self, query: &str) -> Result<Client, tungstenite::Error> {
        let url = format!("ws://{}/v1/ws?{query}", self.addr);
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

/// What a `welcome` says that tests look at.
#[derive(Debug, Clone, PartialEq)]
pub struct Welcome {
    /// The token a later session resumes this one's conversation with.
    pub resume_token: String,
    /// Where the world remembers the player's body, if it does.
    pub position: Option<Position>,
    /// The cutscene still playing from the player's previous session, if any.
    pub cutscene: Option<String>,
    /// The locale served.
    pub locale: String,
    /// Every locale the content can be read in.
    pub locales: Vec<String>,
    /// The player's party, if in one.
    pub party: Option<banter_protocol::PartyView>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}
