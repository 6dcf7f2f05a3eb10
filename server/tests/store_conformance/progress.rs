//! Objective progress and game events: advances clamp to the target and never go back, only
//! active quests advance, an event id applies at most once (also under concurrent deliveries), a
//! batch is all or nothing, and an event for an unknown player changes nothing.

use banter_server::store::{MAX_AMOUNT, ObjectiveAdvance, StoreError, StoredQuestStatus};

use crate::Writes;
use crate::store_support::{OpenStore, TestDb};
use crate::{accept, assert_unchanged, at_once, complete, load, progress_of, snapshot};

async fn advance_clamps_to_target(db: &TestDb) {
    let store = db.open().await;
    accept(store.as_ref(), "p1", "q1", &["fish"]).await;
    // (objective, amount, target, progress after)
    let advances = [
        ("fish", 2, 3, 2),
        ("fish", 5, 3, 3),
        ("fish", 1, 3, 3),
        ("fish", MAX_AMOUNT, 3, 3),
        // Content lowering a target never takes progress away.
        ("fish", 1, 2, 3),
        // An objective content added after acceptance starts from zero.
        ("new", 4, 10, 4),
    ];
    for (objective, amount, target, progress) in advances {
        assert_eq!(
            store
                .advance_objective("p1", "q1", objective, amount, target, None)
                .await,
            Ok(progress),
            "{amount} of {objective} toward {target}"
        );
    }
    let record = load(store.as_ref(), "p1").await;
    assert_eq!(progress_of(&record, "q1", "fish"), Some(3));
    assert_eq!(progress_of(&record, "q1", "new"), Some(4));
}

async fn advance_refuses_inactive_quests(db: &TestDb) {
    let store = db.open().await;
    load(store.as_ref(), "p1").await;
    let before = snapshot(store.as_ref(), "p1").await;
    let err = store
        .advance_objective("p1", "never", "fish", 1, 3, None)
        .await
        .expect_err("never accepted");
    assert!(
        matches!(&err, StoreError::QuestState { found: None, .. }),
        "{err:?}"
    );
    assert_eq!(snapshot(store.as_ref(), "p1").await, before);

    accept(store.as_ref(), "p1", "q1", &["fish"]).await;
    complete(store.as_ref(), "p1", "q1", 5, 5).await;
    let before = snapshot(store.as_ref(), "p1").await;
    let err = store
        .advance_objective("p1", "q1", "fish", 1, 3, Some("ev-late"))
        .await
        .expect_err("completed");
    assert!(
        matches!(
            &err,
            StoreError::QuestState {
                found: Some(StoredQuestStatus::Completed),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(snapshot(store.as_ref(), "p1").await, before);
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM applied_events").await,
        0,
        "the refused event was not recorded"
    );
}

async fn advance_refuses_zero_and_huge_amounts(db: &TestDb) {
    let store = db.open().await;
    accept(store.as_ref(), "p1", "q1", &["fish"]).await;
    let before = snapshot(store.as_ref(), "p1").await;
    for amount in [0, MAX_AMOUNT + 1, u32::MAX] {
        let err = store
            .advance_objective("p1", "q1", "fish", amount, 3, Some("ev"))
            .await
            .expect_err("refused");
        assert_eq!(err, StoreError::InvalidAmount { amount });
        assert!(!err.retryable());
    }
    let err = store
        .advance_objective("p1", "q1", "fish", 1, 0, None)
        .await
        .expect_err("target 0");
    assert!(matches!(err, StoreError::InvalidInput(_)), "{err:?}");
    assert_eq!(snapshot(store.as_ref(), "p1").await, before);
    assert_eq!(db.scalar("SELECT COUNT(*) FROM applied_events").await, 0);
}

async fn duplicate_event_changes_nothing(db: &TestDb) {
    let store = db.open().await;
    accept(store.as_ref(), "p1", "q1", &["fish"]).await;
    load(store.as_ref(), "p2").await;
    assert_eq!(
        store
            .advance_objective("p1", "q1", "fish", 1, 5, Some("ev-1"))
            .await,
        Ok(1)
    );
    let before = snapshot(store.as_ref(), "p1").await;
    let err = store
        .advance_objective("p1", "q1", "fish", 1, 5, Some("ev-1"))
        .await
        .expect_err("duplicate");
    assert_eq!(
        err,
        StoreError::DuplicateEvent {
            event_id: "ev-1".into()
        }
    );
    assert!(!err.retryable());
    assert_eq!(snapshot(store.as_ref(), "p1").await, before);
    // Event ids are global: the same id for another player is a duplicate too.
    let err = store
        .advance_objectives("p2", Some("ev-1"), &[])
        .await
        .expect_err("duplicate elsewhere");
    assert_eq!(
        err,
        StoreError::DuplicateEvent {
            event_id: "ev-1".into()
        }
    );
    // A refused delivery does not use its id up.
    let err = store
        .advance_objective("p1", "q2", "fish", 1, 5, Some("ev-2"))
        .await
        .expect_err("inactive");
    assert!(matches!(err, StoreError::QuestState { .. }));
    accept(store.as_ref(), "p1", "q2", &["fish"]).await;
    assert_eq!(
        store
            .advance_objective("p1", "q2", "fish", 1, 5, Some("ev-2"))
            .await,
        Ok(1)
    );
    assert_eq!(db.scalar("SELECT COUNT(*) FROM applied_events").await, 2);
}

async fn concurrent_duplicate_events_apply_once(db: &TestDb) {
    let store = db.open().await;
    let other = db.open().await;
    accept(store.as_ref(), "p1", "q1", &["fish"]).await;
    for round in 0..20 {
        let event = format!("ev-{round}");
        let outcomes = at_once(&store, &other, 8, |store| {
            let event = event.clone();
            async move {
                store
                    .advance_objective("p1", "q1", "fish", 1, 1_000, Some(&event))
                    .await
            }
        })
        .await;
        let mut applied = 0;
        for outcome in outcomes {
            match outcome {
                Ok(_) => applied += 1,
                Err(StoreError::DuplicateEvent { .. }) => {}
                Err(other) => panic!("unexpected error: {other:?}"),
            }
        }
        assert_eq!(applied, 1, "round {round}");
    }
    assert_eq!(
        progress_of(&load(store.as_ref(), "p1").await, "q1", "fish"),
        Some(20)
    );
}

async fn batch_advance_is_all_or_nothing(db: &TestDb) {
    let store = db.open().await;
    accept(store.as_ref(), "p1", "q1", &["fish"]).await;
    accept(store.as_ref(), "p1", "q2", &["rare"]).await;
    let advance = |quest: &str, objective: &str, amount, target| ObjectiveAdvance {
        quest: quest.into(),
        objective: objective.into(),
        amount,
        target,
    };
    // One caught fish advances two quests under one event id.
    let progress = store
        .advance_objectives(
            "p1",
            Some("catch-1"),
            &[advance("q2", "rare", 1, 2), advance("q1", "fish", 1, 3)],
        )
        .await;
    assert_eq!(
        progress,
        Ok(vec![1, 1]),
        "progress comes back in the order given"
    );

    let before = snapshot(store.as_ref(), "p1").await;
    let err = store
        .advance_objectives(
            "p1",
            Some("catch-2"),
            &[advance("q1", "fish", 1, 3), advance("q9", "fish", 1, 3)],
        )
        .await
        .expect_err("q9 is not active");
    assert!(
        matches!(&err, StoreError::QuestState { quest, found: None, .. } if quest == "q9"),
        "{err:?}"
    );
    assert_unchanged(store.as_ref(), "p1", &before, "the batch rolled back whole").await;
    let err = store
        .advance_objectives(
            "p1",
            None,
            &[advance("q1", "fish", 1, 3), advance("q2", "rare", 0, 2)],
        )
        .await
        .expect_err("zero amount");
    assert_eq!(err, StoreError::InvalidAmount { amount: 0 });
    assert_eq!(snapshot(store.as_ref(), "p1").await, before);
}

async fn events_for_unknown_players_are_refused(db: &TestDb) {
    let store = db.open().await;
    let err = store
        .advance_objective("ghost", "q1", "fish", 1, 3, Some("ev-ghost"))
        .await
        .expect_err("ghost");
    assert_eq!(err, StoreError::UnknownPlayer("ghost".into()));
    let err = store
        .complete_quest("ghost", "q1", 10, 10)
        .await
        .expect_err("ghost");
    assert_eq!(err, StoreError::UnknownPlayer("ghost".into()));
    assert!(!store.player_exists("ghost").await.expect("asked"));
    assert!(matches!(
        store.player_exists("").await,
        Err(StoreError::InvalidInput(_))
    ));
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM profiles").await,
        0,
        "no profile was created"
    );
    store.load_player("p1").await.expect("created");
    assert!(store.player_exists("p1").await.expect("asked"));
    assert_eq!(db.scalar("SELECT COUNT(*) FROM applied_events").await, 0);
    assert_eq!(db.scalar("SELECT COUNT(*) FROM reward_ledger").await, 0);
}

on_both_backends!(
    advance_clamps_to_target,
    advance_refuses_inactive_quests,
    advance_refuses_zero_and_huge_amounts,
    duplicate_event_changes_nothing,
    concurrent_duplicate_events_apply_once,
    batch_advance_is_all_or_nothing,
    events_for_unknown_players_are_refused,
);
