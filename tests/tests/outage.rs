//! A database outage in the middle of play, against a real PostgreSQL: a private cluster on its
//! own port (initdb + pg_ctl), so stopping it touches nothing else on the machine.
//!
//! While the database is down: the session stays connected; steps that need no write go on; an
//! action that needs the store is answered `store_unavailable` (retryable) with nothing applied
//! and its arming kept; `/readyz` says so. When the database is back, the server reconnects by
//! itself, the retried action applies once, and the reward is paid once.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use banter_e2e::{TestServer, content_dir, temp_dir};
use banter_protocol::{ActionType, ClientMessage, Effect, ErrorCode, ServerMessage};
use banter_server::config::Config;

const NEAR_PIM: [f64; 3] = [-640.0, 2.0, 910.0];

/// A PostgreSQL cluster of our own, stopped and removed when dropped.
struct PrivateCluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
}

impl PrivateCluster {
    fn create() -> PrivateCluster {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL's server binaries under /usr/lib/postgresql")
            .filter_map(Result::ok)
            .map(|e| e.path().join("bin"))
            .find(|p| p.join("initdb").exists())
            .expect("an initdb");
        let dir = temp_dir("pg-cluster");
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
            listener.local_addr().expect("addr").port()
        };
        let cluster = PrivateCluster { bin, dir, port };
        cluster.own_dir();
        cluster.run(
            "initdb",
            &[
                "-D",
                &cluster.data(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ],
        );
        cluster.start();
        cluster
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    /// PostgreSQL refuses to run as root: as root, the cluster belongs to `postgres`.
    fn own_dir(&self) {
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&self.dir)
                .status()
                .expect("chown");
            assert!(status.success());
        }
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let program = self.bin.join(tool);
        let mut command = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&program);
            c
        } else {
            Command::new(&program)
        };
        let output = command
            .args(args)
            .current_dir(&self.dir)
            .output()
            .expect("run a PostgreSQL tool");
        assert!(
            output.status.success(),
            "{tool} {args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn start(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("log").display().to_string();
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-o",
                &options,
                "-l",
                &log,
                "-w",
                "start",
            ],
        );
    }

    /// An immediate stop: every connection is cut, as in a crash of the database.
    fn stop(&self) {
        self.run(
            "pg_ctl",
            &["-D", &self.data(), "-m", "immediate", "-w", "stop"],
        );
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let _ = Command::new(if is_root() { "runuser" } else { "true" })
            .args(if is_root() {
                vec!["-u", "postgres", "--"]
            } else {
                vec![]
            })
            .arg(self.bin.join("pg_ctl"))
            .args(["-D", &self.data(), "-m", "immediate", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn is_root() -> bool {
    // The uid of the process, read from /proc (no libc dependency for one number).
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

async fn ready(server: &TestServer) -> u16 {
    server.http("GET", "/readyz", &[], "").await.0
}

/// Sends the action again, as a client does on a retryable error, until it is not refused as
/// `store_unavailable`; the server reconnects on its own meanwhile. Bounded: a server that never
/// recovers fails the test.
async fn retry_until_stored(
    client: &mut banter_e2e::Client,
    action: ActionType,
    payload: &str,
) -> banter_e2e::Reply {
    for _ in 0..150 {
        match client.action(action, payload).await {
            Err(refused) if refused.code == ErrorCode::StoreUnavailable => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(refused) => panic!("{action:?} refused: {refused:?}"),
            Ok(reply) => return reply,
        }
    }
    panic!("the store did not come back within 15 s of retries");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_mid_conversation_loses_nothing_and_pays_once() {
    let cluster = tokio::task::spawn_blocking(PrivateCluster::create)
        .await
        .expect("cluster");
    let config = Config {
        database_url: cluster.url(),
        content: content_dir(),
        ..Config::default()
    };
    let server = TestServer::start_config(config).await;
    assert_eq!(ready(&server).await, 200);

    let mut client = server.player_at("device-outage-01", NEAR_PIM).await;
    assert_eq!(
        client.talk("Pim").await.expect("talk").entry,
        "PimsTideTale_Greet"
    );
    client.choose("PimsTideTale_Greet_r1").await.expect("yes");

    // The database goes down.
    let cluster = tokio::task::spawn_blocking(move || {
        cluster.stop();
        cluster
    })
    .await
    .expect("stop");
    assert_eq!(ready(&server).await, 503, "readyz reports the outage");

    // Moves need no write and go on; the action that needs the store is refused, retryable,
    // with nothing applied and its arming kept.
    client.move_to(NEAR_PIM).await.expect("moves go on");
    let refused = client
        .action(ActionType::AcceptQuest, "PimsTideTale")
        .await
        .expect_err("no store");
    assert_eq!(refused.code, ErrorCode::StoreUnavailable);
    assert!(refused.before.is_empty(), "{:?}", refused.before);
    // A new connection cannot load its player: told so, and closed without a welcome.
    let token = server.login("device-outage-02").await;
    let mut newcomer = server.connect_raw(&token).await.expect("upgrade");
    match newcomer.recv().await {
        ServerMessage::Error {
            code, retryable, ..
        } => {
            assert_eq!(code, ErrorCode::StoreUnavailable);
            assert!(retryable);
        }
        other => panic!("expected store_unavailable, got {other:?}"),
    }

    // The database comes back; the same session retries and the accept applies once.
    let cluster = tokio::task::spawn_blocking(move || {
        cluster.start();
        cluster
    })
    .await
    .expect("start");
    let accepted = retry_until_stored(&mut client, ActionType::AcceptQuest, "PimsTideTale").await;
    assert_eq!(
        accepted.effects(),
        vec![Effect::QuestAccepted {
            quest: "PimsTideTale".into(),
            objectives: vec!["HearTheTale".into()]
        }]
    );
    assert_eq!(ready(&server).await, 200, "readyz reports the recovery");
    let paid = client.finish_pims_tale().await;
    assert_eq!(paid.profile().expect("profile").coins, 30);
    client
        .request(ClientMessage::Close { id: None })
        .await
        .expect("closed");
    server.stop().await.expect("clean shutdown");
    drop(cluster);
}
