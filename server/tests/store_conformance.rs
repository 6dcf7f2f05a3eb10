//! Store conformance: the same scenarios against SQLite (a fresh file per test) and PostgreSQL (a
//! fresh schema per test in `TEST_DATABASE_URL`, default
//! `postgres://postgres@127.0.0.1:5432/test`). PostgreSQL being unreachable fails the suite; it
//! never skips.

mod store_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use banter_server::store::{
    self, AuditRecord, ClaimEvent, ConnectOptions, MAX_AMOUNT, MAX_REWARD, ObjectiveAdvance,
    PgStore, PlayerRecord, ProfileRecord, Store, StoreError, StoredQuestStatus,
};
use futures_util::StreamExt;
use store_support::{OpenStore, TestDb};

fn objectives(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| (*s).to_owned()).collect()
}

fn progress_of(record: &PlayerRecord, quest: &str, objective: &str) -> Option<u32> {
    record
        .quests
        .get(quest)
        .and_then(|q| q.progress.get(objective).copied())
}

fn status_of(record: &PlayerRecord, quest: &str) -> Option<StoredQuestStatus> {
    record.quests.get(quest).map(|q| q.status)
}

async fn load(store: &dyn Store, player: &str) -> PlayerRecord {
    store.load_player(player).await.expect("load_player")
}

/// Everything the store holds about a player, plus its ledger: "nothing changed" compares these.
async fn snapshot(store: &dyn Store, player: &str) -> (PlayerRecord, Vec<(String, i64, i64)>) {
    let ledger = store
        .ledger(player)
        .await
        .expect("ledger")
        .into_iter()
        .map(|e| (e.quest_id, e.coins, e.experience))
        .collect();
    (load(store, player).await, ledger)
}

const WAIT: Duration = Duration::from_secs(10);

async fn next_event(
    stream: &mut futures_util::stream::BoxStream<'static, ClaimEvent>,
) -> ClaimEvent {
    tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("a claim event within 10 s")
        .expect("the claims stream is still open")
}

/// Waits for the claim of `player`, skipping other tests' claims (PostgreSQL's channel is per
/// database) and resyncs.
async fn next_claim_of(
    stream: &mut futures_util::stream::BoxStream<'static, ClaimEvent>,
    player: &str,
) -> store::SessionClaim {
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(
            Instant::now() < deadline,
            "no claim of {player} within 10 s"
        );
        if let ClaimEvent::Claimed(claim) = next_event(stream).await
            && claim.player_id == player
        {
            return claim;
        }
    }
}

mod scenarios {
    use super::*;

    pub async fn load_creates_a_profile(db: &TestDb) {
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

    pub async fn accept_twice_is_refused_and_changes_nothing(db: &TestDb) {
        let store = db.open().await;
        store
            .accept_quest("p1", "q1", &objectives(&["fish", "talk"]))
            .await
            .expect("accept");
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
        assert_eq!(
            snapshot(store.as_ref(), "p1").await,
            before,
            "the refused accept changed nothing"
        );

        store
            .complete_quest("p1", "q1", 10, 1)
            .await
            .expect("complete");
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

    pub async fn concurrent_accepts_accept_once(db: &TestDb) {
        let store = db.open().await;
        let other = db.open().await;
        load(store.as_ref(), "p1").await;
        for round in 0..10 {
            let quest = format!("q{round}");
            let barrier = Arc::new(tokio::sync::Barrier::new(8));
            let mut tasks = Vec::new();
            for i in 0..8 {
                let store = if i % 2 == 0 {
                    store.clone()
                } else {
                    other.clone()
                };
                let (quest, barrier) = (quest.clone(), barrier.clone());
                tasks.push(tokio::spawn(async move {
                    barrier.wait().await;
                    store
                        .accept_quest("p1", &quest, &objectives(&["a", "b"]))
                        .await
                }));
            }
            let mut accepted = 0;
            for task in tasks {
                match task.await.expect("join") {
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

    pub async fn advance_clamps_to_target(db: &TestDb) {
        let store = db.open().await;
        store
            .accept_quest("p1", "q1", &objectives(&["fish"]))
            .await
            .expect("accept");
        assert_eq!(
            store
                .advance_objective("p1", "q1", "fish", 2, 3, None)
                .await,
            Ok(2)
        );
        assert_eq!(
            store
                .advance_objective("p1", "q1", "fish", 5, 3, None)
                .await,
            Ok(3)
        );
        assert_eq!(
            store
                .advance_objective("p1", "q1", "fish", 1, 3, None)
                .await,
            Ok(3)
        );
        assert_eq!(
            store
                .advance_objective("p1", "q1", "fish", MAX_AMOUNT, 3, None)
                .await,
            Ok(3)
        );
        // Content lowering a target never takes progress away.
        assert_eq!(
            store
                .advance_objective("p1", "q1", "fish", 1, 2, None)
                .await,
            Ok(3)
        );
        // An objective content added after acceptance starts from zero.
        assert_eq!(
            store
                .advance_objective("p1", "q1", "new", 4, 10, None)
                .await,
            Ok(4)
        );
        let record = load(store.as_ref(), "p1").await;
        assert_eq!(progress_of(&record, "q1", "fish"), Some(3));
        assert_eq!(progress_of(&record, "q1", "new"), Some(4));
    }

    pub async fn advance_refuses_inactive_quests(db: &TestDb) {
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

        store
            .accept_quest("p1", "q1", &objectives(&["fish"]))
            .await
            .expect("accept");
        store
            .complete_quest("p1", "q1", 5, 5)
            .await
            .expect("complete");
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

    pub async fn advance_refuses_zero_and_huge_amounts(db: &TestDb) {
        let store = db.open().await;
        store
            .accept_quest("p1", "q1", &objectives(&["fish"]))
            .await
            .expect("accept");
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

    pub async fn duplicate_event_changes_nothing(db: &TestDb) {
        let store = db.open().await;
        store
            .accept_quest("p1", "q1", &objectives(&["fish"]))
            .await
            .expect("accept");
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
        store
            .accept_quest("p1", "q2", &objectives(&["fish"]))
            .await
            .expect("accept q2");
        assert_eq!(
            store
                .advance_objective("p1", "q2", "fish", 1, 5, Some("ev-2"))
                .await,
            Ok(1)
        );
        assert_eq!(db.scalar("SELECT COUNT(*) FROM applied_events").await, 2);
    }

    pub async fn concurrent_duplicate_events_apply_once(db: &TestDb) {
        let store = db.open().await;
        let other = db.open().await;
        store
            .accept_quest("p1", "q1", &objectives(&["fish"]))
            .await
            .expect("accept");
        for round in 0..20 {
            let event = format!("ev-{round}");
            let barrier = Arc::new(tokio::sync::Barrier::new(8));
            let mut tasks = Vec::new();
            for i in 0..8 {
                let store = if i % 2 == 0 {
                    store.clone()
                } else {
                    other.clone()
                };
                let (event, barrier) = (event.clone(), barrier.clone());
                tasks.push(tokio::spawn(async move {
                    barrier.wait().await;
                    store
                        .advance_objective("p1", "q1", "fish", 1, 1_000, Some(&event))
                        .await
                }));
            }
            let mut applied = 0;
            for task in tasks {
                match task.await.expect("join") {
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

    pub async fn batch_advance_is_all_or_nothing(db: &TestDb) {
        let store = db.open().await;
        store
            .accept_quest("p1", "q1", &objectives(&["fish"]))
            .await
            .expect("accept q1");
        store
            .accept_quest("p1", "q2", &objectives(&["rare"]))
            .await
            .expect("accept q2");
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
        assert_eq!(
            snapshot(store.as_ref(), "p1").await,
            before,
            "the batch rolled back whole"
        );
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

    pub async fn events_for_unknown_players_are_refused(db: &TestDb) {
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

    pub async fn bad_input_is_refused_and_changes_nothing(db: &TestDb) {
        let store = db.open().await;
        store
            .accept_quest("p1", "q1", &objectives(&["fish"]))
            .await
            .expect("accept");
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
            store.set_tutorial_stage("p1", -1).await,
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

    pub async fn complete_pays_once(db: &TestDb) {
        let store = db.open().await;
        store
            .accept_quest("p1", "q1", &objectives(&["fish"]))
            .await
            .expect("accept");
        let paid = store
            .complete_quest("p1", "q1", 50, 10)
            .await
            .expect("complete");
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

    pub async fn completing_a_quest_never_accepted_is_refused(db: &TestDb) {
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
    pub async fn the_ledger_key_refuses_a_second_payment(db: &TestDb) {
        let store = db.open().await;
        store
            .accept_quest("p1", "q1", &objectives(&["fish"]))
            .await
            .expect("accept");
        store
            .complete_quest("p1", "q1", 50, 10)
            .await
            .expect("complete");
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
    pub async fn race(db: &TestDb, two_stores: bool) {
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
            first
                .accept_quest("racer", &quest, &objectives(&["x"]))
                .await
                .expect("accept");
            let barrier = Arc::new(tokio::sync::Barrier::new(RACERS));
            let mut tasks = Vec::new();
            for i in 0..RACERS {
                let store = if i % 2 == 0 {
                    first.clone()
                } else {
                    second.clone()
                };
                let (quest, barrier) = (quest.clone(), barrier.clone());
                tasks.push(tokio::spawn(async move {
                    barrier.wait().await;
                    store.complete_quest("racer", &quest, 7, 3).await
                }));
            }
            let mut paid = 0;
            for task in tasks {
                match task.await.expect("join") {
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

    pub async fn race_on_one_store(db: &TestDb) {
        race(db, false).await
    }

    pub async fn race_on_two_stores(db: &TestDb) {
        race(db, true).await
    }

    pub async fn ledger_rows_equal_profile_coins(db: &TestDb) {
        let store = db.open().await;
        let rewards = [(10, 1), (0, 5), (250, 0), (MAX_REWARD, MAX_REWARD), (3, 3)];
        for (i, (coins, experience)) in rewards.iter().enumerate() {
            let quest = format!("q{i}");
            store.accept_quest("p1", &quest, &[]).await.expect("accept");
            store
                .complete_quest("p1", &quest, *coins, *experience)
                .await
                .expect("complete");
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

    pub async fn tracked_quest_and_tutorial_stage_round_trip(db: &TestDb) {
        let store = db.open().await;
        store
            .set_tracked_quest("p1", Some("q7"))
            .await
            .expect("track");
        store.set_tutorial_stage("p1", 3).await.expect("stage");
        let profile = load(store.as_ref(), "p1").await.profile;
        assert_eq!(profile.tracked_quest.as_deref(), Some("q7"));
        assert_eq!(profile.tutorial_stage, 3);
        store.set_tracked_quest("p1", None).await.expect("untrack");
        store.set_tutorial_stage("p1", 0).await.expect("stage 0");
        let profile = load(store.as_ref(), "p1").await.profile;
        assert_eq!(profile.tracked_quest, None);
        assert_eq!(profile.tutorial_stage, 0);
    }

    pub async fn data_survives_a_restart(db: &TestDb) {
        let store = db.open().await;
        store
            .accept_quest("p1", "q1", &objectives(&["fish", "talk"]))
            .await
            .expect("accept");
        store
            .advance_objective("p1", "q1", "fish", 2, 5, Some("ev-1"))
            .await
            .expect("advance");
        store.accept_quest("p1", "q2", &[]).await.expect("accept");
        store
            .complete_quest("p1", "q2", 40, 4)
            .await
            .expect("complete");
        store
            .set_tracked_quest("p1", Some("q1"))
            .await
            .expect("track");
        store.set_tutorial_stage("p1", 2).await.expect("stage");
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

    pub async fn migrations_are_idempotent(db: &TestDb) {
        let store = db.open().await;
        store.set_tutorial_stage("p1", 1).await.expect("stage");
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

    pub async fn connect_picks_the_backend_from_the_url(db: &TestDb) {
        let store = store::connect(&db.url(), ConnectOptions::default())
            .await
            .expect("connect by URL");
        assert_eq!(store.backend(), db.backend());
        store.ping().await.expect("ping");
        store.set_tutorial_stage("p1", 4).await.expect("stage");
        store.close().await;
        let direct = db.open().await;
        assert_eq!(
            load(direct.as_ref(), "p1").await.profile.tutorial_stage,
            4,
            "same database as open()"
        );
    }

    pub async fn a_closed_store_answers_retryable_errors(db: &TestDb) {
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

    pub async fn session_claims_take_over(db: &TestDb) {
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
    pub async fn concurrent_claims_and_releases_each_get_their_own_answer(db: &TestDb) {
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

    pub async fn audit_records_round_trip_and_prune(db: &TestDb) {
        let store = db.open().await;
        let record = |message: &str, code: Option<&str>| AuditRecord {
            player_id: "p1".into(),
            conversation: Some("c1".into()),
            message: message.into(),
            code: code.map(Into::into),
            detail: None,
        };
        let records = [
            record("advance", None),
            record("choose", Some("not_offered")),
            record("action", None),
        ];
        store.record_audit(&records).await.expect("record");
        store.record_audit(&[]).await.expect("record nothing");
        let latest = store.audit_for_player("p1", 2).await.expect("read");
        assert_eq!(
            latest.iter().map(|e| e.record.clone()).collect::<Vec<_>>(),
            records[1..].to_vec()
        );
        assert!(latest[0].id < latest[1].id && latest[0].at_ms > 1_600_000_000_000);
        assert_eq!(
            store.audit_for_player("p2", 10).await.expect("read").len(),
            0
        );
        assert_eq!(store.prune_audit(Duration::from_secs(3600)).await, Ok(0));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(store.prune_audit(Duration::from_millis(5)).await, Ok(3));
        assert!(
            store
                .audit_for_player("p1", 10)
                .await
                .expect("read")
                .is_empty()
        );
    }
}

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = TestDb::sqlite(stringify!($name));
                    scenarios::$name(&db).await;
                }
            )*
        }
        mod postgres {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = TestDb::postgres(stringify!($name)).await;
                    scenarios::$name(&db).await;
                }
            )*
        }
    };
}

conformance!(
    load_creates_a_profile,
    accept_twice_is_refused_and_changes_nothing,
    concurrent_accepts_accept_once,
    advance_clamps_to_target,
    advance_refuses_inactive_quests,
    advance_refuses_zero_and_huge_amounts,
    duplicate_event_changes_nothing,
    concurrent_duplicate_events_apply_once,
    batch_advance_is_all_or_nothing,
    events_for_unknown_players_are_refused,
    bad_input_is_refused_and_changes_nothing,
    complete_pays_once,
    completing_a_quest_never_accepted_is_refused,
    the_ledger_key_refuses_a_second_payment,
    race_on_one_store,
    race_on_two_stores,
    ledger_rows_equal_profile_coins,
    tracked_quest_and_tutorial_stage_round_trip,
    data_survives_a_restart,
    migrations_are_idempotent,
    connect_picks_the_backend_from_the_url,
    a_closed_store_answers_retryable_errors,
    session_claims_take_over,
    concurrent_claims_and_releases_each_get_their_own_answer,
    audit_records_round_trip_and_prune,
);

/// What only PostgreSQL can show: schema placement, outages, several instances.
mod postgres_only {
    use super::*;
    use sqlx::postgres::PgConnectOptions;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn migrations_create_the_tables_in_the_search_path_schema() {
        let db = TestDb::postgres("tables_in_schema").await;
        let _store = db.open().await;
        let schema = db.schema().expect("schema").to_owned();
        for table in [
            "profiles",
            "quest_states",
            "objective_progress",
            "reward_ledger",
            "applied_events",
            "_sqlx_migrations",
        ] {
            let found = db
                .scalar(&format!(
                    "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '{schema}' AND table_name = '{table}'"
                ))
                .await;
            assert_eq!(found, 1, "{table} is in {schema}");
        }
        let unique = db
            .scalar(&format!(
                "SELECT COUNT(*) FROM information_schema.table_constraints WHERE table_schema = '{schema}' \
                 AND table_name = 'reward_ledger' AND constraint_name = 'reward_ledger_once' AND constraint_type = 'UNIQUE'"
            ))
            .await;
        assert_eq!(unique, 1, "the ledger's unique key exists");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_unreachable_database_is_unavailable_quickly() {
        let started = Instant::now();
        let options = ConnectOptions {
            acquire_timeout: Duration::from_secs(1),
            ..ConnectOptions::default()
        };
        let err = store::connect("postgres://postgres@127.0.0.1:1/test", options)
            .await
            .err()
            .expect("refused");
        assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
        assert!(err.retryable());
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
    }

    fn with_app_name(db: &TestDb) -> PgConnectOptions {
        db.pg_options()
            .expect("pg options")
            .application_name(db.schema().expect("schema"))
    }

    async fn kill_connections(db: &TestDb) -> i64 {
        let schema = db.schema().expect("schema");
        db.scalar(&format!(
            "SELECT COUNT(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = '{schema}' AND pid <> pg_backend_pid()) AS killed"
        ))
        .await
    }

    /// Every server-side connection of the store is killed (what a database restart does to a
    /// pool): calls fail retryably at worst, the pool reconnects by itself, and nothing is
    /// applied twice when the caller retries.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_store_reconnects_after_its_connections_are_killed() {
        let db = TestDb::postgres("reconnects").await;
        let store = PgStore::connect_with(with_app_name(&db), ConnectOptions::default())
            .await
            .expect("connect");
        store
            .accept_quest("p1", "q1", &objectives(&["fish"]))
            .await
            .expect("accept");
        let mut claims = store.session_claims().await.expect("subscribe");
        assert!(
            kill_connections(&db).await >= 1,
            "killed the pool's and the listener's connections"
        );

        let mut attempts = 0;
        let progress = loop {
            attempts += 1;
            match store
                .advance_objective("p1", "q1", "fish", 1, 10, Some("ev-after-kill"))
                .await
            {
                Ok(progress) => break progress,
                Err(StoreError::DuplicateEvent { .. }) => {
                    break store.load_player("p1").await.expect("load").quests["q1"].progress["fish"];
                }
                Err(err) if err.retryable() && attempts < 20 => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(err) => panic!("no recovery after {attempts} attempts: {err:?}"),
            }
        };
        assert_eq!(progress, 1, "applied exactly once across retries");
        let paid = store
            .complete_quest("p1", "q1", 5, 5)
            .await
            .expect("the pool works again");
        assert_eq!(paid.total_coins, 5);

        // The claims listener noticed, reconnected and still delivers.
        let deadline = Instant::now() + WAIT;
        while next_event(&mut claims).await != ClaimEvent::Resync {
            assert!(
                Instant::now() < deadline,
                "no resync after the listener's connection died"
            );
        }
        let player = format!("reconnect-{}", db.schema().expect("schema"));
        let claim = store
            .claim_session(&player, "s1", "inst-a")
            .await
            .expect("claim");
        assert_eq!(next_claim_of(&mut claims, &player).await, claim);
        store.close().await;
    }

    /// A write that cannot get its lock in time (another instance holds the quest row) is refused
    /// with a retryable error and changes nothing; once the lock is gone the retry pays once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lock_timeout_is_retryable_and_changes_nothing() {
        use sqlx::Connection;
        let db = TestDb::postgres("lock_timeout").await;
        let options = db
            .pg_options()
            .expect("pg options")
            .options([("lock_timeout", "200ms")]);
        let store = PgStore::connect_with(options, ConnectOptions::default())
            .await
            .expect("connect");
        store
            .accept_quest("p1", "q1", &objectives(&["fish"]))
            .await
            .expect("accept");
        let before = snapshot(&store, "p1").await;

        let mut holder =
            sqlx::postgres::PgConnection::connect_with(&db.pg_options().expect("pg options"))
                .await
                .expect("connect");
        sqlx::query("BEGIN")
            .execute(&mut holder)
            .await
            .expect("begin");
        sqlx::query(
            "SELECT 1 FROM quest_states WHERE player_id = 'p1' AND quest_id = 'q1' FOR UPDATE",
        )
        .execute(&mut holder)
        .await
        .expect("lock the row");
        let err = store
            .complete_quest("p1", "q1", 9, 9)
            .await
            .expect_err("lock timeout");
        assert!(
            matches!(&err, StoreError::Unavailable(m) if m.contains("55P03")),
            "{err:?}"
        );
        assert!(err.retryable());
        sqlx::query("ROLLBACK")
            .execute(&mut holder)
            .await
            .expect("rollback");
        holder.close().await.expect("close");

        assert_eq!(snapshot(&store, "p1").await, before, "nothing changed");
        assert_eq!(
            store
                .complete_quest("p1", "q1", 9, 9)
                .await
                .map(|p| p.total_coins),
            Ok(9)
        );
        assert_eq!(store.ledger_count("q1").await, Ok(1));
        store.close().await;
    }

    /// Two instances on one database: a claim made through one store reaches the other's
    /// subscription (LISTEN/NOTIFY), so the older session can be closed there.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn claims_reach_other_instances() {
        let db = TestDb::postgres("claims_other_instances").await;
        let instance_a = db.open().await;
        let instance_b = db.open().await;
        let player = format!("roamer-{}", db.schema().expect("schema"));
        let mut on_a = instance_a.session_claims().await.expect("subscribe on a");
        let older = instance_a
            .claim_session(&player, "old", "inst-a")
            .await
            .expect("claim on a");
        assert_eq!(next_claim_of(&mut on_a, &player).await, older);
        let newer = instance_b
            .claim_session(&player, "new", "inst-b")
            .await
            .expect("claim on b");
        let seen = next_claim_of(&mut on_a, &player).await;
        assert_eq!(seen, newer);
        assert!(seen.epoch > older.epoch && seen.session_id != older.session_id);
        assert_eq!(instance_a.session_owner(&player).await, Ok(Some(newer)));
    }
}

/// What only the SQLite backend has: URLs and paths, the in-memory database.
mod sqlite_only {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_plain_path_creates_its_folder_and_file() {
        let root = std::env::temp_dir().join(format!("banter-store-folder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let file = root.join("nested").join("banter.db");
        let store = store::connect(&file.display().to_string(), ConnectOptions::default())
            .await
            .expect("connect");
        assert_eq!(store.backend(), "sqlite");
        store.set_tutorial_stage("p1", 2).await.expect("write");
        store.close().await;
        assert!(file.is_file(), "{} was created", file.display());
        let again = store::connect(
            &format!("sqlite://{}", file.display()),
            ConnectOptions::default(),
        )
        .await
        .expect("reconnect by URL");
        assert_eq!(load(again.as_ref(), "p1").await.profile.tutorial_stage, 2);
        again.close().await;
        let _ = std::fs::remove_dir_all(&root);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_in_memory_database_works() {
        let store = store::connect("sqlite::memory:", ConnectOptions::default())
            .await
            .expect("connect");
        store
            .accept_quest("p1", "q1", &objectives(&["fish"]))
            .await
            .expect("accept");
        assert_eq!(
            store
                .advance_objective("p1", "q1", "fish", 1, 2, None)
                .await,
            Ok(1)
        );
        assert_eq!(
            store
                .complete_quest("p1", "q1", 3, 4)
                .await
                .map(|p| p.total_coins),
            Ok(3)
        );
        assert_eq!(
            load(store.as_ref(), "p1").await.profile.coins,
            3,
            "every pooled connection sees one database"
        );
    }

    /// Another process holds SQLite's write lock past the busy timeout: the write is refused
    /// with a retryable error and changes nothing; once the lock is gone the retry pays once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_locked_database_is_retryable_and_changes_nothing() {
        use banter_server::store::{SqliteStore, sqlite::sqlite_options};
        use sqlx::Connection;
        let db = TestDb::sqlite("locked");
        let url = db.url();
        let options = sqlite_options(&url)
            .expect("options")
            .busy_timeout(Duration::from_millis(200));
        let store = SqliteStore::connect_with(options, ConnectOptions::default())
            .await
            .expect("connect");
        store
            .accept_quest("p1", "q1", &objectives(&["fish"]))
            .await
            .expect("accept");
        let before = snapshot(&store, "p1").await;

        let mut holder =
            sqlx::sqlite::SqliteConnection::connect_with(&sqlite_options(&url).expect("options"))
                .await
                .expect("connect");
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut holder)
            .await
            .expect("take the write lock");
        let err = store
            .complete_quest("p1", "q1", 9, 9)
            .await
            .expect_err("locked");
        assert!(
            matches!(&err, StoreError::Unavailable(m) if m.contains("locked")),
            "{err:?}"
        );
        assert!(err.retryable());
        sqlx::query("ROLLBACK")
            .execute(&mut holder)
            .await
            .expect("rollback");
        holder.close().await.expect("close");

        assert_eq!(snapshot(&store, "p1").await, before, "nothing changed");
        assert_eq!(
            store
                .complete_quest("p1", "q1", 9, 9)
                .await
                .map(|p| p.total_coins),
            Ok(9)
        );
        assert_eq!(store.ledger_count("q1").await, Ok(1));
        store.close().await;
    }

    /// A connect storm's claims are committed together, one fsync for many (the group commit):
    /// while another process holds the write lock they queue, and once it is free they land in
    /// at most two transactions. A claim that fails (here a trigger refuses one player) fails
    /// alone: the claims committed with it are not refused with it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn claims_in_a_storm_share_a_commit_and_one_failure_stays_its_own() {
        use banter_server::store::{SqliteStore, sqlite::sqlite_options};
        use sqlx::Connection;
        let db = TestDb::sqlite("group-commit");
        let url = db.url();
        let store = Arc::new(
            SqliteStore::connect(&url, ConnectOptions::default())
                .await
                .expect("connect"),
        );
        let mut holder =
            sqlx::sqlite::SqliteConnection::connect_with(&sqlite_options(&url).expect("options"))
                .await
                .expect("connect");
        sqlx::query(
            "CREATE TRIGGER poison BEFORE INSERT ON session_claims WHEN NEW.player_id = 'poison' \
             BEGIN SELECT RAISE(ABORT, 'poisoned by the test'); END",
        )
        .execute(&mut holder)
        .await
        .expect("trigger");

        // Holds SQLite's write lock until every job of the round is queued, then lets go.
        async fn round(
            store: &Arc<SqliteStore>,
            holder: &mut sqlx::sqlite::SqliteConnection,
            players: Vec<String>,
        ) -> Vec<Result<store::SessionClaim, StoreError>> {
            sqlx::query("BEGIN IMMEDIATE")
                .execute(&mut *holder)
                .await
                .expect("take the write lock");
            let queued_before = store.group_commit_stats().jobs;
            let n = players.len() as u64;
            let claims = tokio::spawn({
                let store = store.clone();
                async move {
                    futures_util::future::join_all(
                        players.iter().map(|p| store.claim_session(p, "s1", "inst")),
                    )
                    .await
                }
            });
            let deadline = Instant::now() + WAIT;
            while store.group_commit_stats().jobs < queued_before + n {
                assert!(Instant::now() < deadline, "the claims were not queued");
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            sqlx::query("ROLLBACK")
                .execute(&mut *holder)
                .await
                .expect("let go of the lock");
            claims.await.expect("claims")
        }

        let before = store.group_commit_stats();
        let storm: Vec<String> = (0..50).map(|i| format!("storm-{i}")).collect();
        let claims = round(&store, &mut holder, storm).await;
        assert!(
            claims
                .iter()
                .all(|c| c.as_ref().is_ok_and(|c| c.epoch == 1)),
            "{claims:?}"
        );
        let after = store.group_commit_stats();
        assert_eq!(after.jobs - before.jobs, 50);
        assert!(
            after.transactions - before.transactions <= 2,
            "50 claims in {} transactions",
            after.transactions - before.transactions
        );

        let mut players: Vec<String> = (0..10).map(|i| format!("mixed-{i}")).collect();
        players.insert(5, "poison".to_owned());
        let claims = round(&store, &mut holder, players.clone()).await;
        for (player, claim) in players.iter().zip(&claims) {
            if player == "poison" {
                assert!(claim.is_err(), "the poisoned claim fails: {claim:?}");
            } else {
                assert_eq!(claim.as_ref().map(|c| c.epoch), Ok(1), "{player}");
                assert!(
                    matches!(store.session_owner(player).await, Ok(Some(c)) if c.session_id == "s1")
                );
            }
        }
        assert_eq!(store.session_owner("poison").await, Ok(None));
        holder.close().await.expect("close");
        store.close().await;
    }

    #[tokio::test]
    async fn an_unknown_scheme_is_a_configuration_error() {
        let err = store::connect("mysql://localhost/test", ConnectOptions::default())
            .await
            .err()
            .expect("refused");
        assert!(matches!(err, StoreError::Config(_)), "{err:?}");
        assert!(!err.retryable());
    }
}
