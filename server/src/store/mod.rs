//! The persistent store: profiles, quest states, objective progress, story variables and visit
//! counts, the reward ledger, applied game events, session claims (scale-out) and the audit log;
//! and parties (`parties.rs`): who plays together, their invitations, and which instance hosts a
//! party's shared conversation.
//!
//! One object-safe trait, [`Store`], used as `Arc<dyn Store>`, and two databases:
//! [`SqliteStore`], the zero-configuration default, and [`PgStore`] for production, each with its
//! own migrations folder (`migrations/sqlite`, `migrations/postgres`, embedded at compile time).
//! One conformance suite (`server/tests/store_conformance/`) runs the same scenarios against
//! both.
//!
//! The two share one implementation of [`Store`] (`backend.rs`): the argument checks
//! (`validate.rs`), the SQL (`sql.rs`, where the dialects differ only in the pieces
//! `sql::Dialect` supplies) and its execution over either sqlx database (`queries.rs`, rows read
//! with `sqlx::FromRow`). `sqlite.rs` and `postgres.rs` hold only where the databases differ
//! for a reason, each said where it is: SQLite's write gate (`write_gate.rs`), `BEGIN IMMEDIATE`
//! and group commit (`group_commit.rs`); PostgreSQL's single-statement CTEs and LISTEN/NOTIFY.
//!
//! # Guarantees every backend keeps
//!
//! - **One call, one transaction.** Every write method commits everything it does or nothing;
//!   every error means nothing changed (see [`StoreError`] for the one ambiguity, a connection
//!   lost during COMMIT, and why retrying it is safe).
//! - **A reward is paid exactly once per player and quest**, by the database: the ledger has a
//!   `UNIQUE (player_id, quest_id)` key and the ledger row, the quest's switch to `completed` and
//!   the profile's new balance are written in the same transaction. No retry, race, or second
//!   server instance on the same database can pay twice.
//! - **A game event is applied at most once**: its id is inserted into `applied_events` in the
//!   same transaction as the progress it causes.
//! - **Transient failures are [`StoreError::Unavailable`]** ([`StoreError::retryable`]), quickly:
//!   the PostgreSQL pool gives up acquiring after [`ConnectOptions::acquire_timeout`] (3 s by
//!   default) rather than hanging, and reconnects by itself when the database is back.
//!
//! # Wiring
//!
//! At startup: `let store = store::connect(&database_url, ConnectOptions::default()).await?`
//! (runs the migrations). `banter-server migrate`: [`migrate`]. `/readyz`: [`Store::ping`].
//! Graceful shutdown: [`Store::close`] after the last session has stopped writing.

mod backend;
mod content_migration;
mod error;
mod group_commit;
mod parties;
pub mod postgres;
mod queries;
mod sql;
pub mod sqlite;
mod timings;
mod validate;
mod write_gate;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;

pub use content_migration::{ContentMigration, Removal, Reward};
pub use error::{StoreError, StoredQuestStatus};
pub use group_commit::GroupCommitStats;
pub use parties::{
    INVITE_TTL_MS, MAX_PARTY_SIZE, Party, PartyInvite, SHARED_HOST_TTL_MS, SharedHost,
};
pub use postgres::PgStore;
pub use sqlite::SqliteStore;
pub use timings::{LaneLabels, PriorityLabels, WriteTimings};
pub(crate) use validate::check_id;
pub use write_gate::Priority;

/// The database used when nothing is configured: a SQLite file under `./data`, created with its
/// folder on first use.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/banter.db";

/// The largest amount one objective advance may carry. Larger (and zero) amounts are refused
/// with [`StoreError::InvalidAmount`].
pub const MAX_AMOUNT: u32 = 1_000_000;

/// The largest coin or experience reward one quest may pay.
pub const MAX_REWARD: i64 = 1_000_000_000;

/// The longest id (player, quest, objective, session, instance) the store accepts, in bytes.
pub const MAX_ID_LEN: usize = 128;

/// The longest event id the store accepts, in bytes.
pub const MAX_EVENT_ID_LEN: usize = 200;

/// The longest step key the store accepts, in bytes (an event's key is its id and a prefix).
pub const MAX_STEP_KEY_LEN: usize = 256;

/// A player's profile row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfileRecord {
    /// Coins, never negative.
    pub coins: i64,
    /// Experience, never negative.
    pub experience: i64,
    /// Tutorial stage, never negative; 0 for a new player.
    pub tutorial_stage: i64,
    /// The quest the player tracks, if any (not checked against content by the store).
    pub tracked_quest: Option<String>,
}

/// One quest as stored for a player.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestRecord {
    /// Active or completed.
    pub status: StoredQuestStatus,
    /// Progress per objective id.
    pub progress: BTreeMap<String, u32>,
}

/// Everything the store keeps about a player, read in one consistent snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlayerRecord {
    /// The profile.
    pub profile: ProfileRecord,
    /// Every quest the player ever accepted, by quest id.
    pub quests: BTreeMap<String, QuestRecord>,
    /// The story variables ever set ([`Change::SetVariable`]), by name: the stored text value
    /// (`true`/`false`, a decimal integer, or the string). A variable never set is absent (it
    /// reads as its declared default).
    pub variables: BTreeMap<String, String>,
    /// What the player was shown of each conversation ([`Store::record_visits`]), by
    /// conversation; a conversation never opened nor visited is absent.
    pub visits: BTreeMap<String, ConversationVisits>,
}

/// A player's visits of one conversation (docs/PROTOCOL.md, section 10.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConversationVisits {
    /// How many times the player opened the conversation.
    pub opens: u32,
    /// Each line shown (or response picked) at least once, by node name.
    pub nodes: BTreeMap<String, Visit>,
}

/// How often a line was shown (or a response picked), and when last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Visit {
    /// How many times, at most `u32::MAX`.
    pub count: u32,
    /// Its last showing, as an ordering (larger is more recent): the largest
    /// [`VisitDelta::last`] recorded.
    pub last: u64,
}

/// What one conversation added to a node's visits, for [`Store::record_visits`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisitDelta {
    /// The node (a line, or a response), a non-empty id.
    pub node: String,
    /// How many more times it was shown (or picked).
    pub added: u32,
    /// Its last showing in this conversation, at most `i64::MAX`: the stored `last` becomes the
    /// larger of the two.
    pub last: u64,
}

/// One objective advance inside a step ([`Change::Advance`], [`Change::Complete`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectiveAdvance {
    /// The quest, which must be active.
    pub quest: String,
    /// The objective. A row is created (from 0) if the quest has none for it yet, so an objective
    /// added to content after the player accepted still counts.
    pub objective: String,
    /// How much to add, `1..=MAX_AMOUNT`.
    pub amount: u32,
    /// The objective's target (from content), at least 1: progress never exceeds it.
    pub target: u32,
}

/// What a [`Change::Complete`] paid and the balance after paying.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paid {
    /// The ledger row's id.
    pub ledger_id: i64,
    /// Coins paid by this reward.
    pub coins: i64,
    /// Experience paid by this reward.
    pub experience: i64,
    /// The profile's coins after paying.
    pub total_coins: i64,
    /// The profile's experience after paying.
    pub total_experience: i64,
}

/// One row of the reward ledger.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LedgerEntry {
    /// Row id (increasing).
    pub id: i64,
    /// The player paid.
    pub player_id: String,
    /// The quest whose reward this is.
    pub quest_id: String,
    /// Coins paid.
    pub coins: i64,
    /// Experience paid.
    pub experience: i64,
    /// When, in milliseconds since the Unix epoch (database clock).
    pub paid_at_ms: i64,
}

/// Which session currently owns a player (scale-out: the newest claim wins, on any instance).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, sqlx::FromRow)]
pub struct SessionClaim {
    /// The player.
    pub player_id: String,
    /// The session that holds the player now.
    pub session_id: String,
    /// The server instance that hosts that session.
    pub instance_id: String,
    /// Increases by one with every claim of this player: a higher epoch is a newer session.
    pub epoch: i64,
}

/// What [`Store::session_claims`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimEvent {
    /// A session (on this or another instance) claimed a player. An instance that hosts a
    /// session of that player with a *different* `session_id` closes it: that session was
    /// replaced. (Compare session ids, not epochs: the epoch restarts after a release.)
    Claimed(SessionClaim),
    /// Claims may have been missed (the notification connection was lost and re-established, or
    /// the subscriber fell behind): re-check every local session with [`Store::session_owner`].
    Resync,
}

/// A step that changes a player's state (a conversation action, a cutscene quest's end, a game
/// event, a writer plan's setup), written by [`Store::apply_step`] with its audit row in one
/// transaction: a change is never stored without its record, nor its record without the change.
/// It is the store's only way to change a player's quests, profile and story variables.
#[derive(Debug, Clone, Copy)]
pub struct Step<'a> {
    /// The player whose state changes.
    pub player: &'a str,
    /// The idempotency key, unique per player: the same step retried (after an unknown outcome,
    /// say) carries the same key and is applied at most once.
    pub key: &'a str,
    /// The conversation the step belongs to, if any (for the audit row).
    pub conversation: Option<&'a str>,
    /// The message that caused it (`action`, `cutscene_done`, `event`...).
    pub message: &'a str,
    /// What support reads (the action and payload, the event...), kept short by the caller.
    pub detail: Option<&'a str>,
    /// When the server took the step ([`AuditRecord::recorded_us`]).
    pub recorded_us: i64,
    /// The change.
    pub change: Change<'a>,
    /// The tutorial stage the change moves the profile to, in the same transaction, after the
    /// change. Nothing moves when the stage is no longer [`TutorialMove::from`] (it moved
    /// meanwhile): the step still applies.
    pub tutorial: Option<TutorialMove>,
}

/// A tutorial stage's move inside a [`Step`]: from the stage the caller read to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TutorialMove {
    /// The stage the caller saw, `>= 0`.
    pub from: i64,
    /// The stage to move to, `>= 0`.
    pub to: i64,
}

/// What a [`Step`] changes. A change that fails changes nothing, and its step with it.
#[derive(Debug, Clone, Copy)]
pub enum Change<'a> {
    /// Stores a quest as `active` with a zero progress row for each objective (and creates the
    /// profile if missing). If the quest already has a state, active or completed,
    /// [`StoreError::QuestState`]. Checking prerequisites is the quest engine's job.
    Accept {
        quest: &'a str,
        objectives: &'a [String],
    },
    /// Advances several objectives, all or nothing, optionally under a game event's id. For each
    /// advance: the quest must be active ([`StoreError::QuestState`] otherwise), the amount in
    /// `1..=MAX_AMOUNT` ([`StoreError::InvalidAmount`]) and the target at least 1; the new
    /// progress is `min(progress + amount, target)`, and never lower than before (should content
    /// lower a target). With an event id, the id is recorded in `applied_events`; an id applied
    /// before fails with [`StoreError::DuplicateEvent`]. A player with no profile fails with
    /// [`StoreError::UnknownPlayer`]. An empty list needs an event id, and only records it.
    Advance {
        event_id: Option<&'a str>,
        advances: &'a [ObjectiveAdvance],
    },
    /// `advances` first (a cutscene quest's objectives brought to their targets; usually
    /// none), then completes the active quest and pays its reward: the quest becomes
    /// `completed`, a ledger row is inserted, the coins and experience (`0..=MAX_REWARD`) are
    /// added to the profile. A quest that is not active fails with [`StoreError::QuestState`];
    /// a reward already in the ledger (the unique key refuses the row) with
    /// [`StoreError::AlreadyPaid`]. Concurrent steps for the same player and quest, on one pool
    /// or on several instances, pay exactly once. [`Store::ledger_entry`] says what was paid.
    Complete {
        quest: &'a str,
        coins: i64,
        experience: i64,
        advances: &'a [ObjectiveAdvance],
    },
    /// Sets (or, with `None`, clears) the tracked quest (not checked against content). Creates
    /// the profile if missing.
    Track { quest: Option<&'a str> },
    /// The player gives up an active quest: its state and progress are deleted and it is no
    /// longer tracked. [`StoreError::QuestState`] if it is not active.
    Abandon { quest: &'a str },
    /// No quest change: creates the profile if missing; the step records itself and moves the
    /// tutorial ([`Step::tutorial`]).
    Profile,
    /// Sets story variable `name` (an id) to `value` (its text, at most [`MAX_ID_LEN`] bytes,
    /// no NUL), replacing the value it had. Not checked against content. Creates the profile if
    /// missing.
    SetVariable { name: &'a str, value: &'a str },
}

/// What [`Store::apply_step`] did, by the kind of [`Change`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// The quest was accepted.
    Accepted,
    /// The new progress of each advance, in order.
    Advanced(Vec<u32>),
    /// The reward paid.
    Paid(Paid),
    /// The tracked quest was set.
    Tracked,
    /// The quest was abandoned.
    Abandoned,
    /// The profile exists (and the tutorial moved, if the step said so).
    Profile,
    /// The story variable was set.
    VariableSet,
}

/// What [`Store::apply_step`] answers: what the change did, and the player as the step's
/// transaction left it (read inside it, after the change and the tutorial's move).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stepped {
    /// What the change did.
    pub applied: Applied,
    /// The player's profile, quests, story variables and visits after the step.
    pub record: PlayerRecord,
}

/// What stored players hold of the content, each with how many players hold it: what a content
/// push must keep, or migrate, not to strand anyone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Held {
    /// Quests active for someone.
    pub active_quests: Vec<(String, u64)>,
    /// (quest, objective) with progress in an active quest.
    pub objectives: Vec<((String, String), u64)>,
    /// Quests someone tracks.
    pub tracked_quests: Vec<(String, u64)>,
    /// Conversations parked within their window, as the session stored them (JSON).
    pub parked: Vec<String>,
}

/// One audit record to write: an accepted action or a rejection.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AuditRecord {
    /// The player (need not have a profile: rejections of unknown players are recorded too).
    pub player_id: String,
    /// The conversation id, if the message belonged to one.
    pub conversation: Option<String>,
    /// The message type (`advance`, `choose`, `action`, ...).
    pub message: String,
    /// `None` when accepted; the stable error code when rejected.
    pub code: Option<String>,
    /// Free-form detail (the choice, the payload...), kept short by the caller.
    pub detail: Option<String>,
    /// When the server recorded it, in microseconds since the Unix epoch, strictly increasing
    /// within a process (`clock::stamp`): support reads a player's rows in this order, since
    /// a step written in its own transaction lands before the records queued ahead of it.
    pub recorded_us: i64,
}

/// One stored audit row.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AuditEntry {
    /// Row id (increasing in insertion order).
    pub id: i64,
    /// When, in milliseconds since the Unix epoch (database clock).
    pub at_ms: i64,
    /// The step's idempotency key, for a step that changed the player's state (written in the
    /// change's own transaction); `None` for best-effort records.
    pub step_key: Option<String>,
    /// What was recorded.
    #[sqlx(flatten)]
    pub record: AuditRecord,
}

/// One narrative-analytics count (the analytics module writes them): how many times `metric`
/// happened for `subject` (and `detail`) in conversation or quest `name` at content `version`,
/// read in `locale`. Adding a row adds its count to the stored one.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RollupRow {
    /// `conversation` or `quest`.
    pub scope: String,
    pub name: String,
    pub version: String,
    pub locale: String,
    pub metric: String,
    pub subject: String,
    pub detail: String,
    pub count: i64,
}

/// A game server's row: its record and its secret's hash.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct GameServerRow {
    pub id: String,
    pub name: String,
    /// The scope's prefixes, separated by single spaces.
    pub players: String,
    pub created_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
    pub secret_sha256: String,
}

impl GameServerRow {
    /// The record as the admin API lists it, and the secret's hash.
    pub fn into_parts(self) -> (crate::credentials::GameServer, String) {
        let server = crate::credentials::GameServer {
            id: self.id,
            name: self.name,
            players: self.players.split(' ').map(str::to_owned).collect(),
            created_at_ms: self.created_at_ms,
            revoked_at_ms: self.revoked_at_ms,
        };
        (server, self.secret_sha256)
    }
}

/// Pool and startup options for [`connect`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Pool size; `None` takes the backend's default (PostgreSQL 16, SQLite 4).
    pub max_connections: Option<u32>,
    /// How long a call waits for a pooled connection before failing with
    /// [`StoreError::Unavailable`]. Also bounds how long `connect` waits for the first connection.
    pub acquire_timeout: Duration,
    /// Run the embedded migrations while connecting (the default). `banter-server migrate` and
    /// deployments that migrate separately turn this off.
    pub run_migrations: bool,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            max_connections: None,
            acquire_timeout: Duration::from_secs(3),
            run_migrations: true,
        }
    }
}

/// What a session's core (`SessionCore`) asks of the store directly: the player's record after
/// an event, and the parked conversation (park, take, discard). The quest engine's steps take
/// the whole [`Store`], whose supertrait this is: every store is one, with the same guarantees.
pub trait SessionStore: Send + Sync {
    /// `"sqlite"` or `"postgres"`.
    fn backend(&self) -> &'static str;

    /// The player's profile, quests, story variables and visits, read in one consistent
    /// snapshot. Creates the profile (zero coins, experience and tutorial stage; nothing
    /// tracked) if the player has none.
    fn load_player<'a>(
        &'a self,
        player: &'a str,
    ) -> BoxFuture<'a, Result<PlayerRecord, StoreError>>;

    /// Parks the player's open conversation (`parked`, opaque to the store) under `token` until
    /// `until_ms` (milliseconds since the Unix epoch), replacing one parked before; sweeps every
    /// player's parked conversations whose window closed before `now_ms`.
    fn park_conversation<'a>(
        &'a self,
        player: &'a str,
        token: &'a str,
        until_ms: i64,
        now_ms: i64,
        parked: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Takes (and removes) the player's parked conversation if it was parked under `token` and
    /// its window is still open at `now_ms`; on any instance, exactly once.
    fn take_parked<'a>(
        &'a self,
        player: &'a str,
        token: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>>;

    /// Forgets the player's parked conversation (the player opened another one).
    fn discard_parked<'a>(&'a self, player: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// The persistent store. Object safe; shared as `Arc<dyn Store>`.
///
/// Every method is one round of work against the database; write methods are each one
/// transaction. Ids are validated first (non-empty, at most [`MAX_ID_LEN`] bytes; event ids at
/// most [`MAX_EVENT_ID_LEN`]) and refused with [`StoreError::InvalidInput`]. Loading the player
/// and parking a conversation are its supertrait's, [`SessionStore`].
pub trait Store: SessionStore + 'static {
    /// A trivial query, for `/readyz`: `Ok` when the database answers.
    fn ping(&self) -> BoxFuture<'_, Result<(), StoreError>>;

    /// True if the player has a profile. Unlike [`SessionStore::load_player`] it never creates
    /// one: the events endpoint uses it so an event for an unknown player changes nothing.
    fn player_exists<'a>(&'a self, player: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// The player's ledger rows, oldest first.
    fn ledger<'a>(&'a self, player: &'a str)
    -> BoxFuture<'a, Result<Vec<LedgerEntry>, StoreError>>;

    /// The ledger row for this player and quest, if the reward was paid.
    fn ledger_entry<'a>(
        &'a self,
        player: &'a str,
        quest: &'a str,
    ) -> BoxFuture<'a, Result<Option<LedgerEntry>, StoreError>>;

    /// How many rewards were paid for this quest, over all players (ops and tests).
    fn ledger_count<'a>(&'a self, quest: &'a str) -> BoxFuture<'a, Result<u64, StoreError>>;

    /// Records `session_id` on `instance_id` as the player's current session and returns the
    /// claim with its new epoch (one higher than any earlier claim of this player). Other
    /// subscribers of [`Store::session_claims`] are told in the same transaction (PostgreSQL
    /// NOTIFY, delivered on commit). The newest claim always wins: there is no expiry to wait for
    /// after a crash. A direct session's claim: [`Store::claim_session_for`] with no carrier.
    fn claim_session<'a>(
        &'a self,
        player: &'a str,
        session_id: &'a str,
        instance_id: &'a str,
    ) -> BoxFuture<'a, Result<SessionClaim, StoreError>> {
        self.claim_session_for(player, session_id, instance_id, None)
    }

    /// [`Store::claim_session`] for a session a game server's channel of credential `carrier`
    /// carries (`None`: the player's own WebSocket). While a channel's claim is live (not
    /// released, its credential not revoked), a claim with another carrier, none included, is
    /// refused with [`StoreError::CarriedElsewhere`] and changes nothing.
    fn claim_session_for<'a>(
        &'a self,
        player: &'a str,
        session_id: &'a str,
        instance_id: &'a str,
        carrier: Option<&'a str>,
    ) -> BoxFuture<'a, Result<SessionClaim, StoreError>>;

    /// The player's current claim, if any. A session whose id differs has been replaced.
    fn session_owner<'a>(
        &'a self,
        player: &'a str,
    ) -> BoxFuture<'a, Result<Option<SessionClaim>, StoreError>>;

    /// Removes the player's claim if `session_id` still holds it (clean disconnect). Returns
    /// whether it did; a session that was already replaced releases nothing. The epoch counter
    /// restarts after a release.
    fn release_session<'a>(
        &'a self,
        player: &'a str,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Subscribes to claims made by every instance on this database. PostgreSQL: LISTEN/NOTIFY
    /// on a dedicated pooled connection, re-established by itself after an outage (a
    /// [`ClaimEvent::Resync`] follows every reconnection, since notifications sent meanwhile are
    /// lost). SQLite: claims made through this store object (a SQLite file serves one instance).
    /// The stream ends when the store is closed.
    fn session_claims(&self) -> BoxFuture<'_, Result<BoxStream<'static, ClaimEvent>, StoreError>>;

    /// Applies a step's change (and its tutorial move) and writes its audit row (with the step's
    /// key) in one transaction, and reads the player back inside it: one transaction, no reload.
    /// The only write of a player's quests, profile and story variables. Errors as [`Change`]
    /// says, plus: [`StoreError::StepApplied`] if a step with this key was applied before
    /// (nothing changes), and [`StoreError::OutcomeUnknown`] if the connection was lost during
    /// COMMIT (ask [`Store::step_applied`]).
    fn apply_step<'a>(&'a self, step: &'a Step<'a>) -> BoxFuture<'a, Result<Stepped, StoreError>>;

    /// Whether the step with this key was applied, finally: a transaction that may still hold
    /// the key (its COMMIT in flight when its connection was lost) is waited for first, so the
    /// answer cannot change afterwards.
    fn step_applied<'a>(
        &'a self,
        player: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Adds one conversation's visits to the player's, in one transaction: for each delta the
    /// node's `count` grows by `added` (at most `u32::MAX`) and its `last` becomes the larger of
    /// the stored one and the delta's; with `opens > 0`, the conversation's open count (node
    /// `''`) grows by `opens`. Rows not stored yet are inserted (from zero); deltas naming the
    /// same node add up. Nothing else: no profile is created, no audit row written (visits are
    /// not a change of quests or profile). Ids are checked as everywhere (a node is a non-empty
    /// id); a `last` above `i64::MAX` is [`StoreError::InvalidInput`]. With nothing to add,
    /// nothing is done.
    fn record_visits<'a>(
        &'a self,
        player: &'a str,
        conversation: &'a str,
        opens: u32,
        visits: &'a [VisitDelta],
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The ids of the content migrations applied to this database.
    fn applied_migrations(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>>;

    /// Applies a content migration to every stored player in one transaction, recorded by its
    /// id: `false`, and nothing done, if that id was applied before (by any instance).
    fn apply_migration<'a>(
        &'a self,
        migration: &'a ContentMigration,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// What stored players hold of the content now (`now_ms` for the parked windows).
    fn held(&self, now_ms: i64) -> BoxFuture<'_, Result<Held, StoreError>>;

    /// Appends audit records, in one transaction.
    fn record_audit<'a>(
        &'a self,
        records: &'a [AuditRecord],
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The player's most recent audit rows, at most `limit`, in the order they were recorded
    /// (`recorded_us`, then id).
    fn audit_for_player<'a>(
        &'a self,
        player: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<AuditEntry>, StoreError>>;

    /// Deletes audit rows older than `max_age` (retention). Returns how many.
    fn prune_audit(&self, max_age: Duration) -> BoxFuture<'_, Result<u64, StoreError>>;

    /// Adds each row's count to the stored one (inserting rows not stored yet), in one
    /// transaction (rows with the same key add up).
    fn add_rollups<'a>(&'a self, rows: &'a [RollupRow]) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Every rollup row of one conversation or quest (`scope`, `name`), every version and
    /// locale: a read of the primary key's prefix.
    fn rollups<'a>(
        &'a self,
        scope: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Vec<RollupRow>, StoreError>>;

    /// Every conversation's `open` and `end` rows, for the analytics index.
    fn rollup_index(&self) -> BoxFuture<'_, Result<Vec<RollupRow>, StoreError>>;

    /// Records a game server's credential: its record and its secret's SHA-256 (never the
    /// secret). An id already stored is [`StoreError::InvalidInput`].
    fn issue_game_server<'a>(
        &'a self,
        server: &'a crate::credentials::GameServer,
        secret_sha256: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Every game server, revoked ones included, oldest first.
    fn game_servers(
        &self,
    ) -> BoxFuture<'_, Result<Vec<crate::credentials::GameServer>, StoreError>>;

    /// One game server and its secret's hash.
    fn game_server<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<(crate::credentials::GameServer, String)>, StoreError>>;

    /// Revokes a game server's credential at `now_ms` (a second revocation keeps the first
    /// time). `None` for an unknown id.
    fn revoke_game_server<'a>(
        &'a self,
        id: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<Option<crate::credentials::GameServer>, StoreError>>;

    /// The player's party, read in one snapshot; `None` if the player is in none.
    fn party_of<'a>(&'a self, player: &'a str) -> BoxFuture<'a, Result<Option<Party>, StoreError>>;

    /// Forms party `party` (an id the caller chooses) with `leader` its one member.
    /// [`StoreError::AlreadyInParty`] if the leader is in a party; an id already taken is
    /// [`StoreError::InvalidInput`].
    fn form_party<'a>(
        &'a self,
        party: &'a str,
        leader: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<Party, StoreError>>;

    /// Invites `invitee` into the party `inviter` is in (any member may invite); inviting again
    /// replaces the invitation (its `created_ms` is now). [`StoreError::NotInParty`] if the
    /// inviter is in none; [`StoreError::AlreadyInParty`] if the invitee is in that party (the
    /// inviter included); [`StoreError::PartyFull`] at [`MAX_PARTY_SIZE`] members. An invitee
    /// in another party may be invited (they leave it before accepting). Sweeps the invitee's
    /// expired invitations.
    fn invite_to_party<'a>(
        &'a self,
        inviter: &'a str,
        invitee: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<PartyInvite, StoreError>>;

    /// `player` accepts their invitation into `party`, which it uses up, and joins last in its
    /// join order. [`StoreError::NoInvite`] without a live invitation (made at most
    /// [`INVITE_TTL_MS`] before `now_ms`) or when the party is gone;
    /// [`StoreError::AlreadyInParty`] if the player is in a party; [`StoreError::PartyFull`]
    /// at [`MAX_PARTY_SIZE`] members. Joins racing for the last place, on any instance, take
    /// it once.
    fn accept_invite<'a>(
        &'a self,
        player: &'a str,
        party: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<Party, StoreError>>;

    /// `player` leaves their party; [`StoreError::NotInParty`] if in none. A leader hands the
    /// lead to the next member in join order (after the leader, wrapping to the first). The
    /// party after, or `None` if it emptied: it is then deleted with its invitations and its
    /// shared host row.
    fn leave_party<'a>(
        &'a self,
        player: &'a str,
    ) -> BoxFuture<'a, Result<Option<Party>, StoreError>>;

    /// If `player` leads a party with other members, the next member in join order (after the
    /// player, wrapping to the first) leads it. The party after (unchanged when the player does
    /// not lead it or is alone in it); `None` if the player is in no party. Nobody joins or
    /// leaves.
    fn hand_on_leadership<'a>(
        &'a self,
        player: &'a str,
    ) -> BoxFuture<'a, Result<Option<Party>, StoreError>>;

    /// A game server's declaration: `party` has exactly `members` (in this order, duplicates
    /// collapsed to the first), led by `leader`. [`StoreError::NotAMember`] if the leader is
    /// not among them, [`StoreError::PartyFull`] if they are more than [`MAX_PARTY_SIZE`].
    /// Every member first leaves another party they are in, as [`Store::leave_party`] would
    /// (leadership handed on, an emptied party deleted); then the party is made, or if it
    /// exists, its members and leader replaced: its shared host row, its `created_ms` and its
    /// invitations stay, but for the members' own, which are used up. The party as declared.
    fn declare_party<'a>(
        &'a self,
        party: &'a str,
        leader: &'a str,
        members: &'a [String],
        now_ms: i64,
    ) -> BoxFuture<'a, Result<Party, StoreError>>;

    /// The player's live invitations (made at most [`INVITE_TTL_MS`] before `now_ms`), oldest
    /// first.
    fn party_invites<'a>(
        &'a self,
        player: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<Vec<PartyInvite>, StoreError>>;

    /// Claims `party`'s one shared conversation for `instance`. With no live host row (none, or
    /// one not refreshed for more than [`SHARED_HOST_TTL_MS`] before `now_ms`), writes this one;
    /// with a live one of this instance and NPC, refreshes it (its conversation stays the one
    /// hosted); either way returns the row. A live row of another instance or another NPC:
    /// [`StoreError::SharedElsewhere`]. The party is not checked to exist.
    fn host_shared<'a>(
        &'a self,
        party: &'a str,
        npc: &'a str,
        conversation: &'a str,
        instance: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<SharedHost, StoreError>>;

    /// Refreshes `party`'s host row at `now_ms` if `instance` holds it: whether it did.
    fn refresh_shared<'a>(
        &'a self,
        party: &'a str,
        instance: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Deletes `party`'s host row if `instance` holds it and last refreshed (or claimed) it
    /// before `before_ms`: a room that closed at `before_ms` releases its row, never the row a
    /// newer room of the party claimed since.
    fn release_shared<'a>(
        &'a self,
        party: &'a str,
        instance: &'a str,
        before_ms: i64,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Closes the pool: waits for connections in use to be returned, then closes them all
    /// (SQLite checkpoints its WAL). Later calls fail with [`StoreError::Unavailable`].
    fn close(&self) -> BoxFuture<'_, ()>;

    /// Where the writes' time goes (SQLite: the write gate's turns, the lanes' commits, the
    /// checkpoints), for `/metrics`; `None` where the backend does not measure it.
    fn write_timings(&self) -> Option<WriteTimings>;
}

/// Which database a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `sqlite:...` or a plain file path.
    Sqlite,
    /// `postgres://...` or `postgresql://...`.
    Postgres,
}

/// Picks the backend by URL scheme: `postgres://` and `postgresql://` are PostgreSQL;
/// `sqlite:` URLs and anything without a scheme (a plain path) are SQLite; any other scheme
/// is refused.
pub fn backend_for(url: &str) -> Result<Backend, StoreError> {
    let lower = url.trim().to_ascii_lowercase();
    if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
        return Ok(Backend::Postgres);
    }
    if lower.starts_with("sqlite:") {
        return Ok(Backend::Sqlite);
    }
    if lower.is_empty() {
        return Err(StoreError::Config("empty database URL".into()));
    }
    if let Some((scheme, _)) = lower.split_once("://") {
        return Err(StoreError::Config(format!(
            "unsupported database URL scheme {scheme:?}: use postgres://, sqlite: or a file path"
        )));
    }
    Ok(Backend::Sqlite)
}

/// Connects to the database `url` names, running the migrations unless `options` says not to.
pub async fn connect(url: &str, options: ConnectOptions) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match backend_for(url)? {
        Backend::Sqlite => Arc::new(SqliteStore::connect(url, options).await?),
        Backend::Postgres => Arc::new(PgStore::connect(url, options).await?),
    })
}

/// Runs the migrations of the database `url` names and closes the connection
/// (`banter-server migrate`). Idempotent.
pub async fn migrate(url: &str) -> Result<(), StoreError> {
    let store = connect(
        url,
        ConnectOptions {
            max_connections: Some(1),
            ..ConnectOptions::default()
        },
    )
    .await?;
    store.close().await;
    Ok(())
}

/// Builds the stream [`Store::session_claims`] returns for a single-process backend.
pub(crate) fn broadcast_claims(
    receiver: tokio::sync::broadcast::Receiver<SessionClaim>,
) -> BoxStream<'static, ClaimEvent> {
    use futures_util::StreamExt;
    use tokio::sync::broadcast::error::RecvError;
    futures_util::stream::unfold(receiver, |mut receiver| async move {
        match receiver.recv().await {
            Ok(claim) => Some((ClaimEvent::Claimed(claim), receiver)),
            Err(RecvError::Lagged(_)) => Some((ClaimEvent::Resync, receiver)),
            Err(RecvError::Closed) => None,
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_is_chosen_by_scheme() {
        assert_eq!(
            backend_for("postgres://u@h/db").ok(),
            Some(Backend::Postgres)
        );
        assert_eq!(
            backend_for("PostgreSQL://u@h/db").ok(),
            Some(Backend::Postgres)
        );
        assert_eq!(
            backend_for("sqlite://data/banter.db").ok(),
            Some(Backend::Sqlite)
        );
        assert_eq!(backend_for("sqlite::memory:").ok(), Some(Backend::Sqlite));
        assert_eq!(backend_for("data/banter.db").ok(), Some(Backend::Sqlite));
        assert_eq!(
            backend_for("/var/lib/banter.db").ok(),
            Some(Backend::Sqlite)
        );
        assert!(matches!(
            backend_for("mysql://h/db"),
            Err(StoreError::Config(_))
        ));
        assert!(matches!(backend_for(""), Err(StoreError::Config(_))));
    }
}
