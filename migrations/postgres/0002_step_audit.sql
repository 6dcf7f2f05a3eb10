-- A step that changes a player's state writes its audit row in the change's own transaction,
-- under the step's idempotency key: the same step applied twice finds its key taken and applies
-- nothing, and after a lost COMMIT the key's row says whether the change landed.
-- Keep in step with migrations/sqlite.
ALTER TABLE audit_log ADD COLUMN step_key TEXT NULL CHECK (step_key IS NULL OR length(step_key) BETWEEN 1 AND 256);

CREATE UNIQUE INDEX audit_log_step ON audit_log (player_id, step_key) WHERE step_key IS NOT NULL;

-- When the server recorded each row, in microseconds since the Unix epoch, strictly increasing
-- within a process: a step written in its own transaction commits before the records queued
-- ahead of it, so the order support reads is this, not the row id.
ALTER TABLE audit_log ADD COLUMN recorded_us BIGINT NOT NULL DEFAULT 0;
DROP INDEX audit_log_player;
CREATE INDEX audit_log_player ON audit_log (player_id, recorded_us, id);
