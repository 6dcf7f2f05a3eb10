//! [`StoreError`] and the one place where sqlx errors become store errors.

use std::fmt;

/// What a quest's stored state is. `None` in [`StoreError::QuestState`] means "never accepted".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StoredQuestStatus {
    /// Accepted and not yet completed: objectives may advance, the quest may be completed.
    Active,
    /// Completed: its reward is in the ledger.
    Completed,
}

impl StoredQuestStatus {
    /// The value kept in the `quest_states.status` column.
    pub fn as_str(self) -> &'static str {
        match self {
            StoredQuestStatus::Active => "active",
            StoredQuestStatus::Completed => "completed",
        }
    }

    /// Parses the column value; anything else is [`StoreError::Corrupt`].
    pub fn parse(value: &str) -> Result<Self, StoreError> {
        match value {
            "active" => Ok(StoredQuestStatus::Active),
            "completed" => Ok(StoredQuestStatus::Completed),
            other => Err(StoreError::Corrupt(format!(
                "unknown quest status {other:?}"
            ))),
        }
    }
}

impl fmt::Display for StoredQuestStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Renders `found` for messages: "never accepted", "active" or "completed".
struct Found(Option<StoredQuestStatus>);

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("never accepted"),
            Some(status) => status.fmt(f),
        }
    }
}

/// Everything a [`Store`](super::Store) call can fail with.
///
/// Every error leaves the database exactly as it was before the call (each write method is one
/// transaction that is rolled back on any error), with one caveat that only
/// [`StoreError::Unavailable`] carries: when the connection dies while a COMMIT is in flight the
/// store cannot know whether the commit landed. That is why every write that matters is
/// idempotent at the database level (a reward has a unique ledger key, an event id is recorded in
/// the same transaction), so retrying after `Unavailable` never applies anything twice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The database could not be reached or could not serve the request right now: pool timed
    /// out, connection refused or lost, server shutting down, SQLite busy or locked, a
    /// serialization failure or deadlock. Retryable.
    #[error("store unavailable: {0}")]
    Unavailable(String),

    /// The connection was lost while the transaction's COMMIT was in flight: the change may or
    /// may not have been applied, and only the database knows. A step's caller finds out with
    /// [`Store::step_applied`](super::Store::step_applied) before it tells a player anything.
    /// Retryable: a retry of a step under the same key applies it at most once.
    #[error("outcome unknown: {0}")]
    OutcomeUnknown(String),

    /// A step with this idempotency key was applied before (its audit row exists): this call
    /// applied nothing. The caller answers with what the first one did.
    #[error("step {key:?} was applied before")]
    StepApplied {
        /// The step's idempotency key.
        key: String,
    },

    /// The quest is not in the state the operation needs. `found` is `None` when the player never
    /// accepted it. Nothing changed.
    #[error("quest {quest:?} is {found_text}, the operation needs it {expected}", found_text = Found(*.found))]
    QuestState {
        /// The quest id.
        quest: String,
        /// Its stored state, `None` when it was never accepted.
        found: Option<StoredQuestStatus>,
        /// What the operation needed: "never accepted" (accept) or "active" (advance, complete).
        expected: &'static str,
    },

    /// The reward ledger already holds this player's reward for this quest: the database's unique
    /// key refused a second payment. Nothing changed.
    #[error("the reward for quest {quest:?} was already paid")]
    AlreadyPaid {
        /// The quest id.
        quest: String,
    },

    /// This event id was applied before (by this or another instance). Nothing changed.
    #[error("event {event_id:?} was already applied")]
    DuplicateEvent {
        /// The event id.
        event_id: String,
    },

    /// An objective amount outside `1..=MAX_AMOUNT`. Nothing changed.
    #[error("amount {amount} is out of range 1..={max}", max = super::MAX_AMOUNT)]
    InvalidAmount {
        /// The refused amount.
        amount: u32,
    },

    /// Another argument is out of range: an empty or over-long id, a zero target, a negative or
    /// huge reward, a negative tutorial stage. Nothing changed.
    #[error("invalid input: {0}")]
    InvalidInput(String),

    /// A game server's channel (of another credential) holds the player's live claim: the claim
    /// was refused and nothing changed.
    #[error("a game server's channel carries player {0:?}")]
    CarriedElsewhere(String),

    /// The player has no profile (an event for a player who never connected). Nothing changed.
    #[error("unknown player {0:?}")]
    UnknownPlayer(String),

    /// The player is in no party (to invite from, or to leave). Nothing changed.
    #[error("the player is in no party")]
    NotInParty,

    /// The player is in a party already: forming or joining another needs leaving it first;
    /// inviting someone into the party they are in (oneself included) invites nobody. Nothing
    /// changed.
    #[error("the player is already in a party")]
    AlreadyInParty,

    /// The party has [`MAX_PARTY_SIZE`](super::MAX_PARTY_SIZE) members already, or a declaration
    /// names more. Nothing changed.
    #[error("the party is full: at most {max} members", max = super::MAX_PARTY_SIZE)]
    PartyFull,

    /// No live invitation of the player into that party: never invited, expired
    /// ([`INVITE_TTL_MS`](super::INVITE_TTL_MS)), already used, or the party is gone. Nothing
    /// changed.
    #[error("no live invitation into that party")]
    NoInvite,

    /// The party's shared conversation is hosted by another live instance, or with another NPC.
    /// Nothing changed.
    #[error("the party's shared conversation is hosted elsewhere (instance {instance:?})")]
    SharedElsewhere {
        /// The instance that holds the party's shared conversation.
        instance: String,
    },

    /// The player is not a member of the party (a declaration whose leader is not among its
    /// members). Nothing changed.
    #[error("the player is not a member of the party")]
    NotAMember,

    /// The database URL or options cannot be used.
    #[error("store configuration: {0}")]
    Config(String),

    /// Running the migrations failed.
    #[error("migration failed: {0}")]
    Migration(String),

    /// A stored value is out of range for its Rust type (a negative progress, an unknown status).
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),

    /// The database refused the request for a reason that retrying will not fix (a constraint
    /// the store did not expect to hit, a permission error, a disk that is full...). Nothing
    /// changed.
    #[error("database refused the request: {0}")]
    Database(String),
}

impl StoreError {
    /// True when the same call may succeed later: [`StoreError::Unavailable`] and
    /// [`StoreError::OutcomeUnknown`].
    ///
    /// A retry after `Unavailable` is safe for every write the store offers: paying is guarded by
    /// the ledger's unique key, an advance carrying an event id by `applied_events`. (An advance
    /// *without* an event id is not idempotent: give it one if it may be retried.)
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            StoreError::Unavailable(_) | StoreError::OutcomeUnknown(_)
        )
    }

    /// This error, seen on a COMMIT: a connection-level failure there ([`StoreError::Unavailable`])
    /// leaves the outcome unknown; anything else the database answered stands.
    pub(crate) fn at_commit(self) -> StoreError {
        match self {
            StoreError::Unavailable(reason) => StoreError::OutcomeUnknown(reason),
            other => other,
        }
    }

    /// A short stable name for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            StoreError::Unavailable(_) => "unavailable",
            StoreError::OutcomeUnknown(_) => "outcome_unknown",
            StoreError::StepApplied { .. } => "step_applied",
            StoreError::QuestState { .. } => "quest_state",
            StoreError::AlreadyPaid { .. } => "already_paid",
            StoreError::DuplicateEvent { .. } => "duplicate_event",
            StoreError::InvalidAmount { .. } => "invalid_amount",
            StoreError::InvalidInput(_) => "invalid_input",
            StoreError::UnknownPlayer(_) => "unknown_player",
            StoreError::CarriedElsewhere(_) => "carried_elsewhere",
            StoreError::NotInParty => "not_in_party",
            StoreError::AlreadyInParty => "already_in_party",
            StoreError::PartyFull => "party_full",
            StoreError::NoInvite => "no_invite",
            StoreError::SharedElsewhere { .. } => "shared_elsewhere",
            StoreError::NotAMember => "not_a_member",
            StoreError::Config(_) => "config",
            StoreError::Migration(_) => "migration",
            StoreError::Corrupt(_) => "corrupt",
            StoreError::Database(_) => "database",
        }
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        map_sqlx(err)
    }
}

impl From<sqlx::migrate::MigrateError> for StoreError {
    fn from(err: sqlx::migrate::MigrateError) -> Self {
        match err {
            sqlx::migrate::MigrateError::Execute(inner) => match map_sqlx(inner) {
                unavailable @ StoreError::Unavailable(_) => unavailable,
                other => StoreError::Migration(other.to_string()),
            },
            other => StoreError::Migration(other.to_string()),
        }
    }
}

/// The single mapping from sqlx errors to store errors. Call sites that expect a particular
/// constraint violation (the ledger's unique key, `applied_events`' primary key) check for it
/// with [`is_unique_violation`] before falling back to this.
pub(crate) fn map_sqlx(err: sqlx::Error) -> StoreError {
    use sqlx::Error as E;
    match err {
        E::PoolTimedOut => {
            StoreError::Unavailable("timed out waiting for a database connection".into())
        }
        E::PoolClosed => StoreError::Unavailable("the connection pool is closed".into()),
        E::WorkerCrashed => StoreError::Unavailable("the database worker thread crashed".into()),
        E::Io(io) => StoreError::Unavailable(format!("database i/o: {io}")),
        E::Tls(tls) => StoreError::Unavailable(format!("database tls: {tls}")),
        E::Protocol(p) => StoreError::Unavailable(format!("database protocol: {p}")),
        E::BeginFailed => StoreError::Unavailable("could not begin a transaction".into()),
        E::Database(db) => map_database(db.as_ref()),
        E::Configuration(c) => StoreError::Config(c.to_string()),
        E::Migrate(m) => StoreError::from(*m),
        E::ColumnDecode { .. } | E::Decode(_) | E::ColumnNotFound(_) | E::RowNotFound => {
            StoreError::Corrupt(err.to_string())
        }
        other => StoreError::Database(other.to_string()),
    }
}

fn map_database(db: &dyn sqlx::error::DatabaseError) -> StoreError {
    let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
    let message = db.message().to_owned();
    let kind = if db
        .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
        .is_some()
    {
        CodeKind::Sqlstate
    } else {
        CodeKind::SqliteResult
    };
    if is_transient_code(kind, &code) {
        return StoreError::Unavailable(format!("{message} (code {code})"));
    }
    StoreError::Database(format!("{message} (code {code})"))
}

/// Codes for which trying again later is the right answer.
///
/// PostgreSQL SQLSTATE: class 08 (connection exception), 53 (insufficient resources: too many
/// connections, disk full, out of memory), 57P01..57P03 (admin/crash shutdown, cannot connect
/// now), 40001 (serialization failure), 40P01 (deadlock), 55P03 (lock not available), 25006
/// (read-only transaction: a standby during failover).
/// SQLite extended result codes, keyed by their primary code (low byte): 5 BUSY, 6 LOCKED,
/// 10 IOERR, 14 CANTOPEN.
fn is_transient_code(kind: CodeKind, code: &str) -> bool {
    match kind {
        // sqlx reports SQLite's extended result code as a decimal number.
        CodeKind::SqliteResult => code
            .parse::<i64>()
            .is_ok_and(|n| matches!(n & 0xff, 5 | 6 | 10 | 14)),
        CodeKind::Sqlstate => {
            code.starts_with("08")
                || code.starts_with("53")
                || matches!(
                    code,
                    "57P01" | "57P02" | "57P03" | "40001" | "40P01" | "55P03" | "25006"
                )
        }
    }
}

/// Which numbering a database error code uses (a SQLSTATE can be all digits, so the code alone
/// does not tell).
#[derive(Debug, Clone, Copy)]
enum CodeKind {
    /// PostgreSQL's five-character SQLSTATE.
    Sqlstate,
    /// SQLite's (extended) result code, in decimal.
    SqliteResult,
}

/// True when `err` is a unique or primary key violation.
pub(crate) fn is_unique_violation(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// The constraint name PostgreSQL reports (SQLite reports none).
pub(crate) fn constraint_name(err: &sqlx::Error) -> Option<&str> {
    match err {
        sqlx::Error::Database(db) => db.constraint(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_codes_are_recognised() {
        use CodeKind::{SqliteResult, Sqlstate};
        assert!(is_transient_code(SqliteResult, "5")); // SQLITE_BUSY
        assert!(is_transient_code(SqliteResult, "517")); // SQLITE_BUSY_SNAPSHOT
        assert!(is_transient_code(SqliteResult, "6")); // SQLITE_LOCKED
        assert!(!is_transient_code(SqliteResult, "2067")); // SQLITE_CONSTRAINT_UNIQUE
        assert!(!is_transient_code(SqliteResult, "19")); // SQLITE_CONSTRAINT
        assert!(!is_transient_code(SqliteResult, ""));
        assert!(is_transient_code(Sqlstate, "57P01")); // admin shutdown
        assert!(is_transient_code(Sqlstate, "08006")); // connection failure
        assert!(is_transient_code(Sqlstate, "40001")); // serialization failure
        assert!(is_transient_code(Sqlstate, "53300")); // too many connections
        assert!(!is_transient_code(Sqlstate, "23505")); // unique violation
        assert!(!is_transient_code(Sqlstate, "22003")); // numeric value out of range
        assert!(!is_transient_code(Sqlstate, ""));
    }

    #[test]
    fn only_unavailable_is_retryable() {
        assert!(StoreError::Unavailable("x".into()).retryable());
        assert!(!StoreError::AlreadyPaid { quest: "q".into() }.retryable());
        assert!(!StoreError::Database("x".into()).retryable());
        for party in [
            StoreError::NotInParty,
            StoreError::AlreadyInParty,
            StoreError::PartyFull,
            StoreError::NoInvite,
            StoreError::SharedElsewhere {
                instance: "i".into(),
            },
            StoreError::NotAMember,
        ] {
            assert!(!party.retryable(), "{party:?}");
        }
    }

    #[test]
    fn quest_state_message_names_the_state() {
        let err = StoreError::QuestState {
            quest: "q1".into(),
            found: None,
            expected: "active",
        };
        assert_eq!(
            err.to_string(),
            "quest \"q1\" is never accepted, the operation needs it active"
        );
    }
}
