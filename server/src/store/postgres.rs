//! [`PgStore`]: the production backend, PostgreSQL through a sqlx pool.
//!
//! Exactly-once: completing a quest (a step's [`Change::Complete`](super::Change::Complete)) is
//! one statement whose `UPDATE ... WHERE status = 'active'`
//! takes the quest's state row lock, so concurrent completions (same pool, or other server
//! instances on the same database) queue on that row; once the first commits, the others re-check
//! the row, find it `completed`, move nothing and pay nothing (the ledger row and the profile's
//! new balance follow only from a row the statement moved). Underneath, the ledger's
//! `UNIQUE (player_id, quest_id)` key (`reward_ledger_once`) refuses a second payment whatever the
//! application does; its violation is reported as [`StoreError::AlreadyPaid`] and rolls
//! everything back.
//!
//! Round trips: accepting and completing a quest are each a single statement (data-modifying
//! CTEs), where separate statements took 5 and 6 (`store_tps` bench, BENCHMARKS.md). A player's
//! step (`apply_step`) runs it inside a transaction with its audit row and reads the player back
//! before COMMIT: BEGIN (sent with the next statement), the audit row under the step key's
//! advisory lock, the statement, the read, COMMIT; one pooled connection, no reload after.
//!
//! Everything else it shares with SQLite (`backend.rs`): this file holds only
//! where PostgreSQL differs, those two statements, NOTIFY with each claim and LISTEN for the
//! claims stream, and the `UNNEST` audit insert.
//!
//! Outages: the pool gives up acquiring after `acquire_timeout` (3 s default) and tests each
//! connection before handing it out, so a stopped database surfaces as
//! [`StoreError::Unavailable`] within seconds and the pool reconnects by itself once the
//! database is back.

use std::str::FromStr;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use sqlx::Pool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPool, PgPoolOptions, Postgres};
use tokio::sync::watch;

use super::backend::{Backend, Chore, Done, open_pool};
use super::error::{constraint_name, is_unique_violation, map_sqlx};
use super::queries::Queries;
use super::sql;
use super::{
    AuditRecord, ClaimEvent, ConnectOptions, Paid, SessionClaim, StoreError, StoredQuestStatus,
};

/// The PostgreSQL migrations, embedded at compile time.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations/postgres");

/// Default pool size.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 16;

/// The NOTIFY channel session claims are announced on.
pub const CLAIMS_CHANNEL: &str = "banter_session_claims";

/// The ledger's unique key: its violation means "already paid".
const LEDGER_ONCE: &str = "reward_ledger_once";

/// The PostgreSQL-backed [`Store`](super::Store).
#[derive(Debug)]
pub struct PgStore {
    pool: PgPool,
    connect_options: PgConnectOptions,
    acquire_timeout: Duration,
    closed: watch::Sender<bool>,
}

impl PgStore {
    /// Connects to `url` (`postgres://` or `postgresql://`; `?options[search_path]=schema` picks
    /// a schema) and runs the migrations unless `options.run_migrations` is false.
    pub async fn connect(url: &str, options: ConnectOptions) -> Result<Self, StoreError> {
        let connect_options = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::Config(format!("bad PostgreSQL URL: {e}")))?;
        Self::connect_with(connect_options, options).await
    }

    /// Like [`PgStore::connect`] with ready-made sqlx options (for instance with
    /// `.options([("search_path", "my_schema")])`: tables are then created and used in the first
    /// schema of that search path, which must exist).
    pub async fn connect_with(
        connect_options: PgConnectOptions,
        options: ConnectOptions,
    ) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .min_connections(0)
            .idle_timeout(Some(Duration::from_secs(600)))
            .max_lifetime(Some(Duration::from_secs(1800)))
            .test_before_acquire(true);
        let connect = connect_options.clone();
        let pool = open_pool(pool, connect, &options, DEFAULT_MAX_CONNECTIONS, &MIGRATOR).await?;
        let (closed, _) = watch::channel(false);
        Ok(PgStore {
            pool,
            connect_options,
            acquire_timeout: options.acquire_timeout,
            closed,
        })
    }

    /// The underlying pool (ops tools and tests).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

/// A LISTEN connection on its own one-connection pool, so that it never holds a connection of
/// the main pool (whose `close()` would otherwise wait for it).
async fn listen(
    connect_options: &PgConnectOptions,
    acquire_timeout: Duration,
) -> Result<PgListener, sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(acquire_timeout)
        .connect_lazy_with(connect_options.clone());
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.listen(CLAIMS_CHANNEL).await?;
    Ok(listener)
}

struct ClaimsState {
    listener: Option<PgListener>,
    connect_options: PgConnectOptions,
    acquire_timeout: Duration,
    closed: watch::Receiver<bool>,
    backoff: Duration,
}

const MIN_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The next event of the claims stream, or `None` once the store is closed.
async fn next_claim(state: &mut ClaimsState) -> Option<ClaimEvent> {
    loop {
        if *state.closed.borrow() {
            return None;
        }
        let Some(listener) = state.listener.as_mut() else {
            // Reconnect after a failure, with backoff; a Resync tells the subscriber that
            // notifications sent while we were away are lost.
            tokio::select! {
                _ = tokio::time::sleep(state.backoff) => {}
                _ = state.closed.changed() => return None,
            }
            match listen(&state.connect_options, state.acquire_timeout).await {
                Ok(listener) => {
                    tracing::info!("session claims listener reconnected");
                    state.listener = Some(listener);
                    state.backoff = MIN_BACKOFF;
                    return Some(ClaimEvent::Resync);
                }
                Err(err) => {
                    tracing::warn!(error = %err, "session claims listener cannot reconnect yet");
                    state.backoff = (state.backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            }
        };
        let received = tokio::select! {
            received = listener.try_recv() => received,
            _ = state.closed.changed() => return None,
        };
        match received {
            Ok(Some(notification)) => {
                match serde_json::from_str::<SessionClaim>(notification.payload()) {
                    Ok(claim) => return Some(ClaimEvent::Claimed(claim)),
                    Err(err) => {
                        tracing::warn!(error = %err, "ignoring a malformed session claim notification")
                    }
                }
            }
            // The connection was lost and re-established: claims may have been missed.
            Ok(None) => return Some(ClaimEvent::Resync),
            Err(err) => {
                tracing::warn!(error = %err, "session claims listener lost its connection");
                state.listener = None;
            }
        }
    }
}

/// What `complete`'s statement reports: the quest's status and the profile's existence in the
/// statement's snapshot, and what it paid (all `None` when it paid nothing).
#[derive(sqlx::FromRow)]
struct Completion {
    status: Option<String>,
    known: bool,
    id: Option<i64>,
    coins: Option<i64>,
    experience: Option<i64>,
}

impl Backend for PgStore {
    type Db = Postgres;

    fn pool(&self) -> &Pool<Postgres> {
        &self.pool
    }

    /// Under the step key's advisory lock (`sql::STEP_FENCE`), which a transaction writing the
    /// step holds until it ends: a COMMIT still in flight on a lost connection is waited for.
    async fn step_applied(&self, player: &str, key: &str) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(sql::STEP_FENCE)
            .bind(player)
            .bind(key)
            .execute(&mut *tx)
            .await?;
        // A new statement, a snapshot taken after the lock: it sees that transaction's end.
        let applied = Postgres::step_recorded(&mut tx, player, key).await?;
        tx.rollback().await?;
        Ok(applied)
    }

    async fn accept_on(
        conn: &mut PgConnection,
        player: &str,
        quest: &str,
        objectives: &[String],
    ) -> Result<(), StoreError> {
        // One statement, so one round trip: the profile if missing, the quest row, its progress
        // rows. A concurrent accept of the same quest waits on the primary key, then inserts
        // nothing (and so no progress rows either).
        let inserted: Option<String> = sqlx::query_scalar(
            "WITH profile AS ( \
               INSERT INTO profiles (player_id) VALUES ($1) ON CONFLICT (player_id) DO NOTHING \
             ), accepted AS ( \
               INSERT INTO quest_states (player_id, quest_id, status) VALUES ($1, $2, 'active') \
               ON CONFLICT (player_id, quest_id) DO NOTHING RETURNING quest_id \
             ), progress AS ( \
               INSERT INTO objective_progress (player_id, quest_id, objective_id, progress) \
               SELECT $1, $2, o.objective_id, 0 FROM accepted, UNNEST($3::TEXT[]) AS o (objective_id) \
             ) \
             SELECT quest_id FROM accepted",
        )
        .bind(player)
        .bind(quest)
        .bind(objectives)
        .fetch_optional(&mut *conn)
        .await?;
        if inserted.is_none() {
            // A new statement, a fresh snapshot: it sees the accept that beat ours.
            return Err(StoreError::QuestState {
                quest: quest.to_owned(),
                found: Postgres::quest_status(conn, sql::QUEST_STATUS, player, quest).await?,
                expected: "never accepted",
            });
        }
        Ok(())
    }

    async fn complete_on(
        conn: &mut PgConnection,
        player: &str,
        quest: &str,
        coins: i64,
        experience: i64,
    ) -> Result<Paid, StoreError> {
        // One statement, so one round trip. `done`'s UPDATE takes the
        // quest row's lock and only moves an 'active' row: a concurrent completion waits for
        // that lock, re-checks the row once the first commits, finds it 'completed' and matches
        // nothing, so it inserts no ledger row and adds nothing to the profile (`paid` selects
        // from `done`, `totals` needs a row in `paid`). The ledger's unique key still refuses a
        // second payment whatever the state says, rolling the whole statement back. `seen` is
        // the statement's snapshot, read for the error.
        let row = sqlx::query_as::<_, Completion>(
            "WITH seen AS ( \
               SELECT (SELECT status FROM quest_states WHERE player_id = $1 AND quest_id = $2) AS status, \
                      EXISTS (SELECT 1 FROM profiles WHERE player_id = $1) AS known \
             ), done AS ( \
               UPDATE quest_states SET status = 'completed', completed_at = now() \
               WHERE player_id = $1 AND quest_id = $2 AND status = 'active' RETURNING quest_id \
             ), paid AS ( \
               INSERT INTO reward_ledger (player_id, quest_id, coins, experience) \
               SELECT $1, $2, $3, $4 FROM done RETURNING id \
             ), totals AS ( \
               UPDATE profiles SET coins = coins + $3, experience = experience + $4, updated_at = now() \
               WHERE player_id = $1 AND EXISTS (SELECT 1 FROM paid) RETURNING coins, experience \
             ) \
             SELECT seen.status, seen.known, paid.id, totals.coins, totals.experience \
             FROM seen LEFT JOIN paid ON TRUE LEFT JOIN totals ON TRUE",
        )
        .bind(player)
        .bind(quest)
        .bind(coins)
        .bind(experience)
        .fetch_one(&mut *conn)
        .await;
        let row = match row {
            Ok(row) => row,
            Err(err)
                if is_unique_violation(&err)
                    && constraint_name(&err).is_none_or(|c| c == LEDGER_ONCE) =>
            {
                return Err(StoreError::AlreadyPaid {
                    quest: quest.to_owned(),
                });
            }
            Err(err) => return Err(map_sqlx(err)),
        };
        if let Some(ledger_id) = row.id {
            let (Some(total_coins), Some(total_experience)) = (row.coins, row.experience) else {
                // Unreachable: the quest row just completed references the profile, and
                // profiles are never deleted.
                return Err(StoreError::Corrupt(format!(
                    "paid quest {quest:?} but found no profile for {player:?}"
                )));
            };
            return Ok(Paid {
                ledger_id,
                coins,
                experience,
                total_coins,
                total_experience,
            });
        }
        // Nothing was paid, nothing changed: say why.
        let seen = row
            .status
            .map(|status| StoredQuestStatus::parse(&status))
            .transpose()?;
        match seen {
            None if !row.known => Err(StoreError::UnknownPlayer(player.to_owned())),
            None | Some(StoredQuestStatus::Completed) => Err(StoreError::QuestState {
                quest: quest.to_owned(),
                found: seen,
                expected: "active",
            }),
            Some(StoredQuestStatus::Active) => {
                // Active in our snapshot, yet the UPDATE moved nothing: a concurrent call
                // changed the row while we waited for its lock. Read it again.
                match Postgres::quest_status(conn, sql::QUEST_STATUS, player, quest).await? {
                    Some(StoredQuestStatus::Completed) => Err(StoreError::QuestState {
                        quest: quest.to_owned(),
                        found: Some(StoredQuestStatus::Completed),
                        expected: "active",
                    }),
                    // Only possible if something outside the store moved the row back.
                    _ => Err(StoreError::Unavailable(format!(
                        "quest {quest:?} changed while completing it; try again"
                    ))),
                }
            }
        }
    }

    /// Each at once, on its own. A claim and its NOTIFY are one transaction, so that other
    /// instances hear of the claim exactly when it commits.
    async fn chore(&self, chore: Chore) -> Result<Done, StoreError> {
        if !matches!(chore, Chore::Claim { .. }) {
            return Postgres::chore(&mut *self.pool.acquire().await?, &chore).await;
        }
        let mut tx = self.pool.begin().await?;
        let done = Postgres::chore(&mut tx, &chore).await?;
        if let Done::Claimed(claim) = &done {
            let payload = serde_json::to_string(claim)
                .map_err(|e| StoreError::InvalidInput(format!("cannot encode the claim: {e}")))?;
            // Delivered to every listener when (and only if) the transaction commits.
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(CLAIMS_CHANNEL)
                .bind(payload)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(done)
    }

    /// LISTEN on a connection of its own, re-established after an outage.
    async fn claims(&self) -> Result<BoxStream<'static, ClaimEvent>, StoreError> {
        if *self.closed.borrow() || self.pool.is_closed() {
            return Err(StoreError::Unavailable("the store is closed".into()));
        }
        let listener = listen(&self.connect_options, self.acquire_timeout)
            .await
            .map_err(map_sqlx)?;
        let state = ClaimsState {
            listener: Some(listener),
            connect_options: self.connect_options.clone(),
            acquire_timeout: self.acquire_timeout,
            closed: self.closed.subscribe(),
            backoff: MIN_BACKOFF,
        };
        Ok(futures_util::stream::unfold(state, |mut state| async move {
            next_claim(&mut state).await.map(|event| (event, state))
        })
        .boxed())
    }

    /// One statement for the whole batch: one array a column.
    async fn append_audit(&self, records: &[AuditRecord]) -> Result<(), StoreError> {
        let column =
            |f: fn(&AuditRecord) -> Option<String>| records.iter().map(f).collect::<Vec<_>>();
        let recorded: Vec<i64> = records.iter().map(|r| r.recorded_us).collect();
        sqlx::query(
            "INSERT INTO audit_log (player_id, conversation, message, code, detail, recorded_us) \
             SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[], \
                                  $6::BIGINT[])",
        )
        .bind(column(|r| Some(r.player_id.clone())))
        .bind(column(|r| r.conversation.clone()))
        .bind(column(|r| Some(r.message.clone())))
        .bind(column(|r| r.code.clone()))
        .bind(column(|r| r.detail.clone()))
        .bind(recorded)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn shut_down(&self) {
        // Ends every claims stream (each holds its own listener connection).
        self.closed.send_replace(true);
        self.pool.close().await;
    }
}
