//! [`GroupCommit`]: SQLite writes many to a transaction, one fsync for the lot.
//!
//! SQLite has one writer, and with `synchronous = FULL` each commit is an fsync of the WAL. Two
//! kinds of write arrive together in numbers:
//!
//! - **Housekeeping** ([`Chore`]): every connection that starts a session writes its claim, and
//!   writes again when it ends (a first visit writes its profile too). At 1,000 connects/s those
//!   commits were more than the writer could do, and upgrades queued for hundreds of
//!   milliseconds behind them (RELIABILITY.md, scenario 6, fourth round).
//! - **Players' steps** ([`OwnedStep`]): quest accepts, advances, payouts and tracking, each
//!   with its audit row. Players who read at the same pace write together, and each waited for
//!   the fsyncs of every step queued before it (a burst of payouts reached 50 ms at p99, calm;
//!   scenario 6, fifth round).
//!
//! So each kind has a writer task, a *lane*: it takes whatever is waiting, waits for its turn at
//! the [`WriteGate`] (housekeeping or player priority), takes what arrived meanwhile, and commits
//! the lot in one transaction. Should a job fail in a batch (rare: callers check first), the
//! batch is rolled back and each job runs again in a transaction of its own, so one job's
//! failure is never another's. (Not savepoints: each is two more round trips to the
//! connection's thread per job, and under a storm of session starts those round trips, made
//! while holding the write turn, kept players' quest writes waiting for hundreds of
//! milliseconds: RELIABILITY.md, scenario 6, sixth round.) Each caller is answered after the
//! commit, so an outcome a caller is told of is durable.
//!
//! The housekeeping lane's connection is `synchronous = NORMAL`: none of those rows is worth an
//! fsync. After a power loss every session is gone with the machine, a claim or a release lost
//! with it is overwritten by the next claim, and a lost first-visit profile (all zeros) is
//! created again at the next visit. A process crash loses nothing (the WAL is in the kernel's
//! page cache), and WAL keeps the file consistent either way. The players' lane keeps
//! `synchronous = FULL`: quest state, the ledger and the audit rows of steps are fsynced before
//! anyone is told, and each such commit syncs the WAL up to its own frames, so whatever the
//! housekeeping lane committed before it is durable from then on too.
//!
//! A caller that stops waiting does not undo its job: the job lands or fails the same with
//! nobody waiting for it, as it would if the caller were cancelled just after its own commit. A
//! step landed that way is found by its key when retried (`StoreError::StepApplied`).
//!
//! When a COMMIT fails at the connection, whether it landed is unknown: every job of the batch
//! that had succeeded is told so ([`Lane::commit_failed`]; for a step,
//! `StoreError::OutcomeUnknown`), none is retried, and the connection is opened afresh.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use prometheus_client::metrics::histogram::Histogram;
use sqlx::Connection;
use sqlx::sqlite::{Sqlite, SqliteConnectOptions, SqliteConnection, SqlitePool, SqliteSynchronous};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::backend::{Chore, Done, run_step};
use super::error::map_sqlx;
use super::queries::Queries;
use super::sqlite::SqliteStore;
use super::timings::{WriteTimings, timed};
use super::write_gate::{Priority, WriteGate, WriteTurn};
use super::{Change, ObjectiveAdvance, SessionClaim, Step, Stepped, StoreError, TutorialMove};

/// Jobs one transaction of the players' lane takes at most.
pub const MAX_BATCH: usize = 256;

/// Jobs one transaction of the housekeeping lane takes at most: about 3 ms of statements, so
/// that a player's write waiting behind a storm of session starts waits for that much, not for
/// a whole 256-job turn (the rest goes in the next turn, after the players waiting).
pub const MAX_HOUSEKEEPING_BATCH: usize = 64;

/// How long the housekeeping lane waits for more jobs before it asks for a turn. Without it, a
/// storm of session starts found the gate free often enough to commit one or two jobs a turn:
/// 1,500 turns a second, which held the gate three quarters of the time and wrote the same
/// pages to the WAL again at every commit, and players' writes waited behind them
/// (RELIABILITY.md, scenario 6, seventh round). Nobody in conversation waits for these jobs;
/// a session start waits 5 ms more for its claim.
pub const HOUSEKEEPING_LINGER: Duration = Duration::from_millis(5);

/// Jobs waiting for a lane at most; a caller past it waits to queue.
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

/// A kind of write that a [`GroupCommit`] batches: how it runs, and how its lane is set up.
pub trait Lane: Send + Sync + 'static {
    /// What a job of this kind is.
    type Job: Send + Sync + 'static;
    /// What a job did.
    type Done: Send + 'static;

    /// The gate queue the lane waits in.
    const PRIORITY: Priority;
    /// Its name on `/metrics` (`banter_store_commit_seconds{lane}`).
    const LABEL: &'static str;
    /// Jobs one transaction takes at most.
    const MAX_BATCH: usize;
    /// How long the lane waits for more jobs after the first, before asking for a turn.
    const LINGER: Duration;
    /// Whether the lane commits early, after any job, when a player waits for the turn (the
    /// rest of its batch goes in its next turn).
    const YIELDS_TO_PLAYERS: bool;
    /// The lane connection's `synchronous` setting.
    const SYNCHRONOUS: SqliteSynchronous;
    /// Every job is one statement: alone, it runs in autocommit (one round trip, not three).
    const ONE_STATEMENT: bool;

    /// Runs one job inside the lane's open transaction (or a savepoint of it).
    fn run<'c>(
        job: &'c Self::Job,
        conn: &'c mut SqliteConnection,
    ) -> BoxFuture<'c, Result<Self::Done, StoreError>>;

    /// What a job that had succeeded is told when its batch's COMMIT failed with `err`.
    fn commit_failed(err: StoreError) -> StoreError {
        err
    }

    /// Called for each job committed, before its caller is answered.
    fn committed(&self, done: &Self::Done) {
        let _ = done;
    }
}

/// The housekeeping lane: claims, releases and first visits' profiles. A claim is announced to
/// the store's claims subscribers once committed.
#[derive(Debug)]
pub struct Housekeeping {
    /// Where claims are announced.
    pub claims: ClaimsSender,
}

impl Lane for Housekeeping {
    type Job = Chore;
    type Done = Done;
    const PRIORITY: Priority = Priority::Housekeeping;
    const LABEL: &'static str = "housekeeping";
    const MAX_BATCH: usize = MAX_HOUSEKEEPING_BATCH;
    const LINGER: Duration = HOUSEKEEPING_LINGER;
    // Under a connect storm a turn of a few claims still took up to 25 ms of round trips to
    // the connection's thread on 2 busy cores, and a player's quest write waited for all of
    // it (RELIABILITY.md, scenario 6, seventh round): now it waits for one job and a COMMIT.
    const YIELDS_TO_PLAYERS: bool = true;
    const SYNCHRONOUS: SqliteSynchronous = SqliteSynchronous::Normal;
    const ONE_STATEMENT: bool = true;

    fn run<'c>(
        job: &'c Chore,
        conn: &'c mut SqliteConnection,
    ) -> BoxFuture<'c, Result<Done, StoreError>> {
        Box::pin(Sqlite::chore(conn, job))
    }

    fn committed(&self, done: &Done) {
        let Done::Claimed(claim) = done else {
            return;
        };
        // No subscriber is fine: nobody hosts an older session to close.
        if let Some(sender) = current(&self.claims) {
            let _ = sender.send(claim.clone());
        }
    }
}

/// The players' lane: steps that change a player's state, each with its audit row.
#[derive(Debug)]
pub struct PlayerSteps;

impl Lane for PlayerSteps {
    type Job = OwnedStep;
    type Done = Stepped;
    const PRIORITY: Priority = Priority::Player;
    const LABEL: &'static str = "players";
    const MAX_BATCH: usize = MAX_BATCH;
    // A player waits for each of these: no lingering, the batch is what queued meanwhile.
    const LINGER: Duration = Duration::ZERO;
    const YIELDS_TO_PLAYERS: bool = false;
    const SYNCHRONOUS: SqliteSynchronous = SqliteSynchronous::Full;
    const ONE_STATEMENT: bool = false;

    fn run<'c>(
        job: &'c OwnedStep,
        conn: &'c mut SqliteConnection,
    ) -> BoxFuture<'c, Result<Stepped, StoreError>> {
        Box::pin(async move { run_step::<SqliteStore>(conn, &job.step(), &job.order).await })
    }

    fn commit_failed(err: StoreError) -> StoreError {
        err.at_commit()
    }
}

/// A [`Step`] that owns its parts, so that it can wait in the players' lane, with the order its
/// advances are applied in (from `check_step`).
#[derive(Debug)]
pub struct OwnedStep {
    player: String,
    key: String,
    conversation: Option<String>,
    message: String,
    detail: Option<String>,
    recorded_us: i64,
    change: OwnedChange,
    tutorial: Option<TutorialMove>,
    order: Vec<usize>,
}

#[derive(Debug)]
enum OwnedChange {
    Accept {
        quest: String,
        objectives: Vec<String>,
    },
    Advance {
        event_id: Option<String>,
        advances: Vec<ObjectiveAdvance>,
    },
    Complete {
        quest: String,
        coins: i64,
        experience: i64,
        advances: Vec<ObjectiveAdvance>,
    },
    Track {
        quest: Option<String>,
    },
    Abandon {
        quest: String,
    },
    Profile,
    SetVariable {
        name: String,
        value: String,
    },
}

impl OwnedStep {
    /// `step`'s parts, owned, with its checked `order`.
    pub fn new(step: &Step<'_>, order: Vec<usize>) -> OwnedStep {
        let change = match step.change {
            Change::Accept { quest, objectives } => OwnedChange::Accept {
                quest: quest.to_owned(),
                objectives: objectives.to_vec(),
            },
            Change::Advance { event_id, advances } => OwnedChange::Advance {
                event_id: event_id.map(str::to_owned),
                advances: advances.to_vec(),
            },
            Change::Complete {
                quest,
                coins,
                experience,
                advances,
            } => OwnedChange::Complete {
                quest: quest.to_owned(),
                coins,
                experience,
                advances: advances.to_vec(),
            },
            Change::Track { quest } => OwnedChange::Track {
                quest: quest.map(str::to_owned),
            },
            Change::Abandon { quest } => OwnedChange::Abandon {
                quest: quest.to_owned(),
            },
            Change::Profile => OwnedChange::Profile,
            Change::SetVariable { name, value } => OwnedChange::SetVariable {
                name: name.to_owned(),
                value: value.to_owned(),
            },
        };
        OwnedStep {
            player: step.player.to_owned(),
            key: step.key.to_owned(),
            conversation: step.conversation.map(str::to_owned),
            message: step.message.to_owned(),
            detail: step.detail.map(str::to_owned),
            recorded_us: step.recorded_us,
            change,
            tutorial: step.tutorial,
            order,
        }
    }

    /// The step, borrowed back.
    pub fn step(&self) -> Step<'_> {
        let change = match &self.change {
            OwnedChange::Accept { quest, objectives } => Change::Accept { quest, objectives },
            OwnedChange::Advance { event_id, advances } => Change::Advance {
                event_id: event_id.as_deref(),
                advances,
            },
            OwnedChange::Complete {
                quest,
                coins,
                experience,
                advances,
            } => Change::Complete {
                quest,
                coins: *coins,
                experience: *experience,
                advances,
            },
            OwnedChange::Track { quest } => Change::Track {
                quest: quest.as_deref(),
            },
            OwnedChange::Abandon { quest } => Change::Abandon { quest },
            OwnedChange::Profile => Change::Profile,
            OwnedChange::SetVariable { name, value } => Change::SetVariable { name, value },
        };
        Step {
            player: &self.player,
            key: &self.key,
            conversation: self.conversation.as_deref(),
            message: &self.message,
            detail: self.detail.as_deref(),
            recorded_us: self.recorded_us,
            change,
            tutorial: self.tutorial,
        }
    }
}

/// A job waiting for its lane, with where its outcome goes.
struct Queued<L: Lane> {
    job: L::Job,
    reply: oneshot::Sender<Result<L::Done, StoreError>>,
}

/// The handle a store writes a lane's jobs through; the lane's task ends when it is dropped.
pub struct GroupCommit<L: Lane> {
    jobs: mpsc::Sender<Queued<L>>,
    counts: Arc<Counts>,
    closed: CancellationToken,
}

impl<L: Lane> std::fmt::Debug for GroupCommit<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit")
            .field("priority", &L::PRIORITY)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// What a lane has done since the store opened.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct GroupCommitStats {
    /// Jobs handed to the lane.
    pub jobs: u64,
    /// Transactions the lane ran for them.
    pub transactions: u64,
}

#[derive(Debug, Default)]
struct Counts {
    jobs: AtomicU64,
    transactions: AtomicU64,
}

impl<L: Lane> GroupCommit<L> {
    /// Starts the lane's task on the current runtime. It writes on a connection of its own,
    /// opened with `pool`'s options and the lane's `synchronous` setting.
    pub fn start(pool: SqlitePool, gate: Arc<WriteGate>, lane: L, timings: &WriteTimings) -> Self {
        let (jobs, queue) = mpsc::channel(QUEUE);
        let counts = Arc::<Counts>::default();
        let closed = CancellationToken::new();
        let options = (*pool.connect_options())
            .clone()
            .synchronous(L::SYNCHRONOUS);
        tokio::spawn(
            Writer {
                lane,
                pool,
                options,
                conn: None,
                gate,
                commit_seconds: timings.commit_of(L::LABEL),
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

    /// The store is closing: the lane lets go of its connection, and refuses every later job.
    pub fn close(&self) {
        self.closed.cancel();
    }

    /// What the lane has done since the store opened.
    pub fn stats(&self) -> GroupCommitStats {
        GroupCommitStats {
            jobs: self.counts.jobs.load(Ordering::Relaxed),
            transactions: self.counts.transactions.load(Ordering::Relaxed),
        }
    }

    /// Runs `job` in the lane's next commit; its outcome once that commits.
    pub async fn run(&self, job: L::Job) -> Result<L::Done, StoreError> {
        let gone = || StoreError::Unavailable("the store's writer has stopped".into());
        let (reply, outcome) = oneshot::channel();
        self.jobs
            .send(Queued { job, reply })
            .await
            .map_err(|_| gone())?;
        self.counts.jobs.fetch_add(1, Ordering::Relaxed);
        outcome.await.map_err(|_| gone())?
    }
}

struct Writer<L: Lane> {
    lane: L,
    /// The store's pool, for its acquire timeout.
    pool: SqlitePool,
    /// The pool's connect options with the lane's `synchronous`.
    options: SqliteConnectOptions,
    /// The lane's own connection, opened at the first job and again after a failure.
    conn: Option<SqliteConnection>,
    gate: Arc<WriteGate>,
    /// How long its COMMITs take.
    commit_seconds: Histogram,
    counts: Arc<Counts>,
    closed: CancellationToken,
}

impl<L: Lane> Writer<L> {
    async fn run(mut self, mut queue: mpsc::Receiver<Queued<L>>) {
        let mut batch = Vec::with_capacity(L::MAX_BATCH);
        loop {
            // A turn that yielded to a player may have left the rest of its batch: it goes
            // first, in the next turn, without waiting for a new job.
            if batch.is_empty() {
                let job = tokio::select! {
                    _ = self.closed.cancelled(), if self.conn.is_some() => {
                        // The store closed: the file is let go of now, not when the store is
                        // dropped.
                        if let Some(conn) = self.conn.take() {
                            let _ = conn.close().await;
                        }
                        continue;
                    }
                    job = queue.recv() => job,
                };
                let Some(job) = job else { return };
                batch.push(job);
                linger::<L>(&mut queue, &mut batch).await;
            }
            take_waiting(&mut queue, &mut batch);
            if self.closed.is_cancelled() {
                let err = StoreError::Unavailable("the store is closed".into());
                answer_all(&mut batch, &err);
                continue;
            }
            let Some(turn) = self.turn(&mut batch).await else {
                continue;
            };
            // What arrived while the turn was busy joins this commit: that is the grouping.
            take_waiting(&mut queue, &mut batch);
            self.write(&turn, &mut batch).await;
        }
    }

    /// The lane's turn at the gate; `None`, with every job of `batch` answered, if the wait
    /// ran out.
    async fn turn(&mut self, batch: &mut Vec<Queued<L>>) -> Option<WriteTurn> {
        let patience = self.pool.options().get_acquire_timeout();
        match self.gate.enter(L::PRIORITY, patience).await {
            Ok(turn) => Some(turn),
            Err(_) => {
                let err = StoreError::Unavailable("timed out waiting for the write turn".into());
                answer_all(batch, &err);
                None
            }
        }
    }

    /// Writes and answers the jobs of `batch`, leaving it empty, or, on a lane that yields to
    /// players, holding the jobs left when a player came to wait for the turn.
    async fn write(&mut self, turn: &WriteTurn, batch: &mut Vec<Queued<L>>) {
        if batch.len() > 1 {
            match self.write_together(turn, batch).await {
                Ok(done) => {
                    let written = done.len();
                    for (queued, done) in batch.drain(..written).zip(done) {
                        self.lane.committed(&done);
                        let _ = queued.reply.send(Ok(done));
                    }
                    return;
                }
                Err(Failed::Connection(err)) => {
                    // BEGIN or COMMIT failed at the connection (for COMMIT, whether it landed
                    // is unknown): every job is told so, none is retried, and the connection
                    // is opened afresh for the next batch.
                    self.conn = None;
                    answer_all(batch, &err);
                    return;
                }
                // A job failed and the batch was rolled back: nothing of it landed. Each job
                // goes again on its own below, so that only the failing one fails.
                Err(Failed::Job) => {}
            }
        }
        for queued in batch.drain(..) {
            let outcome = self.write_alone(&queued.job).await;
            match &outcome {
                Ok(done) => self.lane.committed(done),
                Err(StoreError::Unavailable(_) | StoreError::OutcomeUnknown(_)) => self.conn = None,
                Err(_) => {}
            }
            let _ = queued.reply.send(outcome);
        }
    }

    /// The jobs of `batch` in one transaction: all of them, or on a lane that yields to
    /// players, those run before a player came to wait for `turn` (at least one). No
    /// savepoints: each is a round trip to the connection's thread per job, and a failing job
    /// is rare (the callers check first), so a failure rolls back the batch and its jobs run
    /// again one by one.
    async fn write_together(
        &mut self,
        turn: &WriteTurn,
        batch: &[Queued<L>],
    ) -> Result<Vec<L::Done>, Failed> {
        self.counts.transactions.fetch_add(1, Ordering::Relaxed);
        // A handle of its own: the transaction below borrows the lane's connection.
        let commit_seconds = self.commit_seconds.clone();
        let conn = self.connection().await.map_err(Failed::Connection)?;
        let mut tx = conn
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| Failed::Connection(map_sqlx(e)))?;
        let mut done = Vec::with_capacity(batch.len());
        for queued in batch {
            if L::YIELDS_TO_PLAYERS && !done.is_empty() && turn.players_waiting() {
                break;
            }
            match L::run(&queued.job, &mut tx).await {
                Ok(d) => done.push(d),
                Err(_) => {
                    tx.rollback()
                        .await
                        .map_err(|e| Failed::Connection(map_sqlx(e)))?;
                    return Err(Failed::Job);
                }
            }
        }
        timed(&commit_seconds, tx.commit())
            .await
            .map_err(|e| Failed::Connection(L::commit_failed(map_sqlx(e))))?;
        Ok(done)
    }

    /// One job in a transaction of its own (in autocommit when it is one statement).
    async fn write_alone(&mut self, job: &L::Job) -> Result<L::Done, StoreError> {
        self.counts.transactions.fetch_add(1, Ordering::Relaxed);
        // A handle of its own: the transaction below borrows the lane's connection.
        let commit_seconds = self.commit_seconds.clone();
        let conn = self.connection().await?;
        if L::ONE_STATEMENT {
            return L::run(job, conn).await;
        }
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(map_sqlx)?;
        match L::run(job, &mut tx).await {
            Ok(done) => {
                timed(&commit_seconds, tx.commit())
                    .await
                    .map_err(|e| L::commit_failed(map_sqlx(e)))?;
                Ok(done)
            }
            Err(err) => {
                tx.rollback().await.map_err(map_sqlx)?;
                Err(err)
            }
        }
    }

    /// The lane's connection, opened if it has none.
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
}

/// Why a batch did not commit.
enum Failed {
    /// A job failed; the transaction was rolled back.
    Job,
    /// BEGIN, ROLLBACK or COMMIT failed at the connection: for COMMIT, whether it landed is
    /// unknown.
    Connection(StoreError),
}

/// Moves the jobs already queued into `batch`, up to the lane's [`Lane::MAX_BATCH`].
fn take_waiting<L: Lane>(queue: &mut mpsc::Receiver<Queued<L>>, batch: &mut Vec<Queued<L>>) {
    while batch.len() < L::MAX_BATCH {
        match queue.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => return,
        }
    }
}

/// Adds to `batch` what arrives within the lane's [`Lane::LINGER`], up to [`Lane::MAX_BATCH`].
async fn linger<L: Lane>(queue: &mut mpsc::Receiver<Queued<L>>, batch: &mut Vec<Queued<L>>) {
    if L::LINGER.is_zero() {
        return;
    }
    let deadline = tokio::time::Instant::now() + L::LINGER;
    while batch.len() < L::MAX_BATCH {
        let room = L::MAX_BATCH - batch.len();
        match tokio::time::timeout_at(deadline, queue.recv_many(batch, room)).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Answers every job of `batch` with `err`, leaving it empty; a caller that stopped waiting is
/// fine.
fn answer_all<L: Lane>(batch: &mut Vec<Queued<L>>, err: &StoreError) {
    for queued in batch.drain(..) {
        let _ = queued.reply.send(Err(err.clone()));
    }
}
