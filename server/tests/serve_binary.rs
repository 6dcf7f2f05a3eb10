//! The `banter-server` process as an operator runs it: the real binary, started with no
//! configuration in an empty folder, found through its JSON logs, asked over plain HTTP, and
//! stopped with SIGTERM.
//!
//! Nothing here sleeps to wait for something: every wait polls for the thing itself (a log
//! line, an exit status) under a deadline that only exists to turn a hang into a failure.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use banter_test_db::temp::{TempDir, copy_dir};

/// How long the server may take to start listening (content load and migrations on a busy CI).
const STARTUP: Duration = Duration::from_secs(60);
/// How long one HTTP request, or the shutdown after SIGTERM, may take.
const PATIENCE: Duration = Duration::from_secs(20);
/// Between two looks at a child's exit status.
const POLL: Duration = Duration::from_millis(20);

/// The binary, run in `dir`, with none of the caller's Banter settings leaking in: every flag
/// takes its default unless the test passes it.
fn banter(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_banter-server"));
    command.args(args).current_dir(dir).env("RUST_LOG", "info");
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if name_text.starts_with("BANTER_") || name_text == "DATABASE_URL" {
            command.env_remove(&name);
        }
    }
    command
}

/// A child process that is killed (by its own handle) if a test fails while it still runs.
struct Running(Child);

impl Running {
    /// Starts the binary in `dir` with `args` (see [`banter`]), its output read line by line.
    fn start(dir: &Path, args: &[&str]) -> (Running, Lines, Lines) {
        let mut child = Running(
            banter(dir, args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start banter-server"),
        );
        let stdout = Lines::read(child.0.stdout.take().expect("stdout"));
        let stderr = Lines::read(child.0.stderr.take().expect("stderr"));
        (child, stdout, stderr)
    }

    /// Runs the binary in `dir` with `args` until it exits by itself (`expect`: the failure if
    /// it does not in time): its exit status, stdout and stderr.
    fn to_exit(dir: &Path, args: &[&str], expect: &str) -> (ExitStatus, String, String) {
        let (mut child, mut stdout, mut stderr) = Running::start(dir, args);
        let status = child.wait_until(Instant::now() + PATIENCE).expect(expect);
        let err = stderr.all(Instant::now() + PATIENCE).join("\n");
        let out = stdout.all(Instant::now() + PATIENCE).join("\n");
        (status, out, err)
    }

    fn pid(&self) -> String {
        self.0.id().to_string()
    }

    /// Polls for the exit status until `deadline`; `None` if the process is still running.
    fn wait_until(&mut self, deadline: Instant) -> Option<ExitStatus> {
        loop {
            if let Some(status) = self.0.try_wait().expect("query the child") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(POLL);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The lines of a child's output stream, read on their own thread so the pipe never fills
/// (a server that logs into a full pipe blocks, and with it, shutdown).
struct Lines {
    rx: Receiver<String>,
    seen: Vec<String>,
}

impl Lines {
    fn read(stream: impl Read + Send + 'static) -> Lines {
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Lines {
            rx,
            seen: Vec::new(),
        }
    }

    /// Reads lines until `pick` finds what it looks for; `None` at the deadline or at the end
    /// of the stream.
    fn find<T>(&mut self, deadline: Instant, pick: impl Fn(&str) -> Option<T>) -> Option<T> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) => {
                    let found = pick(&line);
                    self.seen.push(line);
                    if found.is_some() {
                        return found;
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Everything the stream said, once it has ended (or the deadline passed).
    fn all(&mut self, deadline: Instant) -> &[String] {
        let _ = self.find(deadline, |_| None::<()>);
        &self.seen
    }
}

/// One JSON log line: `{"timestamp":..,"level":..,"fields":{"message":..,..},"target":..}`.
fn log_event(line: &str) -> Option<serde_json::Value> {
    serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .filter(|v| v["fields"]["message"].is_string())
}

fn is_event(line: &str, message: &str) -> bool {
    log_event(line).is_some_and(|v| v["fields"]["message"] == message)
}

/// The address in the `listening` event's fields.
fn listening_addr(line: &str) -> Option<SocketAddr> {
    let event = log_event(line)?;
    if event["fields"]["message"] != "listening" {
        return None;
    }
    event["fields"]["addr"].as_str()?.parse().ok()
}

/// One GET with a maintained HTTP client on a runtime of its own (the rest of this file is
/// synchronous: it drives a child process). Returns the status and the body.
fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .timeout(PATIENCE)
            .build()
            .expect("an HTTP client");
        let response = client
            .get(format!("http://{addr}{path}"))
            .send()
            .await
            .expect("an answer");
        let status = response.status().as_u16();
        (status, response.text().await.expect("a body"))
    })
}

#[test]
fn serve_with_no_configuration_creates_its_database_answers_http_and_stops_cleanly_on_sigterm() {
    let dir = TempDir::new("serve-plain");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../content"),
        &dir.path().join("content"),
    );
    let data = dir.path().join("data");
    assert!(!data.exists(), "the temp folder starts without data/");

    let (mut child, mut stdout, mut stderr) = Running::start(
        dir.path(),
        &["serve", "--bind", "127.0.0.1:0", "--log-format", "json"],
    );

    let addr = stdout.find(Instant::now() + STARTUP, listening_addr);
    let Some(addr) = addr else {
        let out = stdout.all(Instant::now() + POLL).join("\n");
        let err = stderr.all(Instant::now() + POLL).join("\n");
        panic!("no `listening` event\nstdout:\n{out}\nstderr:\n{err}");
    };
    assert!(addr.ip().is_loopback(), "{addr}");
    assert_ne!(
        addr.port(),
        0,
        "the log names the bound port, not the requested one"
    );

    // Default DATABASE_URL: a SQLite file under ./data, created with its parent folder.
    assert!(data.is_dir(), "data/ was created in the working folder");
    assert!(
        data.join("banter.db").is_file(),
        "data/banter.db was created"
    );

    let (status, body) = http_get(addr, "/healthz");
    assert_eq!((status, body.as_str()), (200, "ok"));
    let (status, body) = http_get(addr, "/metrics");
    assert_eq!(status, 200);
    assert!(body.contains("banter_open_sessions 0"), "{body}");

    let killed = Command::new("kill")
        .args(["-TERM", &child.pid()])
        .status()
        .expect("run kill");
    assert!(killed.success(), "kill -TERM failed");
    let status = child.wait_until(Instant::now() + PATIENCE);
    let err = stderr.all(Instant::now() + PATIENCE).join("\n");
    let status = status.unwrap_or_else(|| panic!("still running after SIGTERM\nstderr:\n{err}"));
    assert!(status.success(), "exit status {status:?}\nstderr:\n{err}");

    let lines = stdout.all(Instant::now() + PATIENCE);
    assert!(
        lines.iter().any(|l| is_event(l, "stopped")),
        "a `stopped` event:\n{}",
        lines.join("\n")
    );
    assert!(
        lines
            .iter()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()),
        "--log-format json writes only JSON lines:\n{}",
        lines.join("\n")
    );
}

#[test]
fn serve_in_production_refuses_the_development_auth_secret() {
    let dir = TempDir::new("serve-production");
    let (status, out, err) = Running::to_exit(
        dir.path(),
        &["serve", "--production", "--bind", "127.0.0.1:0"],
        "the server refuses to start instead of running",
    );
    assert!(!status.success(), "exit status {status:?}\nstdout:\n{out}");
    assert!(
        err.contains("BANTER_AUTH_SECRET"),
        "stderr names the variable:\n{err}"
    );
    assert!(!dir.path().join("data").exists(), "nothing was created");
}

#[test]
fn migrate_creates_the_sqlite_file_and_exits_zero() {
    let dir = TempDir::new("serve-migrate");
    let file = dir.path().join("x.db");
    let url = format!("sqlite://{}", file.display());
    let (status, out, err) = Running::to_exit(
        dir.path(),
        &["migrate", "--database-url", &url],
        "migrate finishes",
    );
    assert!(status.success(), "exit status {status:?}\nstderr:\n{err}");
    assert!(file.is_file(), "{} was created", file.display());
    assert!(out.contains("migrations applied"), "stdout:\n{out}");
}
