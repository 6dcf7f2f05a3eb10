//! [`PgStore`]: the production backend, PostgreSQL through a sqlx pool.
//!
//! Exactly-once: `complete_quest` is one statement whose `UPDATE ... WHERE status = 'active'`
//! takes the quest's state row lock, so concurrent completions (same pool, or other server
//! instances on the same database) queue on that row; once the first commits, the others re-check
//! the row, find it `completed`, move nothing and pay nothing (the ledger row and the profile's
//! new balance follow only from a row the statement moved). Underneath, the ledger's
//! `UNIQUE (player_id, quest_id)` key (`reward_ledger_once`) refuses a second payment whatever the
//! application does; its violation is reported as [`StoreError::AlreadyPaid`] and rolls
//! everything back.
//!
//! Round trips: `accept_quest` and `complete_quest` are each a single statement (data-modifying
//! CTEs) run in its own implicit transaction: one round trip where an explicit transaction of
//! separate statements took 5 and 6 (`store_tps` bench, BENCHMARKS.md).
//!
//! Outages: the pool gives up acquiring after `acquire_timeout` (3 s default) and tests each
//! connection before handing it out, so a stopped database surfaces as
//! [`StoreError::Unavailable`] within seconds and the pool reconnects by itself once the
//! database is back.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use sqlx::Row;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPool, PgPoolOptions, PgRow};
use tokio::sync::watch;

use super::error::{constraint_name, is_unique_violation, map_sqlx};
use super::{
    AuditEntry, AuditRecord, ClaimEvent, ConnectOptions, LedgerEntry, ObjectiveAdvance, Paid,
    PlayerRecord, ProfileRecord, QuestRecord, SessionClaim, Store, StoreError, StoredQuestStatus,
};

/// The PostgreSQL migrations, embedded at compile time.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations/postgres");

/// Default pool size.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 16;

/// The NOTIFY channel session claims are announced on.
pub const CLAIMS_CHANNEL: &str = "banter_session_claims";

/// The ledger's unique key: its violation means "already paid".
const LEDGER_ONCE: &str = "reward_ledger_once";

/// The PostgreSQL-backed [`Store`].
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
            .max_connections(
                options
                    .max_connections
                    .unwrap_or(DEFAULT_MAX_CONNECTIONS)
                    .max(1),
            )
            .min_connections(0)
            .acquire_timeout(options.acquire_timeout)
            .idle_timeout(Some(Duration::from_secs(600)))
            .max_lifetime(Some(Duration::from_secs(1800)))
            .test_before_acquire(true)
            .connect_with(connect_options.clone())
            .await
            .map_err(map_sqlx)?;
        if options.run_migrations
            && let Err(err) = MIGRATOR.run(&pool).await
        {
            pool.close().await;
            return Err(err.into());
        }
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

async fn quest_status(
    conn: &mut PgConnection,
    player: &str,
    quest: &str,
    lock: &str,
) -> Result<Option<StoredQuestStatus>, StoreError> {
    let row = sqlx::query(&format!(
        "SELECT status FROM quest_states WHERE player_id = $1 AND quest_id = $2 {lock}"
    ))
    .bind(player)
    .bind(quest)
    .fetch_optional(&mut *conn)
    .await?;
    match row {
        None => Ok(None),
        Some(row) => Ok(Some(StoredQuestStatus::parse(
            &row.try_get::<String, _>(0)?,
        )?)),
    }
}

async fn profile_exists(conn: &mut PgConnection, player: &str) -> Result<bool, StoreError> {
    Ok(sqlx::query("SELECT 1 FROM profiles WHERE player_id = $1")
        .bind(player)
        .fetch_optional(&mut *conn)
        .await?
        .is_some())
}

async fn ensure_profile(conn: &mut PgConnection, player: &str) -> Result<(), StoreError> {
    sqlx::query("INSERT INTO profiles (player_id) VALUES ($1) ON CONFLICT (player_id) DO NOTHING")
        .bind(player)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

async fn not_active(
    conn: &mut PgConnection,
    player: &str,
    quest: &str,
    found: Option<StoredQuestStatus>,
) -> StoreError {
    if found.is_none() {
        match profile_exists(conn, player).await {
            Ok(false) => return StoreError::UnknownPlayer(player.to_owned()),
            Ok(true) => {}
            Err(err) => return err,
        }
    }
    StoreError::QuestState {
        quest: quest.to_owned(),
        found,
        expected: "active",
    }
}

async fn read_player(
    conn: &mut PgConnection,
    player: &str,
) -> Result<Option<PlayerRecord>, StoreError> {
    let Some(row) =
        sqlx::query("SELECT coins, experience, tutorial_stage, tracked_quest FROM profiles WHERE player_id = $1")
            .bind(player)
            .fetch_optional(&mut *conn)
            .await?
    else {
        return Ok(None);
    };
    let profile = ProfileRecord {
        coins: row.try_get("coins")?,
        experience: row.try_get("experience")?,
        tutorial_stage: row.try_get("tutorial_stage")?,
        tracked_quest: row.try_get("tracked_quest")?,
    };
    let mut quests = BTreeMap::new();
    for row in sqlx::query("SELECT quest_id, status FROM quest_states WHERE player_id = $1")
        .bind(player)
        .fetch_all(&mut *conn)
        .await?
    {
        let status = StoredQuestStatus::parse(&row.try_get::<String, _>("status")?)?;
        quests.insert(
            row.try_get::<String, _>("quest_id")?,
            QuestRecord {
                status,
                progress: BTreeMap::new(),
            },
        );
    }
    for row in sqlx::query(
        "SELECT quest_id, objective_id, progress FROM objective_progress WHERE player_id = $1",
    )
    .bind(player)
    .fetch_all(&mut *conn)
    .await?
    {
        let quest: String = row.try_get("quest_id")?;
        let objective: String = row.try_get("objective_id")?;
        let progress = super::progress_from_db(&quest, &objective, row.try_get("progress")?)?;
        let Some(record) = quests.get_mut(&quest) else {
            return Err(StoreError::Corrupt(format!(
                "progress for quest {quest:?} that has no state"
            )));
        };
        record.progress.insert(objective, progress);
    }
    Ok(Some(PlayerRecord { profile, quests }))
}

const LEDGER_COLUMNS: &str = "id, player_id, quest_id, coins, experience, (EXTRACT(EPOCH FROM paid_at) * 1000)::BIGINT AS paid_at_ms";

fn ledger_entry(row: &PgRow) -> Result<LedgerEntry, StoreError> {
    Ok(LedgerEntry {
        id: row.try_get("id")?,
        player_id: row.try_get("player_id")?,
        quest_id: row.try_get("quest_id")?,
        coins: row.try_get("coins")?,
        experience: row.try_get("experience")?,
        paid_at_ms: row.try_get("paid_at_ms")?,
    })
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

impl Store for PgStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            sqlx::query("SELECT 1").execute(&self.pool).await?;
            Ok(())
        })
    }

    fn player_exists<'a>(&'a self, player: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            super::check_id("player id", player)?;
            let exists: bool =
                sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM profiles WHERE player_id = $1)")
                    .bind(player)
                    .fetch_one(&self.pool)
                    .await?;
            Ok(exists)
        })
    }

    fn load_player<'a>(
        &'a self,
        player: &'a str,
    ) -> BoxFuture<'a, Result<PlayerRecord, StoreError>> {
        Box::pin(async move {
            super::check_id("player id", player)?;
            // One snapshot for the three reads.
            let mut tx = self
                .pool
                .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                .await?;
            let found = read_player(&mut tx, player).await?;
            tx.commit().await?;
            if let Some(record) = found {
                return Ok(record);
            }
            // First visit: create the profile (a concurrent call may race us; DO NOTHING covers
            // it), then read under a fresh snapshot.
            ensure_profile(&mut *self.pool.acquire().await?, player).await?;
            let mut tx = self
                .pool
                .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                .await?;
            let record = read_player(&mut tx, player).await?;
            tx.commit().await?;
            record.ok_or_else(|| {
                StoreError::Corrupt(format!("profile of {player:?} vanished after insert"))
            })
        })
    }

    fn accept_quest<'a>(
        &'a self,
        player: &'a str,
        quest: &'a str,
        objectives: &'a [String],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            super::check_id("player id", player)?;
            super::check_id("quest id", quest)?;
            super::check_objectives(objectives)?;
            // One statement, so one round trip and its own transaction: the profile if missing,
            // the quest row, its progress rows. A concurrent accept of the same quest waits on the
            // primary key, then inserts nothing (and so no progress rows either).
            let inserted = sqlx::query(
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
            .fetch_optional(&self.pool)
            .await?;
            if inserted.is_none() {
                // A new statement, a fresh snapshot: it sees the accept that beat ours.
                let mut conn = self.pool.acquire().await?;
                return Err(StoreError::QuestState {
                    quest: quest.to_owned(),
                    found: quest_status(&mut conn, player, quest, "").await?,
                    expected: "never accepted",
                });
            }
            Ok(())
        })
    }

    fn advance_objectives<'a>(
        &'a self,
        player: &'a str,
        event_id: Option<&'a str>,
        advances: &'a [ObjectiveAdvance],
    ) -> BoxFuture<'a, Result<Vec<u32>, StoreError>> {
        Box::pin(async move {
            let order = super::check_advances(player, event_id, advances)?;
            let mut tx = self.pool.begin().await?;
            if !profile_exists(&mut tx, player).await? {
                return Err(StoreError::UnknownPlayer(player.to_owned()));
            }
            if let Some(event_id) = event_id {
                // A concurrent delivery of the same id waits here for us, then hits the key.
                let inserted =
                    sqlx::query("INSERT INTO applied_events (event_id, player_id) VALUES ($1, $2)")
                        .bind(event_id)
                        .bind(player)
                        .execute(&mut *tx)
                        .await;
                match inserted {
                    Ok(_) => {}
                    Err(err) if is_unique_violation(&err) => {
                        return Err(StoreError::DuplicateEvent {
                            event_id: event_id.to_owned(),
                        });
                    }
                    Err(err) => return Err(map_sqlx(err)),
                }
            }
            let mut results = vec![0u32; advances.len()];
            for index in order {
                let advance = &advances[index];
                // FOR SHARE: a concurrent complete_quest (FOR UPDATE) waits until we commit.
                let status = quest_status(&mut tx, player, &advance.quest, "FOR SHARE").await?;
                if status != Some(StoredQuestStatus::Active) {
                    return Err(not_active(&mut tx, player, &advance.quest, status).await);
                }
                let row = sqlx::query(
                    "INSERT INTO objective_progress AS o (player_id, quest_id, objective_id, progress) \
                     VALUES ($1, $2, $3, LEAST($4::BIGINT, $5::BIGINT)) \
                     ON CONFLICT (player_id, quest_id, objective_id) \
                     DO UPDATE SET progress = GREATEST(o.progress, LEAST(o.progress + $4::BIGINT, $5::BIGINT)) \
                     RETURNING progress",
                )
                .bind(player)
                .bind(&advance.quest)
                .bind(&advance.objective)
                .bind(i64::from(advance.amount))
                .bind(i64::from(advance.target))
                .fetch_one(&mut *tx)
                .await?;
                results[index] =
                    super::progress_from_db(&advance.quest, &advance.objective, row.try_get(0)?)?;
            }
            tx.commit().await?;
            Ok(results)
        })
    }

    fn complete_quest<'a>(
        &'a self,
        player: &'a str,
        quest: &'a str,
        coins: i64,
        experience: i64,
    ) -> BoxFuture<'a, Result<Paid, StoreError>> {
        Box::pin(async move {
            super::check_id("player id", player)?;
            super::check_id("quest id", quest)?;
            super::check_reward(coins, experience)?;
            // One statement, so one round trip and its own transaction. `done`'s UPDATE takes the
            // quest row's lock and only moves an 'active' row: a concurrent completion waits for
            // that lock, re-checks the row once the first commits, finds it 'completed' and
            // matches nothing, so it inserts no ledger row and adds nothing to the profile
            // (`paid` selects from `done`, `totals` needs a row in `paid`). The ledger's unique key
            // still refuses a second payment whatever the state says, rolling the whole statement
            // back. `seen` is the statement's snapshot, read for the error.
            let row = sqlx::query(
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
            .fetch_one(&self.pool)
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
            if let Some(ledger_id) = row.try_get::<Option<i64>, _>("id")? {
                let (Some(total_coins), Some(total_experience)) = (
                    row.try_get::<Option<i64>, _>("coins")?,
                    row.try_get::<Option<i64>, _>("experience")?,
                ) else {
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
                .try_get::<Option<String>, _>("status")?
                .map(|status| StoredQuestStatus::parse(&status))
                .transpose()?;
            match seen {
                None if !row.try_get::<bool, _>("known")? => {
                    Err(StoreError::UnknownPlayer(player.to_owned()))
                }
                None | Some(StoredQuestStatus::Completed) => Err(StoreError::QuestState {
                    quest: quest.to_owned(),
                    found: seen,
                    expected: "active",
                }),
                Some(StoredQuestStatus::Active) => {
                    // Active in our snapshot, yet the UPDATE moved nothing: a concurrent call
                    // changed the row while we waited for its lock. Read it again.
                    let mut conn = self.pool.acquire().await?;
                    match quest_status(&mut conn, player, quest, "").await? {
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
        })
    }

    fn set_tracked_quest<'a>(
        &'a self,
        player: &'a str,
        quest: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            super::check_id("player id", player)?;
            if let Some(quest) = quest {
                super::check_id("quest id", quest)?;
            }
            sqlx::query(
                "INSERT INTO profiles (player_id, tracked_quest) VALUES ($1, $2) \
                 ON CONFLICT (player_id) DO UPDATE SET tracked_quest = excluded.tracked_quest, updated_at = now()",
            )
            .bind(player)
            .bind(quest)
            .execute(&self.pool)
            .await?;
            Ok(())
        })
    }

    fn set_tutorial_stage<'a>(
        &'a self,
        player: &'a str,
        stage: i64,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            super::check_id("player id", player)?;
            if stage < 0 {
                return Err(StoreError::InvalidInput(format!(
                    "tutorial stage {stage} is negative"
                )));
            }
            sqlx::query(
                "INSERT INTO profiles (player_id, tutorial_stage) VALUES ($1, $2) \
                 ON CONFLICT (player_id) DO UPDATE SET tutorial_stage = excluded.tutorial_stage, updated_at = now()",
            )
            .bind(player)
            .bind(stage)
            .execute(&self.pool)
            .await?;
            Ok(())
        })
    }

    fn ledger<'a>(
        &'a self,
        player: &'a str,
    ) -> BoxFuture<'a, Result<Vec<LedgerEntry>, StoreError>> {
        Box::pin(async move {
            sqlx::query(&format!(
                "SELECT {LEDGER_COLUMNS} FROM reward_ledger WHERE player_id = $1 ORDER BY id"
            ))
            .bind(player)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(ledger_entry)
            .collect()
        })
    }

    fn ledger_entry<'a>(
        &'a self,
        player: &'a str,
        quest: &'a str,
    ) -> BoxFuture<'a, Result<Option<LedgerEntry>, StoreError>> {
        Box::pin(async move {
            sqlx::query(&format!(
                "SELECT {LEDGER_COLUMNS} FROM reward_ledger WHERE player_id = $1 AND quest_id = $2"
            ))
            .bind(player)
            .bind(quest)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(ledger_entry)
            .transpose()
        })
    }

    fn ledger_count<'a>(&'a self, quest: &'a str) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move {
            let count: i64 = sqlx::query("SELECT COUNT(*) FROM reward_ledger WHERE quest_id = $1")
                .bind(quest)
                .fetch_one(&self.pool)
                .await?
                .try_get(0)?;
            u64::try_from(count).map_err(|_| StoreError::Corrupt(format!("negative count {count}")))
        })
    }

    fn claim_session<'a>(
        &'a self,
        player: &'a str,
        session_id: &'a str,
        instance_id: &'a str,
    ) -> BoxFuture<'a, Result<SessionClaim, StoreError>> {
        Box::pin(async move {
            super::check_id("player id", player)?;
            super::check_id("session id", session_id)?;
            super::check_id("instance id", instance_id)?;
            let mut tx = self.pool.begin().await?;
            let row = sqlx::query(
                "INSERT INTO session_claims AS c (player_id, session_id, instance_id, epoch) VALUES ($1, $2, $3, 1) \
                 ON CONFLICT (player_id) DO UPDATE SET session_id = excluded.session_id, \
                 instance_id = excluded.instance_id, epoch = c.epoch + 1, claimed_at = now() \
                 RETURNING epoch",
            )
            .bind(player)
            .bind(session_id)
            .bind(instance_id)
            .fetch_one(&mut *tx)
            .await?;
            let claim = SessionClaim {
                player_id: player.to_owned(),
                session_id: session_id.to_owned(),
                instance_id: instance_id.to_owned(),
                epoch: row.try_get(0)?,
            };
            let payload = serde_json::to_string(&claim)
                .map_err(|e| StoreError::InvalidInput(format!("cannot encode the claim: {e}")))?;
            // Delivered to every listener when (and only if) the transaction commits.
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(CLAIMS_CHANNEL)
                .bind(payload)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(claim)
        })
    }

    fn session_owner<'a>(
        &'a self,
        player: &'a str,
    ) -> BoxFuture<'a, Result<Option<SessionClaim>, StoreError>> {
        Box::pin(async move {
            let row = sqlx::query(
                "SELECT player_id, session_id, instance_id, epoch FROM session_claims WHERE player_id = $1",
            )
            .bind(player)
            .fetch_optional(&self.pool)
            .await?;
            match row {
                None => Ok(None),
                Some(row) => Ok(Some(SessionClaim {
                    player_id: row.try_get("player_id")?,
                    session_id: row.try_get("session_id")?,
                    instance_id: row.try_get("instance_id")?,
                    epoch: row.try_get("epoch")?,
                })),
            }
        })
    }

    fn release_session<'a>(
        &'a self,
        player: &'a str,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let done =
                sqlx::query("DELETE FROM session_claims WHERE player_id = $1 AND session_id = $2")
                    .bind(player)
                    .bind(session_id)
                    .execute(&self.pool)
                    .await?;
            Ok(done.rows_affected() > 0)
        })
    }

    fn session_claims(&self) -> BoxFuture<'_, Result<BoxStream<'static, ClaimEvent>, StoreError>> {
        Box::pin(async move {
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
        })
    }

    fn record_audit<'a>(
        &'a self,
        records: &'a [AuditRecord],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            if records.is_empty() {
                return Ok(());
            }
            let column =
                |f: fn(&AuditRecord) -> Option<String>| records.iter().map(f).collect::<Vec<_>>();
            // One statement for the whole batch.
            sqlx::query(
                "INSERT INTO audit_log (player_id, conversation, message, code, detail) \
                 SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[])",
            )
            .bind(
                records
                    .iter()
                    .map(|r| r.player_id.clone())
                    .collect::<Vec<_>>(),
            )
            .bind(column(|r| r.conversation.clone()))
            .bind(
                records
                    .iter()
                    .map(|r| r.message.clone())
                    .collect::<Vec<_>>(),
            )
            .bind(column(|r| r.code.clone()))
            .bind(column(|r| r.detail.clone()))
            .execute(&self.pool)
            .await?;
            Ok(())
        })
    }

    fn audit_for_player<'a>(
        &'a self,
        player: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<AuditEntry>, StoreError>> {
        Box::pin(async move {
            sqlx::query(
                "SELECT id, (EXTRACT(EPOCH FROM at) * 1000)::BIGINT AS at_ms, player_id, conversation, message, \
                 code, detail FROM ( \
                   SELECT * FROM audit_log WHERE player_id = $1 ORDER BY id DESC LIMIT $2 \
                 ) AS recent ORDER BY id",
            )
            .bind(player)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| {
                Ok(AuditEntry {
                    id: row.try_get("id")?,
                    at_ms: row.try_get("at_ms")?,
                    record: AuditRecord {
                        player_id: row.try_get("player_id")?,
                        conversation: row.try_get("conversation")?,
                        message: row.try_get("message")?,
                        code: row.try_get("code")?,
                        detail: row.try_get("detail")?,
                    },
                })
            })
            .collect()
        })
    }

    fn prune_audit(&self, max_age: Duration) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(async move {
            let done =
                sqlx::query("DELETE FROM audit_log WHERE at < now() - make_interval(secs => $1)")
                    .bind(max_age.as_secs_f64())
                    .execute(&self.pool)
                    .await?;
            Ok(done.rows_affected())
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // Ends every claims stream (each holds its own listener connection).
            self.closed.send_replace(true);
            self.pool.close().await;
        })
    }
}
