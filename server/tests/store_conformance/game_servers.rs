//! Game-server credentials: issued with only their secret's hash, listed oldest first, looked up
//! by id, revoked once (a second revocation keeps the first time).

use banter_server::credentials::{self, GameServer};

use crate::store_support::{OpenStore, TestDb};

fn server(id: &str, name: &str, created_at_ms: i64) -> GameServer {
    GameServer {
        id: id.to_owned(),
        name: name.to_owned(),
        players: vec!["rbx-".to_owned(), "steam_".to_owned()],
        created_at_ms,
        revoked_at_ms: None,
    }
}

async fn game_servers_are_kept_by_hash_listed_and_revoked_once(db: &TestDb) {
    let store = db.open().await;
    let minted = credentials::mint().expect("random source");
    let first = server(&minted.id, "seaside-eu", 1_000);
    store
        .issue_game_server(&first, &minted.secret_sha256)
        .await
        .expect("issued");
    let second = server("gs_00000000000000bb", "seaside-us", 2_000);
    store
        .issue_game_server(&second, &credentials::secret_sha256("other"))
        .await
        .expect("issued");

    assert_eq!(
        store.game_servers().await.expect("listed"),
        vec![first.clone(), second.clone()],
        "oldest first, scope prefixes in order"
    );
    let (found, hash) = store
        .game_server(&first.id)
        .await
        .expect("read")
        .expect("found");
    assert_eq!(found, first);
    assert_eq!(hash, minted.secret_sha256);
    let presented = credentials::parse(&minted.credential).expect("well-formed");
    assert!(credentials::secret_matches(presented.secret, &hash));
    assert!(!hash.contains(presented.secret), "only the hash is stored");
    assert_eq!(
        store
            .game_server("gs_00000000000000cc")
            .await
            .expect("read"),
        None
    );

    let revoked = store
        .revoke_game_server(&first.id, 5_000)
        .await
        .expect("revoked")
        .expect("known");
    assert_eq!(revoked.revoked_at_ms, Some(5_000));
    let again = store
        .revoke_game_server(&first.id, 9_000)
        .await
        .expect("revoked")
        .expect("known");
    assert_eq!(
        again.revoked_at_ms,
        Some(5_000),
        "the first revocation's time stays"
    );
    assert_eq!(
        store
            .revoke_game_server("gs_00000000000000cc", 9_000)
            .await
            .expect("read"),
        None
    );
    let listed = store.game_servers().await.expect("listed");
    assert!(listed[0].revoked());
    assert!(!listed[1].revoked());
}

async fn an_id_issued_twice_is_refused_and_changes_nothing(db: &TestDb) {
    let store = db.open().await;
    let first = server("gs_00000000000000aa", "one", 1_000);
    store
        .issue_game_server(&first, &credentials::secret_sha256("a"))
        .await
        .expect("issued");
    let clash = server("gs_00000000000000aa", "two", 2_000);
    assert!(
        store
            .issue_game_server(&clash, &credentials::secret_sha256("b"))
            .await
            .is_err()
    );
    assert_eq!(store.game_servers().await.expect("listed"), vec![first]);
}

on_both_backends!(
    game_servers_are_kept_by_hash_listed_and_revoked_once,
    an_id_issued_twice_is_refused_and_changes_nothing,
);
