//! Completing quests and the reward ledger: a reward is paid exactly once (by the state, by the
//! ledger's unique key, and under racing completions on one or two stores), and the ledger adds
//! up to the profile.

use banter_server::store::{MAX_REWARD, StoreError, StoredQuestStatus};

use crate::Writes;
use crate::store_support::{OpenStore, TestDb};
use crate::{accept, at_once, complete, load, snapshot, status_of};

async fn complete_pays_once(db: &TestDb) {
    let store = db.open().await;
    accept(store.as_ref(), "p1", "q1", &["fish"]).await;
    let paid = complete(store.as_ref(), "p1", "q1", 50, 10).await;
    assert_eq!(
        (
            paid.coins,
            paid.experience,
            paid.total_coins,
            paid.total_experience
        ),
        (50, 10, 50, 10)
    );
    let record = load(store.as_ref(), "p1").await;
    assert_eq!(status_of(&record, "q1"), Some(StoredQuestStatus::Completed));
    assert_eq!((record.profile.coins, record.profile.experience), (50, 10));

    let before = snapshot(store.as_ref(), "p1").await;
    let err = store
        .complete_quest("p1", "q1", 50, 10)
        .await
        .expect_err("second complete");
    assert!(
        matches!(
            err,
            StoreError::QuestState {
                found: Some(StoredQuestStatus::Completed),
                ..
            } | StoreError::AlreadyPaid { .. }
        ),
        "{err:?}"
    );
    assert!(!err.retryable());
    assert_eq!(snapshot(store.as_ref(), "p1").await, before);
    let ledger = store.ledger("p1").await.expect("ledger");
    assert_eq!(ledger.len(), 1);
    assert_eq!(
        (ledger[0].id, ledger[0].quest_id.as_str(), ledger[0].coins),
        (paid.ledger_id, "q1", 50)
    );
    assert!(
        ledger[0].paid_at_ms > 1_600_000_000_000,
        "paid_at is Unix milliseconds"
    );
    assert_eq!(
        store.ledger_entry("p1", "q1").await.expect("entry"),
        Some(ledger[0].clone())
    );
    assert_eq!(store.ledger_entry("p1", "q2").await.expect("entry"), None);
    assert_eq!(store.ledger_count("q1").await, Ok(1));
}

async fn completing_a_quest_never_accepted_is_refused(db: &TestDb) {
    let store = db.open().await;
    load(store.as_ref(), "p1").await;
    let before = snapshot(store.as_ref(), "p1").await;
    let err = store
        .complete_quest("p1", "q1", 50, 10)
        .await
        .expect_err("never accepted");
    assert!(
        matches!(&err, StoreError::QuestState { quest, found: None, .. } if quest == "q1"),
        "{err:?}"
    );
    assert_eq!(snapshot(store.as_ref(), "p1").await, before);
    assert_eq!(store.ledger_count("q1").await, Ok(0));
}

/// The database, not the application, refuses a second payment: with the quest state forced
/// back to active behind the store's back, the ledger's unique key still says no, and the
/// whole transaction (state change included) rolls back.
async fn the_ledger_key_refuses_a_second_payment(db: &TestDb) {
    let store = db.open().await;
    accept(store.as_ref(), "p1", "q1", &["fish"]).await;
    complete(store.as_ref(), "p1", "q1", 50, 10).await;
    let reset = db
        .exec("UPDATE quest_states SET status = 'active', completed_at = NULL WHERE player_id = 'p1' AND quest_id = 'q1'")
        .await;
    assert_eq!(reset, 1);
    let before = snapshot(store.as_ref(), "p1").await;
    let err = store
        .complete_quest("p1", "q1", 50, 10)
        .await
        .expect_err("already paid");
    assert_eq!(err, StoreError::AlreadyPaid { quest: "q1".into() });
    let after = snapshot(store.as_ref(), "p1").await;
    assert_eq!(after, before, "nothing changed, the quest state included");
    assert_eq!(status_of(&after.0, "q1"), Some(StoredQuestStatus::Active));
    assert_eq!(after.0.profile.coins, 50);
    assert_eq!(store.ledger_count("q1").await, Ok(1));
}

/// 8 concurrent completions of one quest, 50 times: exactly one pays each time. With
/// `two_stores`, half go through a second, separately connected store (a second instance).
async fn race(db: &TestDb, two_stores: bool) {
    const ROUNDS: usize = 50;
    const RACERS: usize = 8;
    let first = db.open().await;
    let second = if two_stores {
        db.open().await
    } else {
        first.clone()
    };
    load(first.as_ref(), "racer").await;
    for round in 0..ROUNDS {
        let quest = format!("race_{round}");
        accept(first.as_ref(), "racer", &quest, &["x"]).await;
        let outcomes = at_once(&first, &second, RACERS, |store| {
            let quest = quest.clone();
            async move { store.complete_quest("racer", &quest, 7, 3).await }
        })
        .await;
        let mut paid = 0;
        for outcome in outcomes {
            match outcome {
                Ok(_) => paid += 1,
                Err(
                    StoreError::QuestState {
                        found: Some(StoredQuestStatus::Completed),
                        ..
                    }
                    | StoreError::AlreadyPaid { .. },
                ) => {}
                Err(other) => panic!("round {round}: unexpected error {other:?}"),
            }
        }
        assert_eq!(paid, 1, "round {round}: exactly one completion pays");
        assert_eq!(
            first.ledger_count(&quest).await,
            Ok(1),
            "round {round}: one ledger row"
        );
    }
    let record = load(first.as_ref(), "racer").await;
    assert_eq!(record.profile.coins, 7 * ROUNDS as i64);
    assert_eq!(record.profile.experience, 3 * ROUNDS as i64);
    assert_eq!(first.ledger("racer").await.expect("ledger").len(), ROUNDS);
}

async fn race_on_one_store(db: &TestDb) {
    race(db, false).await
}

async fn race_on_two_stores(db: &TestDb) {
    race(db, true).await
}

async fn ledger_rows_equal_profile_coins(db: &TestDb) {
    let store = db.open().await;
    let rewards = [(10, 1), (0, 5), (250, 0), (MAX_REWARD, MAX_REWARD), (3, 3)];
    for (i, (coins, experience)) in rewards.iter().enumerate() {
        let quest = format!("q{i}");
        store.accept_quest("p1", &quest, &[]).await.expect("accept");
        complete(store.as_ref(), "p1", &quest, *coins, *experience).await;
    }
    let ledger = store.ledger("p1").await.expect("ledger");
    assert_eq!(ledger.len(), rewards.len());
    assert!(ledger.windows(2).all(|w| w[0].id < w[1].id), "oldest first");
    let record = load(store.as_ref(), "p1").await;
    assert_eq!(
        record.profile.coins,
        ledger.iter().map(|e| e.coins).sum::<i64>()
    );
    assert_eq!(
        record.profile.experience,
        ledger.iter().map(|e| e.experience).sum::<i64>()
    );
    assert_eq!(
        db.scalar("SELECT CAST(COALESCE(SUM(coins), 0) AS BIGINT) FROM reward_ledger WHERE player_id = 'p1'").await,
        db.scalar("SELECT coins FROM profiles WHERE player_id = 'p1'").await
    );
}

on_both_backends!(
    complete_pays_once,
    completing_a_quest_never_accepted_is_refused,
    the_ledger_key_refuses_a_second_payment,
    race_on_one_store,
    race_on_two_stores,
    ledger_rows_equal_profile_coins,
);
