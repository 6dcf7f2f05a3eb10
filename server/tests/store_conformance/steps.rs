//! Steps: a change of a player's state and its audit row in one transaction, under an
//! idempotency key. The same key applies once; a refused step leaves neither row nor change; and
//! `step_applied` says what landed. What only PostgreSQL can show (a connection cut at COMMIT)
//! is at the end.

use banter_server::store::{
    Applied, Change, ObjectiveAdvance, PgStore, Step, Store, StoreError, StoredQuestStatus,
    TutorialMove,
};
use banter_test_db::cutter::{CommitCutter, Cut};

use crate::Writes;
use crate::store_support::{OpenStore, TestDb};
use crate::{
    accept, assert_unchanged, complete, load, objectives, progress_of, snapshot, status_of,
};

fn step<'a>(player: &'a str, key: &'a str, change: Change<'a>) -> Step<'a> {
    Step {
        player,
        key,
        conversation: Some("Pim"),
        message: "action",
        detail: Some("detail"),
        recorded_us: 1,
        change,
        tutorial: None,
    }
}

/// `step`, moving the tutorial from stage `from` to `to` with its change.
fn moving_tutorial(from: i64, to: i64, step: Step<'_>) -> Step<'_> {
    Step {
        tutorial: Some(TutorialMove { from, to }),
        ..step
    }
}

fn advance(quest: &str, objective: &str, amount: u32, target: u32) -> ObjectiveAdvance {
    ObjectiveAdvance {
        quest: quest.into(),
        objective: objective.into(),
        amount,
        target,
    }
}

/// How many audit rows carry `key`.
pub(super) async fn rows_with_key(store: &dyn Store, player: &str, key: &str) -> usize {
    store
        .audit_for_player(player, 1000)
        .await
        .expect("audit")
        .iter()
        .filter(|e| e.step_key.as_deref() == Some(key))
        .count()
}

async fn a_step_writes_its_change_and_its_audit_row_together(db: &TestDb) {
    let store = db.open().await;
    let ids = objectives(&["fish"]);
    let accepted = store
        .applied(&step(
            "p1",
            "c1/0/0",
            Change::Accept {
                quest: "q1",
                objectives: &ids,
            },
        ))
        .await;
    assert_eq!(accepted, Ok(Applied::Accepted));
    let record = load(store.as_ref(), "p1").await;
    assert_eq!(status_of(&record, "q1"), Some(StoredQuestStatus::Active));
    let audit = store.audit_for_player("p1", 10).await.expect("audit");
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].step_key.as_deref(), Some("c1/0/0"));
    assert_eq!(
        (
            audit[0].record.message.as_str(),
            audit[0].record.conversation.as_deref(),
            audit[0].record.code.as_deref(),
            audit[0].record.detail.as_deref()
        ),
        ("action", Some("Pim"), None, Some("detail"))
    );
    assert_eq!(store.step_applied("p1", "c1/0/0").await, Ok(true));
    assert_eq!(store.step_applied("p1", "c1/0/1").await, Ok(false));
    assert_eq!(store.step_applied("p2", "c1/0/0").await, Ok(false));
}

async fn the_same_key_applies_once(db: &TestDb) {
    let store = db.open().await;
    accept(store.as_ref(), "p1", "q1", &["fish"]).await;
    let advances = [advance("q1", "fish", 1, 5)];
    let change = Change::Advance {
        event_id: None,
        advances: &advances,
    };
    assert_eq!(
        store.applied(&step("p1", "c1/3/0", change)).await,
        Ok(Applied::Advanced(vec![1]))
    );
    let before = snapshot(store.as_ref(), "p1").await;
    let again = store.applied(&step("p1", "c1/3/0", change)).await;
    assert!(
        matches!(&again, Err(StoreError::StepApplied { key }) if key == "c1/3/0"),
        "{again:?}"
    );
    assert_unchanged(store.as_ref(), "p1", &before, "nothing changed").await;
    assert_eq!(rows_with_key(store.as_ref(), "p1", "c1/3/0").await, 1);
    // The next arming of the same action has its own key.
    assert_eq!(
        store.applied(&step("p1", "c1/3/1", change)).await,
        Ok(Applied::Advanced(vec![2]))
    );
    // Another player's key space is its own.
    accept(store.as_ref(), "p2", "q1", &["fish"]).await;
    assert_eq!(
        store.applied(&step("p2", "c1/3/0", change)).await,
        Ok(Applied::Advanced(vec![1]))
    );
}

async fn a_refused_step_writes_no_row_and_its_key_stays_free(db: &TestDb) {
    let store = db.open().await;
    store.load_player("p1").await.expect("profile");
    let complete = Change::Complete {
        quest: "q1",
        coins: 30,
        experience: 5,
        advances: &[],
    };
    let refused = store.applied(&step("p1", "k", complete)).await;
    assert!(
        matches!(refused, Err(StoreError::QuestState { found: None, .. })),
        "{refused:?}"
    );
    assert_eq!(rows_with_key(store.as_ref(), "p1", "k").await, 0);
    assert_eq!(store.step_applied("p1", "k").await, Ok(false));
    accept(store.as_ref(), "p1", "q1", &["fish"]).await;
    let paid = store.applied(&step("p1", "k", complete)).await;
    assert!(
        matches!(&paid, Ok(Applied::Paid(p)) if p.coins == 30 && p.total_coins == 30),
        "{paid:?}"
    );
    assert_eq!(store.ledger("p1").await.expect("ledger").len(), 1);
}

async fn a_cutscene_step_fills_its_objectives_and_pays_in_one_transaction(db: &TestDb) {
    let store = db.open().await;
    accept(store.as_ref(), "p1", "scene", &["watch", "listen"]).await;
    let advances = [
        advance("scene", "watch", 1, 1),
        advance("scene", "listen", 2, 2),
    ];
    let change = Change::Complete {
        quest: "scene",
        coins: 10,
        experience: 40,
        advances: &advances,
    };
    let paid = store.applied(&step("p1", "cutscene/scene", change)).await;
    assert!(matches!(paid, Ok(Applied::Paid(_))), "{paid:?}");
    let record = load(store.as_ref(), "p1").await;
    assert_eq!(
        (
            status_of(&record, "scene"),
            progress_of(&record, "scene", "watch"),
            progress_of(&record, "scene", "listen"),
            record.profile.coins
        ),
        (Some(StoredQuestStatus::Completed), Some(1), Some(2), 10)
    );
    // Reported again (a restart, another instance): the key says it landed; nothing is paid.
    let again = store.applied(&step("p1", "cutscene/scene", change)).await;
    assert!(
        matches!(again, Err(StoreError::StepApplied { .. })),
        "{again:?}"
    );
    assert_eq!(store.ledger_count("scene").await, Ok(1));
}

async fn an_event_step_is_refused_by_its_id_under_any_key(db: &TestDb) {
    let store = db.open().await;
    accept(store.as_ref(), "p1", "q1", &["fish"]).await;
    let advances = [advance("q1", "fish", 1, 3)];
    let change = Change::Advance {
        event_id: Some("ev-1"),
        advances: &advances,
    };
    assert_eq!(
        store.applied(&step("p1", "event/ev-1", change)).await,
        Ok(Applied::Advanced(vec![1]))
    );
    let again = store.applied(&step("p1", "another-key", change)).await;
    assert!(
        matches!(again, Err(StoreError::DuplicateEvent { .. })),
        "{again:?}"
    );
    assert_eq!(rows_with_key(store.as_ref(), "p1", "another-key").await, 0);
}

async fn bad_steps_are_refused_before_any_work(db: &TestDb) {
    let store = db.open().await;
    let track = Change::Track { quest: Some("q1") };
    let long_key = "k".repeat(257);
    for (player, key) in [
        ("", "k"),
        ("p1", ""),
        ("p1", long_key.as_str()),
        ("p1", "a\nb"),
    ] {
        let refused = store.applied(&step(player, key, track)).await;
        assert!(
            matches!(refused, Err(StoreError::InvalidInput(_))),
            "{player:?} {key:?}: {refused:?}"
        );
    }
    assert_eq!(
        store.applied(&step("p1", "k", track)).await,
        Ok(Applied::Tracked)
    );
    assert_eq!(
        load(store.as_ref(), "p1")
            .await
            .profile
            .tracked_quest
            .as_deref(),
        Some("q1")
    );
}

/// `abandon_quest`: the quest's state and progress go, it is untracked, the audit row lands with
/// it; a quest not active is refused with nothing written; accepted again, it starts from 0.
async fn an_abandon_forgets_the_quest_and_its_progress_with_its_audit_row(db: &TestDb) {
    let store = db.open().await;
    accept(store.as_ref(), "p1", "q1", &["fish", "talk"]).await;
    accept(store.as_ref(), "p1", "q2", &["fish"]).await;
    store
        .advance_objectives("p1", None, &[advance("q1", "fish", 2, 3)])
        .await
        .expect("advance");
    store
        .advance_objectives("p1", None, &[advance("q2", "fish", 1, 3)])
        .await
        .expect("advance");
    store
        .set_tracked_quest("p1", Some("q1"))
        .await
        .expect("track");
    let abandon = Change::Abandon { quest: "q1" };
    assert_eq!(
        store.applied(&step("p1", "s/abandon/q1/0", abandon)).await,
        Ok(Applied::Abandoned)
    );
    let record = load(store.as_ref(), "p1").await;
    assert_eq!(status_of(&record, "q1"), None, "forgotten");
    assert_eq!(progress_of(&record, "q1", "fish"), None);
    assert_eq!(record.profile.tracked_quest, None, "untracked");
    // The other quest is untouched.
    assert_eq!(status_of(&record, "q2"), Some(StoredQuestStatus::Active));
    assert_eq!(progress_of(&record, "q2", "fish"), Some(1));
    assert_eq!(
        rows_with_key(store.as_ref(), "p1", "s/abandon/q1/0").await,
        1
    );
    // The same step again: applied before, nothing written.
    assert!(matches!(
        store.applied(&step("p1", "s/abandon/q1/0", abandon)).await,
        Err(StoreError::StepApplied { .. })
    ));
    // Not active any more (and never accepted, completed): refused, no row, key free.
    let before = snapshot(store.as_ref(), "p1").await;
    for (quest, key) in [("q1", "s/abandon/q1/1"), ("q9", "s/abandon/q9/0")] {
        let refused = store
            .applied(&step("p1", key, Change::Abandon { quest }))
            .await;
        assert!(
            matches!(refused, Err(StoreError::QuestState { .. })),
            "{quest}: {refused:?}"
        );
        assert_eq!(rows_with_key(store.as_ref(), "p1", key).await, 0);
    }
    assert_unchanged(store.as_ref(), "p1", &before, "nothing changed").await;
    // A completed quest cannot be abandoned: its state and the ledger stay.
    complete(store.as_ref(), "p1", "q2", 5, 1).await;
    let before = snapshot(store.as_ref(), "p1").await;
    let completed = store
        .applied(&step(
            "p1",
            "s/abandon/q2/0",
            Change::Abandon { quest: "q2" },
        ))
        .await;
    assert!(matches!(completed, Err(StoreError::QuestState { .. })));
    let after = snapshot(store.as_ref(), "p1").await;
    assert_eq!(after, before, "nothing changed");
    assert_eq!(after.0.quests["q2"].status, StoredQuestStatus::Completed);
    assert_eq!(
        after.1,
        vec![("q2".to_owned(), 5, 1)],
        "the ledger is untouched"
    );
    // Accepted again: from progress 0.
    accept(store.as_ref(), "p1", "q1", &["fish", "talk"]).await;
    let record = load(store.as_ref(), "p1").await;
    assert_eq!(progress_of(&record, "q1", "fish"), Some(0));
}

/// A step answers with the player read in its own transaction, after its change and its
/// tutorial move; the move happens only from the stage it names, and a refused step moves
/// nothing.
async fn a_step_returns_the_player_after_it_with_its_tutorial_move(db: &TestDb) {
    let store = db.open().await;
    let ids = objectives(&["fish"]);
    let accept = Change::Accept {
        quest: "q1",
        objectives: &ids,
    };
    let stepped = store
        .apply_step(&moving_tutorial(0, 2, step("p1", "c1/0/0", accept)))
        .await
        .expect("accepted");
    assert_eq!(stepped.applied, Applied::Accepted);
    assert_eq!(stepped.record, load(store.as_ref(), "p1").await);
    assert_eq!(
        status_of(&stepped.record, "q1"),
        Some(StoredQuestStatus::Active)
    );
    assert_eq!(progress_of(&stepped.record, "q1", "fish"), Some(0));
    assert_eq!(stepped.record.profile.tutorial_stage, 2);

    // The stage is no longer 0: the step applies, the stage stays.
    let advances = [advance("q1", "fish", 2, 5)];
    let change = Change::Advance {
        event_id: None,
        advances: &advances,
    };
    let stepped = store
        .apply_step(&moving_tutorial(0, 2, step("p1", "c1/1/0", change)))
        .await
        .expect("advanced");
    assert_eq!(stepped.applied, Applied::Advanced(vec![2]));
    assert_eq!(progress_of(&stepped.record, "q1", "fish"), Some(2));
    assert_eq!(stepped.record.profile.tutorial_stage, 2);

    // A refused step (q1 is active, not available) moves nothing.
    let refused = store
        .apply_step(&moving_tutorial(2, 3, step("p1", "c1/2/0", accept)))
        .await;
    assert!(
        matches!(refused, Err(StoreError::QuestState { .. })),
        "{refused:?}"
    );
    assert_eq!(load(store.as_ref(), "p1").await.profile.tutorial_stage, 2);

    // A step of no quest change creates the profile and moves the tutorial alone.
    let stepped = store
        .apply_step(&moving_tutorial(
            0,
            1,
            step("p2", "tutorial_started", Change::Profile),
        ))
        .await
        .expect("moved");
    assert_eq!(stepped.applied, Applied::Profile);
    assert_eq!(stepped.record.profile.tutorial_stage, 1);
    assert_eq!(
        rows_with_key(store.as_ref(), "p2", "tutorial_started").await,
        1
    );
}

on_both_backends!(
    a_step_returns_the_player_after_it_with_its_tutorial_move,
    an_abandon_forgets_the_quest_and_its_progress_with_its_audit_row,
    a_step_writes_its_change_and_its_audit_row_together,
    the_same_key_applies_once,
    a_refused_step_writes_no_row_and_its_key_stays_free,
    a_cutscene_step_fills_its_objectives_and_pays_in_one_transaction,
    an_event_step_is_refused_by_its_id_under_any_key,
    bad_steps_are_refused_before_any_work,
);

/// Completing `q1` for 30 coins and 5 experience.
const PAY_Q1: Change<'static> = Change::Complete {
    quest: "q1",
    coins: 30,
    experience: 5,
    advances: &[],
};

/// A store on `db` whose connections pass through a [`CommitCutter`].
async fn through_cutter(db: &TestDb) -> (PgStore, CommitCutter) {
    let upstream = db.pg_addr().expect("PostgreSQL's address");
    let cutter = CommitCutter::start(upstream).await.expect("proxy");
    let options = db.pg_options_via(cutter.addr()).expect("options");
    let store = PgStore::connect_with(options, Default::default())
        .await
        .expect("a store through the proxy");
    (store, cutter)
}

/// `p1` accepts `q1` on a store on `db` through a [`CommitCutter`]; then the COMMIT of the step
/// `c/1/0` completing it ([`PAY_Q1`]) is cut (`cut`), and the store answers that its outcome is
/// unknown.
async fn complete_with_its_commit_cut(db: &TestDb, cut: Cut) -> (PgStore, CommitCutter) {
    let (store, cutter) = through_cutter(db).await;
    accept(&store, "p1", "q1", &["fish"]).await;
    cutter.arm(cut, 1);
    let unknown = store.applied(&step("p1", "c/1/0", PAY_Q1)).await;
    assert!(
        matches!(unknown, Err(StoreError::OutcomeUnknown(_))),
        "{unknown:?}"
    );
    (store, cutter)
}

/// The connection dies after the COMMIT reached the database: the step committed, the store
/// cannot know, and `step_applied` finds out it did. A retry under the same key changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_commit_cut_after_it_was_sent_is_found_to_have_landed() {
    let db = TestDb::postgres("cut_after_commit").await;
    let (store, cutter) = complete_with_its_commit_cut(&db, Cut::AfterCommit).await;
    assert_eq!(cutter.cuts(), 1);
    assert_eq!(store.step_applied("p1", "c/1/0").await, Ok(true));
    assert_eq!(store.ledger_count("q1").await, Ok(1));
    let again = store.applied(&step("p1", "c/1/0", PAY_Q1)).await;
    assert!(
        matches!(again, Err(StoreError::StepApplied { .. })),
        "{again:?}"
    );
    assert_eq!(store.ledger_count("q1").await, Ok(1));
}

/// The connection dies before the COMMIT reached the database: the transaction rolled back,
/// `step_applied` says so, and the same step applies once when retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_commit_cut_before_it_was_sent_is_found_not_to_have_landed() {
    let db = TestDb::postgres("cut_before_commit").await;
    let (store, _cutter) = complete_with_its_commit_cut(&db, Cut::BeforeCommit).await;
    assert_eq!(store.step_applied("p1", "c/1/0").await, Ok(false));
    assert_eq!(store.ledger_count("q1").await, Ok(0));
    let paid = store.applied(&step("p1", "c/1/0", PAY_Q1)).await;
    assert!(matches!(paid, Ok(Applied::Paid(_))), "{paid:?}");
    assert_eq!(store.ledger_count("q1").await, Ok(1));
}
