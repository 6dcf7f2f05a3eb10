//! Parties: their types, and what forming, inviting, joining, leaving and declaring one do, written
//! once over [`Queries`] for both databases and run inside the caller's write transaction.
//!
//! A player is in at most one party (`party_members`' primary key is the player). Every change of
//! a party's members or leader holds the party's row lock (`Statements::lock_party`: `FOR
//! UPDATE` on PostgreSQL; SQLite's write lock is already the transaction's from `BEGIN
//! IMMEDIATE`), so two joins racing for the last place are counted one after the other, on one
//! instance or several. A player's party is read, its row locked, then the player's party read
//! again ([`locked_party_of`]): what was read before the lock may have changed while waiting
//! for it.

use std::collections::BTreeSet;

use super::StoreError;
use super::queries::Queries;

/// The most members a party has, its leader among them.
pub const MAX_PARTY_SIZE: usize = 8;

/// How long an invitation can be accepted, in milliseconds: 10 minutes.
pub const INVITE_TTL_MS: i64 = 600_000;

/// How long a shared conversation's host row lives without a refresh, in milliseconds: 90 s.
pub const SHARED_HOST_TTL_MS: i64 = 90_000;

/// How many times a call reads a party again when it changed while the call waited for its
/// lock (PostgreSQL), before it gives up with [`StoreError::Unavailable`].
const LOCK_TRIES: usize = 8;

/// A party: its id, its leader, its members in the order they joined (the leader among them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Party {
    /// The party's id, chosen by whoever formed or declared it.
    pub id: String,
    /// The member who leads it.
    pub leader: String,
    /// Every member, in the order they joined.
    pub members: Vec<String>,
}

/// A pending invitation into `party`, from `inviter`, for `invitee`.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct PartyInvite {
    /// The party's id.
    pub party: String,
    /// The member who invited.
    pub inviter: String,
    /// The player invited.
    pub invitee: String,
    /// When it was made (or last renewed), in milliseconds since the Unix epoch: it can be
    /// accepted until [`INVITE_TTL_MS`] later.
    pub created_ms: i64,
}

/// The instance hosting a party's shared conversation.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct SharedHost {
    /// The party's id.
    pub party: String,
    /// The NPC the conversation is with.
    pub npc: String,
    /// The conversation.
    pub conversation: String,
    /// The server instance that hosts it.
    pub instance: String,
    /// Its last refresh, in milliseconds since the Unix epoch: dead [`SHARED_HOST_TTL_MS`]
    /// later.
    pub refreshed_ms: i64,
}

/// One row of a party read: the party, its leader and one member (in join order).
#[derive(Debug, sqlx::FromRow)]
pub struct PartyRow {
    pub id: String,
    pub leader: String,
    pub player: String,
}

/// Folds a party's rows (one per member, in join order) into the party; `None` without rows.
pub fn party_from_rows(rows: Vec<PartyRow>) -> Option<Party> {
    let mut rows = rows.into_iter();
    let first = rows.next()?;
    let mut members = vec![first.player];
    members.extend(rows.map(|row| row.player));
    Some(Party {
        id: first.id,
        leader: first.leader,
        members,
    })
}

/// The member after `player` in join order, wrapping to the first; `player` itself when alone
/// or not a member.
fn next_after<'m>(members: &'m [String], player: &'m str) -> &'m str {
    match members.iter().position(|m| m == player) {
        Some(at) => &members[(at + 1) % members.len()],
        None => player,
    }
}

/// Duplicates removed, the first of each kept, in order.
pub fn distinct(members: &[String]) -> Vec<&str> {
    let mut seen = BTreeSet::new();
    members
        .iter()
        .map(String::as_str)
        .filter(|m| seen.insert(*m))
        .collect()
}

/// The player's party, its row locked, and its leader; `None` if the player is in none.
pub async fn locked_party_of<DB: Queries>(
    conn: &mut DB::Connection,
    player: &str,
) -> Result<Option<(String, String)>, StoreError> {
    for _ in 0..LOCK_TRIES {
        let Some(party) = DB::party_id_of(conn, player).await? else {
            return Ok(None);
        };
        // Gone while we waited for its lock: read the player's party again.
        let Some(leader) = DB::lock_party(conn, &party).await? else {
            continue;
        };
        // A new statement, after the lock: the player may have left while we waited.
        if DB::party_id_of(conn, player).await?.as_deref() == Some(party.as_str()) {
            return Ok(Some((party, leader)));
        }
    }
    Err(changing(player))
}

fn changing(player: &str) -> StoreError {
    StoreError::Unavailable(format!(
        "the party of {player:?} kept changing while it was read; try again"
    ))
}

/// [`Store::form_party`](super::Store::form_party).
pub async fn form<DB: Queries>(
    conn: &mut DB::Connection,
    party: &str,
    leader: &str,
    now_ms: i64,
) -> Result<Party, StoreError> {
    if DB::party_id_of(conn, leader).await?.is_some() {
        return Err(StoreError::AlreadyInParty);
    }
    if !DB::create_party(conn, party, leader, now_ms).await? {
        return Err(StoreError::InvalidInput(format!(
            "party id {party:?} is taken"
        )));
    }
    // Nothing inserted: the leader joined another party meanwhile (the primary key).
    if !DB::join_party(conn, party, leader).await? {
        return Err(StoreError::AlreadyInParty);
    }
    Ok(Party {
        id: party.to_owned(),
        leader: leader.to_owned(),
        members: vec![leader.to_owned()],
    })
}

/// [`Store::invite_to_party`](super::Store::invite_to_party).
pub async fn invite<DB: Queries>(
    conn: &mut DB::Connection,
    inviter: &str,
    invitee: &str,
    now_ms: i64,
) -> Result<PartyInvite, StoreError> {
    let Some((party, _)) = locked_party_of::<DB>(conn, inviter).await? else {
        return Err(StoreError::NotInParty);
    };
    let members = DB::party_members(conn, &party).await?;
    if members.iter().any(|m| m == invitee) {
        return Err(StoreError::AlreadyInParty);
    }
    if members.len() >= MAX_PARTY_SIZE {
        return Err(StoreError::PartyFull);
    }
    let invite = PartyInvite {
        party,
        inviter: inviter.to_owned(),
        invitee: invitee.to_owned(),
        created_ms: now_ms,
    };
    DB::invite(conn, &invite, now_ms.saturating_sub(INVITE_TTL_MS)).await?;
    Ok(invite)
}

/// [`Store::accept_invite`](super::Store::accept_invite).
pub async fn accept<DB: Queries>(
    conn: &mut DB::Connection,
    player: &str,
    party: &str,
    now_ms: i64,
) -> Result<Party, StoreError> {
    // The sender's own state first: nobody in a party accepts anything (PROTOCOL.md 17.1).
    if DB::party_id_of(conn, player).await?.is_some() {
        return Err(StoreError::AlreadyInParty);
    }
    let Some(leader) = DB::lock_party(conn, party).await? else {
        return Err(StoreError::NoInvite);
    };
    let live_since = now_ms.saturating_sub(INVITE_TTL_MS);
    if !DB::take_invite(conn, party, player, live_since).await? {
        return Err(StoreError::NoInvite);
    }
    let mut members = DB::party_members(conn, party).await?;
    if members.len() >= MAX_PARTY_SIZE {
        return Err(StoreError::PartyFull);
    }
    // Nothing inserted: the player joined another party meanwhile (the primary key).
    if !DB::join_party(conn, party, player).await? {
        return Err(StoreError::AlreadyInParty);
    }
    members.push(player.to_owned());
    Ok(Party {
        id: party.to_owned(),
        leader,
        members,
    })
}

/// [`Store::leave_party`](super::Store::leave_party).
pub async fn leave<DB: Queries>(
    conn: &mut DB::Connection,
    player: &str,
) -> Result<Option<Party>, StoreError> {
    let Some((party, _)) = locked_party_of::<DB>(conn, player).await? else {
        return Err(StoreError::NotInParty);
    };
    leave_locked::<DB>(conn, &party, player).await
}

/// `player` leaves `party`, whose row the caller locked: the party after, with leadership
/// handed on if the player led; `None`, and the party deleted with its invitations and its
/// shared host row, if it emptied.
async fn leave_locked<DB: Queries>(
    conn: &mut DB::Connection,
    party: &str,
    player: &str,
) -> Result<Option<Party>, StoreError> {
    // Read again under the lock: an earlier leave in the same call may have handed it on.
    let Some(mut leader) = DB::lock_party(conn, party).await? else {
        return Err(StoreError::Corrupt(format!(
            "party {party:?} vanished under its lock"
        )));
    };
    let members = DB::party_members(conn, party).await?;
    DB::drop_member(conn, player).await?;
    if leader == player {
        leader = next_after(&members, player).to_owned();
    }
    let remaining: Vec<String> = members.into_iter().filter(|m| m != player).collect();
    if remaining.is_empty() {
        DB::delete_party(conn, party).await?;
        return Ok(None);
    }
    DB::set_leader(conn, party, &leader).await?;
    Ok(Some(Party {
        id: party.to_owned(),
        leader,
        members: remaining,
    }))
}

/// [`Store::hand_on_leadership`](super::Store::hand_on_leadership).
pub async fn hand_on<DB: Queries>(
    conn: &mut DB::Connection,
    player: &str,
) -> Result<Option<Party>, StoreError> {
    let Some((party, leader)) = locked_party_of::<DB>(conn, player).await? else {
        return Ok(None);
    };
    let members = DB::party_members(conn, &party).await?;
    let leader = if leader == player && members.len() > 1 {
        let next = next_after(&members, player).to_owned();
        DB::set_leader(conn, &party, &next).await?;
        next
    } else {
        leader
    };
    Ok(Some(Party {
        id: party,
        leader,
        members,
    }))
}

/// [`Store::declare_party`](super::Store::declare_party), its arguments checked: `members`
/// distinct, the leader among them, at most [`MAX_PARTY_SIZE`].
pub async fn declare<DB: Queries>(
    conn: &mut DB::Connection,
    party: &str,
    leader: &str,
    members: &[&str],
    now_ms: i64,
) -> Result<Party, StoreError> {
    // Lock the declared party and every party a member is in, in id order, until no member's
    // party is left unlocked (a member who moved meanwhile adds a pass; should two
    // declarations then wait for each other, PostgreSQL ends one as a deadlock: Unavailable).
    let mut locked = BTreeSet::new();
    let mut settled = false;
    for _ in 0..LOCK_TRIES {
        let mut wanted = BTreeSet::from([party.to_owned()]);
        for member in members {
            if let Some(theirs) = DB::party_id_of(conn, member).await? {
                wanted.insert(theirs);
            }
        }
        let unlocked: Vec<String> = wanted.difference(&locked).cloned().collect();
        if unlocked.is_empty() {
            settled = true;
            break;
        }
        for id in unlocked {
            DB::lock_party(conn, &id).await?;
            locked.insert(id);
        }
    }
    if !settled {
        return Err(changing(leader));
    }
    // Every member leaves another party as `leave_party` would.
    for member in members {
        if let Some(theirs) = DB::party_id_of(conn, member).await?
            && theirs != party
        {
            leave_locked::<DB>(conn, &theirs, member).await?;
        }
    }
    if DB::lock_party(conn, party).await?.is_some() {
        DB::clear_members(conn, party).await?;
        DB::set_leader(conn, party, leader).await?;
    } else if !DB::create_party(conn, party, leader, now_ms).await? {
        return Err(StoreError::Unavailable(format!(
            "party {party:?} was formed while it was declared; try again"
        )));
    }
    for member in members {
        if !DB::join_party(conn, party, member).await? {
            return Err(StoreError::Unavailable(format!(
                "{member:?} joined a party while it was declared; try again"
            )));
        }
        DB::drop_invite(conn, party, member).await?;
    }
    Ok(Party {
        id: party.to_owned(),
        leader: leader.to_owned(),
        members: members.iter().map(|m| (*m).to_owned()).collect(),
    })
}

/// [`Store::host_shared`](super::Store::host_shared).
pub async fn host<DB: Queries>(
    conn: &mut DB::Connection,
    host: &SharedHost,
) -> Result<SharedHost, StoreError> {
    let dead_before = host.refreshed_ms.saturating_sub(SHARED_HOST_TTL_MS);
    for _ in 0..LOCK_TRIES {
        if let Some(hosted) = DB::host_shared(conn, host, dead_before).await? {
            return Ok(hosted);
        }
        // Released between the two statements (PostgreSQL): claim it again.
        if let Some(instance) = DB::shared_holder(conn, &host.party).await? {
            return Err(StoreError::SharedElsewhere { instance });
        }
    }
    Err(StoreError::Unavailable(format!(
        "the shared host of party {:?} kept changing; try again",
        host.party
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_member_wraps_to_the_first() {
        let members: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        assert_eq!(next_after(&members, "a"), "b");
        assert_eq!(next_after(&members, "c"), "a");
        assert_eq!(next_after(&members[..1], "a"), "a");
        assert_eq!(next_after(&members, "z"), "z");
    }

    #[test]
    fn duplicates_collapse_to_the_first() {
        let members: Vec<String> = ["b", "a", "b", "c", "a"].map(String::from).to_vec();
        assert_eq!(distinct(&members), vec!["b", "a", "c"]);
    }
}
