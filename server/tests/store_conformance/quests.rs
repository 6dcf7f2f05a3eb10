//! Profiles and accepting quests: a first load creates the profile, a quest is accepted once
//! (also under concurrent accepts on two stores), bad input is refused before it changes
//! anything, and the tracked quest and tutorial stage round-trip.

use std::collections::BTreeMap;

use banter_server::store::{self, MAX_REWARD, ProfileRecord, StoreError, StoredQuestStatus};

use crate::Writes;
use crate::store_support::{OpenStore, TestDb};
use crate::{accept, assert_unchanged, at_once, complete, load, objectives, snapshot, status_of};

async fn load_creates_a_profile(db: &TestDb) {
    let store = db.open().await;
    assert_eq!(store.backend(), db.backend());
    store.ping().await.expect("ping");
    let record = load(store.as_ref(), "p1").await;
    assert_eq!(record.profile, ProfileRecord::default());
    assert!(record.quests.is_empty());
    assert_eq!(
        load(store.as_ref(), "p1").await,
        record,
        "a second load reads the same profile"
    );
    assert_eq!(db.scalar("SELECT COUNT(*) FROM profiles").await, 1);
    assert!(store.ledger("p1").await.expect("ledger").is_empty());
}

async fn accept_twice_is_refused_and_changes_nothing(db: &TestDb) {
    let store = db.open().await;
    accept(store.as_ref(), "p1", "q1", &["fish", "talk"]).await;
    let record = load(store.as_ref(), "p1").await;
    assert_eq!(status_of(&record, "q1"), Some(StoredQuestStatus::Active));
    assert_eq!(
        record.quests["q1"].progress,
        BTreeMap::from([("fish".into(), 0), ("talk".into(), 0)])
    );

    store
        .advance_objective("p1", "q1", "fish", 2, 5, None)
        .await
        .expect("advance");
    let before = snapshot(store.as_ref(), "p1").await;
    let err = store
        .accept_quest("p1", "q1", &objectives(&["fish", "talk"]))
        .await
        .expect_err("second accept");
    assert!(
        matches!(&err, StoreError::QuestState { quest, found: Some(StoredQuestStatus::Active), .. } if quest == "q1"),
        "{err:?}"
    );
    assert_unchanged(
        store.as_ref(),
        "p1",
        &before,
        "the refused accept changed nothing",
    )
    .await;

    complete(store.as_ref(), "p1", "q1", 10, 1).await;
    let before = snapshot(store.as_ref(), "p1").await;
    let err = store
        .accept_quest("p1", "q1", &objectives(&["fish"]))
        .await
        .expect_err("accept a completed quest");
    assert!(
        matches!(
            err,
            StoreError::QuestState {
                found: Some(StoredQuestStatus::Completed),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(snapshot(store.as_ref(), "p1").await, before);
}

async fn concurrent_accepts_accept_once(db: &TestDb) {
    let store = db.open().await;
    let other = db.open().await;
    load(store.as_ref(), "p1").await;
    for round in 0..10 {
        let quest = format!("q{round}");
        let outcomes = at_once(&store, &other, 8, |store| {
            let quest = quest.clone();
            async move {
                store
                    .accept_quest("p1", &quest, &objectives(&["a", "b"]))
                    .await
            }
        })
        .await;
        let mut accepted = 0;
        for outcome in outcomes {
            match outcome {
                Ok(()) => accepted += 1,
                Err(StoreError::QuestState {
                    found: Some(StoredQuestStatus::Active),
                    ..
                }) => {}
                Err(other) => panic!("unexpected error: {other:?}"),
            }
        }
        assert_eq!(accepted, 1, "round {round}");
    }
    let record = load(store.as_ref(), "p1").await;
    assert_eq!(record.quests.len(), 10);
    assert!(record.quests.values().all(|q| q.progress.len() == 2));
}

async fn bad_input_is_refused_and_changes_nothing(db: &TestDb) {
    let store = db.open().await;
    accept(store.as_ref(), "p1", "q1", &["fish"]).await;
    let before = snapshot(store.as_ref(), "p1").await;
    let long = "x".repeat(store::MAX_ID_LEN + 1);
    let refusals = [
        store.load_player("").await.map(|_| ()),
        store.load_player(&long).await.map(|_| ()),
        store.load_player("bad\nid").await.map(|_| ()),
        store.accept_quest("p1", "", &objectives(&["a"])).await,
        store
            .accept_quest("p1", "q2", &objectives(&["a", "a"]))
            .await,
        store.accept_quest("p1", "q2", &objectives(&[""])).await,
        store
            .advance_objective("p1", "q1", &long, 1, 3, None)
            .await
            .map(|_| ()),
        store
            .advance_objective("p1", "q1", "fish", 1, 3, Some(&"e".repeat(201)))
            .await
            .map(|_| ()),
        store.complete_quest("p1", "q1", -1, 0).await.map(|_| ()),
        store
            .complete_quest("p1", "q1", 0, MAX_REWARD + 1)
            .await
            .map(|_| ()),
        store.move_tutorial("p1", 0, -1).await.map(|_| ()),
        store.set_tracked_quest("p1", Some("")).await,
    ];
    for (i, refusal) in refusals.into_iter().enumerate() {
        let err = refusal.expect_err("bad input is refused");
        assert!(
            matches!(err, StoreError::InvalidInput(_)),
            "case {i}: {err:?}"
        );
    }
    assert_eq!(snapshot(store.as_ref(), "p1").await, before);
    assert_eq!(db.scalar("SELECT COUNT(*) FROM profiles").await, 1);
}

async fn tracked_quest_and_tutorial_stage_round_trip(db: &TestDb) {
    let store = db.open().await;
    store
        .set_tracked_quest("p1", Some("q7"))
        .await
        .expect("track");
    store.move_tutorial("p1", 0, 3).await.expect("stage");
    let profile = load(store.as_ref(), "p1").await.profile;
    assert_eq!(profile.tracked_quest.as_deref(), Some("q7"));
    assert_eq!(profile.tutorial_stage, 3);
    store.set_tracked_quest("p1", None).await.expect("untrack");
    store.move_tutorial("p1", 3, 0).await.expect("stage 0");
    let profile = load(store.as_ref(), "p1").await.profile;
    assert_eq!(profile.tracked_quest, None);
    assert_eq!(profile.tutorial_stage, 0);
}

on_both_backends!(
    load_creates_a_profile,
    accept_twice_is_refused_and_changes_nothing,
    concurrent_accepts_accept_once,
    bad_input_is_refused_and_changes_nothing,
    tracked_quest_and_tutorial_stage_round_trip,
);
