-- Parties: players who play together (a leader and up to 8 members in the order they joined),
-- the invitations into them, and the one instance hosting each party's shared conversation.
-- A player is in at most one party: `party_members`' primary key is the player. Keep in step
-- with migrations/postgres.
CREATE TABLE parties (
    id         TEXT    NOT NULL PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 128),
    leader     TEXT    NOT NULL CHECK (length(leader) BETWEEN 1 AND 128),
    created_ms INTEGER NOT NULL
) STRICT;

-- `joined_seq` orders a party's members by when they joined (1 for the first), per party.
CREATE TABLE party_members (
    player     TEXT    NOT NULL PRIMARY KEY CHECK (length(player) BETWEEN 1 AND 128),
    party      TEXT    NOT NULL REFERENCES parties (id) ON DELETE CASCADE,
    joined_seq INTEGER NOT NULL CHECK (joined_seq >= 1),
    CONSTRAINT party_members_in_order UNIQUE (party, joined_seq)
) STRICT;

-- A pending invitation; inviting again replaces it. Live for 10 minutes from `created_ms`.
CREATE TABLE party_invites (
    party      TEXT    NOT NULL REFERENCES parties (id) ON DELETE CASCADE,
    invitee    TEXT    NOT NULL CHECK (length(invitee) BETWEEN 1 AND 128),
    inviter    TEXT    NOT NULL,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (party, invitee)
) STRICT;

CREATE INDEX party_invites_invitee ON party_invites (invitee, created_ms);
CREATE INDEX party_invites_created ON party_invites (created_ms);

-- The instance hosting a party's shared conversation: dead once not refreshed for 90 s.
CREATE TABLE shared_hosts (
    party        TEXT    NOT NULL PRIMARY KEY,
    npc          TEXT    NOT NULL,
    conversation TEXT    NOT NULL,
    instance     TEXT    NOT NULL,
    refreshed_ms INTEGER NOT NULL
) STRICT;
