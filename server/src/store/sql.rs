//! The SQL text of the store, written once for both databases.
//!
//! Placeholders are `$1`, `$2`, ...: PostgreSQL's own, and SQLite takes them too (sqlx binds
//! `$N` to the Nth argument there as well, and a number used twice is one parameter). Where the
//! two databases agree, a statement is a constant; where they differ, [`Dialect`] supplies the
//! piece that differs and each backend builds its [`Statements`] once, at first use.
//!
//! The several statements that accept and complete a quest in a write transaction are here too:
//! they are the same SQL on both databases, though only SQLite runs them (PostgreSQL does each in
//! one statement of CTEs, in `postgres.rs`, with its `pg_notify` and `UNNEST` audit insert;
//! SQLite's multi-row audit insert is built in `sqlite.rs`).

use std::sync::LazyLock;

use sqlx::postgres::Postgres;
use sqlx::sqlite::Sqlite;

/// Records a game server's credential (its secret's hash only).
pub const ISSUE_GAME_SERVER: &str = "INSERT INTO game_servers \
     (id, name, players, secret_sha256, created_at_ms) VALUES ($1, $2, $3, $4, $5)";

/// Every game server, oldest first.
pub const GAME_SERVERS: &str = "SELECT id, name, players, created_at_ms, revoked_at_ms, \
     secret_sha256 FROM game_servers ORDER BY created_at_ms, id";

/// One game server by id.
pub const GAME_SERVER: &str = "SELECT id, name, players, created_at_ms, revoked_at_ms, \
     secret_sha256 FROM game_servers WHERE id = $1";

/// Revokes a game server's credential, keeping the first revocation's time.
pub const REVOKE_GAME_SERVER: &str = "UPDATE game_servers \
     SET revoked_at_ms = COALESCE(revoked_at_ms, $2) WHERE id = $1 \
     RETURNING id, name, players, created_at_ms, revoked_at_ms, secret_sha256";

/// True if the player has a profile (one row, one boolean).
pub const PLAYER_EXISTS: &str = "SELECT EXISTS (SELECT 1 FROM profiles WHERE player_id = $1)";

/// Creates a zero profile unless the player has one.
pub const ENSURE_PROFILE: &str =
    "INSERT INTO profiles (player_id) VALUES ($1) ON CONFLICT (player_id) DO NOTHING";

/// An abandoned quest's progress, if the quest is active ([`Queries::abandon`]).
///
/// [`Queries::abandon`]: super::queries::Queries::abandon
pub const FORGET_ACTIVE_PROGRESS: &str = "DELETE FROM objective_progress \
     WHERE player_id = $1 AND quest_id = $2 AND EXISTS (SELECT 1 FROM quest_states \
       WHERE player_id = $1 AND quest_id = $2 AND status = 'active')";

/// An abandoned quest's state row, if active: one row deleted, or none.
pub const FORGET_ACTIVE_QUEST: &str =
    "DELETE FROM quest_states WHERE player_id = $1 AND quest_id = $2 AND status = 'active'";

/// Stops tracking a quest, if it is the tracked one.
pub const UNTRACK_QUEST: &str =
    "UPDATE profiles SET tracked_quest = NULL WHERE player_id = $1 AND tracked_quest = $2";

/// A quest's stored status, without a row lock.
pub const QUEST_STATUS: &str =
    "SELECT status FROM quest_states WHERE player_id = $1 AND quest_id = $2";

/// Everything about a player in one statement, so one snapshot without a transaction around it
/// and one round trip (every session start runs it: RELIABILITY.md, scenario 6, fourth round).
/// Column `kind` says which table a row is from: 0 the profile, 1 a quest's state, 2 an
/// objective's progress, 3 a story variable, 4 a conversation's visits of a node (node `''`:
/// its opens); read into [`PlayerRow`](super::queries::PlayerRow).
pub const READ_PLAYER: &str = "\
    SELECT 0 AS kind, NULL AS quest_id, NULL AS item, coins AS a, experience AS b, \
           tutorial_stage AS c, tracked_quest AS d FROM profiles WHERE player_id = $1 \
    UNION ALL SELECT 1, quest_id, status, NULL, NULL, NULL, NULL \
           FROM quest_states WHERE player_id = $1 \
    UNION ALL SELECT 2, quest_id, objective_id, progress, NULL, NULL, NULL \
           FROM objective_progress WHERE player_id = $1 \
    UNION ALL SELECT 3, NULL, name, NULL, NULL, NULL, value \
           FROM story_variables WHERE player_id = $1 \
    UNION ALL SELECT 4, conversation, node, count, last, NULL, NULL \
           FROM visits WHERE player_id = $1 \
    ORDER BY kind";

/// Sets story variable `$2` of player `$1` to `$3`, replacing its value.
pub const SET_VARIABLE: &str = "INSERT INTO story_variables (player_id, name, value) \
     VALUES ($1, $2, $3) ON CONFLICT (player_id, name) DO UPDATE SET value = excluded.value";

/// Rows of one visits upsert (3 binds each, plus the player and the conversation).
pub const VISIT_ROWS_PER_UPSERT: usize = 500;

/// Accepts a quest (in a write transaction that checked it has no state yet).
pub const ACCEPT: &str =
    "INSERT INTO quest_states (player_id, quest_id, status) VALUES ($1, $2, 'active')";

/// A zero progress row for an objective of a quest being accepted.
pub const START_OBJECTIVE: &str = "INSERT INTO objective_progress \
     (player_id, quest_id, objective_id, progress) VALUES ($1, $2, $3, 0)";

/// Writes a reward into the ledger; its unique key refuses a second one. Returns the row's id.
pub const PAY: &str = "INSERT INTO reward_ledger (player_id, quest_id, coins, experience) \
     VALUES ($1, $2, $3, $4) RETURNING id";

/// Records a game event as applied; its primary key refuses a second delivery.
pub const RECORD_EVENT: &str = "INSERT INTO applied_events (event_id, player_id) VALUES ($1, $2)";

/// PostgreSQL: waits for any transaction holding a step key (see [`Statements::record_step`]),
/// in the reader's own transaction; [`STEP_RECORDED`] then reads the final answer.
pub const STEP_FENCE: &str =
    "SELECT 1 FROM (SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 0))) AS fence";

/// True if a step's audit row, and so its change, is committed.
pub const STEP_RECORDED: &str =
    "SELECT EXISTS (SELECT 1 FROM audit_log WHERE player_id = $1 AND step_key = $2)";

/// Parks a player's conversation (`$2` token, until `$3` ms, `$4` the JSON), replacing theirs.
pub const PARK: &str = "INSERT INTO parked_conversations (player_id, token, until_ms, parked) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (player_id) DO UPDATE SET token = excluded.token, \
     until_ms = excluded.until_ms, parked = excluded.parked";

/// Sweeps every parked conversation whose window closed before `$1` ms.
pub const SWEEP_PARKED: &str = "DELETE FROM parked_conversations WHERE until_ms <= $1";

/// Takes a parked conversation: the player's, under this token, still in its window at `$3`.
pub const TAKE_PARKED: &str = "DELETE FROM parked_conversations \
     WHERE player_id = $1 AND token = $2 AND until_ms > $3 RETURNING parked";

/// Rows of one narrative-rollup upsert (8 binds each).
pub const ROLLUP_ROWS_PER_UPSERT: usize = 500;

/// An upsert of `rows` narrative-rollup rows: each adds its count to the stored one.
pub fn add_rollups(rows: usize) -> String {
    let mut sql = String::from(
        "INSERT INTO narrative_rollups \
         (scope, name, version, locale, metric, subject, detail, count) VALUES ",
    );
    for row in 0..rows {
        let at = row * 8;
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push_str(&format!(
            "(${}, ${}, ${}, ${}, ${}, ${}, ${}, ${})",
            at + 1,
            at + 2,
            at + 3,
            at + 4,
            at + 5,
            at + 6,
            at + 7,
            at + 8
        ));
    }
    sql.push_str(
        " ON CONFLICT (scope, name, version, locale, metric, subject, detail) \
         DO UPDATE SET count = narrative_rollups.count + excluded.count",
    );
    sql
}

/// One conversation's or quest's rollup rows: the primary key's prefix.
pub const ROLLUPS: &str = "SELECT scope, name, version, locale, metric, subject, detail, count \
     FROM narrative_rollups WHERE scope = $1 AND name = $2";

/// Every conversation's opens and endings.
pub const ROLLUP_INDEX: &str = "SELECT scope, name, version, locale, metric, subject, detail, \
     count FROM narrative_rollups WHERE scope = 'conversation' AND metric IN ('open', 'end')";

/// Forgets a player's parked conversation.
pub const DISCARD_PARKED: &str = "DELETE FROM parked_conversations WHERE player_id = $1";

/// What stored players hold of the content, with how many players hold each: active quests
/// (`kind` 0), objectives with progress in an active quest (1, `sub` the objective), tracked
/// quests (2) and parked conversations (3, `id` the JSON, read by the caller). Read into
/// [`HeldRow`](super::queries::HeldRow).
pub const HELD: &str = "\
    SELECT 0 AS kind, quest_id AS id, NULL AS sub, COUNT(*) AS players FROM quest_states \
           WHERE status = 'active' GROUP BY quest_id \
    UNION ALL SELECT 1, p.quest_id, p.objective_id, COUNT(*) FROM objective_progress p \
           JOIN quest_states q ON q.player_id = p.player_id AND q.quest_id = p.quest_id \
           WHERE q.status = 'active' GROUP BY p.quest_id, p.objective_id \
    UNION ALL SELECT 2, tracked_quest, NULL, COUNT(*) FROM profiles \
           WHERE tracked_quest IS NOT NULL GROUP BY tracked_quest \
    UNION ALL SELECT 3, parked, NULL, 1 FROM parked_conversations WHERE until_ms > $1";

/// How many rewards were paid for a quest.
pub const LEDGER_COUNT: &str = "SELECT COUNT(*) FROM reward_ledger WHERE quest_id = $1";

/// A player's session claim, read into [`SessionClaim`](super::SessionClaim); none once released.
pub const SESSION_OWNER: &str = "SELECT player_id, session_id, instance_id, epoch \
     FROM session_claims WHERE player_id = $1 AND session_id <> ''";

/// Releases a player's claim if this session still holds it. The row stays, with no session,
/// so the epoch keeps growing: a claim after a release must still be newer than every claim
/// before it, or an instance that heard an older claim late would close the newer session.
pub const RELEASE: &str = "UPDATE session_claims SET session_id = '', instance_id = '' \
     WHERE player_id = $1 AND session_id = $2";

/// A player's party id.
pub const PARTY_ID_OF: &str = "SELECT party FROM party_members WHERE player = $1";

/// A player's party, one row a member in join order (read into
/// [`PartyRow`](super::parties::PartyRow)): one statement, so one snapshot.
pub const PARTY_OF: &str = "SELECT p.id, p.leader, m.player FROM party_members me \
     JOIN parties p ON p.id = me.party JOIN party_members m ON m.party = p.id \
     WHERE me.player = $1 ORDER BY m.joined_seq";

/// A party's members, in join order.
pub const PARTY_MEMBERS: &str =
    "SELECT player FROM party_members WHERE party = $1 ORDER BY joined_seq";

/// A new party `$1` led by `$2`, made at `$3` ms; nothing if the id is taken.
pub const CREATE_PARTY: &str = "INSERT INTO parties (id, leader, created_ms) VALUES ($1, $2, $3) \
     ON CONFLICT (id) DO NOTHING";

/// Player `$2` joins party `$1` last in its join order; nothing if `$2` is in a party (the
/// primary key). SQLite needs the `WHERE` for `ON CONFLICT` not to parse as a join constraint.
pub const JOIN_PARTY: &str = "INSERT INTO party_members (player, party, joined_seq) \
     SELECT $2, $1, COALESCE(MAX(joined_seq), 0) + 1 FROM party_members WHERE party = $1 \
     ON CONFLICT (player) DO NOTHING";

/// A player leaves their party.
pub const DROP_MEMBER: &str = "DELETE FROM party_members WHERE player = $1";

/// Every member of a party leaves it (a declaration replacing it).
pub const CLEAR_MEMBERS: &str = "DELETE FROM party_members WHERE party = $1";

/// Party `$1`'s leader becomes `$2`.
pub const SET_LEADER: &str = "UPDATE parties SET leader = $2 WHERE id = $1";

/// An emptied party goes, with its shared host, invitations and members (the last two also go
/// by the foreign keys' cascade).
pub const DELETE_PARTY: [&str; 4] = [
    "DELETE FROM shared_hosts WHERE party = $1",
    "DELETE FROM party_invites WHERE party = $1",
    "DELETE FROM party_members WHERE party = $1",
    "DELETE FROM parties WHERE id = $1",
];

/// Sweeps invitee `$1`'s invitations that expired (made before `$2` ms).
pub const SWEEP_INVITES: &str = "DELETE FROM party_invites WHERE invitee = $1 AND created_ms < $2";

/// An invitation (party `$1`, invitee `$2`, inviter `$3`, at `$4` ms), replacing one of the
/// same party and invitee.
pub const INVITE: &str = "INSERT INTO party_invites (party, invitee, inviter, created_ms) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (party, invitee) \
     DO UPDATE SET inviter = excluded.inviter, created_ms = excluded.created_ms";

/// Takes (deletes) invitee `$2`'s invitation into party `$1` if made at `$3` ms or later.
pub const TAKE_INVITE: &str = "DELETE FROM party_invites \
     WHERE party = $1 AND invitee = $2 AND created_ms >= $3 RETURNING inviter";

/// Forgets invitee `$2`'s invitation into party `$1`, if any.
pub const DROP_INVITE: &str = "DELETE FROM party_invites WHERE party = $1 AND invitee = $2";

/// Invitee `$1`'s invitations made at `$2` ms or later, oldest first.
pub const PARTY_INVITES: &str = "SELECT party, inviter, invitee, created_ms FROM party_invites \
     WHERE invitee = $1 AND created_ms >= $2 ORDER BY created_ms, party";

/// Claims party `$1`'s shared conversation (`$2` NPC, `$3` conversation) for instance `$4` at
/// `$5` ms: written if the party has no host row or a dead one (refreshed before `$6` ms),
/// refreshed (its conversation kept) if this instance holds it with this NPC; no row back
/// otherwise.
pub const HOST_SHARED: &str = "INSERT INTO shared_hosts AS h \
     (party, npc, conversation, instance, refreshed_ms) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (party) DO UPDATE SET \
       npc = excluded.npc, \
       conversation = CASE WHEN h.refreshed_ms < $6 THEN excluded.conversation \
                      ELSE h.conversation END, \
       instance = excluded.instance, \
       refreshed_ms = excluded.refreshed_ms \
     WHERE h.refreshed_ms < $6 OR (h.instance = excluded.instance AND h.npc = excluded.npc) \
     RETURNING party, npc, conversation, instance, refreshed_ms";

/// The instance holding party `$1`'s shared conversation, live or not.
pub const SHARED_HOLDER: &str = "SELECT instance FROM shared_hosts WHERE party = $1";

/// Refreshes party `$1`'s host row at `$3` ms if instance `$2` holds it.
pub const REFRESH_SHARED: &str =
    "UPDATE shared_hosts SET refreshed_ms = $3 WHERE party = $1 AND instance = $2";

/// Deletes party `$1`'s host row if instance `$2` holds it and last refreshed it before `$3` ms.
pub const RELEASE_SHARED: &str =
    "DELETE FROM shared_hosts WHERE party = $1 AND instance = $2 AND refreshed_ms < $3";

/// The pieces of SQL in which SQLite and PostgreSQL differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite: timestamps are INTEGER milliseconds since the Unix epoch (STRICT tables).
    Sqlite,
    /// PostgreSQL: timestamps are TIMESTAMPTZ.
    Postgres,
}

impl Dialect {
    /// The backend's name, as [`SessionStore::backend`](super::SessionStore::backend) reports it.
    pub const fn name(self) -> &'static str {
        match self {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgres",
        }
    }

    /// The current time as a timestamp column holds it.
    const fn now(self) -> &'static str {
        match self {
            Dialect::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
            Dialect::Postgres => "now()",
        }
    }

    /// A timestamp column read as milliseconds since the Unix epoch, named `alias`.
    fn millis(self, column: &str, alias: &str) -> String {
        match self {
            Dialect::Sqlite => format!("{column} AS {alias}"),
            Dialect::Postgres => {
                format!("(EXTRACT(EPOCH FROM {column}) * 1000)::BIGINT AS {alias}")
            }
        }
    }

    /// The time `$1` milliseconds before now.
    fn millis_ago(self) -> String {
        match self {
            Dialect::Sqlite => format!("{} - $1", self.now()),
            Dialect::Postgres => "now() - $1 * INTERVAL '1 millisecond'".to_owned(),
        }
    }

    /// The smaller and the larger of two values: SQLite's scalar `min()` and `max()` are
    /// PostgreSQL's `LEAST` and `GREATEST` (PostgreSQL's `min()` is only an aggregate).
    fn least_greatest(self) -> (&'static str, &'static str) {
        match self {
            Dialect::Sqlite => ("min", "max"),
            Dialect::Postgres => ("LEAST", "GREATEST"),
        }
    }

    /// What a step's audit row is selected from: on PostgreSQL, the transaction-scoped advisory
    /// lock of the player's step key, taken before the row is written, so that
    /// [`STEP_FENCE`]'s reader waits for a transaction still holding the key (a COMMIT in flight
    /// when its connection was lost) to end. SQLite has one writer at a time and needs none;
    /// its `WHERE true` keeps `ON CONFLICT` from parsing as a join constraint.
    fn step_source(self) -> &'static str {
        match self {
            Dialect::Sqlite => "WHERE true",
            Dialect::Postgres => {
                "FROM (SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 0))) AS fence"
            }
        }
    }

    /// An upsert of `rows` visit rows of player `$1` in conversation `$2`, row `i` (from 0)
    /// binding the node `$(3i+3)`, the count to add `$(3i+4)` and the last showing `$(3i+5)`:
    /// each adds its count to the stored one (at most `u32::MAX`) and keeps the larger `last`.
    pub fn record_visits(self, rows: usize) -> String {
        let (least, greatest) = self.least_greatest();
        let mut sql = String::from(
            "INSERT INTO visits AS v (player_id, conversation, node, count, last) VALUES ",
        );
        for row in 0..rows {
            let at = 3 + row * 3;
            if row > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("($1, $2, ${}, ${}, ${})", at, at + 1, at + 2));
        }
        sql.push_str(&format!(
            " ON CONFLICT (player_id, conversation, node) DO UPDATE SET \
             count = {least}(v.count + excluded.count, 4294967295), \
             last = {greatest}(v.last, excluded.last)"
        ));
        sql
    }

    /// The row lock an advance takes on the quest's state. PostgreSQL: `FOR SHARE`, so that a
    /// concurrent completion (whose UPDATE locks the row) waits until the advance commits.
    /// SQLite has no row locks and needs none: a writer holds the database's one write lock from
    /// `BEGIN IMMEDIATE` on.
    fn share_lock(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR SHARE",
        }
    }

    /// The row lock every change of a party's members or leader takes on the party's row.
    /// PostgreSQL: `FOR UPDATE`, so that such changes (two joins racing for the last place)
    /// run one after the other. SQLite needs none: the write lock is the transaction's from
    /// `BEGIN IMMEDIATE` on.
    fn update_lock(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE",
        }
    }
}

/// A sqlx database's dialect, and so its statements.
pub trait SqlDialect {
    /// Which one.
    const DIALECT: Dialect;

    /// Its statements.
    fn sql() -> &'static Statements {
        Statements::of(Self::DIALECT)
    }
}

impl SqlDialect for Sqlite {
    const DIALECT: Dialect = Dialect::Sqlite;
}

impl SqlDialect for Postgres {
    const DIALECT: Dialect = Dialect::Postgres;
}

/// The statements that differ by dialect, built once per backend ([`Statements::of`]): sqlx
/// caches a prepared statement per connection by its text.
#[derive(Debug)]
pub struct Statements {
    /// [`QUEST_STATUS`] with the row lock an advance takes.
    pub quest_status_for_advance: String,
    /// Adds `$4` to an objective's progress, up to the target `$5` and never below what it was;
    /// creates the row if missing. Returns the new progress.
    pub advance: String,
    /// Claims a player for session `$2` on instance `$3`; returns the new epoch.
    pub claim: String,
    /// Marks an active quest completed.
    pub complete: String,
    /// Marks quest `$1` completed for every player who has it active (a content migration).
    pub complete_everywhere: String,
    /// Adds a reward to the profile; returns the new coins and experience.
    pub add_reward: String,
    /// Sets (or clears) the tracked quest, creating the profile if missing.
    pub set_tracked_quest: String,
    /// Moves the tutorial stage of player `$1` from `$2` to `$3` (nothing if it is not `$2`).
    pub move_tutorial: String,
    /// A player's ledger rows, oldest first, read into [`LedgerEntry`](super::LedgerEntry).
    pub ledger: String,
    /// The ledger row of a player and quest.
    pub ledger_entry: String,
    /// A player's latest `$2` audit rows, oldest first, read into
    /// [`AuditEntry`](super::AuditEntry).
    pub audit_for_player: String,
    /// Deletes audit rows older than `$1` milliseconds.
    pub prune_audit: String,
    /// A step's audit row: player `$1`, key `$2`, conversation `$3`, message `$4`, detail `$5`,
    /// recorded at `$6` microseconds.
    /// Inserts nothing if the key is taken.
    pub record_step: String,
    /// Party `$1`'s leader, its row locked for the transaction (see `Dialect::update_lock`).
    pub lock_party: String,
}

impl Statements {
    /// The statements of `dialect`.
    pub fn of(dialect: Dialect) -> &'static Statements {
        match dialect {
            Dialect::Sqlite => &SQLITE,
            Dialect::Postgres => &POSTGRES,
        }
    }

    fn new(dialect: Dialect) -> Self {
        let now = dialect.now();
        let (least, greatest) = dialect.least_greatest();
        let ledger_columns = format!(
            "id, player_id, quest_id, coins, experience, {}",
            dialect.millis("paid_at", "paid_at_ms")
        );
        Statements {
            quest_status_for_advance: format!("{QUEST_STATUS}{}", dialect.share_lock()),
            advance: format!(
                "INSERT INTO objective_progress AS o (player_id, quest_id, objective_id, progress) \
                 VALUES ($1, $2, $3, {least}($4, $5)) \
                 ON CONFLICT (player_id, quest_id, objective_id) \
                 DO UPDATE SET progress = {greatest}(o.progress, {least}(o.progress + $4, $5)) \
                 RETURNING progress"
            ),
            // No row back: a live claim of another carrier's channel refused this one.
            claim: format!(
                "INSERT INTO session_claims AS c (player_id, session_id, instance_id, epoch, \
                 carrier) VALUES ($1, $2, $3, 1, $4) \
                 ON CONFLICT (player_id) DO UPDATE SET session_id = excluded.session_id, \
                 instance_id = excluded.instance_id, epoch = c.epoch + 1, claimed_at = {now}, \
                 carrier = excluded.carrier \
                 WHERE c.session_id = '' OR c.carrier = '' OR c.carrier = excluded.carrier \
                 OR NOT EXISTS (SELECT 1 FROM game_servers g \
                 WHERE g.id = c.carrier AND g.revoked_at_ms IS NULL) \
                 RETURNING epoch"
            ),
            complete: format!(
                "UPDATE quest_states SET status = 'completed', completed_at = {now} \
                 WHERE player_id = $1 AND quest_id = $2 AND status = 'active'"
            ),
            complete_everywhere: format!(
                "UPDATE quest_states SET status = 'completed', completed_at = {now} \
                 WHERE quest_id = $1 AND status = 'active'"
            ),
            add_reward: format!(
                "UPDATE profiles SET coins = coins + $2, experience = experience + $3, \
                 updated_at = {now} WHERE player_id = $1 RETURNING coins, experience"
            ),
            set_tracked_quest: format!(
                "INSERT INTO profiles (player_id, tracked_quest) VALUES ($1, $2) \
                 ON CONFLICT (player_id) DO UPDATE SET tracked_quest = excluded.tracked_quest, \
                 updated_at = {now}"
            ),
            move_tutorial: format!(
                "UPDATE profiles SET tutorial_stage = $3, updated_at = {now} \
                 WHERE player_id = $1 AND tutorial_stage = $2"
            ),
            ledger: format!(
                "SELECT {ledger_columns} FROM reward_ledger WHERE player_id = $1 ORDER BY id"
            ),
            ledger_entry: format!(
                "SELECT {ledger_columns} FROM reward_ledger WHERE player_id = $1 AND quest_id = $2"
            ),
            audit_for_player: format!(
                "SELECT id, {}, step_key, player_id, conversation, message, code, detail, \
                        recorded_us FROM ( \
                   SELECT * FROM audit_log WHERE player_id = $1 \
                   ORDER BY recorded_us DESC, id DESC LIMIT $2 \
                 ) AS recent ORDER BY recorded_us, id",
                dialect.millis("at", "at_ms")
            ),
            prune_audit: format!("DELETE FROM audit_log WHERE at < {}", dialect.millis_ago()),
            record_step: format!(
                "INSERT INTO audit_log \
                   (player_id, step_key, conversation, message, detail, recorded_us) \
                 SELECT $1, $2, $3, $4, $5, $6 {} ON CONFLICT DO NOTHING",
                dialect.step_source()
            ),
            lock_party: format!(
                "SELECT leader FROM parties WHERE id = $1{}",
                dialect.update_lock()
            ),
        }
    }
}

static SQLITE: LazyLock<Statements> = LazyLock::new(|| Statements::new(Dialect::Sqlite));
static POSTGRES: LazyLock<Statements> = LazyLock::new(|| Statements::new(Dialect::Postgres));
