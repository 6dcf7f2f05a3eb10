-- Conversations a dropped connection left open, waiting for a `resume` on any instance within
-- the grace window: the walk, its armings and the content version it opened with, as JSON.
CREATE TABLE parked_conversations (
    player_id TEXT   NOT NULL PRIMARY KEY,
    token     TEXT   NOT NULL,
    until_ms  BIGINT NOT NULL,
    parked    TEXT   NOT NULL
);
