//! [`SqliteStore`]: the zero-configuration backend, one SQLite file in WAL mode.
//!
//! Exactly-once: every write transaction starts with `BEGIN IMMEDIATE`, which takes SQLite's
//! single write lock up front (sqlx's plain `begin()` is DEFERRED and would only upgrade at the
//! first write, which can fail with SQLITE_BUSY without waiting). Writers, on one pool or on
//! several processes sharing the file, therefore run one after another: the second
//! `complete_quest` reads the quest as `completed` and is refused. The ledger's
//! `UNIQUE (player_id, quest_id)` key is the backstop should the state ever say otherwise.
//! Readers never block writers (WAL); waiting for the lock is bounded by the busy timeout (5 s),
//! after which the call fails with [`StoreError::Unavailable`].
//!
//! Inside one process, writers do not contend for that lock at all: each first takes its turn
//! at the store's [`WriteGate`] (players' writes before housekeeping), so a write never sleeps
//! in SQLite's busy handler behind another write of the same server. A turn is bounded by the
//! pool's acquire timeout. Session claims, releases and first visits' profiles are written many
//! to a transaction by the [`GroupCommit`] task.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use sqlx::Row;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool,
    SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use tokio::sync::broadcast;

use super::error::{is_unique_violation, map_sqlx};
use super::group_commit::{self, ClaimsSender, GroupCommit, GroupCommitStats};
use super::write_gate::{Priority, WriteGate, WriteTurn};
use super::{
    AuditEntry, AuditRecord, ClaimEvent, ConnectOptions, LedgerEntry, ObjectiveAdvance, Paid,
    PlayerRecord, ProfileRecord, QuestRecord, SessionClaim, Store, StoreError, StoredQuestStatus,
};

/// The SQLite migrations, embedded at compile time.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations/sqlite");

/// Default pool size: SQLite runs one writer at a time, a few connections serve the readers.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 4;

/// How long a writer waits for SQLite's write lock before giving up with `Unavailable`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Audit rows per INSERT statement: the statement cache keeps one plan per chunk length, so a
/// full chunk (the common case under load) reuses its plan.
const AUDIT_ROWS_PER_INSERT: usize = 128;

/// The current time in Unix milliseconds, as SQL.
pub(super) const NOW_MS: &str = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

/// The SQLite-backed [`Store`].
#[derive(Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
    claims: ClaimsSender,
    writes: Arc<WriteGate>,
    /// Claims, releases and first visits' profiles, many to a commit.
    housekeeping: GroupCommit,
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
        let pool = SqlitePoolOptions::new()
            .max_connections(
                options
                    .max_connections
                    .unwrap_or(DEFAULT_MAX_CONNECTIONS)
                    .max(1),
            )
            .acquire_timeout(options.acquire_timeout)
            // No ping before every acquire: it is a round trip to the connection's worker
            // thread per store call, and a local file's connection does not go stale the way a
            // network connection can (PostgreSQL keeps the check).
            .test_before_acquire(false)
            .connect_with(connect_options.create_if_missing(true))
            .await
            .map_err(map_sqlx)?;
        if options.run_migrations
            && let Err(err) = MIGRATOR.run(&pool).await
        {
            pool.close().await;
            return Err(err.into());
        }
        let (sender, _) = broadcast::channel(1024);
        let claims: ClaimsSender = Arc::new(Mutex::new(Some(sender)));
        let writes = Arc::<WriteGate>::default();
        let housekeeping = GroupCommit::start(pool.clone(), writes.clone(), claims.clone());
        Ok(SqliteStore {
            pool,
            claims,
            writes,
            housekeeping,
        })
    }

    /// The underlying pool (ops tools and tests).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// How many claims, releases and first visits' profiles went to the database in how many
    /// transactions (tests and diagnostics).
    pub fn group_commit_stats(&self) -> GroupCommitStats {
        self.housekeeping.stats()
    }

    /// Waits for this writer's turn at the write gate, as long as the pool waits for a
    /// connection; every write holds one.
    async fn write_turn(&self, priority: Priority) -> Result<WriteTurn, StoreError> {
        self.writes
            .enter(priority, self.pool.options().get_acquire_timeout())
            .await
            .map_err(|_| StoreError::Unavailable("timed out waiting for the write turn".into()))
    }

    /// Begins a write transaction; the turn is asked for so that no write can skip the gate.
    async fn begin_write(
        &self,
        _turn: &WriteTurn,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, StoreError> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(map_sqlx)
    }

    fn claims_sender(&self) -> Option<broadcast::Sender<SessionClaim>> {
        group_commit::current(&self.claims)
    }
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

async fn quest_status(
    conn: &mut SqliteConnection,
    player: &str,
    quest: &str,
) -> Result<Option<StoredQuestStatus>, StoreError> {
    let row = sqlx::query("SELECT status FROM quest_states WHERE player_id = ?1 AND quest_id = ?2")
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

async fn profile_exists(conn: &mut SqliteConnection, player: &str) -> Result<bool, StoreError> {
    Ok(sqlx::query("SELECT 1 FROM profiles WHERE player_id = ?1")
        .bind(player)
        .fetch_optional(&mut *conn)
        .await?
        .is_some())
}

pub(super) async fn ensure_profile(
    conn: &mut SqliteConnection,
    player: &str,
) -> Result<(), StoreError> {
    sqlx::query("INSERT INTO profiles (player_id) VALUES (?1) ON CONFLICT (player_id) DO NOTHING")
        .bind(player)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// A quest that is not active: the error to answer with (unknown player when there is no profile).
async fn not_active(
    conn: &mut SqliteConnection,
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
    conn: &mut SqliteConnection,
    player: &str,
) -> Result<Option<PlayerRecord>, StoreError> {
    // One statement, so one snapshot without a transaction around it and one round trip to
    // the connection's worker thread instead of five (BEGIN, three SELECTs, COMMIT): every
    // session start runs this (RELIABILITY.md, scenario 6, fourth round). Column `kind` says
    // which table a row is from: 0 the profile, 1 a quest's state, 2 an objective's progress.
    let rows = sqlx::query(
        "SELECT 0 AS kind, NULL AS quest_id, NULL AS item, coins AS a, experience AS b, \
                tutorial_stage AS c, tracked_quest AS d FROM profiles WHERE player_id = ?1 \
         UNION ALL SELECT 1, quest_id, status, NULL, NULL, NULL, NULL \
                FROM quest_states WHERE player_id = ?1 \
         UNION ALL SELECT 2, quest_id, objective_id, progress, NULL, NULL, NULL \
                FROM objective_progress WHERE player_id = ?1 \
         ORDER BY kind",
    )
    .bind(player)
    .fetch_all(&mut *conn)
    .await?;
    let mut profile = None;
    let mut quests = BTreeMap::new();
    for row in rows {
        match row.try_get::<i64, _>("kind")? {
            0 => {
                profile = Some(ProfileRecord {
                    coins: row.try_get("a")?,
                    experience: row.try_get("b")?,
                    tutorial_stage: row.try_get("c")?,
                    tracked_quest: row.try_get("d")?,
                });
            }
            1 => {
                let status = StoredQuestStatus::parse(&row.try_get::<String, _>("item")?)?;
                quests.insert(
                    row.try_get::<String, _>("quest_id")?,
                    QuestRecord {
                        status,
                        progress: BTreeMap::new(),
                    },
                );
            }
            _ => {
                let quest: String = row.try_get("quest_id")?;
                let objective: String = row.try_get("item")?;
                let progress = super::progress_from_db(&quest, &objective, row.try_get("a")?)?;
                let Some(record) = quests.get_mut(&quest) else {
                    return Err(StoreError::Corrupt(format!(
                        "progress for quest {quest:?} that has no state"
                    )));
                };
                record.progress.insert(objective, progress);
            }
        }
    }
    Ok(profile.map(|profile| PlayerRecord { profile, quests }))
}

fn ledger_entry(row: &SqliteRow) -> Result<LedgerEntry, StoreError> {
    Ok(LedgerEntry {
        id: row.try_get("id")?,
        player_id: row.try_get("player_id")?,
        quest_id: row.try_get("quest_id")?,
        coins: row.try_get("coins")?,
        experience: row.try_get("experience")?,
        paid_at_ms: row.try_get("paid_at")?,
    })
}

const LEDGER_COLUMNS: &str = "id, player_id, quest_id, coins, experience, paid_at";

impl Store for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
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
                sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM profiles WHERE player_id = ?)")
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
            if let Some(record) = read_player(&mut *self.pool.acquire().await?, player).await? {
                return Ok(record);
            }
            // First visit: create the profile (another call may race us; DO NOTHING covers it).
            self.housekeeping.ensure_profile(player).await?;
            let record = read_player(&mut *self.pool.acquire().await?, player).await?;
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
            let turn = self.write_turn(Priority::Player).await?;
            let mut tx = self.begin_write(&turn).await?;
            ensure_profile(&mut tx, player).await?;
            if let Some(found) = quest_status(&mut tx, player, quest).await? {
                return Err(StoreError::QuestState {
                    quest: quest.to_owned(),
                    found: Some(found),
                    expected: "never accepted",
                });
            }
            sqlx::query(
                "INSERT INTO quest_states (player_id, quest_id, status) VALUES (?1, ?2, 'active')",
            )
            .bind(player)
            .bind(quest)
            .execute(&mut *tx)
            .await?;
            for objective in objectives {
                sqlx::query(
                    "INSERT INTO objective_progress (player_id, quest_id, objective_id, progress) \
                     VALUES (?1, ?2, ?3, 0)",
                )
                .bind(player)
                .bind(quest)
                .bind(objective)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
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
            let turn = self.write_turn(Priority::Player).await?;
            let mut tx = self.begin_write(&turn).await?;
            if !profile_exists(&mut tx, player).await? {
                return Err(StoreError::UnknownPlayer(player.to_owned()));
            }
            if let Some(event_id) = event_id {
                let inserted =
                    sqlx::query("INSERT INTO applied_events (event_id, player_id) VALUES (?1, ?2)")
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
                let status = quest_status(&mut tx, player, &advance.quest).await?;
                if status != Some(StoredQuestStatus::Active) {
                    return Err(not_active(&mut tx, player, &advance.quest, status).await);
                }
                let row = sqlx::query(
                    "INSERT INTO objective_progress (player_id, quest_id, objective_id, progress) \
                     VALUES (?1, ?2, ?3, min(?4, ?5)) \
                     ON CONFLICT (player_id, quest_id, objective_id) \
                     DO UPDATE SET progress = max(progress, min(progress + ?4, ?5)) \
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
            // BEGIN IMMEDIATE: the write lock is ours before we read the quest's state, so no
            // other writer can complete it between our check and our write.
            let turn = self.write_turn(Priority::Player).await?;
            let mut tx = self.begin_write(&turn).await?;
            let status = quest_status(&mut tx, player, quest).await?;
            if status != Some(StoredQuestStatus::Active) {
                return Err(not_active(&mut tx, player, quest, status).await);
            }
            let updated = sqlx::query(&format!(
                "UPDATE quest_states SET status = 'completed', completed_at = {NOW_MS} \
                 WHERE player_id = ?1 AND quest_id = ?2 AND status = 'active'"
            ))
            .bind(player)
            .bind(quest)
            .execute(&mut *tx)
            .await?;
            if updated.rows_affected() != 1 {
                return Err(StoreError::QuestState {
                    quest: quest.to_owned(),
                    found: quest_status(&mut tx, player, quest).await?,
                    expected: "active",
                });
            }
            let inserted = sqlx::query(
                "INSERT INTO reward_ledger (player_id, quest_id, coins, experience) VALUES (?1, ?2, ?3, ?4) \
                 RETURNING id",
            )
            .bind(player)
            .bind(quest)
            .bind(coins)
            .bind(experience)
            .fetch_one(&mut *tx)
            .await;
            let ledger_id: i64 = match inserted {
                Ok(row) => row.try_get(0)?,
                Err(err) if is_unique_violation(&err) => {
                    return Err(StoreError::AlreadyPaid {
                        quest: quest.to_owned(),
                    });
                }
                Err(err) => return Err(map_sqlx(err)),
            };
            let totals = sqlx::query(&format!(
                "UPDATE profiles SET coins = coins + ?2, experience = experience + ?3, updated_at = {NOW_MS} \
                 WHERE player_id = ?1 RETURNING coins, experience"
            ))
            .bind(player)
            .bind(coins)
            .bind(experience)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| StoreError::UnknownPlayer(player.to_owned()))?;
            let paid = Paid {
                ledger_id,
                coins,
                experience,
                total_coins: totals.try_get(0)?,
                total_experience: totals.try_get(1)?,
            };
            tx.commit().await?;
            Ok(paid)
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
            let _turn = self.write_turn(Priority::Player).await?;
            sqlx::query(&format!(
                "INSERT INTO profiles (player_id, tracked_quest) VALUES (?1, ?2) \
                 ON CONFLICT (player_id) DO UPDATE SET tracked_quest = excluded.tracked_quest, updated_at = {NOW_MS}"
            ))
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
            let _turn = self.write_turn(Priority::Player).await?;
            sqlx::query(&format!(
                "INSERT INTO profiles (player_id, tutorial_stage) VALUES (?1, ?2) \
                 ON CONFLICT (player_id) DO UPDATE SET tutorial_stage = excluded.tutorial_stage, updated_at = {NOW_MS}"
            ))
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
                "SELECT {LEDGER_COLUMNS} FROM reward_ledger WHERE player_id = ?1 ORDER BY id"
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
                "SELECT {LEDGER_COLUMNS} FROM reward_ledger WHERE player_id = ?1 AND quest_id = ?2"
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
            let count: i64 = sqlx::query("SELECT COUNT(*) FROM reward_ledger WHERE quest_id = ?1")
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
            self.housekeeping
                .claim(player, session_id, instance_id)
                .await
        })
    }

    fn session_owner<'a>(
        &'a self,
        player: &'a str,
    ) -> BoxFuture<'a, Result<Option<SessionClaim>, StoreError>> {
        Box::pin(async move {
            let row = sqlx::query(
                "SELECT player_id, session_id, instance_id, epoch FROM session_claims WHERE player_id = ?1",
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
        Box::pin(async move { self.housekeeping.release(player, session_id).await })
    }

    fn session_claims(&self) -> BoxFuture<'_, Result<BoxStream<'static, ClaimEvent>, StoreError>> {
        Box::pin(async move {
            match self.claims_sender() {
                Some(sender) => Ok(super::broadcast_claims(sender.subscribe())),
                None => Err(StoreError::Unavailable("the store is closed".into())),
            }
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
            let turn = self.write_turn(Priority::Housekeeping).await?;
            let mut tx = self.begin_write(&turn).await?;
            // One multi-row INSERT per chunk: each statement is a round trip to sqlx's SQLite
            // worker thread, and one per record cost more than the rest of a conversation step
            // (BENCHMARKS.md, "The transport's limit"). 5 binds a row stays far under SQLite's
            // variable limit (32,766).
            for chunk in records.chunks(AUDIT_ROWS_PER_INSERT) {
                let mut insert = sqlx::QueryBuilder::<Sqlite>::new(
                    "INSERT INTO audit_log (player_id, conversation, message, code, detail) ",
                );
                insert.push_values(chunk, |mut row, record| {
                    row.push_bind(&record.player_id)
                        .push_bind(&record.conversation)
                        .push_bind(&record.message)
                        .push_bind(&record.code)
                        .push_bind(&record.detail);
                });
                insert.build().execute(&mut *tx).await?;
            }
            tx.commit().await?;
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
                "SELECT id, at, player_id, conversation, message, code, detail FROM ( \
                   SELECT * FROM audit_log WHERE player_id = ?1 ORDER BY id DESC LIMIT ?2 \
                 ) ORDER BY id",
            )
            .bind(player)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| {
                Ok(AuditEntry {
                    id: row.try_get("id")?,
                    at_ms: row.try_get("at")?,
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
            let max_age_ms = i64::try_from(max_age.as_millis()).unwrap_or(i64::MAX);
            let _turn = self.write_turn(Priority::Housekeeping).await?;
            let done = sqlx::query(&format!("DELETE FROM audit_log WHERE at < {NOW_MS} - ?1"))
                .bind(max_age_ms)
                .execute(&self.pool)
                .await?;
            Ok(done.rows_affected())
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // Dropping the sender ends every claims stream.
            match self.claims.lock() {
                Ok(mut guard) => drop(guard.take()),
                Err(poisoned) => drop(poisoned.into_inner().take()),
            }
            self.housekeeping.close();
            self.pool.close().await;
        })
    }
}
