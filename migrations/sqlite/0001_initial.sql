-- Banter store, SQLite. Timestamps are INTEGER milliseconds since the Unix epoch. STRICT tables:
-- a value of the wrong type (an overflowed sum turned REAL) is refused, not stored.
-- Keep in step with migrations/postgres: the conformance suite runs the same scenarios on both.

CREATE TABLE profiles (
    player_id      TEXT    NOT NULL PRIMARY KEY CHECK (length(player_id) BETWEEN 1 AND 128),
    coins          INTEGER NOT NULL DEFAULT 0 CHECK (coins >= 0),
    experience     INTEGER NOT NULL DEFAULT 0 CHECK (experience >= 0),
    tutorial_stage INTEGER NOT NULL DEFAULT 0 CHECK (tutorial_stage >= 0),
    tracked_quest  TEXT    NULL CHECK (tracked_quest IS NULL OR length(tracked_quest) BETWEEN 1 AND 128),
    created_at     INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
    updated_at     INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
) STRICT;

CREATE TABLE quest_states (
    player_id    TEXT    NOT NULL REFERENCES profiles (player_id),
    quest_id     TEXT    NOT NULL CHECK (length(quest_id) BETWEEN 1 AND 128),
    status       TEXT    NOT NULL CHECK (status IN ('active', 'completed')),
    accepted_at  INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
    completed_at INTEGER NULL,
    PRIMARY KEY (player_id, quest_id),
    CHECK ((status = 'completed') = (completed_at IS NOT NULL))
) STRICT;

CREATE TABLE objective_progress (
    player_id    TEXT    NOT NULL,
    quest_id     TEXT    NOT NULL,
    objective_id TEXT    NOT NULL CHECK (length(objective_id) BETWEEN 1 AND 128),
    progress     INTEGER NOT NULL DEFAULT 0 CHECK (progress >= 0 AND progress <= 4294967295),
    PRIMARY KEY (player_id, quest_id, objective_id),
    FOREIGN KEY (player_id, quest_id) REFERENCES quest_states (player_id, quest_id)
) STRICT;

-- One row per paid reward. The UNIQUE key is what makes a reward payable exactly once per player
-- and quest, whatever the application does.
CREATE TABLE reward_ledger (
    id         INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    player_id  TEXT    NOT NULL REFERENCES profiles (player_id),
    quest_id   TEXT    NOT NULL,
    coins      INTEGER NOT NULL CHECK (coins >= 0),
    experience INTEGER NOT NULL CHECK (experience >= 0),
    paid_at    INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
    CONSTRAINT reward_ledger_once UNIQUE (player_id, quest_id)
) STRICT;

CREATE INDEX reward_ledger_quest ON reward_ledger (quest_id);

-- Trusted game events already applied: a second delivery of the same id changes nothing.
CREATE TABLE applied_events (
    event_id   TEXT    NOT NULL PRIMARY KEY CHECK (length(event_id) BETWEEN 1 AND 200),
    player_id  TEXT    NOT NULL REFERENCES profiles (player_id),
    applied_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
) STRICT;

-- Which session owns each player (scale-out: the newest claim wins).
CREATE TABLE session_claims (
    player_id   TEXT    NOT NULL PRIMARY KEY,
    session_id  TEXT    NOT NULL,
    instance_id TEXT    NOT NULL,
    epoch       INTEGER NOT NULL CHECK (epoch >= 1),
    claimed_at  INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
) STRICT;

-- Every accepted action and every rejection, for support replay. Pruned by age (retention).
CREATE TABLE audit_log (
    id           INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    at           INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
    player_id    TEXT    NOT NULL,
    conversation TEXT    NULL,
    message      TEXT    NOT NULL,
    code         TEXT    NULL,
    detail       TEXT    NULL
) STRICT;

CREATE INDEX audit_log_player ON audit_log (player_id, id);
CREATE INDEX audit_log_at ON audit_log (at);
