//! The client library against a real server started in this process on 127.0.0.1 port 0, with
//! a private SQLite database and the sample content: device login, requests matched to their
//! answers, a drop and a reconnect that resumes the conversation, minted tokens, and the HTTP
//! calls.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use banter_client::connection::upgrade_status;
use banter_client::http::{DEV_SERVICE_KEY, Delivered};
use banter_client::token::{self, DEV_SECRET};
use banter_client::{
    Backoff, Connection, Endpoint, Error, Http, device_login, reconnect, reconnect_and_resume,
};
use banter_protocol::{ClientMessage, ErrorCode, ServerMessage};
use banter_server::config::Config;
use banter_test_db::{Backend, TestDb};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Within Pim's reach on the sample map.
const NEAR_PIM: [f64; 3] = [-640.0, 2.0, 910.0];

/// A server running in this process; stopped when dropped.
struct Server {
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), banter_server::ServerError>>>,
    _database: TestDb,
}

impl Server {
    async fn start() -> Server {
        let database = TestDb::new(Backend::Sqlite, "client").await;
        let config = Config {
            database_url: database.url(),
            content: Path::new(env!("CARGO_MANIFEST_DIR")).join("../content"),
            ..Config::default()
        };
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(banter_server::run(config, listener, async move {
            let _ = rx.await;
        }));
        let server = Server {
            addr,
            shutdown: Some(tx),
            task: Some(task),
            _database: database,
        };
        // The listener is bound, so this waits in the backlog until the server serves.
        server.http().healthz().await.expect("the server comes up");
        server
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint::parse(&format!("http://{}", self.addr)).expect("the server's address")
    }

    fn http(&self) -> Http {
        Http::new(self.endpoint()).expect("an HTTP client")
    }

    async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let task = self.task.take().expect("running");
        tokio::time::timeout(Duration::from_secs(20), task)
            .await
            .expect("the server stops in time")
            .expect("the server task does not panic")
            .expect("the server stops cleanly");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// A logged-in device, connected, with its body near Pim.
async fn near_pim(server: &Server, device: &str) -> (banter_client::Login, Connection) {
    let login = device_login(&server.http(), device).await.expect("login");
    let mut connection = Connection::connect(&server.endpoint(), &login.token)
        .await
        .expect("connect");
    let reply = connection
        .request(ClientMessage::Move {
            id: None,
            position: NEAR_PIM,
        })
        .await
        .expect("answered");
    assert_eq!(reply.answer, Ok(()), "spawned near Pim");
    (login, connection)
}

fn talk(npc: &str) -> ClientMessage {
    ClientMessage::Talk {
        id: None,
        npc: npc.to_owned(),
        instance: None,
        cached: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_login_connects_as_its_player() {
    let server = Server::start().await;
    let http = server.http();
    let login = device_login(&http, "device-client-01")
        .await
        .expect("login");
    assert!(login.player.starts_with("d-"), "{login:?}");
    assert!(
        !login.expiring(token::unix_now()),
        "a fresh token: {login:?}"
    );
    // The same device is the same player.
    let again = device_login(&http, "device-client-01")
        .await
        .expect("login");
    assert_eq!(again.player, login.player);

    let connection = Connection::connect(&server.endpoint(), &login.token)
        .await
        .expect("connect");
    assert_eq!(connection.welcome.player, login.player);
    assert!(!connection.welcome.resume_token.is_empty());
    connection.close().await;

    // A device id the server refuses is an HTTP error with its status, not a panic.
    match device_login(&http, "short").await {
        Err(Error::Http { status: 400, .. }) => {}
        other => panic!("expected a 400, got {other:?}"),
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_answered_by_its_ack_with_what_came_before() {
    let server = Server::start().await;
    let (_, mut connection) = near_pim(&server, "device-client-02").await;
    let reply = connection.request(talk("Pim")).await.expect("answered");
    assert_eq!(reply.answer, Ok(()));
    assert!(
        reply.messages.iter().any(
            |m| matches!(m, ServerMessage::Opened { conversation, .. } if conversation == "Pim")
        ),
        "the `opened` before the ack: {:?}",
        reply.messages
    );
    assert!(reply.refused().is_none());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_is_matched_to_its_request_id() {
    let server = Server::start().await;
    let (_, mut connection) = near_pim(&server, "device-client-03").await;
    // No conversation is open: the advance is refused, and the error carries its id.
    let id = connection.next_id();
    connection
        .send(&ClientMessage::Advance {
            id: Some(id),
            node: "PimsTideTale_Tale".to_owned(),
        })
        .await
        .expect("sent");
    let reply = connection
        .answer(id, std::time::Instant::now())
        .await
        .expect("answered");
    let refusal = reply.answer.expect_err("refused");
    assert!(refusal.with_id, "{refusal:?}");
    assert_eq!(refusal.code, ErrorCode::NoConversation);
    // The connection goes on: the next request gets its own answer.
    let reply = connection.request(talk("Pim")).await.expect("answered");
    assert_eq!(reply.answer, Ok(()));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_reconnects_and_resumes_the_conversation() {
    let server = Server::start().await;
    let http = server.http();
    let device = "device-client-04";
    let (mut login, mut connection) = near_pim(&server, device).await;
    let opened = connection.request(talk("Pim")).await.expect("answered");
    assert_eq!(opened.answer, Ok(()));
    let resume_token = connection.welcome.resume_token.clone();

    // The connection drops without a goodbye; the token has lapsed too, so the reconnect logs
    // the device in again before it connects.
    drop(connection);
    login.expires_at = 0;
    let (mut connection, resumed) =
        reconnect_and_resume(&http, device, &mut login, Backoff::DEFAULT, &resume_token)
            .await
            .expect("reconnected");
    assert!(!login.expiring(token::unix_now()), "logged in again");
    let resumed = resumed.expect("the conversation is taken back");
    assert_eq!(resumed.conversation, "Pim");
    assert!(!resumed.hash.is_empty());
    // The walk goes on where it was: Pim's greeting, answered yes.
    let reply = connection
        .request(ClientMessage::Choose {
            id: None,
            response: "PimsTideTale_Greet_r1".to_owned(),
        })
        .await
        .expect("answered");
    assert_eq!(reply.answer, Ok(()), "the walk goes on");

    // The token took it back once: a second resume, after another drop, is refused, and the new
    // connection stands.
    drop(connection);
    let mut connection = reconnect(&http, device, &mut login, Backoff::DEFAULT)
        .await
        .expect("reconnected");
    let refused = connection
        .resume(&resume_token)
        .await
        .expect("answered")
        .expect_err("spent");
    assert_eq!(refused.code, ErrorCode::ResumeRefused);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minted_token_is_accepted_and_a_bad_one_refused() {
    let server = Server::start().await;
    let endpoint = server.endpoint();
    let now = token::unix_now();
    let minted = token::mint(DEV_SECRET, "minted-player", now, now + 60);
    let connection = Connection::connect(&endpoint, &minted)
        .await
        .expect("a token minted with the server's secret is accepted");
    assert_eq!(connection.welcome.player, "minted-player");
    connection.close().await;

    let expired = token::mint(DEV_SECRET, "minted-player", now - 120, now - 60);
    for refused in [
        expired.clone(),
        token::tampered(&minted),
        token::unsigned("minted-player", now),
        token::with_subject(&minted, "another-player", now),
        token::mint("another-secret-of-at-least-32-bytes!", "p", now, now + 60),
    ] {
        assert_eq!(
            upgrade_status(&endpoint, &refused).await.expect("answered"),
            401,
            "{refused}"
        );
    }
    match Connection::connect(&endpoint, &expired).await {
        Err(Error::Http { status: 401, .. }) => {}
        Err(other) => panic!("expected a 401, got {other:?}"),
        Ok(_) => panic!("an expired token was accepted"),
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_calls_answer_typed() {
    let server = Server::start().await;
    let http = server.http();
    let readiness = http.readyz().await.expect("readyz");
    assert!(readiness.ready, "{readiness:?}");
    assert_eq!(readiness.backend, "sqlite");
    assert_eq!(readiness.content_version, 1);
    assert!(
        http.metrics()
            .await
            .expect("metrics")
            .contains("banter_audit_records_total")
    );
    assert_eq!(http.reload(DEV_SERVICE_KEY).await.expect("reloaded"), 2);
    match http.reload("not-the-key").await {
        Err(Error::Http { status: 403, .. }) => {}
        other => panic!("expected a 403, got {other:?}"),
    }

    // A player the server knows: one who has connected once.
    let (login, _connection) = near_pim(&server, "device-client-06").await;
    let event = serde_json::json!({
        "event_id": "client-event-1",
        "player": login.player,
        "kind": "fish_caught",
        "species": "Copper Snapper",
        "rarity": "common",
        "island": "brinehollow",
        "amount": 1,
    })
    .to_string();
    match http
        .post_event(DEV_SERVICE_KEY, &event)
        .await
        .expect("applied")
    {
        Delivered::Applied { advanced, .. } => assert!(advanced.is_empty(), "no quest taken"),
        Delivered::Duplicate => panic!("a first delivery is no duplicate"),
    }
    assert_eq!(
        http.post_event(DEV_SERVICE_KEY, &event)
            .await
            .expect("answered"),
        Delivered::Duplicate
    );
    http.audit(DEV_SERVICE_KEY, &login.player, Some(10))
        .await
        .expect("the audit trail is readable");
    match http.audit(&login.token, &login.player, None).await {
        Err(Error::Http { status: 403, .. }) => {}
        other => panic!("a player token is no service key: {other:?}"),
    }
    // The raw request answers any status as an answer.
    let (status, _) = http
        .request("GET", "/no-such-path", &[], "")
        .await
        .expect("answered");
    assert_eq!(status, 404);
    server.stop().await;
}
