//! Opening and closing: data survives a restart, migrations run once, `connect` picks the
//! backend from the URL, and a closed store answers retryable errors.

use banter_server::store::{self, ConnectOptions, StoreError};

use crate::Writes;
use crate::store_support::{OpenStore, TestDb};
use crate::{accept, complete, load, snapshot};

async fn data_survives_a_restart(db: &TestDb) {
    let store = db.open().await;
    accept(store.as_ref(), "p1", "q1", &["fish", "talk"]).await;
    store
        .advance_objective("p1", "q1", "fish", 2, 5, Some("ev-1"))
        .await
        .expect("advance");
    store.accept_quest("p1", "q2", &[]).await.expect("accept");
    complete(store.as_ref(), "p1", "q2", 40, 4).await;
    store
        .set_tracked_quest("p1", Some("q1"))
        .await
        .expect("track");
    store.move_tutorial("p1", 0, 2).await.expect("stage");
    let before = snapshot(store.as_ref(), "p1").await;
    store.close().await;
    drop(store);

    let store = db.open().await;
    assert_eq!(snapshot(store.as_ref(), "p1").await, before);
    let err = store
        .advance_objective("p1", "q1", "fish", 2, 5, Some("ev-1"))
        .await
        .expect_err("still a duplicate");
    assert!(matches!(err, StoreError::DuplicateEvent { .. }));
    let err = store
        .complete_quest("p1", "q2", 40, 4)
        .await
        .expect_err("still paid");
    assert!(matches!(
        err,
        StoreError::QuestState { .. } | StoreError::AlreadyPaid { .. }
    ));
}

async fn migrations_are_idempotent(db: &TestDb) {
    let store = db.open().await;
    store.move_tutorial("p1", 0, 1).await.expect("stage");
    let applied = db.scalar("SELECT COUNT(*) FROM _sqlx_migrations").await;
    assert!(applied >= 1);
    store.close().await;
    let again = db.open().await;
    store::migrate(&db.url()).await.expect("migrate");
    store::migrate(&db.url()).await.expect("migrate again");
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM _sqlx_migrations").await,
        applied
    );
    assert_eq!(load(again.as_ref(), "p1").await.profile.tutorial_stage, 1);
    // A store told not to migrate connects to the migrated database just the same.
    let unmigrated = db
        .open_with(ConnectOptions {
            run_migrations: false,
            ..ConnectOptions::default()
        })
        .await;
    assert_eq!(
        load(unmigrated.as_ref(), "p1").await.profile.tutorial_stage,
        1
    );
}

async fn connect_picks_the_backend_from_the_url(db: &TestDb) {
    let store = store::connect(&db.url(), ConnectOptions::default())
        .await
        .expect("connect by URL");
    assert_eq!(store.backend(), db.backend());
    store.ping().await.expect("ping");
    store.move_tutorial("p1", 0, 4).await.expect("stage");
    store.close().await;
    let direct = db.open().await;
    assert_eq!(
        load(direct.as_ref(), "p1").await.profile.tutorial_stage,
        4,
        "same database as open()"
    );
}

async fn a_closed_store_answers_retryable_errors(db: &TestDb) {
    let store = db.open().await;
    load(store.as_ref(), "p1").await;
    store.close().await;
    let err = store.load_player("p1").await.expect_err("closed");
    assert!(err.retryable(), "{err:?}");
    let err = store
        .claim_session("p1", "s1", "inst")
        .await
        .expect_err("closed");
    assert!(err.retryable(), "{err:?}");
    let err = store.release_session("p1", "s1").await.expect_err("closed");
    assert!(err.retryable(), "{err:?}");
    let err = store.ping().await.expect_err("closed");
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
}

on_both_backends!(
    data_survives_a_restart,
    migrations_are_idempotent,
    connect_picks_the_backend_from_the_url,
    a_closed_store_answers_retryable_errors,
);
