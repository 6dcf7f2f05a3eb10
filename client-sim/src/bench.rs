//! `banter-sim bench`: the server measured against the limit of its own stack.
//!
//! - [`throughput`]: the same connections, message sizes and pipeline depth drive the echo
//!   endpoint (`GET /bench/echo`, the transport alone) and the validated dialogue step (the
//!   sample content's gossip loop: `choose`, `advance`, `action OpenShop`, no store write), in
//!   alternating phases; the ratio of the two throughputs is what must hold.
//! - [`open_loop`]: the dialogue step at fixed offered rates, each message sent on a schedule
//!   and its round trip measured from its *scheduled* time (no coordinated omission), so a
//!   server that falls behind shows it in the percentiles.
//! - [`scale`]: many authenticated sessions held open, each sending a cheap message every few
//!   seconds, and the server's resident memory per session.
//!
//! The client is written to be cheap (answers are recognised by their first bytes, never
//! decoded), since on a shared machine every microsecond it spends is one the server does not
//! get; the server's own CPU time per message (from `/proc/<pid>/stat`, with `--server-pid`)
//! is the figure that does not depend on the client.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::{FutureExt, SinkExt, StreamExt};
use hdrhistogram::Histogram;
use serde::Serialize;
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::error::{Result, SimError};
use crate::http::Endpoint;
use crate::report::{micros, table};

/// A WebSocket over plain TCP.
pub type Ws = WebSocketStream<TcpStream>;

/// How long one answer may take before it counts as an error.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(15);

/// The gossip loop of the sample content (`content/dialogue/base/Marisol.json`): Marisol's
/// `Marisol_Gossip` line, whose first response opens the rod shop and leads back through
/// `Marisol_GossipMore`. None of it writes to the store.
pub mod script {
    /// The NPC and the instance hint.
    pub const NPC: &str = "Marisol";
    pub const INSTANCE: &str = "marisol";
    /// Where the body spawns: 4 studs from Marisol at (-6, 3, -18).
    pub const SPAWN: [f64; 3] = [-6.0, 3.0, -14.0];
    /// The line the conversation opens on for a fresh player.
    pub const ENTRY: &str = "Marisol_Hello";
    /// "Heard any gossip?": into the loop.
    pub const INTO_LOOP: &str = "Marisol_Hello_r5";
    /// One lap, in the order the client rules send it: choose the response (its `OpenShop` is
    /// held), advance past the line it led to, then send the held action.
    pub const CHOOSE: &str = "Marisol_Gossip_r1";
    pub const ADVANCE: &str = "Marisol_GossipMore";
    pub const SHOP: &str = "SaltyHookRods";
}

/// The three messages of one lap, with request id `id`.
pub fn step_message(lap_index: u64, id: u64) -> String {
    match lap_index % 3 {
        0 => format!(
            r#"{{"type":"choose","id":{id},"response":"{}"}}"#,
            script::CHOOSE
        ),
        1 => format!(
            r#"{{"type":"advance","id":{id},"node":"{}"}}"#,
            script::ADVANCE
        ),
        _ => format!(
            r#"{{"type":"action","id":{id},"action":"OpenShop","payload":"{}"}}"#,
            script::SHOP
        ),
    }
}

/// The echo message standing for step message `lap_index` with id `id`: a JSON object of
/// exactly the same byte length.
pub fn echo_message(lap_index: u64, id: u64) -> String {
    let len = step_message(lap_index, id).len();
    let bare = format!(r#"{{"type":"echo","id":{id},"pad":""}}"#);
    let pad = len.saturating_sub(bare.len());
    format!(r#"{{"type":"echo","id":{id},"pad":"{}"}}"#, "x".repeat(pad))
}

/// What an answer frame says, from its first bytes (the server writes `type` first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    Ack,
    Error,
    /// Not an answer: an `effect`, `jump`, ... caused by the request before its `ack`.
    Other,
}

pub fn classify(text: &str) -> Answer {
    if text.starts_with(r#"{"type":"ack""#) {
        Answer::Ack
    } else if text.starts_with(r#"{"type":"error""#) || text.starts_with(r#"{"type":"bye""#) {
        Answer::Error
    } else {
        Answer::Other
    }
}

/// The machine a figure was measured on.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: usize,
    pub memory_gib: f64,
    pub kernel: String,
    /// CPUs this client process may run on (`taskset` shows here).
    pub client_cpus: usize,
}

impl Machine {
    pub fn probe() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, m)| m.trim().to_owned())
            .unwrap_or_else(|| "unknown".to_owned());
        let cores = cpuinfo
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_kib: f64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0.0);
        Machine {
            cpu_model,
            cores,
            memory_gib: (memory_kib / 1024.0 / 1024.0 * 10.0).round() / 10.0,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap_or_default()
                .trim()
                .to_owned(),
            client_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    pub fn line(&self) -> String {
        format!(
            "machine: {} ({} cores, {} GiB, Linux {}); client on {} CPU(s)",
            self.cpu_model, self.cores, self.memory_gib, self.kernel, self.client_cpus
        )
    }
}

/// A process's CPU time so far (user + system), from `/proc/<pid>/stat`.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; fields count from after its closing parenthesis.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // USER_HZ is 100 on every Linux this runs on.
    Some(Duration::from_millis((utime + stime) * 10))
}

/// A process's resident set size in KiB, from `/proc/<pid>/status`.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Where to connect and as whom.
#[derive(Clone, Debug)]
pub struct Target {
    pub endpoint: Endpoint,
    /// Mint tokens with this secret instead of logging in (the server's `--auth-secret`).
    pub auth_secret: Option<String>,
    /// Loopback source addresses to spread connections over (127.0.0.1 .. 127.0.0.k), so many
    /// connections do not run out of ephemeral ports.
    pub source_ips: usize,
    /// Client-side WebSocket read buffer.
    pub read_buffer: usize,
    /// Makes player ids unique to this run.
    pub run_id: String,
}

impl Target {
    /// A token for player number `i` of this run.
    pub async fn token(&self, i: usize) -> Result<String> {
        match &self.auth_secret {
            Some(secret) => {
                let now = crate::auth::unix_now();
                let player = format!("bench-{}-{i}", self.run_id);
                Ok(crate::auth::mint(secret, &player, now, now + 24 * 3600))
            }
            None => {
                let device = format!("bench-{}-{i}", self.run_id);
                Ok(crate::session::device_login(&self.endpoint, &device)
                    .await?
                    .token)
            }
        }
    }

    /// Opens a WebSocket to `path` with `token`, from source address number `i`.
    pub async fn open(&self, path: &str, token: &str, i: usize) -> Result<Ws> {
        let addr: SocketAddr = tokio::net::lookup_host(&self.endpoint.authority)
            .await?
            .next()
            .ok_or_else(|| SimError::BadUrl(self.endpoint.authority.clone()))?;
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        if self.source_ips > 1 && addr.ip().is_loopback() && addr.is_ipv4() {
            let n = (i % self.source_ips) as u8;
            socket.bind(SocketAddr::new(
                IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1 + n)),
                0,
            ))?;
        }
        let stream = socket.connect(addr).await?;
        stream.set_nodelay(true)?;
        let config = WebSocketConfig::default()
            .read_buffer_size(self.read_buffer)
            .write_buffer_size(0);
        let url = format!("ws://{}{path}?token={token}", self.endpoint.authority);
        let (ws, _) = tokio::time::timeout(
            ANSWER_TIMEOUT,
            tokio_tungstenite::client_async_with_config(url, stream, Some(config)),
        )
        .await
        .map_err(|_| SimError::Timeout(ANSWER_TIMEOUT))?
        .map_err(|e| match e {
            tokio_tungstenite::tungstenite::Error::Http(response) => SimError::Http {
                path: path.to_owned(),
                status: response.status().as_u16(),
                body: response
                    .body()
                    .as_ref()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .unwrap_or_default(),
            },
            other => other.into(),
        })?;
        Ok(ws)
    }
}

/// The next text frame, within the answer timeout.
async fn next_text(ws: &mut Ws) -> Result<String> {
    loop {
        let frame = tokio::time::timeout(ANSWER_TIMEOUT, ws.next())
            .await
            .map_err(|_| SimError::Timeout(ANSWER_TIMEOUT))?;
        match frame {
            Some(Ok(Message::Text(text))) => return Ok(text.as_str().to_owned()),
            Some(Ok(Message::Close(_))) | None => return Err(SimError::Closed),
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(e.into()),
        }
    }
}

/// Sends `text` and reads up to its `ack`; every frame before it, or the refusal.
async fn request(ws: &mut Ws, text: String) -> Result<Vec<String>> {
    ws.send(Message::Text(text.clone().into())).await?;
    let mut before = Vec::new();
    loop {
        let frame = next_text(ws).await?;
        match classify(&frame) {
            Answer::Ack => return Ok(before),
            Answer::Error => return Err(SimError::Protocol(format!("`{text}` → {frame}"))),
            Answer::Other => before.push(frame),
        }
    }
}

/// A session of the bench's own: logged in, welcomed, standing by Marisol with the gossip
/// loop on screen, ready for laps.
pub async fn step_session(target: &Target, i: usize) -> Result<Ws> {
    let token = target.token(i).await?;
    let mut ws = target.open("/v1/ws", &token, i).await?;
    let welcome = next_text(&mut ws).await?;
    if !welcome.starts_with(r#"{"type":"welcome""#) {
        return Err(SimError::Protocol(format!(
            "expected welcome, got {welcome}"
        )));
    }
    let [x, y, z] = script::SPAWN;
    request(
        &mut ws,
        format!(r#"{{"type":"move","id":1,"position":[{x:?},{y:?},{z:?}]}}"#),
    )
    .await?;
    let opened = request(
        &mut ws,
        format!(
            r#"{{"type":"talk","id":2,"npc":"{}","instance":"{}"}}"#,
            script::NPC,
            script::INSTANCE
        ),
    )
    .await?;
    let entry = format!(r#""entry":"{}""#, script::ENTRY);
    if !opened.iter().any(|m| m.contains(&entry)) {
        return Err(SimError::Protocol(format!(
            "talking to {} did not open on {}: {opened:?}",
            script::NPC,
            script::ENTRY
        )));
    }
    request(
        &mut ws,
        format!(
            r#"{{"type":"choose","id":3,"response":"{}"}}"#,
            script::INTO_LOOP
        ),
    )
    .await?;
    Ok(ws)
}

/// An echo connection for player number `i` (the same token check as a session).
pub async fn echo_connection(target: &Target, i: usize) -> Result<Ws> {
    let token = target.token(i).await?;
    target.open("/bench/echo", &token, i).await
}

/// Which side of the comparison a phase drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Echo,
    Step,
}

/// What one connection did in one phase.
#[derive(Debug, Default)]
struct Driven {
    answers: u64,
    errors: u64,
    sample: Option<String>,
}

/// One connection's state across phases: its lap position and next request id.
struct Lane {
    lap: u64,
    next_id: u64,
}

impl Lane {
    fn next(&mut self, phase: Phase) -> Message {
        let (lap, id) = (self.lap, self.next_id);
        self.lap += 1;
        self.next_id += 1;
        Message::Text(
            match phase {
                Phase::Echo => echo_message(lap, id),
                Phase::Step => step_message(lap, id),
            }
            .into(),
        )
    }
}

/// Keeps `depth` requests in flight on `ws` until `deadline`, then waits for the rest.
async fn drive(
    ws: &mut Ws,
    lane: &mut Lane,
    phase: Phase,
    depth: usize,
    deadline: Instant,
) -> Driven {
    let mut out = Driven::default();
    let mut in_flight = 0usize;
    let result: Result<()> = async {
        for _ in 0..depth {
            ws.feed(lane.next(phase)).await?;
            in_flight += 1;
        }
        ws.flush().await?;
        while in_flight > 0 {
            // Everything already received is handled before the next write, so one flush
            // carries as many requests as there were answers.
            let mut answered = 0usize;
            let first = tokio::time::timeout(ANSWER_TIMEOUT, ws.next())
                .await
                .map_err(|_| SimError::Timeout(ANSWER_TIMEOUT))?;
            let mut frame = Some(first);
            while let Some(next) = frame.take() {
                match next {
                    Some(Ok(Message::Text(text))) => {
                        let answer = match phase {
                            Phase::Echo => Answer::Ack,
                            Phase::Step => classify(text.as_str()),
                        };
                        match answer {
                            Answer::Ack => answered += 1,
                            Answer::Error => {
                                answered += 1;
                                out.errors += 1;
                                out.sample.get_or_insert_with(|| text.as_str().to_owned());
                            }
                            Answer::Other => {}
                        }
                    }
                    Some(Ok(Message::Close(_))) | None => return Err(SimError::Closed),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(e.into()),
                }
                frame = ws.next().now_or_never();
            }
            in_flight -= answered;
            out.answers += answered as u64;
            if Instant::now() < deadline {
                for _ in 0..answered {
                    ws.feed(lane.next(phase)).await?;
                    in_flight += 1;
                }
                ws.flush().await?;
            }
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        out.errors += in_flight as u64;
        out.sample.get_or_insert_with(|| e.to_string());
    }
    out
}

/// How the throughput comparison runs.
#[derive(Clone, Debug)]
pub struct ThroughputOptions {
    pub target: Target,
    pub connections: usize,
    pub depth: usize,
    pub seconds: f64,
    pub rounds: usize,
    pub server_pid: Option<u32>,
}

/// One phase's figures.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PhaseFigures {
    pub msgs_per_sec: f64,
    pub messages: u64,
    pub seconds: f64,
    /// The server's CPU time per message (user + system, all threads), with `--server-pid`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_us_per_msg: Option<f64>,
    /// The server's CPU use during the phase, in cores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cores: Option<f64>,
}

/// One echo phase and one step phase.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Round {
    pub echo: PhaseFigures,
    pub step: PhaseFigures,
    pub ratio: f64,
}

/// `banter-sim bench`'s throughput result.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ThroughputReport {
    pub machine: Machine,
    pub connections: usize,
    pub depth: usize,
    pub seconds_per_phase: f64,
    /// Byte lengths of the three step messages (the echo messages match them).
    pub message_bytes: Vec<usize>,
    /// Medians over the rounds.
    pub echo_msgs_per_sec: f64,
    pub step_msgs_per_sec: f64,
    pub ratio: f64,
    /// Median over the rounds of echo CPU per message / step CPU per message (with
    /// `--server-pid`): the ratio the server alone would reach if the client cost nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_ratio: Option<f64>,
    pub rounds: Vec<Round>,
    pub errors: u64,
    pub error_samples: Vec<String>,
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

fn round_to(x: f64, places: i32) -> f64 {
    let p = 10f64.powi(places);
    (x * p).round() / p
}

/// A command to a connection task.
struct Run {
    phase: Phase,
    depth: usize,
    deadline: Instant,
    done: oneshot::Sender<Driven>,
}

/// Opens `n` of something with at most `parallel` openings at once, in order.
async fn open_all<T, F, Fut>(n: usize, parallel: usize, open: F) -> Result<Vec<T>>
where
    T: Send + 'static,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<T>> + Send + 'static,
{
    let gate = Arc::new(Semaphore::new(parallel.max(1)));
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let gate = gate.clone();
        let fut = open(i);
        tasks.push(tokio::spawn(async move {
            let _permit = gate.acquire().await;
            fut.await
        }));
    }
    let mut out = Vec::with_capacity(n);
    for task in tasks {
        out.push(task.await.map_err(|e| SimError::Other(e.to_string()))??);
    }
    Ok(out)
}

/// Echo and step, alternating, `rounds` times.
pub async fn throughput(options: ThroughputOptions) -> Result<ThroughputReport> {
    let target = Arc::new(options.target.clone());
    let pairs = open_all(options.connections, 32, |i| {
        let target = target.clone();
        async move {
            let step = step_session(&target, i).await?;
            let echo = echo_connection(&target, i).await?;
            Ok((step, echo))
        }
    })
    .await?;
    let mut lanes = Vec::with_capacity(pairs.len());
    for (mut step, mut echo) in pairs {
        let (tx, mut rx) = mpsc::channel::<Run>(1);
        lanes.push(tx);
        tokio::spawn(async move {
            // Request ids 1..=3 went to the setup.
            let mut step_lane = Lane { lap: 0, next_id: 4 };
            let mut echo_lane = Lane { lap: 0, next_id: 4 };
            while let Some(run) = rx.recv().await {
                let driven = match run.phase {
                    Phase::Echo => {
                        drive(
                            &mut echo,
                            &mut echo_lane,
                            Phase::Echo,
                            run.depth,
                            run.deadline,
                        )
                        .await
                    }
                    Phase::Step => {
                        drive(
                            &mut step,
                            &mut step_lane,
                            Phase::Step,
                            run.depth,
                            run.deadline,
                        )
                        .await
                    }
                };
                let _ = run.done.send(driven);
            }
            let _ = step.close(None).await;
            let _ = echo.close(None).await;
        });
    }

    let mut report = ThroughputReport {
        machine: Machine::probe(),
        connections: options.connections,
        depth: options.depth,
        seconds_per_phase: options.seconds,
        message_bytes: (0..3).map(|k| step_message(k, 1000).len()).collect(),
        ..ThroughputReport::default()
    };
    let phase_length = Duration::from_secs_f64(options.seconds);
    for _ in 0..options.rounds {
        let mut round = Round::default();
        for phase in [Phase::Echo, Phase::Step] {
            let cpu_before = options.server_pid.and_then(cpu_time);
            let started = Instant::now();
            let deadline = started + phase_length;
            let mut waits = Vec::with_capacity(lanes.len());
            for lane in &lanes {
                let (done, wait) = oneshot::channel();
                let run = Run {
                    phase,
                    depth: options.depth,
                    deadline,
                    done,
                };
                if lane.send(run).await.is_ok() {
                    waits.push(wait);
                }
            }
            let mut messages = 0;
            for wait in waits {
                let driven = wait.await.unwrap_or_default();
                messages += driven.answers;
                report.errors += driven.errors;
                if let Some(sample) = driven.sample
                    && report.error_samples.len() < 10
                {
                    report.error_samples.push(sample);
                }
            }
            let elapsed = started.elapsed().as_secs_f64();
            let cpu = match (cpu_before, options.server_pid.and_then(cpu_time)) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a).as_secs_f64()),
                _ => None,
            };
            let figures = PhaseFigures {
                msgs_per_sec: round_to(messages as f64 / elapsed, 0),
                messages,
                seconds: round_to(elapsed, 2),
                server_cpu_us_per_msg: cpu
                    .filter(|_| messages > 0)
                    .map(|c| round_to(c * 1e6 / messages as f64, 2)),
                server_cores: cpu.map(|c| round_to(c / elapsed, 2)),
            };
            match phase {
                Phase::Echo => round.echo = figures,
                Phase::Step => round.step = figures,
            }
        }
        round.ratio = if round.echo.msgs_per_sec > 0.0 {
            round_to(round.step.msgs_per_sec / round.echo.msgs_per_sec, 3)
        } else {
            0.0
        };
        report.rounds.push(round);
    }
    drop(lanes);
    let mut echo: Vec<f64> = report.rounds.iter().map(|r| r.echo.msgs_per_sec).collect();
    let mut step: Vec<f64> = report.rounds.iter().map(|r| r.step.msgs_per_sec).collect();
    let mut ratio: Vec<f64> = report.rounds.iter().map(|r| r.ratio).collect();
    report.echo_msgs_per_sec = median(&mut echo);
    report.step_msgs_per_sec = median(&mut step);
    report.ratio = median(&mut ratio);
    let mut cpu_ratios: Vec<f64> = report
        .rounds
        .iter()
        .filter_map(|r| {
            Some(r.echo.server_cpu_us_per_msg? / r.step.server_cpu_us_per_msg?)
                .filter(|x| x.is_finite())
        })
        .collect();
    if !cpu_ratios.is_empty() {
        report.server_cpu_ratio = Some(round_to(median(&mut cpu_ratios), 3));
    }
    Ok(report)
}

impl ThroughputReport {
    pub fn table(&self) -> String {
        let mut rows = Vec::new();
        for (i, r) in self.rounds.iter().enumerate() {
            let cpu = |p: &PhaseFigures| {
                p.server_cpu_us_per_msg
                    .map_or("-".to_owned(), |c| format!("{c:.2} µs"))
            };
            let cores =
                |p: &PhaseFigures| p.server_cores.map_or("-".to_owned(), |c| format!("{c:.2}"));
            rows.push(vec![
                format!("{}", i + 1),
                format!("{:.0}", r.echo.msgs_per_sec),
                format!("{:.0}", r.step.msgs_per_sec),
                format!("{:.3}", r.ratio),
                cpu(&r.echo),
                cpu(&r.step),
                format!("{} / {}", cores(&r.echo), cores(&r.step)),
            ]);
        }
        rows.push(vec![
            "median".into(),
            format!("{:.0}", self.echo_msgs_per_sec),
            format!("{:.0}", self.step_msgs_per_sec),
            format!("{:.3}", self.ratio),
            String::new(),
            self.server_cpu_ratio
                .map_or(String::new(), |r| format!("cpu ratio {r:.3}")),
            String::new(),
        ]);
        let mut out = format!(
            "{}\n{} connections, depth {}, {} s per phase, messages of {:?} bytes\n\n",
            self.machine.line(),
            self.connections,
            self.depth,
            self.seconds_per_phase,
            self.message_bytes
        );
        out.push_str(&table(
            &[
                "round",
                "echo msg/s",
                "step msg/s",
                "ratio",
                "server cpu/echo",
                "server cpu/step",
                "server cores e/s",
            ],
            &rows,
        ));
        out.push_str(&format!("errors: {}\n", self.errors));
        for sample in &self.error_samples {
            out.push_str(&format!("  {sample}\n"));
        }
        out
    }
}

/// How the open-loop latency runs.
#[derive(Clone, Debug)]
pub struct OpenLoopOptions {
    pub target: Target,
    pub connections: usize,
    pub rates: Vec<u64>,
    pub seconds: f64,
    /// The knee: p99 above this many times the lowest rate's p99.
    pub knee_factor: f64,
}

/// One offered rate.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RatePoint {
    pub offered_per_sec: u64,
    pub achieved_per_sec: f64,
    pub messages: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
    pub errors: u64,
}

/// The open-loop result.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OpenLoopReport {
    pub machine: Machine,
    pub connections: usize,
    pub seconds_per_rate: f64,
    pub knee_factor: f64,
    pub rates: Vec<RatePoint>,
    /// The first rate whose p99 exceeds `knee_factor` × the lowest rate's p99, or whose
    /// achieved rate is under 95 % of the offered one.
    pub knee_per_sec: Option<u64>,
    pub knee_reason: Option<String>,
    pub error_samples: Vec<String>,
}

/// What one connection measured at one rate.
struct Measured {
    histogram: Histogram<u64>,
    answers: u64,
    errors: u64,
    sample: Option<String>,
}

fn new_histogram() -> Result<Histogram<u64>> {
    crate::session::new_histogram()
}

/// Sends on a schedule from one task and reads answers in another; latency is counted from
/// each message's scheduled time.
async fn open_loop_lane(
    ws: Ws,
    lane: &mut Lane,
    interval: Duration,
    first: Instant,
    deadline: Instant,
) -> Result<(Ws, Measured)> {
    let (mut sink, mut stream) = ws.split();
    let (scheduled_tx, mut scheduled_rx) = mpsc::unbounded_channel::<Instant>();
    let sent = Arc::new(AtomicU64::new(0));
    let finished = Arc::new(tokio::sync::Notify::new());
    let (reader_sent, reader_finished) = (sent.clone(), finished.clone());
    let reader = tokio::spawn(async move {
        let mut m = Measured {
            histogram: new_histogram()?,
            answers: 0,
            errors: 0,
            sample: None,
        };
        let mut sender_done = false;
        loop {
            if sender_done && m.answers >= reader_sent.load(Ordering::Acquire) {
                break;
            }
            let frame = tokio::select! {
                frame = tokio::time::timeout(ANSWER_TIMEOUT, stream.next()) => frame,
                () = reader_finished.notified(), if !sender_done => {
                    sender_done = true;
                    continue;
                }
            };
            let frame = match frame {
                Ok(Some(Ok(frame))) => frame,
                Ok(Some(Err(e))) => return Err::<_, SimError>(e.into()),
                Ok(None) => return Err(SimError::Closed),
                Err(_) => {
                    if m.answers < reader_sent.load(Ordering::Acquire) {
                        return Err(SimError::Timeout(ANSWER_TIMEOUT));
                    }
                    continue;
                }
            };
            let Message::Text(text) = frame else { continue };
            let answer = classify(text.as_str());
            if answer == Answer::Other {
                continue;
            }
            // The schedule was queued before the message went out, so it is here.
            let Some(at) = scheduled_rx.recv().await else {
                return Err(SimError::Protocol(format!(
                    "an answer nobody asked for: {text}"
                )));
            };
            let now = Instant::now();
            m.answers += 1;
            if answer == Answer::Error {
                m.errors += 1;
                m.sample.get_or_insert_with(|| text.as_str().to_owned());
            }
            let us =
                u64::try_from(now.saturating_duration_since(at).as_micros()).unwrap_or(u64::MAX);
            m.histogram.saturating_record(us.max(1));
        }
        Ok((stream, m))
    });

    // The sender: every message whose time has come goes out, then one flush.
    let mut next = first;
    let send_result: Result<()> = async {
        while next < deadline {
            tokio::time::sleep_until(next).await;
            let now = Instant::now();
            while next <= now && next < deadline {
                let _ = scheduled_tx.send(next);
                sink.feed(lane.next(Phase::Step)).await?;
                sent.fetch_add(1, Ordering::Release);
                next += interval;
            }
            sink.flush().await?;
        }
        Ok(())
    }
    .await;
    finished.notify_one();
    drop(scheduled_tx);
    let (stream, measured) = match reader.await {
        Ok(Ok(x)) => x,
        Ok(Err(e)) => return Err(e),
        Err(e) => return Err(SimError::Other(e.to_string())),
    };
    send_result?;
    let ws = sink
        .reunite(stream)
        .map_err(|_| SimError::Other("cannot reunite the socket".to_owned()))?;
    Ok((ws, measured))
}

/// The dialogue step at each offered rate in turn, open loop.
pub async fn open_loop(options: OpenLoopOptions) -> Result<OpenLoopReport> {
    let target = Arc::new(options.target.clone());
    let sessions = open_all(options.connections, 32, |i| {
        let target = target.clone();
        async move { step_session(&target, i).await }
    })
    .await?;
    let mut lanes: Vec<(Ws, Lane)> = sessions
        .into_iter()
        .map(|ws| (ws, Lane { lap: 0, next_id: 4 }))
        .collect();
    let mut report = OpenLoopReport {
        machine: Machine::probe(),
        connections: options.connections,
        seconds_per_rate: options.seconds,
        knee_factor: options.knee_factor,
        ..OpenLoopReport::default()
    };
    let length = Duration::from_secs_f64(options.seconds);
    for &rate in &options.rates {
        let per_lane = rate as f64 / lanes.len() as f64;
        let interval = Duration::from_secs_f64(1.0 / per_lane);
        let start = Instant::now() + Duration::from_millis(50);
        let deadline = start + length;
        let n = lanes.len();
        let mut tasks = Vec::with_capacity(n);
        for (i, (ws, mut lane)) in lanes.drain(..).enumerate() {
            // Lanes are staggered across one interval, so the offered load is smooth.
            let first = start + interval.mul_f64(i as f64 / n as f64);
            tasks.push(tokio::spawn(async move {
                let result = open_loop_lane(ws, &mut lane, interval, first, deadline).await;
                (result, lane)
            }));
        }
        let mut histogram = new_histogram()?;
        let mut point = RatePoint {
            offered_per_sec: rate,
            ..RatePoint::default()
        };
        for task in tasks {
            let (result, lane) = task.await.map_err(|e| SimError::Other(e.to_string()))?;
            match result {
                Ok((ws, m)) => {
                    let _ = histogram.add(&m.histogram);
                    point.messages += m.answers;
                    point.errors += m.errors;
                    if let Some(sample) = m.sample
                        && report.error_samples.len() < 10
                    {
                        report.error_samples.push(sample);
                    }
                    lanes.push((ws, lane));
                }
                Err(e) => {
                    point.errors += 1;
                    if report.error_samples.len() < 10 {
                        report.error_samples.push(e.to_string());
                    }
                }
            }
        }
        point.achieved_per_sec = round_to(point.messages as f64 / options.seconds, 0);
        if !histogram.is_empty() {
            point.p50_us = histogram.value_at_quantile(0.5);
            point.p99_us = histogram.value_at_quantile(0.99);
            point.p999_us = histogram.value_at_quantile(0.999);
            point.max_us = histogram.max();
        }
        report.rates.push(point);
        if lanes.is_empty() {
            break;
        }
    }
    for (mut ws, _) in lanes {
        let _ = ws.close(None).await;
    }
    (report.knee_per_sec, report.knee_reason) = knee(&report.rates, options.knee_factor);
    Ok(report)
}

/// The first rate where the p99 passes `factor` × the lowest rate's p99, or the server no
/// longer keeps up (achieved under 95 % of offered), with the reason.
pub fn knee(points: &[RatePoint], factor: f64) -> (Option<u64>, Option<String>) {
    let Some(base) = points.iter().min_by_key(|p| p.offered_per_sec) else {
        return (None, None);
    };
    let mut sorted: Vec<&RatePoint> = points.iter().collect();
    sorted.sort_by_key(|p| p.offered_per_sec);
    for p in sorted {
        let kept_up = p.achieved_per_sec >= 0.95 * p.offered_per_sec as f64;
        if !kept_up {
            return (
                Some(p.offered_per_sec),
                Some(format!(
                    "achieved {:.0}/s, under 95 % of the offered {}/s",
                    p.achieved_per_sec, p.offered_per_sec
                )),
            );
        }
        if p.p99_us as f64 > factor * base.p99_us.max(1) as f64 {
            return (
                Some(p.offered_per_sec),
                Some(format!(
                    "p99 {} is over {factor}× the p99 at {}/s ({})",
                    micros(p.p99_us),
                    base.offered_per_sec,
                    micros(base.p99_us)
                )),
            );
        }
    }
    (None, None)
}

impl OpenLoopReport {
    pub fn table(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .rates
            .iter()
            .map(|p| {
                vec![
                    p.offered_per_sec.to_string(),
                    format!("{:.0}", p.achieved_per_sec),
                    micros(p.p50_us),
                    micros(p.p99_us),
                    micros(p.p999_us),
                    micros(p.max_us),
                    p.errors.to_string(),
                ]
            })
            .collect();
        let mut out = format!(
            "{}\n{} connections, {} s per rate, latency from the scheduled send time\n\n",
            self.machine.line(),
            self.connections,
            self.seconds_per_rate
        );
        out.push_str(&table(
            &[
                "offered/s",
                "achieved/s",
                "p50",
                "p99",
                "p99.9",
                "max",
                "errors",
            ],
            &rows,
        ));
        match (&self.knee_per_sec, &self.knee_reason) {
            (Some(k), Some(why)) => out.push_str(&format!("knee: {k}/s ({why})\n")),
            _ => out.push_str("knee: none in the rates tried\n"),
        }
        for sample in &self.error_samples {
            out.push_str(&format!("  error: {sample}\n"));
        }
        out
    }
}

/// How the scale test runs.
#[derive(Clone, Debug)]
pub struct ScaleOptions {
    pub target: Target,
    pub sessions: usize,
    pub interval: Duration,
    /// How long every session stays open once the last one has connected.
    pub hold: Duration,
    pub parallel_connects: usize,
    pub server_pid: Option<u32>,
}

/// The scale result.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ScaleReport {
    pub machine: Machine,
    pub sessions_requested: usize,
    /// Sessions welcomed and open at once (the most reached).
    pub sessions_open: u64,
    pub connect_seconds: f64,
    pub hold_seconds: f64,
    pub interval_seconds: f64,
    /// `set_afk` requests answered with an `ack` while holding.
    pub messages: u64,
    pub connect_errors: u64,
    pub message_errors: u64,
    pub error_samples: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_rss_before_kib: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_rss_open_kib: Option<u64>,
    /// (RSS with every session open − RSS before) / sessions open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_rss_per_session_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_rss_kib: Option<u64>,
    pub latency_p50_us: u64,
    pub latency_p99_us: u64,
}

/// Shared counters of the scale test.
#[derive(Default)]
struct ScaleLive {
    open: AtomicU64,
    peak: AtomicU64,
    messages: AtomicU64,
    connect_errors: AtomicU64,
    message_errors: AtomicU64,
    samples: std::sync::Mutex<Vec<String>>,
    /// Round trips of every session, in one histogram (one per session would cost more memory
    /// than the session).
    round_trips: std::sync::Mutex<Option<Histogram<u64>>>,
}

impl ScaleLive {
    fn sample(&self, what: String) {
        if let Ok(mut samples) = self.samples.lock()
            && samples.len() < 10
        {
            samples.push(what);
        }
    }
}

/// One idle-ish session: welcomed, then a `set_afk` every `interval` (at a random phase) until
/// `stop`.
async fn scale_session(
    target: Arc<Target>,
    i: usize,
    interval: Duration,
    gate: Arc<Semaphore>,
    live: Arc<ScaleLive>,
    connected: mpsc::UnboundedSender<()>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let Ok(permit) = gate.acquire().await else {
        return;
    };
    let opened = async {
        let token = target.token(i).await?;
        let mut ws = target.open("/v1/ws", &token, i).await?;
        let welcome = next_text(&mut ws).await?;
        if !welcome.starts_with(r#"{"type":"welcome""#) {
            return Err(SimError::Protocol(welcome));
        }
        Ok(ws)
    }
    .await;
    drop(permit);
    let _ = connected.send(());
    let mut ws = match opened {
        Ok(ws) => ws,
        Err(e) => {
            live.connect_errors.fetch_add(1, Ordering::Relaxed);
            live.sample(format!("session {i}: {e}"));
            return;
        }
    };
    let open = live.open.fetch_add(1, Ordering::Relaxed) + 1;
    live.peak.fetch_max(open, Ordering::Relaxed);
    // A deterministic spread of first sends over one interval.
    let phase = interval.mul_f64((i as f64 * 0.618_033_988_7).fract());
    let mut tick = tokio::time::interval_at(Instant::now() + phase, interval);
    let mut id = 0u64;
    let mut stopped = false;
    while !stopped {
        tokio::select! {
            _ = tick.tick() => {
                id += 1;
                let afk = id.is_multiple_of(2);
                let started = Instant::now();
                match request(&mut ws, format!(r#"{{"type":"set_afk","id":{id},"afk":{afk}}}"#)).await {
                    Ok(_) => {
                        live.messages.fetch_add(1, Ordering::Relaxed);
                        let us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
                        if let Ok(mut h) = live.round_trips.lock()
                            && let Some(h) = h.as_mut()
                        {
                            h.saturating_record(us.max(1));
                        }
                    }
                    Err(e) => {
                        live.message_errors.fetch_add(1, Ordering::Relaxed);
                        live.sample(format!("session {i}: {e}"));
                        break;
                    }
                }
            }
            frame = ws.next() => match frame {
                // Pings are answered by tungstenite while reading.
                Some(Ok(Message::Text(text))) => {
                    live.message_errors.fetch_add(1, Ordering::Relaxed);
                    live.sample(format!("session {i}: unasked {text}"));
                    break;
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                    live.message_errors.fetch_add(1, Ordering::Relaxed);
                    live.sample(format!("session {i}: the connection closed"));
                    break;
                }
                Some(Ok(_)) => {}
            },
            changed = stop.changed() => {
                stopped = changed.is_err() || *stop.borrow();
            }
        }
    }
    live.open.fetch_sub(1, Ordering::Relaxed);
    let _ = tokio::time::timeout(Duration::from_secs(5), ws.close(None)).await;
}

/// Opens `sessions` sessions, holds them while each sends a message every `interval`, and
/// measures the server's memory per session.
pub async fn scale(options: ScaleOptions, progress: bool) -> Result<ScaleReport> {
    let target = Arc::new(options.target.clone());
    let live = Arc::new(ScaleLive {
        round_trips: std::sync::Mutex::new(Some(new_histogram()?)),
        ..ScaleLive::default()
    });
    let gate = Arc::new(Semaphore::new(options.parallel_connects.max(1)));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (connected_tx, mut connected_rx) = mpsc::unbounded_channel();
    let mut report = ScaleReport {
        machine: Machine::probe(),
        sessions_requested: options.sessions,
        interval_seconds: options.interval.as_secs_f64(),
        server_rss_before_kib: options.server_pid.and_then(rss_kib),
        ..ScaleReport::default()
    };
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(options.sessions);
    for i in 0..options.sessions {
        tasks.push(tokio::spawn(scale_session(
            target.clone(),
            i,
            options.interval,
            gate.clone(),
            live.clone(),
            connected_tx.clone(),
            stop_rx.clone(),
        )));
    }
    drop(connected_tx);
    let mut attempts = 0usize;
    while attempts < options.sessions && connected_rx.recv().await.is_some() {
        attempts += 1;
        if progress && attempts.is_multiple_of(1000) {
            eprintln!(
                "  {attempts} connection attempts, {} open, {} failed, {:.1} s",
                live.open.load(Ordering::Relaxed),
                live.connect_errors.load(Ordering::Relaxed),
                started.elapsed().as_secs_f64()
            );
        }
    }
    report.connect_seconds = round_to(started.elapsed().as_secs_f64(), 1);
    let holding = Instant::now();
    // Memory is sampled once the connect burst has settled, while every session is idle-ish.
    let settle = options.hold.min(Duration::from_secs(5));
    tokio::time::sleep(settle).await;
    report.server_rss_open_kib = options.server_pid.and_then(rss_kib);
    let open_now = live.open.load(Ordering::Relaxed);
    if let (Some(before), Some(open)) = (report.server_rss_before_kib, report.server_rss_open_kib)
        && open_now > 0
    {
        report.server_rss_per_session_bytes = Some(open.saturating_sub(before) * 1024 / open_now);
    }
    let rest = options.hold.saturating_sub(settle);
    let mut waited = Duration::ZERO;
    while waited < rest {
        let step = (rest - waited).min(Duration::from_secs(10));
        tokio::time::sleep(step).await;
        waited += step;
        if progress {
            eprintln!(
                "  holding: {} open, {} messages, {} errors, {:.0} s",
                live.open.load(Ordering::Relaxed),
                live.messages.load(Ordering::Relaxed),
                live.message_errors.load(Ordering::Relaxed),
                holding.elapsed().as_secs_f64()
            );
        }
    }
    report.client_rss_kib = rss_kib(std::process::id());
    report.hold_seconds = round_to(holding.elapsed().as_secs_f64(), 1);
    report.sessions_open = live.peak.load(Ordering::Relaxed);
    let _ = stop_tx.send(true);
    for task in tasks {
        let _ = task.await;
    }
    let histogram = live
        .round_trips
        .lock()
        .ok()
        .and_then(|mut h| h.take())
        .unwrap_or(new_histogram()?);
    report.messages = live.messages.load(Ordering::Relaxed);
    report.connect_errors = live.connect_errors.load(Ordering::Relaxed);
    report.message_errors = live.message_errors.load(Ordering::Relaxed);
    report.error_samples = live.samples.lock().map(|s| s.clone()).unwrap_or_default();
    if !histogram.is_empty() {
        report.latency_p50_us = histogram.value_at_quantile(0.5);
        report.latency_p99_us = histogram.value_at_quantile(0.99);
    }
    Ok(report)
}

impl ScaleReport {
    pub fn table(&self) -> String {
        let kib = |k: Option<u64>| k.map_or("-".to_owned(), |k| format!("{k} KiB"));
        let mut rows = vec![
            vec![
                "sessions requested".into(),
                self.sessions_requested.to_string(),
            ],
            vec![
                "sessions open at once".into(),
                self.sessions_open.to_string(),
            ],
            vec![
                "connect time".into(),
                format!("{:.1} s", self.connect_seconds),
            ],
            vec!["held for".into(), format!("{:.1} s", self.hold_seconds)],
            vec![
                "one message per session every".into(),
                format!("{} s", self.interval_seconds),
            ],
            vec!["messages answered".into(), self.messages.to_string()],
            vec![
                "latency p50 / p99".into(),
                format!(
                    "{} / {}",
                    micros(self.latency_p50_us),
                    micros(self.latency_p99_us)
                ),
            ],
            vec!["connect errors".into(), self.connect_errors.to_string()],
            vec!["message errors".into(), self.message_errors.to_string()],
            vec!["server RSS before".into(), kib(self.server_rss_before_kib)],
            vec!["server RSS, all open".into(), kib(self.server_rss_open_kib)],
            vec![
                "server RSS per session".into(),
                self.server_rss_per_session_bytes
                    .map_or("-".to_owned(), |b| format!("{:.1} KiB", b as f64 / 1024.0)),
            ],
            vec!["client RSS".into(), kib(self.client_rss_kib)],
        ];
        for sample in &self.error_samples {
            rows.push(vec!["  error".into(), sample.clone()]);
        }
        format!(
            "{}\n\n{}",
            self.machine.line(),
            table(&["", "value"], &rows)
        )
    }

    /// True when every session opened and nothing failed.
    pub fn clean(&self) -> bool {
        self.connect_errors == 0
            && self.message_errors == 0
            && self.sessions_open as usize == self.sessions_requested
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_messages_are_as_long_as_step_messages() {
        for lap in 0..3 {
            for id in [1, 9, 10, 999, 123_456_789] {
                let step = step_message(lap, id);
                let echo = echo_message(lap, id);
                assert_eq!(step.len(), echo.len(), "{step} / {echo}");
                let value: serde_json::Value = serde_json::from_str(&echo).expect("json");
                assert_eq!(value["id"], id);
                let message: banter_protocol::ClientMessage =
                    serde_json::from_str(&step).expect("a client message");
                assert_eq!(message.id(), Some(id));
            }
        }
    }

    #[test]
    fn answers_are_told_by_their_first_bytes() {
        let ack =
            serde_json::to_string(&banter_protocol::ServerMessage::Ack { id: 7 }).expect("json");
        assert_eq!(classify(&ack), Answer::Ack);
        let error = serde_json::to_string(&banter_protocol::ServerMessage::Error {
            id: Some(7),
            code: banter_protocol::ErrorCode::NotArmed,
            message: "x".into(),
            retryable: false,
        })
        .expect("json");
        assert_eq!(classify(&error), Answer::Error);
        let jump =
            serde_json::to_string(&banter_protocol::ServerMessage::Jump { node: "n".into() })
                .expect("json");
        assert_eq!(classify(&jump), Answer::Other);
    }

    fn point(offered: u64, achieved: f64, p99: u64) -> RatePoint {
        RatePoint {
            offered_per_sec: offered,
            achieved_per_sec: achieved,
            p99_us: p99,
            ..RatePoint::default()
        }
    }

    #[test]
    fn the_knee_is_the_first_rate_that_breaks_either_rule() {
        let flat = [point(1000, 1000.0, 200), point(2000, 2000.0, 300)];
        assert_eq!(knee(&flat, 10.0).0, None);
        let slow = [
            point(1000, 1000.0, 200),
            point(5000, 5000.0, 2500),
            point(10_000, 9000.0, 90_000),
        ];
        assert_eq!(knee(&slow, 10.0).0, Some(5000));
        let behind = [point(1000, 1000.0, 200), point(5000, 4000.0, 300)];
        let (k, why) = knee(&behind, 10.0);
        assert_eq!(k, Some(5000));
        assert!(why.expect("a reason").contains("95 %"));
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn proc_figures_of_this_process() {
        let me = std::process::id();
        assert!(rss_kib(me).is_some_and(|k| k > 0));
        assert!(cpu_time(me).is_some());
        assert!(!Machine::probe().line().is_empty());
    }
}
