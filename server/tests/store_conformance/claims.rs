//! Session claims: the newest claim holds and is announced, a replaced session releases
//! nothing, and a connect storm's claims and releases each get their own answer.

use banter_server::credentials::{self, GameServer};
use banter_server::store::{ClaimEvent, StoreError};
use futures_util::StreamExt;

use crate::store_support::{OpenStore, TestDb};
use crate::{WAIT, next_claim_of};

async fn session_claims_take_over(db: &TestDb) {
    let store = db.open().await;
    // Unique per test run: PostgreSQL's channel is shared by every schema in the database.
    let player = format!("claimer-{}", db.schema().unwrap_or("sqlite"));
    let mut claims = store.session_claims().await.expect("subscribe");
    let first = store
        .claim_session(&player, "s1", "inst-a")
        .await
        .expect("claim");
    assert_eq!(
        (
            first.session_id.as_str(),
            first.instance_id.as_str(),
            first.epoch
        ),
        ("s1", "inst-a", 1)
    );
    assert_eq!(next_claim_of(&mut claims, &player).await, first);
    let second = store
        .claim_session(&player, "s2", "inst-b")
        .await
        .expect("claim");
    assert_eq!(second.epoch, 2, "a newer claim has a higher epoch");
    assert_eq!(next_claim_of(&mut claims, &player).await, second);
    assert_eq!(store.session_owner(&player).await, Ok(Some(second.clone())));
    assert_eq!(
        store.release_session(&player, "s1").await,
        Ok(false),
        "a replaced session releases nothing"
    );
    assert_eq!(store.session_owner(&player).await, Ok(Some(second)));
    assert_eq!(store.release_session(&player, "s2").await, Ok(true));
    assert_eq!(store.session_owner(&player).await, Ok(None));
    store.close().await;
    let end = tokio::time::timeout(WAIT, async {
        while let Some(event) = claims.next().await {
            assert!(
                !matches!(&event, ClaimEvent::Claimed(c) if c.player_id == player),
                "{event:?}"
            );
        }
    })
    .await;
    assert!(end.is_ok(), "the claims stream ends when the store closes");
}

/// Many sessions start and end at once (a connect storm): every claim gets its own epoch,
/// the newest holds, every release answers for its own session, and every first visit gets
/// its profile. On SQLite these are written many to a transaction; each caller must still
/// get its own answer.
async fn concurrent_claims_and_releases_each_get_their_own_answer(db: &TestDb) {
    let store = db.open().await;
    let tag = db.schema().unwrap_or("sqlite").to_owned();
    let contested = format!("storm-{tag}");
    let claims = futures_util::future::join_all((0..40).map(|i| {
        let (store, player) = (store.clone(), contested.clone());
        async move { store.claim_session(&player, &format!("s{i}"), "inst").await }
    }))
    .await;
    let mut epochs: Vec<i64> = claims
        .iter()
        .map(|c| c.as_ref().expect("claim").epoch)
        .collect();
    let newest = claims
        .iter()
        .flatten()
        .max_by_key(|c| c.epoch)
        .cloned()
        .expect("40 claims");
    epochs.sort_unstable();
    assert_eq!(epochs, (1..=40).collect::<Vec<i64>>(), "one epoch each");
    assert_eq!(store.session_owner(&contested).await, Ok(Some(newest)));

    let sessions = futures_util::future::join_all((0..40).map(|i| {
        let store = store.clone();
        let player = format!("storm-{tag}-{i}");
        async move {
            let record = store.load_player(&player).await;
            let claim = store.claim_session(&player, "s", "inst").await;
            let stale = store.release_session(&player, "other").await;
            let released = store.release_session(&player, "s").await;
            let owner = store.session_owner(&player).await;
            (
                record.map(|r| r.profile.coins),
                claim.map(|c| c.epoch),
                stale,
                released,
                owner,
            )
        }
    }))
    .await;
    for session in sessions {
        assert_eq!(session, (Ok(0), Ok(1), Ok(false), Ok(true), Ok(None)));
    }
    store.close().await;
}

/// A channel's live claim refuses the player's own WebSocket and another credential's channel;
/// the same credential's channel takes it over; a released claim or one of a revoked credential
/// refuses nothing.
async fn a_channels_claim_refuses_other_carriers_until_released_or_revoked(db: &TestDb) {
    let store = db.open().await;
    let player = format!("carried-{}", db.schema().unwrap_or("sqlite"));
    let carried_elsewhere = Err(StoreError::CarriedElsewhere(player.clone()));
    for (id, name) in [("gs_00000000000000aa", "a"), ("gs_00000000000000bb", "b")] {
        let server = GameServer {
            id: id.to_owned(),
            name: name.to_owned(),
            players: vec!["carried-".to_owned()],
            created_at_ms: 0,
            revoked_at_ms: None,
        };
        store
            .issue_game_server(&server, &credentials::secret_sha256(name))
            .await
            .expect("issued");
    }
    let (a, b) = (Some("gs_00000000000000aa"), Some("gs_00000000000000bb"));
    let first = store
        .claim_session_for(&player, "ch1", "inst-a", a)
        .await
        .expect("a channel claims");
    assert_eq!(
        store.claim_session(&player, "ws", "inst-b").await,
        carried_elsewhere
    );
    assert_eq!(
        store.claim_session_for(&player, "ch2", "inst-b", b).await,
        carried_elsewhere
    );
    assert_eq!(
        store.session_owner(&player).await,
        Ok(Some(first.clone())),
        "a refused claim changes nothing"
    );
    let moved = store
        .claim_session_for(&player, "ch3", "inst-b", a)
        .await
        .expect("the same credential's channel takes it over");
    assert_eq!(moved.epoch, first.epoch + 1);
    assert_eq!(store.release_session(&player, "ch3").await, Ok(true));
    let direct = store
        .claim_session(&player, "ws", "inst-b")
        .await
        .expect("a released claim refuses nothing");
    let back = store
        .claim_session_for(&player, "ch4", "inst-a", a)
        .await
        .expect("a channel takes a direct session over, as a reconnect does");
    assert_eq!(back.epoch, direct.epoch + 1);
    store
        .revoke_game_server("gs_00000000000000aa", 1)
        .await
        .expect("revoked");
    store
        .claim_session(&player, "ws2", "inst-b")
        .await
        .expect("a revoked credential's claim refuses nothing");
    store.close().await;
}

on_both_backends!(
    session_claims_take_over,
    concurrent_claims_and_releases_each_get_their_own_answer,
    a_channels_claim_refuses_other_carriers_until_released_or_revoked,
);
