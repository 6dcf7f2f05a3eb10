//! The one [`Store`] implementation, shared by both databases, and [`Backend`]: what each
//! database does its own way.
//!
//! Here are the argument checks and every read and write the two databases do alike (their SQL
//! in [`sql`](super::sql), run by [`Queries`]). A backend supplies only where they differ for a
//! reason, each said at its place:
//!
//! - **Taking turns to write.** SQLite has one write lock per file: its writers queue at the
//!   store's write gate, then begin with `BEGIN IMMEDIATE`. PostgreSQL orders its writers with
//!   row locks and needs neither (the provided [`Backend::write_turn`] and
//!   [`Backend::begin_write`]).
//! - **Accepting and completing a quest** inside a step. SQLite runs several statements under
//!   its write lock (the provided [`Backend::accept_on`] and [`Backend::complete_on`]); it has no
//!   data-modifying CTEs. PostgreSQL does each in one statement of them: one round trip, and
//!   right with writers that interleave.
//! - **Claims, releases and first visits' profiles** ([`Chore`]). SQLite commits them many to a
//!   transaction (the group commit); PostgreSQL runs each at once and announces a claim to the
//!   other instances with NOTIFY in the claim's transaction.
//! - **The claims stream.** PostgreSQL LISTENs; a SQLite file serves one process, whose claims
//!   a broadcast channel carries.
//! - **The audit log's batch insert.** PostgreSQL binds one array a column (`UNNEST`); SQLite
//!   has no arrays and inserts multi-row `VALUES`.
//! - **Closing**, which ends the claims streams.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use sqlx::migrate::{Migrate, Migrator};
use sqlx::pool::PoolOptions;
use sqlx::{Connection, Database, Pool, Transaction};

use super::error::map_sqlx;
use super::parties::{self, MAX_PARTY_SIZE, Party, PartyInvite, SharedHost};
use super::queries::Queries;
use super::sql::SqlDialect;
use super::timings::WriteTimings;
use super::validate::{check_id, check_step, check_visits};
use super::write_gate::{Priority, WriteTurn};
use super::{
    Applied, AuditEntry, AuditRecord, Change, ClaimEvent, ConnectOptions, ContentMigration,
    GameServerRow, LedgerEntry, Paid, PlayerRecord, RollupRow, SessionClaim, SessionStore, Step,
    Stepped, Store, StoreError, TutorialMove, VisitDelta,
};
use crate::credentials::GameServer;

/// Opens a backend's pool (`pool` with its own settings) with the size and acquire timeout of
/// `options`, and runs `migrator` unless `options` says not to.
pub async fn open_pool<DB>(
    pool: PoolOptions<DB>,
    connect: <DB::Connection as Connection>::Options,
    options: &ConnectOptions,
    default_size: u32,
    migrator: &Migrator,
) -> Result<Pool<DB>, StoreError>
where
    DB: Database,
    DB::Connection: Migrate,
{
    let pool = pool
        .max_connections(options.max_connections.unwrap_or(default_size).max(1))
        .acquire_timeout(options.acquire_timeout)
        .connect_with(connect)
        .await
        .map_err(map_sqlx)?;
    if options.run_migrations
        && let Err(err) = migrator.run(&pool).await
    {
        pool.close().await;
        return Err(err.into());
    }
    Ok(pool)
}

/// A small write every session makes as it starts or ends: its claim, its release, a first
/// visit's profile. Owned, so that it can wait in SQLite's group commit queue.
#[derive(Debug)]
pub enum Chore {
    /// [`Store::claim_session`].
    Claim {
        player: String,
        session_id: String,
        instance_id: String,
        /// The credential whose channel carries the session; empty for a direct one.
        carrier: String,
    },
    /// [`Store::release_session`].
    Release { player: String, session_id: String },
    /// A first visit's profile, unless it exists.
    Profile { player: String },
}

/// What a [`Chore`] did.
#[derive(Debug)]
pub enum Done {
    /// The claim made.
    Claimed(SessionClaim),
    /// Whether the session still held the claim it released.
    Released(bool),
    /// The profile exists.
    Profile,
}

impl Done {
    /// The claim, if this is a claim's outcome.
    fn claimed(self) -> Result<SessionClaim, StoreError> {
        match self {
            Done::Claimed(claim) => Ok(claim),
            other => Err(other.mismatch()),
        }
    }

    /// Whether the release released, if this is a release's outcome.
    fn released(self) -> Result<bool, StoreError> {
        match self {
            Done::Released(released) => Ok(released),
            other => Err(other.mismatch()),
        }
    }

    /// `Ok` if this is a profile's outcome.
    fn profile(self) -> Result<(), StoreError> {
        match self {
            Done::Profile => Ok(()),
            other => Err(other.mismatch()),
        }
    }

    /// A chore answered with another kind's outcome: a bug, reported, not panicked.
    fn mismatch(self) -> StoreError {
        StoreError::Corrupt(format!(
            "a store chore got another kind's outcome, {self:?}"
        ))
    }
}

/// What a database does its own way. Every implementor is a [`Store`]. Arguments reach these
/// methods already checked.
pub trait Backend: Send + Sync + Sized + 'static {
    /// The sqlx database.
    type Db: Queries;

    /// The connection pool.
    fn pool(&self) -> &Pool<Self::Db>;

    /// Waits for this process's turn to write, as long as the pool waits for a connection, and
    /// holds it until dropped. By default none: a database with row locks orders its writers
    /// itself.
    fn write_turn(
        &self,
        priority: Priority,
    ) -> impl Future<Output = Result<Option<WriteTurn>, StoreError>> + Send {
        let _ = priority;
        async { Ok(None) }
    }

    /// Begins a transaction that will write. It asks for the turn so that no write can skip it.
    fn begin_write(
        &self,
        turn: &Option<WriteTurn>,
    ) -> impl Future<Output = Result<Transaction<'static, Self::Db>, StoreError>> + Send {
        let _ = turn;
        async { Ok(self.pool().begin().await?) }
    }

    /// Begins a transaction for best-effort rows (the audit log's refusals and trails, the
    /// analytics' counts): rows a power loss may take the last of, never a change of player
    /// state. By default [`Backend::begin_write`].
    fn begin_best_effort_write(
        &self,
        turn: &Option<WriteTurn>,
    ) -> impl Future<Output = Result<Transaction<'static, Self::Db>, StoreError>> + Send {
        self.begin_write(turn)
    }

    /// Where best-effort statements outside a transaction run (pruning the audit log). By
    /// default the pool.
    fn best_effort_pool(&self) -> &Pool<Self::Db> {
        self.pool()
    }

    /// Where the writes' time goes, where the backend measures it (SQLite's write gate).
    fn write_timings(&self) -> Option<WriteTimings> {
        None
    }

    /// Accepts a quest on `conn`, inside the caller's write transaction (a step's). By default
    /// [`Queries::accept`]'s several statements, which is right only where write transactions
    /// never interleave (SQLite's, under `BEGIN IMMEDIATE`): elsewhere a concurrent accept would
    /// fail on the primary key, not as [`StoreError::QuestState`].
    fn accept_on(
        conn: &mut <Self::Db as Database>::Connection,
        player: &str,
        quest: &str,
        objectives: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        Self::Db::accept(conn, player, quest, objectives)
    }

    /// Completes and pays on `conn`, inside the caller's write transaction (a step's). By default
    /// [`Queries::complete`]'s several statements: right where write transactions never
    /// interleave: the write lock is ours before we read the quest's state, so no other writer can
    /// complete it between our check and our write (the ledger's unique key is the backstop
    /// should the state ever say otherwise).
    fn complete_on(
        conn: &mut <Self::Db as Database>::Connection,
        player: &str,
        quest: &str,
        coins: i64,
        experience: i64,
    ) -> impl Future<Output = Result<Paid, StoreError>> + Send {
        Self::Db::complete(conn, player, quest, coins, experience)
    }

    /// [`Store::step_applied`]. By default, a read once this process's earlier writes are done
    /// (the write turn): where every writer is in this process and takes turns (SQLite), no
    /// transaction can still hold the key after that.
    fn step_applied(
        &self,
        player: &str,
        key: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        async move {
            let _turn = self.write_turn(Priority::Player).await?;
            let mut conn = self.pool().acquire().await?;
            Self::Db::step_recorded(&mut conn, player, key).await
        }
    }

    /// [`Store::apply_step`], its arguments checked (`order` from `check_step`). By default
    /// [`run_step`] in a write transaction of its own.
    fn step(
        &self,
        step: &Step<'_>,
        order: Vec<usize>,
    ) -> impl Future<Output = Result<Stepped, StoreError>> + Send {
        async move {
            let turn = self.write_turn(Priority::Player).await?;
            let mut tx = self.begin_write(&turn).await?;
            let stepped = run_step::<Self>(&mut tx, step, &order).await?;
            tx.commit().await.map_err(|e| map_sqlx(e).at_commit())?;
            Ok(stepped)
        }
    }

    /// Runs a claim, a release or a first visit's profile.
    fn chore(&self, chore: Chore) -> impl Future<Output = Result<Done, StoreError>> + Send;

    /// [`Store::session_claims`].
    fn claims(
        &self,
    ) -> impl Future<Output = Result<BoxStream<'static, ClaimEvent>, StoreError>> + Send;

    /// [`Store::record_audit`], with at least one record.
    fn append_audit(
        &self,
        records: &[AuditRecord],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// [`Store::close`].
    fn shut_down(&self) -> impl Future<Output = ()> + Send;
}

/// A step's audit row, its change and its tutorial move, on `conn` inside the caller's write
/// transaction, and the player read back: the audit row first, so that a key already taken
/// stops the step before it changes anything (the caller rolls back on any error).
pub async fn run_step<B: Backend>(
    conn: &mut <B::Db as Database>::Connection,
    step: &Step<'_>,
    order: &[usize],
) -> Result<Stepped, StoreError> {
    let player = step.player;
    if !B::Db::record_step(conn, step).await? {
        return Err(StoreError::StepApplied {
            key: step.key.to_owned(),
        });
    }
    let applied = change::<B>(conn, step, order).await?;
    if let Some(TutorialMove { from, to }) = step.tutorial {
        B::Db::move_tutorial(conn, player, from, to).await?;
    }
    let record = B::Db::read_player_on(conn, player)
        .await?
        .ok_or_else(|| StoreError::Corrupt(format!("no profile of {player:?} after its step")))?;
    Ok(Stepped { applied, record })
}

/// A step's change, on `conn` inside the step's transaction.
async fn change<B: Backend>(
    conn: &mut <B::Db as Database>::Connection,
    step: &Step<'_>,
    order: &[usize],
) -> Result<Applied, StoreError> {
    let player = step.player;
    Ok(match step.change {
        Change::Accept { quest, objectives } => {
            B::accept_on(conn, player, quest, objectives).await?;
            Applied::Accepted
        }
        Change::Advance { event_id, advances } => {
            Applied::Advanced(B::Db::advance(conn, player, event_id, advances, order).await?)
        }
        Change::Complete {
            quest,
            coins,
            experience,
            advances,
        } => {
            if !advances.is_empty() {
                B::Db::advance(conn, player, None, advances, order).await?;
            }
            Applied::Paid(B::complete_on(conn, player, quest, coins, experience).await?)
        }
        Change::Track { quest } => {
            B::Db::set_tracked_quest(conn, player, quest).await?;
            Applied::Tracked
        }
        Change::Abandon { quest } => {
            B::Db::abandon(conn, player, quest).await?;
            Applied::Abandoned
        }
        Change::Profile => {
            B::Db::ensure_profile(conn, player).await?;
            Applied::Profile
        }
        Change::SetVariable { name, value } => {
            B::Db::set_variable(conn, player, name, value).await?;
            Applied::VariableSet
        }
    })
}

impl<B: Backend> SessionStore for B {
    fn backend(&self) -> &'static str {
        B::Db::DIALECT.name()
    }

    fn load_player<'a>(
        &'a self,
        player: &'a str,
    ) -> BoxFuture<'a, Result<PlayerRecord, StoreError>> {
        Box::pin(async move {
            check_id("player id", player)?;
            if let Some(record) = B::Db::read_player(self.pool(), player).await? {
                return Ok(record);
            }
            // First visit: create the profile (another call may race us; it creates nothing
            // when the profile exists), then read it.
            let profile = Chore::Profile {
                player: player.to_owned(),
            };
            self.chore(profile).await?.profile()?;
            let record = B::Db::read_player(self.pool(), player).await?;
            record.ok_or_else(|| {
                StoreError::Corrupt(format!("profile of {player:?} vanished after insert"))
            })
        })
    }

    fn park_conversation<'a>(
        &'a self,
        player: &'a str,
        token: &'a str,
        until_ms: i64,
        now_ms: i64,
        parked: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            check_id("player id", player)?;
            check_id("resume token", token)?;
            let turn = self.write_turn(Priority::Player).await?;
            let mut tx = self.begin_write(&turn).await?;
            B::Db::park(&mut tx, player, token, until_ms, now_ms, parked).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn take_parked<'a>(
        &'a self,
        player: &'a str,
        token: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(async move {
            check_id("player id", player)?;
            if token.is_empty() || token.len() > super::MAX_ID_LEN {
                return Ok(None);
            }
            let _turn = self.write_turn(Priority::Player).await?;
            let mut conn = self.pool().acquire().await?;
            B::Db::take_parked(&mut conn, player, token, now_ms).await
        })
    }

    fn discard_parked<'a>(&'a self, player: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            check_id("player id", player)?;
            let _turn = self.write_turn(Priority::Player).await?;
            let mut conn = self.pool().acquire().await?;
            B::Db::discard_parked(&mut conn, player).await
        })
    }
}

impl<B: Backend> Store for B {
    fn ping(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(B::Db::ping(self.pool()))
    }

    fn player_exists<'a>(&'a self, player: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            check_id("player id", player)?;
            B::Db::player_exists(self.pool(), player).await
        })
    }

    fn ledger<'a>(
        &'a self,
        player: &'a str,
    ) -> BoxFuture<'a, Result<Vec<LedgerEntry>, StoreError>> {
        Box::pin(B::Db::ledger(self.pool(), player))
    }

    fn ledger_entry<'a>(
        &'a self,
        player: &'a str,
        quest: &'a str,
    ) -> BoxFuture<'a, Result<Option<LedgerEntry>, StoreError>> {
        Box::pin(B::Db::ledger_entry(self.pool(), player, quest))
    }

    fn ledger_count<'a>(&'a self, quest: &'a str) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(B::Db::ledger_count(self.pool(), quest))
    }

    fn claim_session_for<'a>(
        &'a self,
        player: &'a str,
        session_id: &'a str,
        instance_id: &'a str,
        carrier: Option<&'a str>,
    ) -> BoxFuture<'a, Result<SessionClaim, StoreError>> {
        Box::pin(async move {
            check_id("player id", player)?;
            check_id("session id", session_id)?;
            check_id("instance id", instance_id)?;
            let claim = Chore::Claim {
                player: player.to_owned(),
                session_id: session_id.to_owned(),
                instance_id: instance_id.to_owned(),
                carrier: carrier.unwrap_or_default().to_owned(),
            };
            self.chore(claim).await?.claimed()
        })
    }

    fn session_owner<'a>(
        &'a self,
        player: &'a str,
    ) -> BoxFuture<'a, Result<Option<SessionClaim>, StoreError>> {
        Box::pin(B::Db::session_owner(self.pool(), player))
    }

    fn release_session<'a>(
        &'a self,
        player: &'a str,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let release = Chore::Release {
                player: player.to_owned(),
                session_id: session_id.to_owned(),
            };
            self.chore(release).await?.released()
        })
    }

    fn session_claims(&self) -> BoxFuture<'_, Result<BoxStream<'static, ClaimEvent>, StoreError>> {
        Box::pin(self.claims())
    }

    fn apply_step<'a>(&'a self, step: &'a Step<'a>) -> BoxFuture<'a, Result<Stepped, StoreError>> {
        Box::pin(async move {
            let order = check_step(step)?;
            self.step(step, order).await
        })
    }

    fn step_applied<'a>(
        &'a self,
        player: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            check_id("player id", player)?;
            Backend::step_applied(self, player, key).await
        })
    }

    fn record_visits<'a>(
        &'a self,
        player: &'a str,
        conversation: &'a str,
        opens: u32,
        visits: &'a [VisitDelta],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            check_visits(player, conversation, visits)?;
            // One row per node, in node order (the open row, node '', first): deltas of the
            // same node add up (at most u32::MAX) and keep the largest `last`.
            let mut merged: BTreeMap<&str, (u32, u64)> = BTreeMap::new();
            if opens > 0 {
                merged.insert("", (opens, 0));
            }
            for visit in visits {
                let (added, last) = merged.entry(visit.node.as_str()).or_default();
                *added = added.saturating_add(visit.added);
                *last = (*last).max(visit.last);
            }
            let rows: Vec<(&str, i64, i64)> = merged
                .into_iter()
                .filter(|(_, (added, last))| *added > 0 || *last > 0)
                .map(|(node, (added, last))| {
                    // `last` was checked to fit.
                    (
                        node,
                        i64::from(added),
                        i64::try_from(last).unwrap_or(i64::MAX),
                    )
                })
                .collect();
            if rows.is_empty() {
                return Ok(());
            }
            let turn = self.write_turn(Priority::Player).await?;
            let mut tx = self.begin_write(&turn).await?;
            B::Db::record_visits(&mut tx, player, conversation, &rows).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn applied_migrations(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(B::Db::applied_migrations(self.pool()))
    }

    fn apply_migration<'a>(
        &'a self,
        migration: &'a ContentMigration,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            check_id("migration id", &migration.id)?;
            let turn = self.write_turn(Priority::Player).await?;
            let mut tx = self.begin_write(&turn).await?;
            let applied = B::Db::apply_migration(&mut tx, migration, now_ms).await?;
            tx.commit().await?;
            Ok(applied)
        })
    }

    fn held(&self, now_ms: i64) -> BoxFuture<'_, Result<super::Held, StoreError>> {
        Box::pin(B::Db::held(self.pool(), now_ms))
    }

    fn record_audit<'a>(
        &'a self,
        records: &'a [AuditRecord],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            if records.is_empty() {
                return Ok(());
            }
            self.append_audit(records).await
        })
    }

    fn audit_for_player<'a>(
        &'a self,
        player: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<AuditEntry>, StoreError>> {
        Box::pin(B::Db::audit_for_player(self.pool(), player, limit))
    }

    fn prune_audit(&self, max_age: Duration) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(async move {
            let max_age_ms = i64::try_from(max_age.as_millis()).unwrap_or(i64::MAX);
            let _turn = self.write_turn(Priority::Housekeeping).await?;
            B::Db::prune_audit(self.best_effort_pool(), max_age_ms).await
        })
    }

    fn add_rollups<'a>(&'a self, rows: &'a [RollupRow]) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            if rows.is_empty() {
                return Ok(());
            }
            let turn = self.write_turn(Priority::Housekeeping).await?;
            let mut tx = self.begin_best_effort_write(&turn).await?;
            B::Db::add_rollups(&mut tx, rows).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn rollups<'a>(
        &'a self,
        scope: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Vec<RollupRow>, StoreError>> {
        Box::pin(B::Db::rollups(self.pool(), scope, name))
    }

    fn rollup_index(&self) -> BoxFuture<'_, Result<Vec<RollupRow>, StoreError>> {
        Box::pin(B::Db::rollup_index(self.pool()))
    }

    fn issue_game_server<'a>(
        &'a self,
        server: &'a GameServer,
        secret_sha256: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let row = GameServerRow {
                id: server.id.clone(),
                name: server.name.clone(),
                players: server.players.join(" "),
                created_at_ms: server.created_at_ms,
                revoked_at_ms: None,
                secret_sha256: secret_sha256.to_owned(),
            };
            let turn = self.write_turn(Priority::Housekeeping).await?;
            let mut tx = self.begin_best_effort_write(&turn).await?;
            B::Db::issue_game_server(&mut tx, &row).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn game_servers(&self) -> BoxFuture<'_, Result<Vec<GameServer>, StoreError>> {
        Box::pin(async move {
            let rows = B::Db::game_servers(self.pool()).await?;
            Ok(rows.into_iter().map(|row| row.into_parts().0).collect())
        })
    }

    fn game_server<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<(GameServer, String)>, StoreError>> {
        Box::pin(async move {
            let row = B::Db::game_server(self.pool(), id).await?;
            Ok(row.map(GameServerRow::into_parts))
        })
    }

    fn revoke_game_server<'a>(
        &'a self,
        id: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<Option<GameServer>, StoreError>> {
        Box::pin(async move {
            let turn = self.write_turn(Priority::Housekeeping).await?;
            let mut tx = self.begin_best_effort_write(&turn).await?;
            let row = B::Db::revoke_game_server(&mut tx, id, now_ms).await?;
            tx.commit().await?;
            Ok(row.map(|row| row.into_parts().0))
        })
    }

    fn party_of<'a>(&'a self, player: &'a str) -> BoxFuture<'a, Result<Option<Party>, StoreError>> {
        Box::pin(async move {
            check_id("player id", player)?;
            B::Db::party_of(self.pool(), player).await
        })
    }

    // Every party write below: a write transaction of its own, at the write gate (SQLite),
    // committed at `synchronous = FULL` like every player's state (ARCHITECTURE.md, the
    // invariant on what commits at NORMAL).

    fn form_party<'a>(
        &'a self,
        party: &'a str,
        leader: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<Party, StoreError>> {
        Box::pin(async move {
            check_id("party id", party)?;
            check_id("player id", leader)?;
            let turn = self.write_turn(Priority::Player).await?;
            let mut tx = self.begin_write(&turn).await?;
            let formed = parties::form::<B::Db>(&mut tx, party, leader, now_ms).await?;
            tx.commit().await?;
            Ok(formed)
        })
    }

    fn invite_to_party<'a>(
        &'a self,
        inviter: &'a str,
        invitee: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<PartyInvite, StoreError>> {
        Box::pin(async move {
            check_id("player id", inviter)?;
            check_id("player id", invitee)?;
            let turn = self.write_turn(Priority::Player).await?;
            let mut tx = self.begin_write(&turn).await?;
            let invite = parties::invite::<B::Db>(&mut tx, inviter, invitee, now_ms).await?;
            tx.commit().await?;
            Ok(invite)
        })
    }

    fn accept_invite<'a>(
        &'a self,
        player: &'a str,
        party: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<Party, StoreError>> {
        Box::pin(async move {
            check_id("player id", player)?;
            check_id("party id", party)?;
            let turn = self.write_turn(Priority::Player).await?;
            let mut tx = self.begin_write(&turn).await?;
            let joined = parties::accept::<B::Db>(&mut tx, player, party, now_ms).await?;
            tx.commit().await?;
            Ok(joined)
        })
    }

    fn leave_party<'a>(
        &'a self,
        player: &'a str,
    ) -> BoxFuture<'a, Result<Option<Party>, StoreError>> {
        Box::pin(async move {
            check_id("player id", player)?;
            let turn = self.write_turn(Priority::Player).await?;
            let mut tx = self.begin_write(&turn).await?;
            let left = parties::leave::<B::Db>(&mut tx, player).await?;
            tx.commit().await?;
            Ok(left)
        })
    }

    fn hand_on_leadership<'a>(
        &'a self,
        player: &'a str,
    ) -> BoxFuture<'a, Result<Option<Party>, StoreError>> {
        Box::pin(async move {
            check_id("player id", player)?;
            let turn = self.write_turn(Priority::Player).await?;
            let mut tx = self.begin_write(&turn).await?;
            let party = parties::hand_on::<B::Db>(&mut tx, player).await?;
            tx.commit().await?;
            Ok(party)
        })
    }

    fn declare_party<'a>(
        &'a self,
        party: &'a str,
        leader: &'a str,
        members: &'a [String],
        now_ms: i64,
    ) -> BoxFuture<'a, Result<Party, StoreError>> {
        Box::pin(async move {
            check_id("party id", party)?;
            check_id("player id", leader)?;
            for member in members {
                check_id("player id", member)?;
            }
            let members = parties::distinct(members);
            if !members.contains(&leader) {
                return Err(StoreError::NotAMember);
            }
            if members.len() > MAX_PARTY_SIZE {
                return Err(StoreError::PartyFull);
            }
            let turn = self.write_turn(Priority::Player).await?;
            let mut tx = self.begin_write(&turn).await?;
            let declared =
                parties::declare::<B::Db>(&mut tx, party, leader, &members, now_ms).await?;
            tx.commit().await?;
            Ok(declared)
        })
    }

    fn party_invites<'a>(
        &'a self,
        player: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<Vec<PartyInvite>, StoreError>> {
        Box::pin(async move {
            check_id("player id", player)?;
            let live_since = now_ms.saturating_sub(parties::INVITE_TTL_MS);
            B::Db::party_invites(self.pool(), player, live_since).await
        })
    }

    fn host_shared<'a>(
        &'a self,
        party: &'a str,
        npc: &'a str,
        conversation: &'a str,
        instance: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<SharedHost, StoreError>> {
        Box::pin(async move {
            check_id("party id", party)?;
            check_id("npc id", npc)?;
            check_id("conversation id", conversation)?;
            check_id("instance id", instance)?;
            let host = SharedHost {
                party: party.to_owned(),
                npc: npc.to_owned(),
                conversation: conversation.to_owned(),
                instance: instance.to_owned(),
                refreshed_ms: now_ms,
            };
            let turn = self.write_turn(Priority::Player).await?;
            let mut tx = self.begin_write(&turn).await?;
            let hosted = parties::host::<B::Db>(&mut tx, &host).await?;
            tx.commit().await?;
            Ok(hosted)
        })
    }

    fn refresh_shared<'a>(
        &'a self,
        party: &'a str,
        instance: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            check_id("party id", party)?;
            check_id("instance id", instance)?;
            let turn = self.write_turn(Priority::Housekeeping).await?;
            let mut tx = self.begin_write(&turn).await?;
            let refreshed = B::Db::refresh_shared(&mut tx, party, instance, now_ms).await?;
            tx.commit().await?;
            Ok(refreshed)
        })
    }

    fn release_shared<'a>(
        &'a self,
        party: &'a str,
        instance: &'a str,
        before_ms: i64,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            check_id("party id", party)?;
            check_id("instance id", instance)?;
            let turn = self.write_turn(Priority::Housekeeping).await?;
            let mut tx = self.begin_write(&turn).await?;
            B::Db::release_shared(&mut tx, party, instance, before_ms).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.shut_down())
    }

    fn write_timings(&self) -> Option<WriteTimings> {
        Backend::write_timings(self)
    }
}
