-- Writing power (docs/CONTENT.md, "Writing power"; docs/PROTOCOL.md, section 10.1): each
-- player's story variables and how often they were shown each line (or picked each response).
-- Keep in step with migrations/sqlite.

-- A story variable's value, as text (`true`/`false`, a decimal integer, or the string itself),
-- written by a step's `SetVariable` change with its audit row. A variable never set reads as
-- its declared default: it has no row.
CREATE TABLE story_variables (
    player_id TEXT NOT NULL CHECK (length(player_id) BETWEEN 1 AND 128),
    name      TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
    value     TEXT NOT NULL CHECK (length(value) <= 128),
    PRIMARY KEY (player_id, name)
);

-- How many times the player was shown a line (or picked a response) of a conversation, and its
-- last showing (an ordering: larger is more recent). The node '' counts the player's openings
-- of the conversation (`last` unused, 0). Counts stay within 0..=u32::MAX.
CREATE TABLE visits (
    player_id    TEXT    NOT NULL CHECK (length(player_id) BETWEEN 1 AND 128),
    conversation TEXT    NOT NULL CHECK (length(conversation) BETWEEN 1 AND 128),
    node         TEXT    NOT NULL CHECK (length(node) <= 128),
    count        BIGINT  NOT NULL CHECK (count >= 0 AND count <= 4294967295),
    last         BIGINT  NOT NULL CHECK (last >= 0),
    PRIMARY KEY (player_id, conversation, node)
);
