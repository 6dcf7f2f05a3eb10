-- Game-server credentials (issue 34, PROTOCOL.md section 16.1): who may open channels and for
-- which players. Only the secret's SHA-256 is kept; `players` holds the scope's player-id
-- prefixes separated by single spaces (a prefix holds no space).
CREATE TABLE game_servers (
    id            TEXT    NOT NULL PRIMARY KEY,
    name          TEXT    NOT NULL,
    players       TEXT    NOT NULL,
    secret_sha256 TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    revoked_at_ms INTEGER
) STRICT;
