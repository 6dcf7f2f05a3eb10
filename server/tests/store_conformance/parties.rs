//! Parties: formed, joined by invitation in join order, left (leadership handed on, the last one
//! out deleting the party with its invitations and its shared host), declared by a game server
//! over old memberships, at most eight members however joins race, and one live host of a
//! party's shared conversation.

use std::sync::Arc;

use banter_server::store::{
    INVITE_TTL_MS, MAX_PARTY_SIZE, Party, PartyInvite, SHARED_HOST_TTL_MS, SharedHost, Store,
    StoreError,
};

use crate::at_once;
use crate::store_support::{OpenStore, TestDb};

/// A time the scenarios start at, in milliseconds.
const T0: i64 = 1_700_000_000_000;

fn names(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| (*s).to_owned()).collect()
}

fn party(id: &str, leader: &str, members: &[&str]) -> Party {
    Party {
        id: id.to_owned(),
        leader: leader.to_owned(),
        members: names(members),
    }
}

/// `leader` forms `id`, and each of `others` joins it in order (invited by the leader).
async fn formed(store: &dyn Store, id: &str, leader: &str, others: &[&str]) -> Party {
    let mut formed = store.form_party(id, leader, T0).await.expect("formed");
    for other in others {
        store
            .invite_to_party(leader, other, T0)
            .await
            .expect("invited");
        formed = store.accept_invite(other, id, T0).await.expect("accepted");
    }
    formed
}

/// Rows of a party table, to check that a refusal changed nothing.
async fn rows(db: &TestDb) -> [i64; 4] {
    [
        db.scalar("SELECT COUNT(*) FROM parties").await,
        db.scalar("SELECT COUNT(*) FROM party_members").await,
        db.scalar("SELECT COUNT(*) FROM party_invites").await,
        db.scalar("SELECT COUNT(*) FROM shared_hosts").await,
    ]
}

async fn a_party_is_formed_joined_by_invitation_and_left_by_its_last_member(db: &TestDb) {
    let store = db.open().await;
    assert_eq!(store.party_of("ann").await, Ok(None));
    assert_eq!(
        store.form_party("p1", "ann", T0).await,
        Ok(party("p1", "ann", &["ann"]))
    );
    assert_eq!(
        store.party_of("ann").await,
        Ok(Some(party("p1", "ann", &["ann"])))
    );

    let invite = store
        .invite_to_party("ann", "bob", T0 + 1)
        .await
        .expect("invited");
    assert_eq!(
        invite,
        PartyInvite {
            party: "p1".into(),
            inviter: "ann".into(),
            invitee: "bob".into(),
            created_ms: T0 + 1,
        }
    );
    assert_eq!(store.party_invites("bob", T0 + 2).await, Ok(vec![invite]));
    assert_eq!(
        store.accept_invite("bob", "p1", T0 + 2).await,
        Ok(party("p1", "ann", &["ann", "bob"]))
    );
    assert_eq!(
        store.party_invites("bob", T0 + 2).await,
        Ok(vec![]),
        "accepting uses the invitation up"
    );
    assert_eq!(
        store.accept_invite("bob", "p1", T0 + 3).await,
        Err(StoreError::AlreadyInParty),
        "once: a member accepts nothing, whatever it names"
    );
    // Any member may invite; members are in join order.
    store
        .invite_to_party("bob", "cid", T0 + 3)
        .await
        .expect("invited");
    store
        .accept_invite("cid", "p1", T0 + 4)
        .await
        .expect("joined");
    let everyone = party("p1", "ann", &["ann", "bob", "cid"]);
    for member in ["ann", "bob", "cid"] {
        assert_eq!(store.party_of(member).await, Ok(Some(everyone.clone())));
    }

    // A member leaves; then the leader, whose lead goes to the next by join order.
    assert_eq!(
        store.leave_party("bob").await,
        Ok(Some(party("p1", "ann", &["ann", "cid"])))
    );
    assert_eq!(store.party_of("bob").await, Ok(None));
    assert_eq!(store.leave_party("bob").await, Err(StoreError::NotInParty));
    assert_eq!(
        store.leave_party("ann").await,
        Ok(Some(party("p1", "cid", &["cid"])))
    );

    // The last one out deletes the party, its invitations and its shared host row.
    store
        .invite_to_party("cid", "dan", T0 + 5)
        .await
        .expect("invited");
    store
        .host_shared("p1", "npc", "talk", "i1", T0 + 5)
        .await
        .expect("hosted");
    assert_eq!(store.leave_party("cid").await, Ok(None));
    assert_eq!(store.party_of("cid").await, Ok(None));
    assert_eq!(store.party_invites("dan", T0 + 6).await, Ok(vec![]));
    assert_eq!(
        store.accept_invite("dan", "p1", T0 + 6).await,
        Err(StoreError::NoInvite),
        "the party is gone"
    );
    assert_eq!(rows(db).await, [0, 0, 0, 0], "nothing of the party is left");
    // Its id is free again.
    assert_eq!(
        store.form_party("p1", "dan", T0 + 7).await,
        Ok(party("p1", "dan", &["dan"]))
    );
}

async fn forming_needs_a_player_in_no_party_and_a_free_id(db: &TestDb) {
    let store = db.open().await;
    formed(&*store, "p1", "ann", &["bob"]).await;
    let before = rows(db).await;
    assert_eq!(
        store.form_party("p2", "ann", T0).await,
        Err(StoreError::AlreadyInParty)
    );
    assert_eq!(
        store.form_party("p2", "bob", T0).await,
        Err(StoreError::AlreadyInParty),
        "a member too"
    );
    assert!(matches!(
        store.form_party("p1", "cid", T0).await,
        Err(StoreError::InvalidInput(_))
    ));
    assert_eq!(rows(db).await, before, "refusals change nothing");
    assert_eq!(store.party_of("cid").await, Ok(None));
}

async fn invitations_are_checked_renewed_and_listed_oldest_first(db: &TestDb) {
    let store = db.open().await;
    assert_eq!(
        store.invite_to_party("ann", "bob", T0).await,
        Err(StoreError::NotInParty)
    );
    formed(&*store, "p1", "ann", &["bob"]).await;
    formed(&*store, "p2", "cid", &[]).await;
    let before = rows(db).await;
    assert_eq!(
        store.invite_to_party("ann", "ann", T0).await,
        Err(StoreError::AlreadyInParty),
        "oneself"
    );
    assert_eq!(
        store.invite_to_party("ann", "bob", T0).await,
        Err(StoreError::AlreadyInParty),
        "a member"
    );
    assert_eq!(rows(db).await, before, "refusals change nothing");

    // A player may be invited into several parties, and from another party.
    store
        .invite_to_party("cid", "dan", T0 + 10)
        .await
        .expect("invited");
    store
        .invite_to_party("ann", "dan", T0 + 20)
        .await
        .expect("invited");
    store
        .invite_to_party("ann", "cid", T0 + 20)
        .await
        .expect("a player of another party may be invited");
    let listed = store.party_invites("dan", T0 + 30).await.expect("listed");
    assert_eq!(
        listed
            .iter()
            .map(|i| (i.party.as_str(), i.created_ms))
            .collect::<Vec<_>>(),
        vec![("p2", T0 + 10), ("p1", T0 + 20)],
        "oldest first"
    );
    // Inviting again replaces the invitation: a new time, its new inviter.
    store
        .invite_to_party("cid", "dan", T0 + 40)
        .await
        .expect("invited again");
    store
        .invite_to_party("bob", "dan", T0 + 50)
        .await
        .expect("invited again");
    assert_eq!(
        store.party_invites("dan", T0 + 60).await,
        Ok(vec![
            PartyInvite {
                party: "p2".into(),
                inviter: "cid".into(),
                invitee: "dan".into(),
                created_ms: T0 + 40,
            },
            PartyInvite {
                party: "p1".into(),
                inviter: "bob".into(),
                invitee: "dan".into(),
                created_ms: T0 + 50,
            },
        ])
    );
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM party_invites WHERE invitee = 'dan'")
            .await,
        2,
        "replaced, not added"
    );
    // Expired ones are not listed.
    assert_eq!(
        store
            .party_invites("dan", T0 + 45 + INVITE_TTL_MS)
            .await
            .map(|l| l.len()),
        Ok(1)
    );
    // A player in a party accepts nothing until they leave it.
    let before = rows(db).await;
    assert_eq!(
        store.accept_invite("cid", "p1", T0 + 60).await,
        Err(StoreError::AlreadyInParty)
    );
    assert_eq!(rows(db).await, before, "the invitation is kept");
    assert_eq!(store.leave_party("cid").await, Ok(None));
    assert_eq!(
        store.accept_invite("cid", "p1", T0 + 60).await,
        Ok(party("p1", "ann", &["ann", "bob", "cid"]))
    );
}

async fn an_expired_or_missing_invitation_is_refused(db: &TestDb) {
    let store = db.open().await;
    formed(&*store, "p1", "ann", &[]).await;
    store
        .invite_to_party("ann", "bob", T0)
        .await
        .expect("invited");
    store
        .invite_to_party("ann", "cid", T0)
        .await
        .expect("invited");
    let before = rows(db).await;
    assert_eq!(
        store
            .accept_invite("bob", "p1", T0 + INVITE_TTL_MS + 1)
            .await,
        Err(StoreError::NoInvite),
        "expired"
    );
    assert_eq!(
        store.accept_invite("dan", "p1", T0).await,
        Err(StoreError::NoInvite),
        "never invited"
    );
    assert_eq!(
        store.accept_invite("bob", "p2", T0).await,
        Err(StoreError::NoInvite),
        "no such party"
    );
    assert_eq!(rows(db).await, before, "refusals change nothing");
    assert_eq!(
        store.accept_invite("cid", "p1", T0 + INVITE_TTL_MS).await,
        Ok(party("p1", "ann", &["ann", "cid"])),
        "live for exactly the TTL"
    );
    // Renewing an expired invitation makes it live again.
    store
        .invite_to_party("ann", "bob", T0 + 2 * INVITE_TTL_MS)
        .await
        .expect("invited again");
    assert_eq!(
        store
            .accept_invite("bob", "p1", T0 + 2 * INVITE_TTL_MS + 1)
            .await,
        Ok(party("p1", "ann", &["ann", "cid", "bob"]))
    );
}

async fn a_full_party_refuses_invitations_and_joins(db: &TestDb) {
    let store = db.open().await;
    let others = ["m1", "m2", "m3", "m4", "m5", "m6"];
    formed(&*store, "p1", "lead", &others).await;
    // Seven members: two invited, the first to accept takes the last place.
    for late in ["x1", "x2"] {
        store
            .invite_to_party("lead", late, T0)
            .await
            .expect("invited");
    }
    let full = store.accept_invite("x1", "p1", T0).await.expect("joined");
    assert_eq!(full.members.len(), MAX_PARTY_SIZE);
    assert_eq!(full.members.last().map(String::as_str), Some("x1"));
    let before = rows(db).await;
    assert_eq!(
        store.accept_invite("x2", "p1", T0).await,
        Err(StoreError::PartyFull)
    );
    assert_eq!(
        store.invite_to_party("lead", "x3", T0).await,
        Err(StoreError::PartyFull)
    );
    assert_eq!(rows(db).await, before, "refusals change nothing");
    // A place frees: the kept invitation is good again.
    store.leave_party("m3").await.expect("left");
    assert_eq!(
        store
            .accept_invite("x2", "p1", T0)
            .await
            .map(|p| p.members.len()),
        Ok(MAX_PARTY_SIZE)
    );
}

async fn four_accepts_racing_for_two_places_leave_exactly_eight_members(db: &TestDb) {
    let first = db.open().await;
    let second = db.open().await;
    formed(&*first, "p1", "lead", &["m1", "m2", "m3", "m4", "m5"]).await;
    let racers = ["r0", "r1", "r2", "r3"];
    for racer in racers {
        first
            .invite_to_party("lead", racer, T0)
            .await
            .expect("invited");
    }
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let outcomes = at_once(&first, &second, racers.len(), |store| {
        let racer = racers[next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)];
        async move { store.accept_invite(racer, "p1", T0).await }
    })
    .await;
    let joined = outcomes.iter().filter(|o| o.is_ok()).count();
    let full = outcomes
        .iter()
        .filter(|o| **o == Err(StoreError::PartyFull))
        .count();
    assert_eq!((joined, full), (2, 2), "{outcomes:?}");
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM party_members WHERE party = 'p1'")
            .await,
        MAX_PARTY_SIZE as i64
    );
    let party = first
        .party_of("lead")
        .await
        .expect("read")
        .expect("a party");
    assert_eq!(party.members.len(), MAX_PARTY_SIZE);
}

async fn a_player_accepting_two_invitations_at_once_joins_one_party(db: &TestDb) {
    let first = db.open().await;
    let second = db.open().await;
    formed(&*first, "p1", "ann", &[]).await;
    formed(&*first, "p2", "bob", &[]).await;
    first
        .invite_to_party("ann", "cid", T0)
        .await
        .expect("invited");
    first
        .invite_to_party("bob", "cid", T0)
        .await
        .expect("invited");
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let outcomes = at_once(&first, &second, 2, |store| {
        let party = ["p1", "p2"][next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)];
        async move { store.accept_invite("cid", party, T0).await }
    })
    .await;
    let joined: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!(joined.len(), 1, "{outcomes:?}");
    assert!(
        outcomes.contains(&Err(StoreError::AlreadyInParty)),
        "{outcomes:?}"
    );
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM party_members WHERE player = 'cid'")
            .await,
        1
    );
    assert_eq!(
        first.party_of("cid").await.map(|p| p.map(|p| p.id)),
        Ok(Some(joined[0].id.clone()))
    );
}

async fn leadership_is_handed_on_in_join_order(db: &TestDb) {
    let store = db.open().await;
    assert_eq!(store.hand_on_leadership("ann").await, Ok(None));
    formed(&*store, "p1", "ann", &[]).await;
    assert_eq!(
        store.hand_on_leadership("ann").await,
        Ok(Some(party("p1", "ann", &["ann"]))),
        "alone: unchanged"
    );
    for other in ["bob", "cid", "dan"] {
        store
            .invite_to_party("ann", other, T0)
            .await
            .expect("invited");
        store.accept_invite(other, "p1", T0).await.expect("joined");
    }
    let order = ["ann", "bob", "cid", "dan"];
    assert_eq!(
        store.hand_on_leadership("cid").await,
        Ok(Some(party("p1", "ann", &order))),
        "not the leader: unchanged"
    );
    assert_eq!(
        store.hand_on_leadership("ann").await,
        Ok(Some(party("p1", "bob", &order)))
    );
    assert_eq!(
        store.hand_on_leadership("bob").await,
        Ok(Some(party("p1", "cid", &order)))
    );
    assert_eq!(
        store.hand_on_leadership("cid").await,
        Ok(Some(party("p1", "dan", &order)))
    );
    assert_eq!(
        store.hand_on_leadership("dan").await,
        Ok(Some(party("p1", "ann", &order))),
        "wraps to the first"
    );
    assert_eq!(
        store.party_of("dan").await,
        Ok(Some(party("p1", "ann", &order))),
        "stored"
    );
    // A leader who leaves hands on to the next after them, wrapping.
    store.hand_on_leadership("ann").await.expect("handed on");
    store.hand_on_leadership("bob").await.expect("handed on");
    assert_eq!(
        store.leave_party("cid").await,
        Ok(Some(party("p1", "dan", &["ann", "bob", "dan"])))
    );
    assert_eq!(
        store.leave_party("dan").await,
        Ok(Some(party("p1", "ann", &["ann", "bob"]))),
        "the last in join order hands on to the first"
    );
    // A newcomer joins last.
    store
        .invite_to_party("bob", "cid", T0)
        .await
        .expect("invited");
    assert_eq!(
        store.accept_invite("cid", "p1", T0).await,
        Ok(party("p1", "ann", &["ann", "bob", "cid"]))
    );
}

async fn a_declaration_replaces_old_memberships(db: &TestDb) {
    let store = db.open().await;
    formed(&*store, "p1", "ann", &["bob"]).await;
    formed(&*store, "p2", "cid", &["dan", "eve"]).await;
    store
        .invite_to_party("ann", "zed", T0)
        .await
        .expect("invited");
    store
        .host_shared("p1", "npc", "talk", "i1", T0)
        .await
        .expect("hosted");

    // ann (who led p1) and dan (a member of p2) go to p3; duplicates collapse.
    let declared = store
        .declare_party(
            "p3",
            "ann",
            &names(&["dan", "ann", "new", "ann", "dan"]),
            T0,
        )
        .await;
    assert_eq!(declared, Ok(party("p3", "ann", &["dan", "ann", "new"])));
    assert_eq!(store.party_of("new").await, Ok(declared.ok()));
    assert_eq!(
        store.party_of("bob").await,
        Ok(Some(party("p1", "bob", &["bob"]))),
        "the lead of p1 went on to bob"
    );
    assert_eq!(
        store.party_of("cid").await,
        Ok(Some(party("p2", "cid", &["cid", "eve"])))
    );

    // bob's declaration empties p1: it is gone, with its invitation and its host row.
    assert_eq!(
        store.declare_party("p4", "bob", &names(&["bob"]), T0).await,
        Ok(party("p4", "bob", &["bob"]))
    );
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM parties WHERE id = 'p1'")
            .await,
        0
    );
    assert_eq!(store.party_invites("zed", T0).await, Ok(vec![]));
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM shared_hosts WHERE party = 'p1'")
            .await,
        0
    );

    // Declaring an existing party replaces its members and leader; those left out are in none.
    store
        .invite_to_party("ann", "eve", T0)
        .await
        .expect("invited");
    store
        .invite_to_party("ann", "fay", T0)
        .await
        .expect("invited");
    assert_eq!(
        store
            .declare_party("p3", "eve", &names(&["new", "eve"]), T0 + 1)
            .await,
        Ok(party("p3", "eve", &["new", "eve"]))
    );
    assert_eq!(store.party_of("ann").await, Ok(None));
    assert_eq!(store.party_of("dan").await, Ok(None));
    assert_eq!(
        store.party_of("cid").await,
        Ok(Some(party("p2", "cid", &["cid"]))),
        "eve left p2"
    );
    assert_eq!(
        store.party_invites("eve", T0 + 1).await,
        Ok(vec![]),
        "a member's own invitation into it is used up"
    );
    assert_eq!(
        store
            .party_invites("fay", T0 + 1)
            .await
            .map(|l| l.into_iter().map(|i| i.party).collect::<Vec<_>>()),
        Ok(vec!["p3".to_owned()]),
        "others' invitations stay"
    );

    // Refused: the leader not a member, too many members. Nothing changes.
    let before = rows(db).await;
    assert_eq!(
        store
            .declare_party("p5", "ann", &names(&["bob", "cid"]), T0)
            .await,
        Err(StoreError::NotAMember)
    );
    assert_eq!(
        store.declare_party("p5", "ann", &[], T0).await,
        Err(StoreError::NotAMember)
    );
    let nine: Vec<String> = (0..=MAX_PARTY_SIZE).map(|i| format!("n{i}")).collect();
    assert_eq!(
        store.declare_party("p5", "n0", &nine, T0).await,
        Err(StoreError::PartyFull)
    );
    assert_eq!(rows(db).await, before);
    // Eight distinct, however many times named, is fine.
    let mut eight: Vec<String> = nine[..MAX_PARTY_SIZE].to_vec();
    eight.extend(nine[..3].iter().cloned());
    assert_eq!(
        store
            .declare_party("p5", "n0", &eight, T0)
            .await
            .map(|p| p.members),
        Ok(nine[..MAX_PARTY_SIZE].to_vec())
    );
}

async fn a_shared_conversation_has_one_live_host(db: &TestDb) {
    let store = db.open().await;
    let other = db.open().await;
    let host = |npc: &str, conversation: &str, instance: &str, at: i64| SharedHost {
        party: "p1".into(),
        npc: npc.into(),
        conversation: conversation.into(),
        instance: instance.into(),
        refreshed_ms: at,
    };
    assert_eq!(
        store.host_shared("p1", "smith", "forge", "i1", T0).await,
        Ok(host("smith", "forge", "i1", T0))
    );
    // The same instance and NPC: refreshed, the hosted conversation kept.
    assert_eq!(
        store
            .host_shared("p1", "smith", "other", "i1", T0 + 10)
            .await,
        Ok(host("smith", "forge", "i1", T0 + 10))
    );
    // Another instance, or another NPC, while it lives: refused.
    let elsewhere = Err(StoreError::SharedElsewhere {
        instance: "i1".into(),
    });
    assert_eq!(
        other
            .host_shared("p1", "smith", "forge", "i2", T0 + 20)
            .await,
        elsewhere
    );
    assert_eq!(
        store
            .host_shared("p1", "baker", "bread", "i1", T0 + 20)
            .await,
        elsewhere
    );
    assert_eq!(
        other
            .host_shared("p1", "smith", "forge", "i2", T0 + 10 + SHARED_HOST_TTL_MS)
            .await,
        elsewhere,
        "live for exactly the TTL"
    );
    assert_eq!(
        db.scalar("SELECT refreshed_ms FROM shared_hosts WHERE party = 'p1'")
            .await,
        T0 + 10,
        "refusals change nothing"
    );
    // Refreshed only by its holder.
    assert_eq!(other.refresh_shared("p1", "i2", T0 + 30).await, Ok(false));
    assert_eq!(store.refresh_shared("p2", "i1", T0 + 30).await, Ok(false));
    assert_eq!(store.refresh_shared("p1", "i1", T0 + 30).await, Ok(true));
    let dead = T0 + 30 + SHARED_HOST_TTL_MS + 1;
    assert_eq!(
        other
            .host_shared("p1", "smith", "forge", "i2", dead - 1)
            .await,
        elsewhere
    );
    // Dead: anyone takes it, with their own NPC and conversation.
    assert_eq!(
        other.host_shared("p1", "baker", "bread", "i2", dead).await,
        Ok(host("baker", "bread", "i2", dead))
    );
    assert_eq!(store.refresh_shared("p1", "i1", dead).await, Ok(false));
    // Released only by its holder.
    store
        .release_shared("p1", "i1", i64::MAX)
        .await
        .expect("released");
    assert_eq!(
        store
            .host_shared("p1", "baker", "bread", "i1", dead + 1)
            .await,
        Err(StoreError::SharedElsewhere {
            instance: "i2".into()
        })
    );
    // Not a row refreshed at or after the release's time: a newer room's claim stays.
    other
        .release_shared("p1", "i2", dead)
        .await
        .expect("released");
    assert_eq!(rows(db).await[3], 1, "claimed at `dead`: not released");
    other
        .release_shared("p1", "i2", dead + 1)
        .await
        .expect("released");
    assert_eq!(rows(db).await[3], 0);
    assert_eq!(
        store
            .host_shared("p1", "smith", "forge", "i1", dead + 2)
            .await,
        Ok(host("smith", "forge", "i1", dead + 2))
    );
}

async fn bad_ids_are_refused_and_change_nothing(db: &TestDb) {
    let store = db.open().await;
    formed(&*store, "p1", "ann", &["bob"]).await;
    store
        .invite_to_party("ann", "cid", T0)
        .await
        .expect("invited");
    store
        .host_shared("p1", "npc", "talk", "i1", T0)
        .await
        .expect("hosted");
    let before = rows(db).await;
    let long = "x".repeat(129);
    for bad in ["", long.as_str(), "a\nb"] {
        let refused = |outcome: Result<(), StoreError>, what: &str| {
            assert!(
                matches!(outcome, Err(StoreError::InvalidInput(_))),
                "{what} with {bad:?}: {outcome:?}"
            );
        };
        let s = &*store;
        refused(s.party_of(bad).await.map(drop), "party_of");
        refused(s.form_party(bad, "dan", T0).await.map(drop), "form id");
        refused(s.form_party("p9", bad, T0).await.map(drop), "form leader");
        refused(s.invite_to_party(bad, "dan", T0).await.map(drop), "inviter");
        refused(s.invite_to_party("ann", bad, T0).await.map(drop), "invitee");
        refused(s.accept_invite(bad, "p1", T0).await.map(drop), "accepter");
        refused(s.accept_invite("cid", bad, T0).await.map(drop), "accepted");
        refused(s.leave_party(bad).await.map(drop), "leave");
        refused(s.hand_on_leadership(bad).await.map(drop), "hand on");
        refused(
            s.declare_party(bad, "ann", &names(&["ann"]), T0)
                .await
                .map(drop),
            "declared id",
        );
        refused(
            s.declare_party("p9", bad, &names(&["ann"]), T0)
                .await
                .map(drop),
            "declared leader",
        );
        refused(
            s.declare_party("p9", "ann", &names(&["ann", bad]), T0)
                .await
                .map(drop),
            "declared member",
        );
        refused(s.party_invites(bad, T0).await.map(drop), "invites");
        for (i, args) in [
            [bad, "npc", "talk", "i2"],
            ["p1", bad, "talk", "i2"],
            ["p1", "npc", bad, "i2"],
            ["p1", "npc", "talk", bad],
        ]
        .iter()
        .enumerate()
        {
            let [party, npc, conversation, instance] = *args;
            refused(
                s.host_shared(party, npc, conversation, instance, T0)
                    .await
                    .map(drop),
                &format!("host_shared argument {i}"),
            );
        }
        refused(
            s.refresh_shared(bad, "i1", T0).await.map(drop),
            "refresh id",
        );
        refused(
            s.refresh_shared("p1", bad, T0).await.map(drop),
            "refresh instance",
        );
        refused(s.release_shared(bad, "i1", T0).await, "release id");
        refused(s.release_shared("p1", bad, T0).await, "release instance");
    }
    assert_eq!(rows(db).await, before, "nothing changed");
    assert_eq!(
        store.party_of("bob").await,
        Ok(Some(party("p1", "ann", &["ann", "bob"])))
    );
    assert_eq!(store.party_invites("cid", T0).await.map(|l| l.len()), Ok(1));
}

on_both_backends!(
    a_party_is_formed_joined_by_invitation_and_left_by_its_last_member,
    forming_needs_a_player_in_no_party_and_a_free_id,
    invitations_are_checked_renewed_and_listed_oldest_first,
    an_expired_or_missing_invitation_is_refused,
    a_full_party_refuses_invitations_and_joins,
    four_accepts_racing_for_two_places_leave_exactly_eight_members,
    a_player_accepting_two_invitations_at_once_joins_one_party,
    leadership_is_handed_on_in_join_order,
    a_declaration_replaces_old_memberships,
    a_shared_conversation_has_one_live_host,
    bad_ids_are_refused_and_change_nothing,
);
