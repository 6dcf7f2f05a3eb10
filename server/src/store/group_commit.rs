//! [`GroupCommit`]: the SQLite store's session claims, releases and first visits' profiles,
//! many to a transaction.
//!
//! Every connection that starts a session writes its claim, and writes again when it ends (a
//! first visit writes its profile too). With `synchronous = FULL` each commit is an fsync of
//! the WAL, and SQLite has one writer: at 1,000 connects/s those commits were more than the
//! writer could do, and upgrades queued for hundreds of milliseconds behind them (RELIABILITY.md,
//! scenario 6, fourth round). So one task writes them all: it takes whatever is waiting, waits
//! for a housekeeping turn at the [`WriteGate`], takes what arrived meanwhile, and commits the
//! lot in one transaction. A lone job runs on its own, in autocommit.
//!
//! The writer has a connection of its own, with `synchronous = NORMAL`: its commits are not
//! fsynced. None of these rows is worth an fsync. After a power loss every session is gone with
//! the machine, a claim or a release lost with it is overwritten by the next claim, and a lost
//! first-visit profile (all zeros) is created again at the next visit. A process crash loses
//! nothing (the WAL is in the kernel's page cache), and WAL keeps the file consistent either
//! way. Everything that is worth an fsync, quest state, the ledger, the audit log, goes through
//! the pool, whose connections stay `synchronous = FULL`; each such commit syncs the WAL up to
//! its own frames, so whatever this writer committed before it is durable from then on too.
//!
//! A caller is answered after the commit, so a claim it is told of is durable. A caller that
//! stops waiting does not undo its job: a claim or a release lands or fails the same with
//! nobody waiting for it, as it would if the caller were cancelled just after its own commit.
//!
//! Should a statement fail in a batch (nothing in these ever should, short of the store
//! failing), the batch is rolled back and each job is run again on its own, so one job's
//! failure is never another's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use sqlx::Connection;
use sqlx::sqlite::{Sqlite, SqliteConnectOptions, SqliteConnection, SqlitePool, SqliteSynchronous};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::backend::{Chore, Done};
use super::error::map_sqlx;
use super::queries::Queries;
use super::write_gate::{Priority, WriteGate, WriteTurn};
use super::{SessionClaim, StoreError};

/// Jobs one transaction takes at most.
pub const MAX_BATCH: usize = 256;

/// Jobs waiting for the writer at most; a caller past it waits to queue.
const QUEUE: usize = 4096;

/// Where the claims made are announced (`Store::session_claims`); `None` once the store closed.
pub type ClaimsSender = Arc<Mutex<Option<broadcast::Sender<SessionClaim>>>>;

/// The claims' sender, unless the store closed.
pub fn current(claims: &ClaimsSender) -> Option<broadcast::Sender<SessionClaim>> {
    match claims.lock() {
        Ok(guard) => guard.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

/// A write waiting for the group commit, with where its outcome goes.
#[derive(Debug)]
struct Job {
    chore: Chore,
    reply: oneshot::Sender<Result<Done, StoreError>>,
}

/// The handle the store writes through; the writer task ends when it is dropped.
#[derive(Debug)]
pub struct GroupCommit {
    jobs: mpsc::Sender<Job>,
    counts: Arc<Counts>,
    closed: CancellationToken,
}

/// What the group commit has done since the store opened.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct GroupCommitStats {
    /// Jobs handed to the writer.
    pub jobs: u64,
    /// Transactions the writer ran for them (a lone job's autocommit counts as one).
    pub transactions: u64,
}

#[derive(Debug, Default)]
struct Counts {
    jobs: AtomicU64,
    transactions: AtomicU64,
}

impl GroupCommit {
    /// Starts the writer task on the current runtime.
    pub fn start(pool: SqlitePool, gate: Arc<WriteGate>, claims: ClaimsSender) -> Self {
        let (jobs, queue) = mpsc::channel(QUEUE);
        let counts = Arc::<Counts>::default();
        let closed = CancellationToken::new();
        let options = (*pool.connect_options())
            .clone()
            .synchronous(SqliteSynchronous::Normal);
        tokio::spawn(
            Writer {
                pool,
                options,
                conn: None,
                gate,
                claims,
                counts: counts.clone(),
                closed: closed.clone(),
            }
            .run(queue),
        );
        GroupCommit {
            jobs,
            counts,
            closed,
        }
    }

    /// The store is closing: the writer lets go of its connection, and refuses every later job.
    pub fn close(&self) {
        self.closed.cancel();
    }

    /// What the writer has done since the store opened.
    pub fn stats(&self) -> GroupCommitStats {
        GroupCommitStats {
            jobs: self.counts.jobs.load(Ordering::Relaxed),
            transactions: self.counts.transactions.load(Ordering::Relaxed),
        }
    }

    /// Runs `chore` in the next commit; its outcome once that commits.
    pub async fn run(&self, chore: Chore) -> Result<Done, StoreError> {
        let gone = || StoreError::Unavailable("the store's writer has stopped".into());
        let (reply, outcome) = oneshot::channel();
        self.jobs
            .send(Job { chore, reply })
            .await
            .map_err(|_| gone())?;
        self.counts.jobs.fetch_add(1, Ordering::Relaxed);
        outcome.await.map_err(|_| gone())?
    }
}

struct Writer {
    /// The store's pool, for its acquire timeout.
    pool: SqlitePool,
    /// The pool's connect options with `synchronous = NORMAL`.
    options: SqliteConnectOptions,
    /// The writer's own connection, opened at the first job and again after a failure.
    conn: Option<SqliteConnection>,
    gate: Arc<WriteGate>,
    claims: ClaimsSender,
    counts: Arc<Counts>,
    closed: CancellationToken,
}

impl Writer {
    async fn run(mut self, mut queue: mpsc::Receiver<Job>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        loop {
            let job = tokio::select! {
                _ = self.closed.cancelled(), if self.conn.is_some() => {
                    // The store closed: the file is let go of now, not when the store is dropped.
                    if let Some(conn) = self.conn.take() {
                        let _ = conn.close().await;
                    }
                    continue;
                }
                job = queue.recv() => job,
            };
            let Some(job) = job else { return };
            batch.push(job);
            take_waiting(&mut queue, &mut batch);
            if self.closed.is_cancelled() {
                let err = StoreError::Unavailable("the store is closed".into());
                for job in batch.drain(..) {
                    answer(job, Err(err.clone()));
                }
                continue;
            }
            let patience = self.pool.options().get_acquire_timeout();
            let turn = match self.gate.enter(Priority::Housekeeping, patience).await {
                Ok(turn) => turn,
                Err(_) => {
                    let err =
                        StoreError::Unavailable("timed out waiting for the write turn".into());
                    for job in batch.drain(..) {
                        answer(job, Err(err.clone()));
                    }
                    continue;
                }
            };
            // What arrived while the turn was busy joins this commit: that is the grouping.
            take_waiting(&mut queue, &mut batch);
            self.write(&turn, &mut batch).await;
            drop(turn);
        }
    }

    /// Writes and answers every job of `batch`, leaving it empty.
    async fn write(&mut self, turn: &WriteTurn, batch: &mut Vec<Job>) {
        if batch.len() > 1 {
            match self.write_together(turn, batch).await {
                Ok(done) => {
                    for (job, done) in batch.drain(..).zip(done) {
                        self.announce(&done);
                        answer(job, Ok(done));
                    }
                    return;
                }
                Err(Failed::Commit(err)) => {
                    // Whether the commit landed is unknown: every job is told so, none retried.
                    // The connection is opened afresh for the next batch.
                    self.conn = None;
                    for job in batch.drain(..) {
                        answer(job, Err(err.clone()));
                    }
                    return;
                }
                // Rolled back: nothing of the batch landed. Each job goes on its own below.
                Err(Failed::Statement) => {}
            }
        }
        for job in batch.drain(..) {
            let done = self.write_alone(turn, &job).await;
            match &done {
                Ok(done) => self.announce(done),
                Err(StoreError::Unavailable(_)) => self.conn = None,
                Err(_) => {}
            }
            answer(job, done);
        }
    }

    /// The writer's connection, opened if it has none.
    async fn connection(&mut self) -> Result<&mut SqliteConnection, StoreError> {
        match &mut self.conn {
            Some(conn) => Ok(conn),
            slot => {
                let conn = SqliteConnection::connect_with(&self.options)
                    .await
                    .map_err(map_sqlx)?;
                Ok(slot.insert(conn))
            }
        }
    }

    /// Every job in one transaction.
    async fn write_together(
        &mut self,
        _turn: &WriteTurn,
        batch: &[Job],
    ) -> Result<Vec<Done>, Failed> {
        self.counts.transactions.fetch_add(1, Ordering::Relaxed);
        let conn = self.connection().await.map_err(Failed::Commit)?;
        let mut tx = conn
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| Failed::Commit(map_sqlx(e)))?;
        let mut done = Vec::with_capacity(batch.len());
        for job in batch {
            match Sqlite::chore(&mut tx, &job.chore).await {
                Ok(d) => done.push(d),
                Err(_) => return Err(Failed::Statement),
            }
        }
        tx.commit().await.map_err(|e| Failed::Commit(map_sqlx(e)))?;
        Ok(done)
    }

    /// One job, in autocommit.
    async fn write_alone(&mut self, _turn: &WriteTurn, job: &Job) -> Result<Done, StoreError> {
        self.counts.transactions.fetch_add(1, Ordering::Relaxed);
        Sqlite::chore(self.connection().await?, &job.chore).await
    }

    fn announce(&self, done: &Done) {
        let Done::Claimed(claim) = done else {
            return;
        };
        // No subscriber is fine: nobody hosts an older session to close.
        if let Some(sender) = current(&self.claims) {
            let _ = sender.send(claim.clone());
        }
    }
}

/// Why a batch did not commit.
enum Failed {
    /// A statement failed; the transaction was rolled back.
    Statement,
    /// BEGIN or COMMIT failed: for COMMIT, whether it landed is unknown.
    Commit(StoreError),
}

/// Moves the jobs already queued into `batch`, up to [`MAX_BATCH`].
fn take_waiting(queue: &mut mpsc::Receiver<Job>, batch: &mut Vec<Job>) {
    while batch.len() < MAX_BATCH {
        match queue.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => return,
        }
    }
}

/// Sends a job its outcome; a caller that stopped waiting is fine.
fn answer(job: Job, result: Result<Done, StoreError>) {
    let _ = job.reply.send(result);
}
