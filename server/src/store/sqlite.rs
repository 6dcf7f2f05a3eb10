//! [`SqliteStore`]: the zero-configuration backend, one SQLite file in WAL mode.
//!
//! Exactly-once: every write transaction starts with `BEGIN IMMEDIATE`, which takes SQLite's
//! single write lock up front (sqlx's plain `begin()` is DEFERRED and would only upgrade at the
//! first write, which can fail with SQLITE_BUSY without waiting). Writers, on one pool or on
//! several processes sharing the file, therefore run one after another: the second
//! step completing a quest reads it as `completed` and is refused. The ledger's
//! `UNIQUE (player_id, quest_id)` key is the backstop should the state ever say otherwise.
//! Readers never block writers (WAL); waiting for the lock is bounded by the busy timeout (5 s),
//! after which the call fails with [`StoreError::Unavailable`].
//!
//! Inside one process, writers do not contend for that lock at all: each first takes its turn
//! at the store's [`WriteGate`] (players' writes before housekeeping), so a write never sleeps
//! in SQLite's busy handler behind another write of the same server. A turn is bounded by the
//! pool's acquire timeout. Session claims, releases and first visits' profiles are written many
//! to a transaction by the [`GroupCommit`] task.
//!
//! Two kinds of write never hold the turn for an fsync. WAL checkpoints run beside the writers
//! on a connection of their own ([`checkpoint_beside_writers`]: every connection has
//! `wal_autocheckpoint = 0`), so the write that fills the WAL no longer copies it into the
//! database and syncs both files while every other writer waits. And the best-effort rows, the
//! audit log's refusals and trails and the narrative analytics' counts, commit on a
//! `synchronous = NORMAL` connection (`best_effort`): a process crash loses none of them (the
//! WAL is in the kernel's page cache), a power loss may lose the last of them, which their
//! contract allows; every row that records a change of player state commits in that change's
//! own transaction on the players' lane, which stays `synchronous = FULL`. On this VM's disk a
//! flush takes 0.3 to 0.5 ms, and once in a few minutes half a second (RELIABILITY.md,
//! scenario 6, seventh round): an fsync under the turn made every player wait for it.
//!
//! Everything else it shares with PostgreSQL (`backend.rs`), including accepting
//! and completing a quest as several statements in one write transaction, which the write lock
//! taken up front makes right. This file holds only where SQLite differs: the write gate,
//! `BEGIN IMMEDIATE`, the group commit, the in-process claims stream and the multi-row audit
//! insert.

use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::stream::BoxStream;
use prometheus_client::metrics::histogram::Histogram;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use sqlx::{Pool, Transaction};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::backend::{Backend, Chore, Done, open_pool};
use super::error::map_sqlx;
use super::group_commit::{
    self, ClaimsSender, GroupCommit, GroupCommitStats, Housekeeping, OwnedStep, PlayerSteps,
};
use super::timings::WriteTimings;
use super::write_gate::{Priority, WriteGate, WriteTurn};
use super::{AuditRecord, ClaimEvent, ConnectOptions, Step, Stepped, StoreError};

/// The SQLite migrations, embedded at compile time.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations/sqlite");

/// Default pool size: SQLite runs one writer at a time, a few connections serve the readers.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 4;

/// How long a writer waits for SQLite's write lock before giving up with `Unavailable`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Most audit rows per INSERT statement. The statement cache keeps one plan per row count, so
/// a batch is written in statements of this many rows and then of powers of two
/// ([`audit_insert_rows`]): eight plans serve every batch. One statement per remainder instead
/// meant a new plan for almost every batch, and preparing one (about 300,000 instructions)
/// cost more than writing its rows (BENCHMARKS.md, issue 37).
const AUDIT_ROWS_PER_INSERT: usize = 128;

/// How many of `left` rows (at least one) the next audit INSERT writes: all it may, or the
/// largest power of two that fits.
fn audit_insert_rows(left: usize) -> usize {
    if left >= AUDIT_ROWS_PER_INSERT {
        AUDIT_ROWS_PER_INSERT
    } else {
        1 << left.max(1).ilog2()
    }
}

/// Audit rows written per turn at the write gate: a few milliseconds of writing, after which a
/// waiting player's write goes first.
const AUDIT_ROWS_PER_TURN: usize = 512;

/// How often [`checkpoint_beside_writers`] copies the WAL into the database. Between two, the
/// WAL holds what was written meanwhile: under a storm of session starts a few MB, which is
/// about what SQLite's own threshold (1,000 pages) let it grow to.
pub const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);

/// The SQLite-backed [`Store`](super::Store).
#[derive(Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
    claims: ClaimsSender,
    writes: Arc<WriteGate>,
    /// Claims, releases and first visits' profiles, many to a commit.
    housekeeping: GroupCommit<Housekeeping>,
    /// Players' steps (quest changes with their audit rows), many to a commit.
    steps: GroupCommit<PlayerSteps>,
    /// One `synchronous = NORMAL` connection for the best-effort rows: the audit log's
    /// refusals and trails, the analytics' counts, pruning (see the module docs).
    best_effort: SqlitePool,
    /// Where the writes' time goes, for `/metrics`.
    timings: WriteTimings,
    /// Stops the checkpointer.
    closed: CancellationToken,
}

impl SqliteStore {
    /// Opens (creating the file and its parent folder if missing) the database `url` names:
    /// `sqlite://data/banter.db` (relative), `sqlite:///abs/path.db`, `sqlite::memory:`, or a
    /// plain path. WAL mode, synchronous FULL, foreign keys on, 5 s busy timeout (the group
    /// commit's own connection for claims, releases and first-visit profiles is synchronous
    /// NORMAL: see [`GroupCommit`]). Runs the migrations unless `options.run_migrations` is false.
    pub async fn connect(url: &str, options: ConnectOptions) -> Result<Self, StoreError> {
        Self::connect_with(sqlite_options(url)?, options).await
    }

    /// Like [`SqliteStore::connect`] with ready-made sqlx options (used as given, plus
    /// `create_if_missing`; the parent folder is not created).
    pub async fn connect_with(
        connect_options: SqliteConnectOptions,
        options: ConnectOptions,
    ) -> Result<Self, StoreError> {
        // No ping before every acquire: it is a round trip to the connection's worker thread
        // per store call, and a local file's connection does not go stale the way a network
        // connection can (PostgreSQL keeps the check).
        let pool = SqlitePoolOptions::new().test_before_acquire(false);
        // No commit checkpoints: the checkpointer below does, beside the writers.
        let connect = connect_options
            .create_if_missing(true)
            .pragma("wal_autocheckpoint", "0");
        let pool = open_pool(pool, connect, &options, DEFAULT_MAX_CONNECTIONS, &MIGRATOR).await?;
        let best_effort = SqlitePoolOptions::new()
            .test_before_acquire(false)
            .max_connections(1)
            .acquire_timeout(options.acquire_timeout)
            .connect_lazy_with(
                (*pool.connect_options())
                    .clone()
                    .synchronous(SqliteSynchronous::Normal)
                    // Statement journals in memory: an audit batch's multi-row INSERT inside its
                    // transaction first copies every page it changes to one, which past 64 KiB
                    // SQLite spills to a temporary file, as many page writes again as the WAL's
                    // (BENCHMARKS.md, issue 37, fifth pass). A statement here changes a few
                    // hundred pages at most; pruning runs alone, with no statement journal.
                    .pragma("temp_store", "memory"),
            );
        let (sender, _) = broadcast::channel(1024);
        let claims: ClaimsSender = Arc::new(Mutex::new(Some(sender)));
        let timings = WriteTimings::default();
        let writes = Arc::new(WriteGate::new(timings.clone()));
        let housekeeping = GroupCommit::start(
            pool.clone(),
            writes.clone(),
            Housekeeping {
                claims: claims.clone(),
            },
            &timings,
        );
        let steps = GroupCommit::start(pool.clone(), writes.clone(), PlayerSteps, &timings);
        let closed = CancellationToken::new();
        tokio::spawn(checkpoint_beside_writers(
            (*pool.connect_options()).clone(),
            timings.checkpoint.clone(),
            closed.clone(),
        ));
        Ok(SqliteStore {
            pool,
            claims,
            writes,
            housekeeping,
            steps,
            best_effort,
            timings,
            closed,
        })
    }

    /// The underlying pool (ops tools and tests).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// The `synchronous = NORMAL` connection the best-effort rows commit on (tests and ops
    /// tools; see the module docs).
    pub fn best_effort(&self) -> &SqlitePool {
        &self.best_effort
    }

    /// How many players' writes wait for a turn at the write gate now (tests and diagnostics).
    pub fn players_waiting_for_a_turn(&self) -> usize {
        self.writes.players_waiting()
    }

    /// Where the writes' time goes (also served on `/metrics`).
    pub fn timings(&self) -> &WriteTimings {
        &self.timings
    }

    /// How many claims, releases and first visits' profiles went to the database in how many
    /// transactions (tests and diagnostics).
    pub fn group_commit_stats(&self) -> GroupCommitStats {
        self.housekeeping.stats()
    }

    /// How many players' steps went to the database in how many transactions (tests and
    /// diagnostics).
    pub fn step_commit_stats(&self) -> GroupCommitStats {
        self.steps.stats()
    }
}

/// A write transaction on `pool` that takes SQLite's write lock up front (see the module docs).
async fn begin_immediate(pool: &SqlitePool) -> Result<Transaction<'static, Sqlite>, StoreError> {
    pool.begin_with("BEGIN IMMEDIATE").await.map_err(map_sqlx)
}

/// Copies the WAL into the database every [`CHECKPOINT_EVERY`] until `closed`, on a connection
/// of its own and without a write turn: a PASSIVE checkpoint takes no write lock, so writers go
/// on appending to the WAL while it copies and syncs. Each checkpoint that copied anything is
/// timed into `seconds`. A failure is logged and the connection opened again at the next tick;
/// should this task stop, SQLite's WAL grows until the last connection closes, which
/// checkpoints it.
pub async fn checkpoint_beside_writers(
    options: SqliteConnectOptions,
    seconds: Histogram,
    closed: CancellationToken,
) {
    let mut conn: Option<sqlx::SqliteConnection> = None;
    let mut every = tokio::time::interval(CHECKPOINT_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = closed.cancelled() => break,
            _ = every.tick() => {}
        }
        let connection = match &mut conn {
            Some(connection) => connection,
            slot => match sqlx::Connection::connect_with(&options).await {
                Ok(connection) => slot.insert(connection),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot open the checkpointer's connection");
                    continue;
                }
            },
        };
        let started = std::time::Instant::now();
        match checkpoint(connection).await {
            Ok(copied) if copied > 0 => seconds.observe(started.elapsed().as_secs_f64()),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "WAL checkpoint failed");
                conn = None;
            }
        }
    }
    if let Some(connection) = conn {
        let _ = sqlx::Connection::close(connection).await;
    }
}

/// One PASSIVE checkpoint on `conn`: how many WAL frames it copied into the database.
pub async fn checkpoint(conn: &mut sqlx::SqliteConnection) -> Result<i64, StoreError> {
    // (busy, frames in the WAL, frames checkpointed): -1 for both when not in WAL mode.
    let (_busy, _frames, copied): (i64, i64, i64) =
        sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
            .fetch_one(conn)
            .await
            .map_err(map_sqlx)?;
    Ok(copied.max(0))
}

/// Parses a SQLite URL or path into sqlx options with Banter's settings, creating the parent
/// folder of a file database.
pub fn sqlite_options(url: &str) -> Result<SqliteConnectOptions, StoreError> {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    let (options, in_memory) = if lower.starts_with("sqlite:") {
        let rest = if lower.starts_with("sqlite://") {
            &url["sqlite://".len()..]
        } else {
            &url["sqlite:".len()..]
        };
        let (database, params) = rest.split_once('?').unwrap_or((rest, ""));
        let in_memory = database == ":memory:" || params.split('&').any(|p| p == "mode=memory");
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{rest}"))
            .map_err(|e| StoreError::Config(format!("bad SQLite URL {url:?}: {e}")))?;
        (options, in_memory)
    } else {
        (SqliteConnectOptions::new().filename(url), false)
    };
    if !in_memory {
        let file = options.get_filename();
        if file.as_os_str().is_empty() {
            return Err(StoreError::Config(format!(
                "SQLite URL {url:?} names no file"
            )));
        }
        if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| {
                StoreError::Config(format!("cannot create folder {}: {e}", parent.display()))
            })?;
        }
    }
    Ok(options
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        // 16 MiB of page cache per connection instead of SQLite's 2 MiB: the audit log's
        // indexes take a write per row at every step, and a small cache reads their pages back
        // from the kernel at each batch.
        .pragma("cache_size", "-16384")
        .busy_timeout(BUSY_TIMEOUT))
}

impl Backend for SqliteStore {
    type Db = Sqlite;

    fn pool(&self) -> &Pool<Sqlite> {
        &self.pool
    }

    /// SQLite's one write lock, taken in this process's order: see [`WriteGate`].
    async fn write_turn(&self, priority: Priority) -> Result<Option<WriteTurn>, StoreError> {
        self.writes
            .enter(priority, self.pool.options().get_acquire_timeout())
            .await
            .map(Some)
            .map_err(|_| StoreError::Unavailable("timed out waiting for the write turn".into()))
    }

    fn write_timings(&self) -> Option<WriteTimings> {
        Some(self.timings.clone())
    }

    /// On the `synchronous = NORMAL` connection (see the module docs).
    fn best_effort_pool(&self) -> &SqlitePool {
        &self.best_effort
    }

    async fn begin_best_effort_write(
        &self,
        _turn: &Option<WriteTurn>,
    ) -> Result<Transaction<'static, Sqlite>, StoreError> {
        begin_immediate(&self.best_effort).await
    }

    /// `BEGIN IMMEDIATE`: the write lock is taken up front, so that what the transaction reads
    /// cannot change before it writes (see the module's documentation).
    async fn begin_write(
        &self,
        _turn: &Option<WriteTurn>,
    ) -> Result<Transaction<'static, Sqlite>, StoreError> {
        begin_immediate(&self.pool).await
    }

    /// Through the players' lane of the group commit: steps that arrive together share one
    /// transaction and one fsync, each in a savepoint of its own.
    async fn step(&self, step: &Step<'_>, order: Vec<usize>) -> Result<Stepped, StoreError> {
        self.steps.run(OwnedStep::new(step, order)).await
    }

    /// Through the group commit: none of these is worth an fsync of its own. A claim is
    /// announced to this store's subscribers once committed.
    async fn chore(&self, chore: Chore) -> Result<Done, StoreError> {
        self.housekeeping.run(chore).await
    }

    /// The claims made through this store object: a SQLite file serves one instance.
    async fn claims(&self) -> Result<BoxStream<'static, ClaimEvent>, StoreError> {
        match group_commit::current(&self.claims) {
            Some(sender) => Ok(super::broadcast_claims(sender.subscribe())),
            None => Err(StoreError::Unavailable("the store is closed".into())),
        }
    }

    async fn append_audit(&self, records: &[AuditRecord]) -> Result<(), StoreError> {
        // A turn per slice, not one for the whole batch: under a flood of refusals the audit
        // writer hands over thousands of rows at once, and one transaction of them held the
        // write lock for hundreds of milliseconds while players' quest writes queued behind it
        // (RELIABILITY.md, scenario 6, sixth round). Between slices the gate lets players in.
        for slice in records.chunks(AUDIT_ROWS_PER_TURN) {
            let turn = self.write_turn(Priority::Housekeeping).await?;
            let mut tx = self.begin_best_effort_write(&turn).await?;
            // One multi-row INSERT per chunk: each statement is a round trip to sqlx's SQLite
            // worker thread, and one per record cost more than the rest of a conversation step
            // (BENCHMARKS.md, "The transport's limit"). 6 binds a row stays far under SQLite's
            // variable limit (32,766).
            let mut left = slice;
            while !left.is_empty() {
                let (chunk, rest) = left.split_at(audit_insert_rows(left.len()));
                left = rest;
                let mut insert = sqlx::QueryBuilder::<Sqlite>::new(
                    "INSERT INTO audit_log (player_id, conversation, message, code, detail, recorded_us) ",
                );
                insert.push_values(chunk, |mut row, record| {
                    row.push_bind(&record.player_id)
                        .push_bind(&record.conversation)
                        .push_bind(&record.message)
                        .push_bind(&record.code)
                        .push_bind(&record.detail)
                        .push_bind(record.recorded_us);
                });
                insert.build().execute(&mut *tx).await?;
            }
            tx.commit().await?;
        }
        Ok(())
    }

    async fn shut_down(&self) {
        // Dropping the sender ends every claims stream.
        match self.claims.lock() {
            Ok(mut guard) => drop(guard.take()),
            Err(poisoned) => drop(poisoned.into_inner().take()),
        }
        self.housekeeping.close();
        self.steps.close();
        self.closed.cancel();
        self.best_effort.close().await;
        self.pool.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_batches_are_written_in_eight_statement_shapes() {
        let mut shapes = std::collections::BTreeSet::new();
        for batch in 1..=3 * AUDIT_ROWS_PER_TURN {
            let (mut left, mut written) = (batch, 0);
            while left > 0 {
                let rows = audit_insert_rows(left);
                assert!((1..=left).contains(&rows), "{rows} of {left}");
                shapes.insert(rows);
                left -= rows;
                written += rows;
            }
            assert_eq!(written, batch);
        }
        assert_eq!(
            shapes.into_iter().collect::<Vec<_>>(),
            [1, 2, 4, 8, 16, 32, 64, 128]
        );
    }
}
