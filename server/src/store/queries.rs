//! [`Queries`]: the database work that is the same SQL on both databases, written once over
//! sqlx's [`Database`] and run on either.
//!
//! The trait has one implementation, for every database that can bind and read what the store
//! binds and reads; both of ours can. Its bounds are spelled out once, on that implementation:
//! code that names `DB: Queries` gets the methods without repeating them. Reads take the pool;
//! the steps of a write transaction take its connection.

use std::collections::BTreeMap;

use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, FromRow, IntoArguments, Pool, Type};

use super::backend::{Chore, Done};
use super::error::{is_unique_violation, map_sqlx};
use super::parties::{Party, PartyInvite, PartyRow, SharedHost, party_from_rows};
use super::sql::{self, SqlDialect};
use super::validate::progress_from_db;
use super::{
    AuditEntry, ContentMigration, ConversationVisits, GameServerRow, LedgerEntry, ObjectiveAdvance,
    Paid, PlayerRecord, ProfileRecord, QuestRecord, RollupRow, SessionClaim, Step, StoreError,
    StoredQuestStatus, Visit,
};

/// The number of rows a statement changed (sqlx has it on each backend's result, not on a trait).
pub trait RowsAffected {
    /// Rows inserted, updated or deleted.
    fn rows(&self) -> u64;
}

impl RowsAffected for sqlx::sqlite::SqliteQueryResult {
    fn rows(&self) -> u64 {
        self.rows_affected()
    }
}

impl RowsAffected for sqlx::postgres::PgQueryResult {
    fn rows(&self) -> u64 {
        self.rows_affected()
    }
}

/// One row of [`sql::READ_PLAYER`]: `kind` 0 is the profile (`a`..`d` its coins, experience,
/// tutorial stage and tracked quest), 1 a quest's state (`item` its status), 2 an objective's
/// progress (`item` the objective, `a` the progress), 3 a story variable (`item` its name, `d`
/// its value), 4 a node's visits (`quest_id` the conversation, `item` the node, `''` for the
/// opens, `a` the count, `b` the last showing).
#[derive(Debug, FromRow)]
pub struct PlayerRow {
    /// `i32`: PostgreSQL types the literal kinds INTEGER, and sqlx decodes an INTEGER into no
    /// wider Rust type there (SQLite's integers decode into any).
    kind: i32,
    quest_id: Option<String>,
    item: Option<String>,
    a: Option<i64>,
    b: Option<i64>,
    c: Option<i64>,
    d: Option<String>,
}

/// One row of [`sql::HELD`].
#[derive(Debug, FromRow)]
pub struct HeldRow {
    /// `i32`: see [`PlayerRow::kind`].
    kind: i32,
    id: Option<String>,
    sub: Option<String>,
    players: i64,
}

/// The store's SQL, run on `Self`'s connections.
pub trait Queries: Database + SqlDialect {
    /// `SELECT 1`, for `/readyz`.
    fn ping(pool: &Pool<Self>) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// True if the player has a profile.
    fn player_exists(
        pool: &Pool<Self>,
        player: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The player's profile and quests in one snapshot; `None` without a profile.
    fn read_player(
        pool: &Pool<Self>,
        player: &str,
    ) -> impl Future<Output = Result<Option<PlayerRecord>, StoreError>> + Send;

    /// [`Queries::read_player`] on `conn`, inside the caller's transaction (a step's, after its
    /// change).
    fn read_player_on(
        conn: &mut Self::Connection,
        player: &str,
    ) -> impl Future<Output = Result<Option<PlayerRecord>, StoreError>> + Send;

    /// The quest's status, read by `statement` ([`sql::QUEST_STATUS`], or
    /// [`Statements::quest_status_for_advance`](sql::Statements::quest_status_for_advance)).
    fn quest_status(
        conn: &mut Self::Connection,
        statement: &str,
        player: &str,
        quest: &str,
    ) -> impl Future<Output = Result<Option<StoredQuestStatus>, StoreError>> + Send;

    /// A quest that is not active: the error to answer with ([`StoreError::UnknownPlayer`] when
    /// the quest was never accepted and the player has no profile).
    fn not_active(
        conn: &mut Self::Connection,
        player: &str,
        quest: &str,
        found: Option<StoredQuestStatus>,
    ) -> impl Future<Output = StoreError> + Send;

    /// [`Change::Accept`](super::Change::Accept) as several statements, inside a write
    /// transaction that no other writer interleaves with (SQLite's).
    fn accept(
        conn: &mut Self::Connection,
        player: &str,
        quest: &str,
        objectives: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// [`Change::Complete`](super::Change::Complete)'s payment as several statements, inside a
    /// write transaction that no other writer interleaves with (SQLite's).
    fn complete(
        conn: &mut Self::Connection,
        player: &str,
        quest: &str,
        coins: i64,
        experience: i64,
    ) -> impl Future<Output = Result<Paid, StoreError>> + Send;

    /// [`Change::Advance`](super::Change::Advance) inside the caller's write transaction, the
    /// advances applied in `order`.
    fn advance(
        conn: &mut Self::Connection,
        player: &str,
        event_id: Option<&str>,
        advances: &[ObjectiveAdvance],
        order: &[usize],
    ) -> impl Future<Output = Result<Vec<u32>, StoreError>> + Send;

    /// A claim, a release or a first visit's profile.
    fn chore(
        conn: &mut Self::Connection,
        chore: &Chore,
    ) -> impl Future<Output = Result<Done, StoreError>> + Send;

    /// Sets (or clears) the tracked quest, creating the profile if missing.
    fn set_tracked_quest(
        conn: &mut Self::Connection,
        player: &str,
        quest: Option<&str>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Forgets an active quest's state and progress and untracks it, inside the caller's write
    /// transaction; [`StoreError::QuestState`] (nothing changed) if it is not active.
    fn abandon(
        conn: &mut Self::Connection,
        player: &str,
        quest: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// A step's audit row with its key ([`Statements::record_step`](sql::Statements)), in the
    /// step's transaction; `false` (nothing written) if the key is taken.
    fn record_step(
        conn: &mut Self::Connection,
        step: &Step<'_>,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// True if the step's audit row is committed ([`sql::STEP_RECORDED`]).
    fn step_recorded(
        conn: &mut Self::Connection,
        player: &str,
        key: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Sweeps closed windows, then parks the player's conversation ([`sql::PARK`]).
    fn park(
        conn: &mut Self::Connection,
        player: &str,
        token: &str,
        until_ms: i64,
        now_ms: i64,
        parked: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// [`sql::TAKE_PARKED`].
    fn take_parked(
        conn: &mut Self::Connection,
        player: &str,
        token: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;

    /// [`sql::DISCARD_PARKED`].
    fn discard_parked(
        conn: &mut Self::Connection,
        player: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// What stored players hold of the content ([`sql::HELD`]).
    fn held(
        pool: &Pool<Self>,
        now_ms: i64,
    ) -> impl Future<Output = Result<super::Held, StoreError>> + Send;

    /// The ids of the content migrations applied so far.
    fn applied_migrations(
        pool: &Pool<Self>,
    ) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;

    /// Applies a content migration inside the caller's write transaction; `false` (nothing
    /// done) if its id was applied before.
    fn apply_migration(
        conn: &mut Self::Connection,
        migration: &ContentMigration,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Moves the tutorial stage from `from` to `to`, inside the caller's write transaction;
    /// nothing if the stage is no longer `from`.
    fn move_tutorial(
        conn: &mut Self::Connection,
        player: &str,
        from: i64,
        to: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Creates the profile if missing, inside the caller's write transaction.
    fn ensure_profile(
        conn: &mut Self::Connection,
        player: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// [`Change::SetVariable`](super::Change::SetVariable) inside the caller's write
    /// transaction: the profile if missing, then the variable's row ([`sql::SET_VARIABLE`]).
    fn set_variable(
        conn: &mut Self::Connection,
        player: &str,
        name: &str,
        value: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// [`Store::record_visits`](super::Store::record_visits) inside the caller's write
    /// transaction, its `rows` (node, count to add, last showing) one per node, in node order.
    fn record_visits(
        conn: &mut Self::Connection,
        player: &str,
        conversation: &str,
        rows: &[(&str, i64, i64)],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// A player's ledger rows, oldest first.
    fn ledger(
        pool: &Pool<Self>,
        player: &str,
    ) -> impl Future<Output = Result<Vec<LedgerEntry>, StoreError>> + Send;

    /// The ledger row of a player and quest.
    fn ledger_entry(
        pool: &Pool<Self>,
        player: &str,
        quest: &str,
    ) -> impl Future<Output = Result<Option<LedgerEntry>, StoreError>> + Send;

    /// How many rewards were paid for this quest.
    fn ledger_count(
        pool: &Pool<Self>,
        quest: &str,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// The player's session claim.
    fn session_owner(
        pool: &Pool<Self>,
        player: &str,
    ) -> impl Future<Output = Result<Option<SessionClaim>, StoreError>> + Send;

    /// The player's latest `limit` audit rows, oldest first.
    fn audit_for_player(
        pool: &Pool<Self>,
        player: &str,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<AuditEntry>, StoreError>> + Send;

    /// Deletes audit rows older than `max_age_ms`; how many.
    fn prune_audit(
        pool: &Pool<Self>,
        max_age_ms: i64,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// [`Store::add_rollups`](super::Store::add_rollups) on `conn`, inside the caller's write
    /// transaction.
    fn add_rollups(
        conn: &mut Self::Connection,
        rows: &[RollupRow],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// [`Store::rollups`](super::Store::rollups).
    fn rollups(
        pool: &Pool<Self>,
        scope: &str,
        name: &str,
    ) -> impl Future<Output = Result<Vec<RollupRow>, StoreError>> + Send;

    /// [`Store::rollup_index`](super::Store::rollup_index).
    fn rollup_index(
        pool: &Pool<Self>,
    ) -> impl Future<Output = Result<Vec<RollupRow>, StoreError>> + Send;

    /// [`Store::issue_game_server`](super::Store::issue_game_server).
    fn issue_game_server(
        conn: &mut Self::Connection,
        row: &GameServerRow,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// [`Store::game_servers`](super::Store::game_servers).
    fn game_servers(
        pool: &Pool<Self>,
    ) -> impl Future<Output = Result<Vec<GameServerRow>, StoreError>> + Send;

    /// [`Store::game_server`](super::Store::game_server).
    fn game_server(
        pool: &Pool<Self>,
        id: &str,
    ) -> impl Future<Output = Result<Option<GameServerRow>, StoreError>> + Send;

    /// [`Store::revoke_game_server`](super::Store::revoke_game_server).
    fn revoke_game_server(
        conn: &mut Self::Connection,
        id: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<Option<GameServerRow>, StoreError>> + Send;

    /// [`Store::party_of`](super::Store::party_of), in one statement ([`sql::PARTY_OF`]).
    fn party_of(
        pool: &Pool<Self>,
        player: &str,
    ) -> impl Future<Output = Result<Option<Party>, StoreError>> + Send;

    /// The id of the player's party ([`sql::PARTY_ID_OF`]).
    fn party_id_of(
        conn: &mut Self::Connection,
        player: &str,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;

    /// The party's leader, its row locked until the transaction ends
    /// ([`Statements::lock_party`](sql::Statements::lock_party)); `None` if there is no such
    /// party.
    fn lock_party(
        conn: &mut Self::Connection,
        party: &str,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;

    /// The party's members in join order ([`sql::PARTY_MEMBERS`]).
    fn party_members(
        conn: &mut Self::Connection,
        party: &str,
    ) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;

    /// A new party with no member yet ([`sql::CREATE_PARTY`]); `false` if the id is taken.
    fn create_party(
        conn: &mut Self::Connection,
        party: &str,
        leader: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The player joins the party last ([`sql::JOIN_PARTY`]); `false` if they are in a party.
    fn join_party(
        conn: &mut Self::Connection,
        party: &str,
        player: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The player leaves whatever party they are in ([`sql::DROP_MEMBER`]).
    fn drop_member(
        conn: &mut Self::Connection,
        player: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Every member leaves the party ([`sql::CLEAR_MEMBERS`]).
    fn clear_members(
        conn: &mut Self::Connection,
        party: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The party's leader becomes `leader` ([`sql::SET_LEADER`]).
    fn set_leader(
        conn: &mut Self::Connection,
        party: &str,
        leader: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes the party, its members, invitations and shared host ([`sql::DELETE_PARTY`]).
    fn delete_party(
        conn: &mut Self::Connection,
        party: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Sweeps the invitee's invitations made before `expired_before`, then writes `invite`,
    /// replacing one of the same party and invitee.
    fn invite(
        conn: &mut Self::Connection,
        invite: &PartyInvite,
        expired_before: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes the invitee's invitation into the party if made at `live_since` or later;
    /// whether there was one ([`sql::TAKE_INVITE`]).
    fn take_invite(
        conn: &mut Self::Connection,
        party: &str,
        invitee: &str,
        live_since: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Deletes the invitee's invitation into the party, if any ([`sql::DROP_INVITE`]).
    fn drop_invite(
        conn: &mut Self::Connection,
        party: &str,
        invitee: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The invitee's invitations made at `live_since` or later, oldest first.
    fn party_invites(
        pool: &Pool<Self>,
        invitee: &str,
        live_since: i64,
    ) -> impl Future<Output = Result<Vec<PartyInvite>, StoreError>> + Send;

    /// [`sql::HOST_SHARED`]: the row as written or refreshed; `None` if another live host
    /// (another instance, or another NPC) keeps it.
    fn host_shared(
        conn: &mut Self::Connection,
        host: &SharedHost,
        dead_before: i64,
    ) -> impl Future<Output = Result<Option<SharedHost>, StoreError>> + Send;

    /// The instance in the party's host row, live or not ([`sql::SHARED_HOLDER`]).
    fn shared_holder(
        conn: &mut Self::Connection,
        party: &str,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;

    /// Refreshes the party's host row if `instance` holds it; whether it did.
    fn refresh_shared(
        conn: &mut Self::Connection,
        party: &str,
        instance: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Deletes the party's host row if `instance` holds it and refreshed it before `before_ms`.
    fn release_shared(
        conn: &mut Self::Connection,
        party: &str,
        instance: &str,
        before_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// Every database that runs statements on its connections and pool, and binds and reads the
/// values the store's statements do: SQLite and PostgreSQL. Rust does not infer these bounds
/// from `Database`, so they are spelled out, once, here.
impl<DB> Queries for DB
where
    DB: Database + SqlDialect,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    DB::QueryResult: RowsAffected,
    // What the statements bind and read.
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'r> bool: Decode<'r, DB> + Type<DB>,
    for<'r> String: Decode<'r, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
    for<'r> PlayerRow: FromRow<'r, DB::Row>,
    for<'r> HeldRow: FromRow<'r, DB::Row>,
    for<'r> LedgerEntry: FromRow<'r, DB::Row>,
    for<'r> SessionClaim: FromRow<'r, DB::Row>,
    for<'r> AuditEntry: FromRow<'r, DB::Row>,
    for<'r> RollupRow: FromRow<'r, DB::Row>,
    for<'r> GameServerRow: FromRow<'r, DB::Row>,
    for<'r> PartyRow: FromRow<'r, DB::Row>,
    for<'r> PartyInvite: FromRow<'r, DB::Row>,
    for<'r> SharedHost: FromRow<'r, DB::Row>,
{
    async fn ping(pool: &Pool<Self>) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(pool).await?;
        Ok(())
    }

    async fn player_exists(pool: &Pool<Self>, player: &str) -> Result<bool, StoreError> {
        Ok(sqlx::query_scalar(sql::PLAYER_EXISTS)
            .bind(player)
            .fetch_one(pool)
            .await?)
    }

    async fn read_player(
        pool: &Pool<Self>,
        player: &str,
    ) -> Result<Option<PlayerRecord>, StoreError> {
        let rows: Vec<PlayerRow> = sqlx::query_as(sql::READ_PLAYER)
            .bind(player)
            .fetch_all(pool)
            .await?;
        player_record(rows)
    }

    async fn read_player_on(
        conn: &mut Self::Connection,
        player: &str,
    ) -> Result<Option<PlayerRecord>, StoreError> {
        let rows: Vec<PlayerRow> = sqlx::query_as(sql::READ_PLAYER)
            .bind(player)
            .fetch_all(conn)
            .await?;
        player_record(rows)
    }

    async fn quest_status(
        conn: &mut Self::Connection,
        statement: &str,
        player: &str,
        quest: &str,
    ) -> Result<Option<StoredQuestStatus>, StoreError> {
        let status: Option<String> = sqlx::query_scalar(statement)
            .bind(player)
            .bind(quest)
            .fetch_optional(conn)
            .await?;
        status.map(|s| StoredQuestStatus::parse(&s)).transpose()
    }

    async fn not_active(
        conn: &mut Self::Connection,
        player: &str,
        quest: &str,
        found: Option<StoredQuestStatus>,
    ) -> StoreError {
        if found.is_none() {
            let known = sqlx::query_scalar(sql::PLAYER_EXISTS)
                .bind(player)
                .fetch_one(conn)
                .await;
            match known {
                Ok(false) => return StoreError::UnknownPlayer(player.to_owned()),
                Ok(true) => {}
                Err(err) => return map_sqlx(err),
            }
        }
        StoreError::QuestState {
            quest: quest.to_owned(),
            found,
            expected: "active",
        }
    }

    async fn accept(
        conn: &mut Self::Connection,
        player: &str,
        quest: &str,
        objectives: &[String],
    ) -> Result<(), StoreError> {
        sqlx::query(sql::ENSURE_PROFILE)
            .bind(player)
            .execute(&mut *conn)
            .await?;
        if let Some(found) = Self::quest_status(conn, sql::QUEST_STATUS, player, quest).await? {
            return Err(StoreError::QuestState {
                quest: quest.to_owned(),
                found: Some(found),
                expected: "never accepted",
            });
        }
        sqlx::query(sql::ACCEPT)
            .bind(player)
            .bind(quest)
            .execute(&mut *conn)
            .await?;
        for objective in objectives {
            sqlx::query(sql::START_OBJECTIVE)
                .bind(player)
                .bind(quest)
                .bind(objective.as_str())
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    async fn complete(
        conn: &mut Self::Connection,
        player: &str,
        quest: &str,
        coins: i64,
        experience: i64,
    ) -> Result<Paid, StoreError> {
        let status = Self::quest_status(conn, sql::QUEST_STATUS, player, quest).await?;
        if status != Some(StoredQuestStatus::Active) {
            return Err(Self::not_active(conn, player, quest, status).await);
        }
        let updated = sqlx::query(&Self::sql().complete)
            .bind(player)
            .bind(quest)
            .execute(&mut *conn)
            .await?;
        if updated.rows() != 1 {
            return Err(StoreError::QuestState {
                quest: quest.to_owned(),
                found: Self::quest_status(conn, sql::QUEST_STATUS, player, quest).await?,
                expected: "active",
            });
        }
        let paid = sqlx::query_scalar(sql::PAY)
            .bind(player)
            .bind(quest)
            .bind(coins)
            .bind(experience)
            .fetch_one(&mut *conn)
            .await;
        let ledger_id: i64 = match paid {
            Ok(id) => id,
            Err(err) if is_unique_violation(&err) => {
                return Err(StoreError::AlreadyPaid {
                    quest: quest.to_owned(),
                });
            }
            Err(err) => return Err(map_sqlx(err)),
        };
        let (total_coins, total_experience): (i64, i64) = sqlx::query_as(&Self::sql().add_reward)
            .bind(player)
            .bind(coins)
            .bind(experience)
            .fetch_optional(&mut *conn)
            .await?
            .ok_or_else(|| StoreError::UnknownPlayer(player.to_owned()))?;
        Ok(Paid {
            ledger_id,
            coins,
            experience,
            total_coins,
            total_experience,
        })
    }

    async fn advance(
        conn: &mut Self::Connection,
        player: &str,
        event_id: Option<&str>,
        advances: &[ObjectiveAdvance],
        order: &[usize],
    ) -> Result<Vec<u32>, StoreError> {
        let known: bool = sqlx::query_scalar(sql::PLAYER_EXISTS)
            .bind(player)
            .fetch_one(&mut *conn)
            .await?;
        if !known {
            return Err(StoreError::UnknownPlayer(player.to_owned()));
        }
        if let Some(event_id) = event_id {
            // A concurrent delivery of the same id waits here for us, then hits the key.
            let inserted = sqlx::query(sql::RECORD_EVENT)
                .bind(event_id)
                .bind(player)
                .execute(&mut *conn)
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
        let sql = Self::sql();
        let mut results = vec![0u32; advances.len()];
        for &index in order {
            let advance = &advances[index];
            let quest = advance.quest.as_str();
            let status =
                Self::quest_status(conn, &sql.quest_status_for_advance, player, quest).await?;
            if status != Some(StoredQuestStatus::Active) {
                return Err(Self::not_active(conn, player, quest, status).await);
            }
            let progress: i64 = sqlx::query_scalar(&sql.advance)
                .bind(player)
                .bind(quest)
                .bind(advance.objective.as_str())
                .bind(i64::from(advance.amount))
                .bind(i64::from(advance.target))
                .fetch_one(&mut *conn)
                .await?;
            results[index] = progress_from_db(quest, &advance.objective, progress)?;
        }
        Ok(results)
    }

    async fn chore(conn: &mut Self::Connection, chore: &Chore) -> Result<Done, StoreError> {
        match chore {
            Chore::Claim {
                player,
                session_id,
                instance_id,
                carrier,
            } => {
                let epoch = sqlx::query_scalar(&Self::sql().claim)
                    .bind(player.as_str())
                    .bind(session_id.as_str())
                    .bind(instance_id.as_str())
                    .bind(carrier.as_str())
                    .fetch_optional(conn)
                    .await?
                    .ok_or_else(|| StoreError::CarriedElsewhere(player.clone()))?;
                Ok(Done::Claimed(SessionClaim {
                    player_id: player.clone(),
                    session_id: session_id.clone(),
                    instance_id: instance_id.clone(),
                    epoch,
                }))
            }
            Chore::Release { player, session_id } => {
                let done = sqlx::query(sql::RELEASE)
                    .bind(player.as_str())
                    .bind(session_id.as_str())
                    .execute(conn)
                    .await?;
                Ok(Done::Released(done.rows() > 0))
            }
            Chore::Profile { player } => {
                sqlx::query(sql::ENSURE_PROFILE)
                    .bind(player.as_str())
                    .execute(conn)
                    .await?;
                Ok(Done::Profile)
            }
        }
    }

    async fn set_tracked_quest(
        conn: &mut Self::Connection,
        player: &str,
        quest: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(&Self::sql().set_tracked_quest)
            .bind(player)
            .bind(quest)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn abandon(
        conn: &mut Self::Connection,
        player: &str,
        quest: &str,
    ) -> Result<(), StoreError> {
        // Progress first: its rows reference the quest's state row.
        sqlx::query(sql::FORGET_ACTIVE_PROGRESS)
            .bind(player)
            .bind(quest)
            .execute(&mut *conn)
            .await?;
        let deleted = sqlx::query(sql::FORGET_ACTIVE_QUEST)
            .bind(player)
            .bind(quest)
            .execute(&mut *conn)
            .await?;
        if deleted.rows() != 1 {
            // Not active (never accepted, completed, or abandoned already): the caller rolls
            // back, so the progress delete above never happened either.
            let status = Self::quest_status(conn, sql::QUEST_STATUS, player, quest).await?;
            return Err(Self::not_active(conn, player, quest, status).await);
        }
        sqlx::query(sql::UNTRACK_QUEST)
            .bind(player)
            .bind(quest)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    async fn park(
        conn: &mut Self::Connection,
        player: &str,
        token: &str,
        until_ms: i64,
        now_ms: i64,
        parked: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(sql::SWEEP_PARKED)
            .bind(now_ms)
            .execute(&mut *conn)
            .await?;
        sqlx::query(sql::PARK)
            .bind(player)
            .bind(token)
            .bind(until_ms)
            .bind(parked)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    async fn held(pool: &Pool<Self>, now_ms: i64) -> Result<super::Held, StoreError> {
        let rows: Vec<HeldRow> = sqlx::query_as(sql::HELD)
            .bind(now_ms)
            .fetch_all(pool)
            .await?;
        let mut held = super::Held::default();
        for row in rows {
            let Some(id) = row.id else { continue };
            let players = u64::try_from(row.players).unwrap_or(0);
            match row.kind {
                0 => held.active_quests.push((id, players)),
                1 => held
                    .objectives
                    .push(((id, row.sub.unwrap_or_default()), players)),
                2 => held.tracked_quests.push((id, players)),
                3 => held.parked.push(id),
                other => {
                    return Err(StoreError::Corrupt(format!("unknown held kind {other}")));
                }
            }
        }
        Ok(held)
    }

    async fn applied_migrations(pool: &Pool<Self>) -> Result<Vec<String>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT id FROM applied_migrations ORDER BY id")
                .fetch_all(pool)
                .await?,
        )
    }

    async fn apply_migration(
        conn: &mut Self::Connection,
        migration: &ContentMigration,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        use super::Removal;
        let recorded = sqlx::query(
            "INSERT INTO applied_migrations (id, applied_ms) VALUES ($1, $2) \
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(migration.id.as_str())
        .bind(now_ms)
        .execute(&mut *conn)
        .await?;
        if recorded.rows() == 0 {
            return Ok(false);
        }
        for (old, new) in &migration.rename_quests {
            // The new state row first, so the progress rows' foreign key has it; then the old
            // one goes. A player holding both names fails the whole migration on the key.
            for statement in [
                "INSERT INTO quest_states (player_id, quest_id, status, accepted_at, completed_at) \
                 SELECT player_id, $2, status, accepted_at, completed_at FROM quest_states \
                 WHERE quest_id = $1",
                "UPDATE objective_progress SET quest_id = $2 WHERE quest_id = $1",
                "DELETE FROM quest_states WHERE quest_id = $1",
                "UPDATE reward_ledger SET quest_id = $2 WHERE quest_id = $1",
                "UPDATE profiles SET tracked_quest = $2 WHERE tracked_quest = $1",
            ] {
                sqlx::query(statement)
                    .bind(old.as_str())
                    .bind(new.as_str())
                    .execute(&mut *conn)
                    .await?;
            }
        }
        for (quest, renames) in &migration.rename_objectives {
            for (old, new) in renames {
                sqlx::query(
                    "UPDATE objective_progress SET objective_id = $3 \
                     WHERE quest_id = $1 AND objective_id = $2",
                )
                .bind(quest.as_str())
                .bind(old.as_str())
                .bind(new.as_str())
                .execute(&mut *conn)
                .await?;
            }
        }
        for (quest, removal) in &migration.remove_quests {
            if let Removal::Pay(reward) = removal {
                let (coins, experience) = (i64::from(reward.coins), i64::from(reward.experience));
                sqlx::query(
                    "INSERT INTO reward_ledger (player_id, quest_id, coins, experience) \
                     SELECT player_id, $1, $2, $3 FROM quest_states \
                     WHERE quest_id = $1 AND status = 'active'",
                )
                .bind(quest.as_str())
                .bind(coins)
                .bind(experience)
                .execute(&mut *conn)
                .await?;
                sqlx::query(
                    "UPDATE profiles SET coins = coins + $2, experience = experience + $3 \
                     WHERE player_id IN (SELECT player_id FROM quest_states \
                                         WHERE quest_id = $1 AND status = 'active')",
                )
                .bind(quest.as_str())
                .bind(coins)
                .bind(experience)
                .execute(&mut *conn)
                .await?;
            }
            match removal {
                Removal::Pay(_) | Removal::Complete => {
                    sqlx::query(&Self::sql().complete_everywhere)
                        .bind(quest.as_str())
                        .execute(&mut *conn)
                        .await?;
                }
                Removal::Abandon => {
                    for statement in [
                        "DELETE FROM objective_progress WHERE quest_id = $1 AND player_id IN \
                         (SELECT player_id FROM quest_states \
                          WHERE quest_id = $1 AND status = 'active')",
                        "DELETE FROM quest_states WHERE quest_id = $1 AND status = 'active'",
                    ] {
                        sqlx::query(statement)
                            .bind(quest.as_str())
                            .execute(&mut *conn)
                            .await?;
                    }
                }
            }
            sqlx::query("UPDATE profiles SET tracked_quest = NULL WHERE tracked_quest = $1")
                .bind(quest.as_str())
                .execute(&mut *conn)
                .await?;
        }
        Ok(true)
    }

    async fn take_parked(
        conn: &mut Self::Connection,
        player: &str,
        token: &str,
        now_ms: i64,
    ) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(sql::TAKE_PARKED)
            .bind(player)
            .bind(token)
            .bind(now_ms)
            .fetch_optional(conn)
            .await?)
    }

    async fn discard_parked(conn: &mut Self::Connection, player: &str) -> Result<(), StoreError> {
        sqlx::query(sql::DISCARD_PARKED)
            .bind(player)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn record_step(conn: &mut Self::Connection, step: &Step<'_>) -> Result<bool, StoreError> {
        let inserted = sqlx::query(&Self::sql().record_step)
            .bind(step.player)
            .bind(step.key)
            .bind(step.conversation)
            .bind(step.message)
            .bind(step.detail)
            .bind(step.recorded_us)
            .execute(conn)
            .await?;
        Ok(inserted.rows() == 1)
    }

    async fn step_recorded(
        conn: &mut Self::Connection,
        player: &str,
        key: &str,
    ) -> Result<bool, StoreError> {
        Ok(sqlx::query_scalar(sql::STEP_RECORDED)
            .bind(player)
            .bind(key)
            .fetch_one(conn)
            .await?)
    }

    async fn move_tutorial(
        conn: &mut Self::Connection,
        player: &str,
        from: i64,
        to: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(&Self::sql().move_tutorial)
            .bind(player)
            .bind(from)
            .bind(to)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn ensure_profile(conn: &mut Self::Connection, player: &str) -> Result<(), StoreError> {
        sqlx::query(sql::ENSURE_PROFILE)
            .bind(player)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn set_variable(
        conn: &mut Self::Connection,
        player: &str,
        name: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(sql::ENSURE_PROFILE)
            .bind(player)
            .execute(&mut *conn)
            .await?;
        sqlx::query(sql::SET_VARIABLE)
            .bind(player)
            .bind(name)
            .bind(value)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    async fn record_visits(
        conn: &mut Self::Connection,
        player: &str,
        conversation: &str,
        rows: &[(&str, i64, i64)],
    ) -> Result<(), StoreError> {
        // Multi-row upserts, one round trip per chunk; one row per node (ON CONFLICT DO UPDATE
        // refuses to touch a row twice), in node order (two instances lock rows in the same
        // order).
        for chunk in rows.chunks(sql::VISIT_ROWS_PER_UPSERT) {
            let statement = Self::DIALECT.record_visits(chunk.len());
            let mut query = sqlx::query(&statement).bind(player).bind(conversation);
            for (node, added, last) in chunk {
                query = query.bind(*node).bind(*added).bind(*last);
            }
            query.execute(&mut *conn).await?;
        }
        Ok(())
    }

    async fn ledger(pool: &Pool<Self>, player: &str) -> Result<Vec<LedgerEntry>, StoreError> {
        Ok(sqlx::query_as(&Self::sql().ledger)
            .bind(player)
            .fetch_all(pool)
            .await?)
    }

    async fn ledger_entry(
        pool: &Pool<Self>,
        player: &str,
        quest: &str,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        Ok(sqlx::query_as(&Self::sql().ledger_entry)
            .bind(player)
            .bind(quest)
            .fetch_optional(pool)
            .await?)
    }

    async fn ledger_count(pool: &Pool<Self>, quest: &str) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar(sql::LEDGER_COUNT)
            .bind(quest)
            .fetch_one(pool)
            .await?;
        u64::try_from(count).map_err(|_| StoreError::Corrupt(format!("negative count {count}")))
    }

    async fn session_owner(
        pool: &Pool<Self>,
        player: &str,
    ) -> Result<Option<SessionClaim>, StoreError> {
        Ok(sqlx::query_as(sql::SESSION_OWNER)
            .bind(player)
            .fetch_optional(pool)
            .await?)
    }

    async fn audit_for_player(
        pool: &Pool<Self>,
        player: &str,
        limit: u32,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        Ok(sqlx::query_as(&Self::sql().audit_for_player)
            .bind(player)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?)
    }

    async fn prune_audit(pool: &Pool<Self>, max_age_ms: i64) -> Result<u64, StoreError> {
        let done = sqlx::query(&Self::sql().prune_audit)
            .bind(max_age_ms)
            .execute(pool)
            .await?;
        Ok(done.rows())
    }

    async fn add_rollups(
        conn: &mut Self::Connection,
        rows: &[RollupRow],
    ) -> Result<(), StoreError> {
        // In key order, and one row per key: two instances flushing overlapping keys then lock
        // rows in the same order (PostgreSQL would otherwise deadlock them), and no statement
        // touches a row twice (which ON CONFLICT DO UPDATE refuses).
        let mut merged: BTreeMap<_, i64> = BTreeMap::new();
        for r in rows {
            let key = (
                r.scope.as_str(),
                r.name.as_str(),
                r.version.as_str(),
                r.locale.as_str(),
                r.metric.as_str(),
                r.subject.as_str(),
                r.detail.as_str(),
            );
            *merged.entry(key).or_default() += r.count;
        }
        let merged: Vec<_> = merged.into_iter().collect();
        // Multi-row upserts: one round trip per chunk, not per row. 8 binds a row stays far
        // under both databases' parameter limits.
        for chunk in merged.chunks(sql::ROLLUP_ROWS_PER_UPSERT) {
            let statement = sql::add_rollups(chunk.len());
            let mut query = sqlx::query(&statement);
            for ((scope, name, version, locale, metric, subject, detail), count) in chunk {
                query = query
                    .bind(*scope)
                    .bind(*name)
                    .bind(*version)
                    .bind(*locale)
                    .bind(*metric)
                    .bind(*subject)
                    .bind(*detail)
                    .bind(*count);
            }
            query.execute(&mut *conn).await?;
        }
        Ok(())
    }

    async fn rollups(
        pool: &Pool<Self>,
        scope: &str,
        name: &str,
    ) -> Result<Vec<RollupRow>, StoreError> {
        Ok(sqlx::query_as(sql::ROLLUPS)
            .bind(scope)
            .bind(name)
            .fetch_all(pool)
            .await?)
    }

    async fn rollup_index(pool: &Pool<Self>) -> Result<Vec<RollupRow>, StoreError> {
        Ok(sqlx::query_as(sql::ROLLUP_INDEX).fetch_all(pool).await?)
    }

    async fn issue_game_server(
        conn: &mut Self::Connection,
        row: &GameServerRow,
    ) -> Result<(), StoreError> {
        sqlx::query(sql::ISSUE_GAME_SERVER)
            .bind(row.id.as_str())
            .bind(row.name.as_str())
            .bind(row.players.as_str())
            .bind(row.secret_sha256.as_str())
            .bind(row.created_at_ms)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    async fn game_servers(pool: &Pool<Self>) -> Result<Vec<GameServerRow>, StoreError> {
        Ok(sqlx::query_as(sql::GAME_SERVERS).fetch_all(pool).await?)
    }

    async fn game_server(pool: &Pool<Self>, id: &str) -> Result<Option<GameServerRow>, StoreError> {
        Ok(sqlx::query_as(sql::GAME_SERVER)
            .bind(id)
            .fetch_optional(pool)
            .await?)
    }

    async fn revoke_game_server(
        conn: &mut Self::Connection,
        id: &str,
        now_ms: i64,
    ) -> Result<Option<GameServerRow>, StoreError> {
        Ok(sqlx::query_as(sql::REVOKE_GAME_SERVER)
            .bind(id)
            .bind(now_ms)
            .fetch_optional(&mut *conn)
            .await?)
    }

    async fn party_of(pool: &Pool<Self>, player: &str) -> Result<Option<Party>, StoreError> {
        let rows: Vec<PartyRow> = sqlx::query_as(sql::PARTY_OF)
            .bind(player)
            .fetch_all(pool)
            .await?;
        Ok(party_from_rows(rows))
    }

    async fn party_id_of(
        conn: &mut Self::Connection,
        player: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(sql::PARTY_ID_OF)
            .bind(player)
            .fetch_optional(conn)
            .await?)
    }

    async fn lock_party(
        conn: &mut Self::Connection,
        party: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(&Self::sql().lock_party)
            .bind(party)
            .fetch_optional(conn)
            .await?)
    }

    async fn party_members(
        conn: &mut Self::Connection,
        party: &str,
    ) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar(sql::PARTY_MEMBERS)
            .bind(party)
            .fetch_all(conn)
            .await?)
    }

    async fn create_party(
        conn: &mut Self::Connection,
        party: &str,
        leader: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let created = sqlx::query(sql::CREATE_PARTY)
            .bind(party)
            .bind(leader)
            .bind(now_ms)
            .execute(conn)
            .await?;
        Ok(created.rows() == 1)
    }

    async fn join_party(
        conn: &mut Self::Connection,
        party: &str,
        player: &str,
    ) -> Result<bool, StoreError> {
        let joined = sqlx::query(sql::JOIN_PARTY)
            .bind(party)
            .bind(player)
            .execute(conn)
            .await?;
        Ok(joined.rows() == 1)
    }

    async fn drop_member(conn: &mut Self::Connection, player: &str) -> Result<(), StoreError> {
        sqlx::query(sql::DROP_MEMBER)
            .bind(player)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn clear_members(conn: &mut Self::Connection, party: &str) -> Result<(), StoreError> {
        sqlx::query(sql::CLEAR_MEMBERS)
            .bind(party)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn set_leader(
        conn: &mut Self::Connection,
        party: &str,
        leader: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(sql::SET_LEADER)
            .bind(party)
            .bind(leader)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn delete_party(conn: &mut Self::Connection, party: &str) -> Result<(), StoreError> {
        for statement in sql::DELETE_PARTY {
            sqlx::query(statement)
                .bind(party)
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    async fn invite(
        conn: &mut Self::Connection,
        invite: &PartyInvite,
        expired_before: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(sql::SWEEP_INVITES)
            .bind(invite.invitee.as_str())
            .bind(expired_before)
            .execute(&mut *conn)
            .await?;
        sqlx::query(sql::INVITE)
            .bind(invite.party.as_str())
            .bind(invite.invitee.as_str())
            .bind(invite.inviter.as_str())
            .bind(invite.created_ms)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    async fn take_invite(
        conn: &mut Self::Connection,
        party: &str,
        invitee: &str,
        live_since: i64,
    ) -> Result<bool, StoreError> {
        let inviter: Option<String> = sqlx::query_scalar(sql::TAKE_INVITE)
            .bind(party)
            .bind(invitee)
            .bind(live_since)
            .fetch_optional(conn)
            .await?;
        Ok(inviter.is_some())
    }

    async fn drop_invite(
        conn: &mut Self::Connection,
        party: &str,
        invitee: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(sql::DROP_INVITE)
            .bind(party)
            .bind(invitee)
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn party_invites(
        pool: &Pool<Self>,
        invitee: &str,
        live_since: i64,
    ) -> Result<Vec<PartyInvite>, StoreError> {
        Ok(sqlx::query_as(sql::PARTY_INVITES)
            .bind(invitee)
            .bind(live_since)
            .fetch_all(pool)
            .await?)
    }

    async fn host_shared(
        conn: &mut Self::Connection,
        host: &SharedHost,
        dead_before: i64,
    ) -> Result<Option<SharedHost>, StoreError> {
        Ok(sqlx::query_as(sql::HOST_SHARED)
            .bind(host.party.as_str())
            .bind(host.npc.as_str())
            .bind(host.conversation.as_str())
            .bind(host.instance.as_str())
            .bind(host.refreshed_ms)
            .bind(dead_before)
            .fetch_optional(conn)
            .await?)
    }

    async fn shared_holder(
        conn: &mut Self::Connection,
        party: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(sql::SHARED_HOLDER)
            .bind(party)
            .fetch_optional(conn)
            .await?)
    }

    async fn refresh_shared(
        conn: &mut Self::Connection,
        party: &str,
        instance: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let refreshed = sqlx::query(sql::REFRESH_SHARED)
            .bind(party)
            .bind(instance)
            .bind(now_ms)
            .execute(conn)
            .await?;
        Ok(refreshed.rows() == 1)
    }

    async fn release_shared(
        conn: &mut Self::Connection,
        party: &str,
        instance: &str,
        before_ms: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(sql::RELEASE_SHARED)
            .bind(party)
            .bind(instance)
            .bind(before_ms)
            .execute(conn)
            .await?;
        Ok(())
    }
}

/// Folds [`sql::READ_PLAYER`]'s rows (ordered by kind) into the record; `None` without a
/// profile.
fn player_record(rows: Vec<PlayerRow>) -> Result<Option<PlayerRecord>, StoreError> {
    let missing = |what: &str| StoreError::Corrupt(format!("a player row without its {what}"));
    let mut profile = None;
    let mut quests = BTreeMap::new();
    let mut variables = BTreeMap::new();
    let mut visits: BTreeMap<String, ConversationVisits> = BTreeMap::new();
    for row in rows {
        match row.kind {
            0 => {
                profile = Some(ProfileRecord {
                    coins: row.a.ok_or_else(|| missing("coins"))?,
                    experience: row.b.ok_or_else(|| missing("experience"))?,
                    tutorial_stage: row.c.ok_or_else(|| missing("tutorial stage"))?,
                    tracked_quest: row.d,
                });
            }
            1 => {
                let quest = row.quest_id.ok_or_else(|| missing("quest"))?;
                let status = row.item.ok_or_else(|| missing("status"))?;
                let record = QuestRecord {
                    status: StoredQuestStatus::parse(&status)?,
                    progress: BTreeMap::new(),
                };
                quests.insert(quest, record);
            }
            2 => {
                let quest = row.quest_id.ok_or_else(|| missing("quest"))?;
                let objective = row.item.ok_or_else(|| missing("objective"))?;
                let progress = row.a.ok_or_else(|| missing("progress"))?;
                let progress = progress_from_db(&quest, &objective, progress)?;
                let Some(record) = quests.get_mut(&quest) else {
                    return Err(StoreError::Corrupt(format!(
                        "progress for quest {quest:?} that has no state"
                    )));
                };
                record.progress.insert(objective, progress);
            }
            3 => {
                let name = row.item.ok_or_else(|| missing("variable name"))?;
                let value = row.d.ok_or_else(|| missing("variable value"))?;
                variables.insert(name, value);
            }
            4 => {
                let conversation = row.quest_id.ok_or_else(|| missing("conversation"))?;
                let node = row.item.ok_or_else(|| missing("node"))?;
                let count = row.a.ok_or_else(|| missing("visit count"))?;
                let last = row.b.ok_or_else(|| missing("last visit"))?;
                let out_of_range = |what: &str, value: i64| {
                    StoreError::Corrupt(format!(
                        "{what} {value} of node {node:?} of conversation {conversation:?} is out \
                         of range"
                    ))
                };
                let count = u32::try_from(count).map_err(|_| out_of_range("visit count", count))?;
                let last = u64::try_from(last).map_err(|_| out_of_range("last visit", last))?;
                let visited = visits.entry(conversation).or_default();
                if node.is_empty() {
                    visited.opens = count;
                } else {
                    visited.nodes.insert(node, Visit { count, last });
                }
            }
            other => {
                return Err(StoreError::Corrupt(format!(
                    "unknown player row kind {other}"
                )));
            }
        }
    }
    Ok(profile.map(|profile| PlayerRecord {
        profile,
        quests,
        variables,
        visits,
    }))
}
