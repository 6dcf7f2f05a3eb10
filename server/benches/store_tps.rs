//! Store throughput against the limit of its own stack, measured in the same run.
//!
//! PostgreSQL: accept and complete steps (`apply_step`) per second through [`PgStore`]
//! (pool size = concurrency), alternated with `pgbench -N` (the built-in "simple update") on the
//! same server: pgbench, store, pgbench, store... Each pair gives a ratio store / pgbench.
//!
//! SQLite: the same store workload through [`SqliteStore`] (its default pool), alternated with a
//! raw sqlx loop doing `BEGIN IMMEDIATE; UPDATE one row; COMMIT` in a scratch file opened with the
//! store's own pragmas (`sqlite_options`): the same stack's limit for one write transaction. Its
//! throughput swings with fsync stalls, so the two alternate in one-second slices (one warm-up
//! first, then `--seconds` slices of each per round).
//!
//! One "quest transaction" is one accept step or one complete step (each is one database
//! transaction with its audit row, the player read back); a "pair" is an accept followed by its
//! complete. Each measurement runs
//! for a fixed time after a warm-up; an operation counts if it finishes inside the window.
//!
//! ```sh
//! cargo bench -p banter-server --bench store_tps
//! cargo bench -p banter-server --bench store_tps -- --seconds 10 --concurrency 16 --json
//! ```
//!
//! Options: `--seconds N` (measured window, default 10), `--warmup N` (default 2),
//! `--concurrency C[,C...]` (PostgreSQL tasks and pool size, default 16),
//! `--sqlite-concurrency C[,C...]` (default 1,4), `--rounds R` (pgbench/store pairs per
//! setting, default 2), `--objectives N` (objectives per accepted quest, default 1),
//! `--only postgres|sqlite`, `--json` (one JSON object on stdout instead of the tables).
//!
//! PostgreSQL is `TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/test`); the
//! store runs in a private schema there, pgbench in a scratch database `banter_pgbench` on the
//! same server (created, initialised with `pgbench -i -s 1`, dropped at the end). A missing
//! `pgbench` or an unreachable PostgreSQL is an error (exit code 1), never a skip.
//!
//! Why one file over 600 lines: a bench target is one binary; its PostgreSQL and SQLite halves
//! share the argument parsing, the measuring loop and the report.

use std::process::{Command, ExitCode};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use banter_server::store::sqlite::sqlite_options;
use banter_server::store::{Change, ConnectOptions, PgStore, SqliteStore, Step, Store};
use banter_test_db::{TestDb, test_database_url};
use serde_json::{Value, json};
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::sqlite::{SqlitePool, SqlitePoolOptions};

/// The scratch database pgbench runs in.
const PGBENCH_DB: &str = "banter_pgbench";

/// How long we wait for PostgreSQL to answer before calling it unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Only {
    All,
    Postgres,
    Sqlite,
}

#[derive(Debug, Clone)]
struct Args {
    seconds: u64,
    warmup: u64,
    pg_concurrency: Vec<usize>,
    sqlite_concurrency: Vec<usize>,
    rounds: usize,
    objectives: usize,
    only: Only,
    json: bool,
}

const USAGE: &str = "usage: store_tps [--seconds N] [--warmup N] [--concurrency C[,C...]] \
[--sqlite-concurrency C[,C...]] [--rounds R] [--objectives N] [--only postgres|sqlite] [--json]";

fn parse_list(flag: &str, value: &str) -> Result<Vec<usize>, String> {
    let list = value
        .split(',')
        .map(|part| match part.trim().parse::<usize>() {
            Ok(n) if (1..=512).contains(&n) => Ok(n),
            _ => Err(format!("{flag}: {part:?} is not a number in 1..=512")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if list.is_empty() {
        return Err(format!("{flag} needs at least one value"));
    }
    Ok(list)
}

fn parse_number(
    flag: &str,
    value: &str,
    range: std::ops::RangeInclusive<u64>,
) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(format!(
            "{flag}: {value:?} is not a number in {}..={}",
            range.start(),
            range.end()
        )),
    }
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        seconds: 10,
        warmup: 2,
        pg_concurrency: vec![16],
        sqlite_concurrency: vec![1, 4],
        rounds: 2,
        objectives: 1,
        only: Only::All,
        json: false,
    };
    let mut iter = std::env::args().skip(1);
    while let Some(arg) = iter.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| iter.next())
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match flag.as_str() {
            // cargo bench passes --bench to harness = false targets.
            "--bench" => {}
            "--json" => args.json = true,
            "--seconds" => args.seconds = parse_number("--seconds", &value()?, 1..=3600)?,
            "--warmup" => args.warmup = parse_number("--warmup", &value()?, 0..=600)?,
            "--rounds" => args.rounds = parse_number("--rounds", &value()?, 1..=20)? as usize,
            "--objectives" => {
                args.objectives = parse_number("--objectives", &value()?, 0..=16)? as usize
            }
            "--concurrency" => args.pg_concurrency = parse_list("--concurrency", &value()?)?,
            "--sqlite-concurrency" => {
                args.sqlite_concurrency = parse_list("--sqlite-concurrency", &value()?)?
            }
            "--only" => {
                args.only = match value()?.as_str() {
                    "postgres" | "pg" => Only::Postgres,
                    "sqlite" => Only::Sqlite,
                    other => return Err(format!("--only: unknown backend {other:?}\n{USAGE}")),
                }
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(args)
}

// ---------------------------------------------------------------------------------------------
// Measuring

/// Latencies in microseconds, sorted on demand.
#[derive(Debug, Default)]
struct Latencies(Vec<u32>);

impl Latencies {
    fn push(&mut self, latency: Duration) {
        self.0
            .push(u32::try_from(latency.as_micros()).unwrap_or(u32::MAX));
    }

    fn extend(&mut self, other: &Latencies) {
        self.0.extend_from_slice(&other.0);
    }

    /// Nearest-rank percentile in milliseconds (`q` in 0..=1); 0 when empty.
    fn percentile_ms(&mut self, q: f64) -> f64 {
        if self.0.is_empty() {
            return 0.0;
        }
        self.0.sort_unstable();
        let rank = (q * self.0.len() as f64).ceil() as usize;
        let index = rank.clamp(1, self.0.len()) - 1;
        f64::from(self.0[index]) / 1000.0
    }
}

/// One timed window: an operation counts if it finishes between `counted_from` and `end`.
#[derive(Debug, Clone, Copy)]
struct Window {
    counted_from: Instant,
    end: Instant,
}

impl Window {
    /// Starts now: `warmup` uncounted, then `seconds` counted.
    fn new(warmup: Duration, seconds: Duration) -> Window {
        let counted_from = Instant::now() + warmup;
        Window {
            counted_from,
            end: counted_from + seconds,
        }
    }

    fn counts(&self, finished: Instant) -> bool {
        finished >= self.counted_from && finished <= self.end
    }

    fn seconds(&self) -> f64 {
        (self.end - self.counted_from).as_secs_f64()
    }
}

/// What store measurements saw (one window, or several added up).
#[derive(Debug, Default)]
struct StoreTally {
    seconds: f64,
    accepts: u64,
    completes: u64,
    accept: Latencies,
    complete: Latencies,
}

impl StoreTally {
    fn add(&mut self, other: &StoreTally) {
        self.seconds += other.seconds;
        self.accepts += other.accepts;
        self.completes += other.completes;
        self.accept.extend(&other.accept);
        self.complete.extend(&other.complete);
    }

    /// Quest transactions (accepts + completes) per second.
    fn tps(&self) -> f64 {
        (self.accepts + self.completes) as f64 / self.seconds
    }

    /// Accept + complete pairs per second (completes finished in the window).
    fn pairs_per_sec(&self) -> f64 {
        self.completes as f64 / self.seconds
    }

    fn summary(&mut self, concurrency: usize) -> Value {
        let mut all = Latencies::default();
        all.extend(&self.accept);
        all.extend(&self.complete);
        json!({
            "concurrency": concurrency,
            "seconds": self.seconds,
            "accepts": self.accepts,
            "completes": self.completes,
            "quest_tps": round2(self.tps()),
            "pairs_per_sec": round2(self.pairs_per_sec()),
            "accept_p50_ms": round3(self.accept.percentile_ms(0.50)),
            "accept_p99_ms": round3(self.accept.percentile_ms(0.99)),
            "complete_p50_ms": round3(self.complete.percentile_ms(0.50)),
            "complete_p99_ms": round3(self.complete.percentile_ms(0.99)),
            "quest_tx_p50_ms": round3(all.percentile_ms(0.50)),
            "quest_tx_p99_ms": round3(all.percentile_ms(0.99)),
        })
    }
}

/// How many quests one benchmark player accepts and completes before the next player takes over.
const QUESTS_PER_PLAYER: u64 = 20;

/// `concurrency` tasks, task `i` playing players `{players}_{i}_{k}`, each accepting and
/// completing fresh quests (`{quests}_{n}`) until the window ends, a new player every
/// [`QUESTS_PER_PLAYER`] quests. Any store error stops the benchmark: this workload never
/// conflicts.
///
/// A step reads its player back in its transaction, all the player's quests with it, so a player
/// holding every quest the run ever accepted would measure a journal of tens of thousands of
/// quests (and slow down round after round); a real player holds a few dozen.
async fn drive_store(
    store: &Arc<dyn Store>,
    players: &str,
    quests: &str,
    concurrency: usize,
    objectives: &Arc<Vec<String>>,
    window: Window,
) -> Result<StoreTally, String> {
    let mut tasks = Vec::with_capacity(concurrency);
    for task in 0..concurrency {
        let store = store.clone();
        let objectives = objectives.clone();
        let players = players.to_owned();
        let quests = quests.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut tally = StoreTally::default();
            let mut n: u64 = 0;
            while Instant::now() < window.end {
                let player = format!("{players}_{task}_{}", n / QUESTS_PER_PLAYER);
                let quest = format!("{quests}_{n}");
                n += 1;
                let started = Instant::now();
                let accept = Change::Accept {
                    quest: &quest,
                    objectives: &objectives,
                };
                let key = format!("{quest}/accept");
                store
                    .apply_step(&step(&player, &key, accept))
                    .await
                    .map_err(|e| format!("accept {quest} for {player}: {e}"))?;
                let accepted = Instant::now();
                if window.counts(accepted) {
                    tally.accepts += 1;
                    tally.accept.push(accepted - started);
                }
                let complete = Change::Complete {
                    quest: &quest,
                    coins: 10,
                    experience: 1,
                    advances: &[],
                };
                let key = format!("{quest}/complete");
                store
                    .apply_step(&step(&player, &key, complete))
                    .await
                    .map_err(|e| format!("complete {quest} for {player}: {e}"))?;
                let completed = Instant::now();
                if window.counts(completed) {
                    tally.completes += 1;
                    tally.complete.push(completed - accepted);
                }
            }
            Ok::<StoreTally, String>(tally)
        }));
    }
    let mut total = StoreTally::default();
    for task in tasks {
        let tally = task
            .await
            .map_err(|e| format!("a benchmark task failed: {e}"))??;
        total.add(&tally);
    }
    total.seconds = window.seconds();
    Ok(total)
}

/// What raw SQLite measurements saw (one window, or several added up).
#[derive(Debug, Default)]
struct RawTally {
    seconds: f64,
    transactions: u64,
    latencies: Latencies,
}

impl RawTally {
    fn add(&mut self, other: &RawTally) {
        self.seconds += other.seconds;
        self.transactions += other.transactions;
        self.latencies.extend(&other.latencies);
    }

    fn tps(&self) -> f64 {
        self.transactions as f64 / self.seconds
    }
}

/// The same stack's limit: a scratch file opened with the store's pragmas (`sqlite_options`),
/// on a pool of the store's default size, with one counter row per task.
async fn open_raw_sqlite(path: &str, concurrency: usize) -> Result<SqlitePool, String> {
    let options = sqlite_options(path).map_err(|e| format!("raw SQLite options: {e}"))?;
    let pool = SqlitePoolOptions::new()
        .max_connections(banter_server::store::sqlite::DEFAULT_MAX_CONNECTIONS)
        .connect_with(options)
        .await
        .map_err(|e| format!("raw SQLite pool on {path}: {e}"))?;
    sqlx::query("CREATE TABLE IF NOT EXISTS counters (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
        .execute(&pool)
        .await
        .map_err(|e| format!("raw SQLite table: {e}"))?;
    for id in 0..concurrency {
        sqlx::query("INSERT OR IGNORE INTO counters (id, n) VALUES (?1, 0)")
            .bind(id as i64)
            .execute(&pool)
            .await
            .map_err(|e| format!("raw SQLite row: {e}"))?;
    }
    Ok(pool)
}

/// `BEGIN IMMEDIATE; UPDATE counters SET n = n + 1 WHERE id = ?; COMMIT` through sqlx from
/// `concurrency` tasks, each on its own row, until the window ends.
async fn drive_raw_sqlite(
    pool: &SqlitePool,
    concurrency: usize,
    window: Window,
) -> Result<RawTally, String> {
    let mut tasks = Vec::with_capacity(concurrency);
    for id in 0..concurrency {
        let pool = pool.clone();
        tasks.push(tokio::spawn(async move {
            let mut tally = RawTally::default();
            while Instant::now() < window.end {
                let started = Instant::now();
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
                sqlx::query("UPDATE counters SET n = n + 1 WHERE id = ?1")
                    .bind(id as i64)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                let finished = Instant::now();
                if window.counts(finished) {
                    tally.transactions += 1;
                    tally.latencies.push(finished - started);
                }
            }
            Ok::<_, sqlx::Error>(tally)
        }));
    }
    let mut total = RawTally::default();
    for task in tasks {
        let tally = task
            .await
            .map_err(|e| format!("a benchmark task failed: {e}"))?
            .map_err(|e| format!("raw SQLite transaction: {e}"))?;
        total.add(&tally);
    }
    total.seconds = window.seconds();
    Ok(total)
}

// ---------------------------------------------------------------------------------------------
// pgbench

/// `TEST_DATABASE_URL` with its database replaced by `database`, for libpq. Query parameters
/// other than libpq's `ssl*` ones (sqlx's `options[...]`) are dropped.
fn libpq_url(base: &str, database: &str) -> Result<String, String> {
    let (scheme, rest) = base
        .split_once("://")
        .ok_or_else(|| format!("TEST_DATABASE_URL {base:?} is not a postgres:// URL"))?;
    let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = before_query.split('/').next().unwrap_or(before_query);
    let kept: Vec<&str> = query.split('&').filter(|p| p.starts_with("ssl")).collect();
    let mut url = format!("{scheme}://{authority}/{database}");
    if !kept.is_empty() {
        url.push('?');
        url.push_str(&kept.join("&"));
    }
    Ok(url)
}

#[derive(Debug)]
struct PgbenchRun {
    tps: f64,
    latency_ms: Option<f64>,
}

fn run_command(program: &str, args: &[String]) -> Result<String, String> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!(
                "{program} not found on PATH: install the PostgreSQL client tools \
                 (Debian: apt-get install postgresql-client)"
            ),
            _ => format!("cannot run {program}: {e}"),
        })?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        return Err(format!(
            "{program} {} failed ({}):\n{}{}",
            args.join(" "),
            output.status,
            stdout,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(stdout)
}

fn parse_pgbench(stdout: &str) -> Result<PgbenchRun, String> {
    let value_after = |prefix: &str| {
        stdout.lines().find_map(|line| {
            line.trim()
                .strip_prefix(prefix)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse::<f64>().ok())
        })
    };
    let tps = value_after("tps = ")
        .ok_or_else(|| format!("no \"tps = ...\" line in pgbench's output:\n{stdout}"))?;
    Ok(PgbenchRun {
        tps,
        latency_ms: value_after("latency average = "),
    })
}

async fn pgbench(url: String, concurrency: usize, seconds: u64) -> Result<PgbenchRun, String> {
    let args = vec![
        "-N".to_owned(),
        "-c".to_owned(),
        concurrency.to_string(),
        "-j".to_owned(),
        "2".to_owned(),
        "-T".to_owned(),
        seconds.to_string(),
        url,
    ];
    let stdout = tokio::task::spawn_blocking(move || run_command("pgbench", &args))
        .await
        .map_err(|e| format!("pgbench task: {e}"))??;
    parse_pgbench(&stdout)
}

// ---------------------------------------------------------------------------------------------
// Machine

fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')))
        .map(|(_, m)| m.trim().to_owned())
        .unwrap_or_else(|| "unknown".to_owned());
    let processors = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let parallelism = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|r| r.split_whitespace().next())
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| round2(kb / 1024.0 / 1024.0));
    json!({
        "cpu_model": model,
        "cpus": processors,
        "available_parallelism": parallelism,
        "mem_gib": mem_gib,
    })
}

// ---------------------------------------------------------------------------------------------
// The two backends

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

async fn pg_connect(options: &PgConnectOptions, url: &str) -> Result<PgConnection, String> {
    match tokio::time::timeout(CONNECT_TIMEOUT, PgConnection::connect_with(options)).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(format!(
            "PostgreSQL is unreachable at {url} ({e}): start it or set TEST_DATABASE_URL"
        )),
        Err(_) => Err(format!(
            "PostgreSQL at {url} did not answer within {} s: start it or set TEST_DATABASE_URL",
            CONNECT_TIMEOUT.as_secs()
        )),
    }
}

async fn postgres(args: &Args) -> Result<Value, String> {
    // Check the tools and the server before anything else.
    let pgbench_version = run_command("pgbench", &["--version".to_owned()])?
        .trim()
        .to_owned();
    let url = test_database_url();
    let options = PgConnectOptions::from_str(&url)
        .map_err(|e| format!("TEST_DATABASE_URL {url:?} is not a PostgreSQL URL: {e}"))?;
    let mut admin = pg_connect(&options, &url).await?;
    let version: String = sqlx::query_scalar("SELECT version()")
        .fetch_one(&mut admin)
        .await
        .map_err(|e| format!("SELECT version(): {e}"))?;
    let synchronous_commit: String = sqlx::query_scalar("SHOW synchronous_commit")
        .fetch_one(&mut admin)
        .await
        .map_err(|e| format!("SHOW synchronous_commit: {e}"))?;
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(PGBENCH_DB)
            .fetch_one(&mut admin)
            .await
            .map_err(|e| format!("looking for database {PGBENCH_DB}: {e}"))?;
    if !exists {
        sqlx::query(&format!("CREATE DATABASE {PGBENCH_DB}"))
            .execute(&mut admin)
            .await
            .map_err(|e| format!("CREATE DATABASE {PGBENCH_DB}: {e}"))?;
    }
    let bench_url = libpq_url(&url, PGBENCH_DB)?;
    let init_args = vec![
        "-i".to_owned(),
        "-s".to_owned(),
        "1".to_owned(),
        "-q".to_owned(),
        bench_url.clone(),
    ];
    tokio::task::spawn_blocking(move || run_command("pgbench", &init_args))
        .await
        .map_err(|e| format!("pgbench -i task: {e}"))??;

    let result = measure_postgres(args, &bench_url).await;

    let dropped = sqlx::query(&format!("DROP DATABASE IF EXISTS {PGBENCH_DB}"))
        .execute(&mut admin)
        .await;
    let _ = admin.close().await;
    let settings = result?;
    if let Err(e) = dropped {
        eprintln!("store_tps: warning: could not drop {PGBENCH_DB}: {e}");
    }
    Ok(json!({
        "version": version,
        "synchronous_commit": synchronous_commit,
        "pgbench_version": pgbench_version,
        "pgbench_command": format!("pgbench -N -c C -j 2 -T {} (scale 1)", args.seconds),
        "settings": settings,
    }))
}

async fn measure_postgres(args: &Args, bench_url: &str) -> Result<Vec<Value>, String> {
    let db = TestDb::postgres("store_tps").await;
    let pg_options = db
        .pg_options()
        .ok_or_else(|| "the test database is not PostgreSQL".to_owned())?;
    let objectives = objective_ids(args.objectives);
    let mut settings = Vec::new();
    for &concurrency in &args.pg_concurrency {
        let store: Arc<dyn Store> = Arc::new(
            PgStore::connect_with(
                pg_options.clone(),
                ConnectOptions {
                    max_connections: Some(concurrency as u32),
                    ..ConnectOptions::default()
                },
            )
            .await
            .map_err(|e| format!("opening the PostgreSQL store: {e}"))?,
        );
        let players = format!("pg_c{concurrency}");
        let mut rounds = Vec::new();
        for round in 0..args.rounds {
            progress(&format!(
                "postgres c={concurrency} round {}: pgbench",
                round + 1
            ));
            let bench = pgbench(bench_url.to_owned(), concurrency, args.seconds).await?;
            progress(&format!(
                "postgres c={concurrency} round {}: store",
                round + 1
            ));
            let window = Window::new(
                Duration::from_secs(args.warmup),
                Duration::from_secs(args.seconds),
            );
            let run = drive_store(
                &store,
                &players,
                &format!("r{round}"),
                concurrency,
                &objectives,
                window,
            )
            .await?;
            rounds.push((bench, run));
        }
        store.close().await;
        let ratios: Vec<f64> = rounds.iter().map(|(b, r)| r.tps() / b.tps).collect();
        let pair_ratios: Vec<f64> = rounds
            .iter()
            .map(|(b, r)| r.pairs_per_sec() / b.tps)
            .collect();
        let medians = json!({
            "pgbench_tps": round2(median(&rounds.iter().map(|(b, _)| b.tps).collect::<Vec<_>>())),
            "quest_tps": round2(median(&rounds.iter().map(|(_, r)| r.tps()).collect::<Vec<_>>())),
            "pairs_per_sec": round2(median(&rounds.iter().map(|(_, r)| r.pairs_per_sec()).collect::<Vec<_>>())),
            "ratio": round3(median(&ratios)),
            "pair_ratio": round3(median(&pair_ratios)),
        });
        let rounds: Vec<Value> = rounds
            .iter_mut()
            .map(|(b, r)| {
                json!({
                    "pgbench_tps": round2(b.tps),
                    "pgbench_latency_ms": b.latency_ms,
                    "ratio": round3(r.tps() / b.tps),
                    "store": r.summary(concurrency),
                })
            })
            .collect();
        settings.push(json!({
            "concurrency": concurrency,
            "pool": concurrency,
            "rounds": rounds,
            "median": medians,
        }));
    }
    drop(db);
    Ok(settings)
}

fn objective_ids(count: usize) -> Arc<Vec<String>> {
    Arc::new((0..count).map(|i| format!("objective_{i}")).collect())
}

/// SQLite alternates in one-second slices (raw, store, store, raw, ...): its throughput swings
/// with the disk's fsync stalls, and fine alternation gives both sides the same weather.
const SQLITE_SLICE: Duration = Duration::from_secs(1);

async fn sqlite(args: &Args) -> Result<Value, String> {
    let objectives = objective_ids(args.objectives);
    let mut settings = Vec::new();
    let mut version = String::new();
    for &concurrency in &args.sqlite_concurrency {
        let store_db = TestDb::sqlite("store_tps_store");
        let raw_db = TestDb::sqlite("store_tps_raw");
        let (TestDb::Sqlite { path: store_path }, TestDb::Sqlite { path: raw_path }) =
            (&store_db, &raw_db)
        else {
            return Err("TestDb::sqlite did not give a SQLite file".to_owned());
        };
        let store_path = store_path.display().to_string();
        let raw_path = raw_path.display().to_string();
        let store = SqliteStore::connect(&store_path, ConnectOptions::default())
            .await
            .map_err(|e| format!("opening the SQLite store at {store_path}: {e}"))?;
        if version.is_empty() {
            version = sqlx::query_scalar("SELECT sqlite_version()")
                .fetch_one(store.pool())
                .await
                .map_err(|e| format!("sqlite_version(): {e}"))?;
        }
        let store: Arc<dyn Store> = Arc::new(store);
        let raw = open_raw_sqlite(&raw_path, concurrency).await?;
        let players = format!("sqlite_c{concurrency}");

        progress(&format!("sqlite c={concurrency}: warm-up"));
        let warmup = Duration::from_secs(args.warmup);
        drive_raw_sqlite(&raw, concurrency, Window::new(warmup, Duration::ZERO)).await?;
        drive_store(
            &store,
            &players,
            "warmup",
            concurrency,
            &objectives,
            Window::new(warmup, Duration::ZERO),
        )
        .await?;

        let mut rounds = Vec::new();
        for round in 0..args.rounds {
            progress(&format!(
                "sqlite c={concurrency} round {}: {} x {} s raw and store, alternating",
                round + 1,
                args.seconds,
                SQLITE_SLICE.as_secs()
            ));
            let mut raw_total = RawTally::default();
            let mut store_total = StoreTally::default();
            for slice in 0..args.seconds {
                let store_first = slice % 2 == 1;
                let quests = format!("r{round}_s{slice}");
                if store_first {
                    let window = Window::new(Duration::ZERO, SQLITE_SLICE);
                    let tally =
                        drive_store(&store, &players, &quests, concurrency, &objectives, window)
                            .await?;
                    store_total.add(&tally);
                }
                let window = Window::new(Duration::ZERO, SQLITE_SLICE);
                raw_total.add(&drive_raw_sqlite(&raw, concurrency, window).await?);
                if !store_first {
                    let window = Window::new(Duration::ZERO, SQLITE_SLICE);
                    let tally =
                        drive_store(&store, &players, &quests, concurrency, &objectives, window)
                            .await?;
                    store_total.add(&tally);
                }
            }
            rounds.push((raw_total, store_total));
        }
        raw.close().await;
        store.close().await;
        let ratios: Vec<f64> = rounds.iter().map(|(b, r)| r.tps() / b.tps()).collect();
        let medians = json!({
            "raw_tps": round2(median(&rounds.iter().map(|(b, _)| b.tps()).collect::<Vec<_>>())),
            "quest_tps": round2(median(&rounds.iter().map(|(_, r)| r.tps()).collect::<Vec<_>>())),
            "pairs_per_sec": round2(median(&rounds.iter().map(|(_, r)| r.pairs_per_sec()).collect::<Vec<_>>())),
            "ratio": round3(median(&ratios)),
        });
        let rounds: Vec<Value> = rounds
            .iter_mut()
            .map(|(b, r)| {
                json!({
                    "raw_tps": round2(b.tps()),
                    "raw_p50_ms": round3(b.latencies.percentile_ms(0.50)),
                    "raw_p99_ms": round3(b.latencies.percentile_ms(0.99)),
                    "ratio": round3(r.tps() / b.tps()),
                    "store": r.summary(concurrency),
                })
            })
            .collect();
        settings.push(json!({
            "concurrency": concurrency,
            "pool": banter_server::store::sqlite::DEFAULT_MAX_CONNECTIONS,
            "rounds": rounds,
            "median": medians,
        }));
        drop(store_db);
        drop(raw_db);
    }
    Ok(json!({
        "version": version,
        "pragmas": "journal_mode=WAL, synchronous=FULL, foreign_keys=ON, busy_timeout=5s (the store's)",
        "raw_transaction": "BEGIN IMMEDIATE; UPDATE counters SET n = n + 1 WHERE id = ?; COMMIT",
        "alternation": "1 s slices, raw and store alternating (ABBA)",
        "settings": settings,
    }))
}

fn progress(what: &str) {
    eprintln!("store_tps: {what}");
}

// ---------------------------------------------------------------------------------------------
// Output

fn num(value: &Value, key: &str) -> f64 {
    value.get(key).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

/// The array under `key`; empty when there is none.
fn items<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value[key].as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn print_tables(report: &Value) {
    let machine = &report["machine"];
    println!("# store_tps");
    println!();
    println!(
        "machine: {} ({} CPUs, available parallelism {}), {} GiB",
        machine["cpu_model"].as_str().unwrap_or("unknown"),
        machine["cpus"],
        machine["available_parallelism"],
        machine["mem_gib"]
    );
    let config = &report["config"];
    println!(
        "config: {} s measured after {} s warm-up per measurement, {} round(s), {} objective(s) per quest",
        config["seconds"], config["warmup"], config["rounds"], config["objectives"]
    );
    if let Some(pg) = report.get("postgres") {
        println!();
        println!(
            "PostgreSQL: {} (synchronous_commit={})",
            pg["version"].as_str().unwrap_or("?"),
            pg["synchronous_commit"].as_str().unwrap_or("?")
        );
        println!(
            "baseline: {}, {}",
            pg["pgbench_version"].as_str().unwrap_or("?"),
            pg["pgbench_command"].as_str().unwrap_or("?")
        );
        println!();
        print_rounds(pg, "pgbench", "pgbench tps", false);
    }
    if let Some(sq) = report.get("sqlite") {
        println!();
        println!(
            "SQLite {}: {}; baseline: {}",
            sq["version"].as_str().unwrap_or("?"),
            sq["pragmas"].as_str().unwrap_or("?"),
            sq["raw_transaction"].as_str().unwrap_or("?")
        );
        println!("alternation: {}", sq["alternation"].as_str().unwrap_or("?"));
        println!();
        print_rounds(sq, "raw", "raw tx/s", true);
    }
}

/// One database's table in Markdown: a row per round of each concurrency setting, then the
/// setting's median. `baseline` names what the store is compared with (its keys are
/// `{baseline}_tps` and, with `baseline_latency`, `{baseline}_p50_ms` and `{baseline}_p99_ms`);
/// `baseline_tps` is its throughput column.
fn print_rounds(results: &Value, baseline: &str, baseline_tps: &str, baseline_latency: bool) {
    let latency = |value: &Value, name: &str| {
        let p50 = num(value, &format!("{name}_p50_ms"));
        let p99 = num(value, &format!("{name}_p99_ms"));
        format!(" {p50:.2} / {p99:.2} |")
    };
    let tps = format!("{baseline}_tps");
    let mut header = format!(
        "| c | round | {baseline_tps} | store quest tx/s | pairs/s | ratio store/{baseline} |"
    );
    if baseline_latency {
        header += &format!(" {baseline} p50 / p99 ms |");
    }
    header += " accept p50 / p99 ms | complete p50 / p99 ms |";
    println!("{header}");
    println!("{}|", "|---".repeat(header.matches('|').count() - 1));
    for setting in items(results, "settings") {
        let c = &setting["concurrency"];
        for (i, round) in items(setting, "rounds").iter().enumerate() {
            let store = &round["store"];
            let mut row = format!(
                "| {c} | {} | {:.0} | {:.0} | {:.0} | {:.3} |",
                i + 1,
                num(round, &tps),
                num(store, "quest_tps"),
                num(store, "pairs_per_sec"),
                num(round, "ratio"),
            );
            if baseline_latency {
                row += &latency(round, baseline);
            }
            row += &latency(store, "accept");
            row += &latency(store, "complete");
            println!("{row}");
        }
        let m = &setting["median"];
        let latencies = if baseline_latency { 3 } else { 2 };
        println!(
            "| {c} | **median** | {:.0} | {:.0} | {:.0} | **{:.3}** |{}",
            num(m, &tps),
            num(m, "quest_tps"),
            num(m, "pairs_per_sec"),
            num(m, "ratio"),
            " |".repeat(latencies),
        );
    }
}

async fn run(args: Args) -> Result<Value, String> {
    let mut report = serde_json::Map::new();
    report.insert("machine".into(), machine());
    report.insert(
        "config".into(),
        json!({
            "seconds": args.seconds,
            "warmup": args.warmup,
            "rounds": args.rounds,
            "objectives": args.objectives,
            "postgres_concurrency": args.pg_concurrency,
            "sqlite_concurrency": args.sqlite_concurrency,
        }),
    );
    if args.only != Only::Sqlite {
        report.insert("postgres".into(), postgres(&args).await?);
    }
    if args.only != Only::Postgres {
        report.insert("sqlite".into(), sqlite(&args).await?);
    }
    Ok(Value::Object(report))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("store_tps: {message}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("store_tps: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let json = args.json;
    let outcome = runtime.block_on(run(args));
    drop(runtime);
    match outcome {
        Ok(report) => {
            if json {
                println!("{report}");
            } else {
                print_tables(&report);
            }
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("store_tps: error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A quest step of the workload, keyed by its quest and kind.
fn step<'a>(player: &'a str, key: &'a str, change: Change<'a>) -> Step<'a> {
    Step {
        player,
        key,
        conversation: None,
        message: "bench",
        detail: None,
        recorded_us: 0,
        change,
        tutorial: None,
    }
}
