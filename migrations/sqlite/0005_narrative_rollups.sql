-- Narrative analytics (issue 21): counts per conversation (or quest), content version and
-- locale, added to as conversations end (server/src/analytics). Counts only: no player id.
-- A report reads one conversation's rows by the primary key's prefix, never the step log.
CREATE TABLE narrative_rollups (
    scope   TEXT NOT NULL CHECK (scope IN ('conversation', 'quest')),
    name    TEXT NOT NULL,
    version TEXT NOT NULL,
    locale  TEXT NOT NULL,
    metric  TEXT NOT NULL,
    subject TEXT NOT NULL,
    detail  TEXT NOT NULL,
    count   INTEGER NOT NULL,
    PRIMARY KEY (scope, name, version, locale, metric, subject, detail)
) STRICT;
