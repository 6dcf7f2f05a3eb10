-- Content migrations applied to the stored players (content/migrations.json), each once.
CREATE TABLE applied_migrations (
    id         TEXT   NOT NULL PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 128),
    applied_ms INTEGER NOT NULL
) STRICT;
