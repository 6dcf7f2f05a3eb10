//! What only the SQLite backend has: URLs and paths, the in-memory database, its write lock
//! and its group commit.

use std::sync::Arc;
use std::time::{Duration, Instant};

use banter_server::store::{self, ConnectOptions, Store, StoreError};

use crate::Writes;
use crate::store_support::TestDb;
use crate::{WAIT, accept, load};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_path_creates_its_folder_and_file() {
    let root = std::env::temp_dir().join(format!("banter-store-folder-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let file = root.join("nested").join("banter.db");
    let store = store::connect(&file.display().to_string(), ConnectOptions::default())
        .await
        .expect("connect");
    assert_eq!(store.backend(), "sqlite");
    store.move_tutorial("p1", 0, 2).await.expect("write");
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
    accept(store.as_ref(), "p1", "q1", &["fish"]).await;
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

/// A connect storm's claims are committed together, one fsync for many (the group commit):
/// while another process holds the write lock they queue, and once it is free they land in
/// at most two transactions. A claim that fails (here a trigger refuses one player) fails
/// alone: the claims committed with it are not refused with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_in_a_storm_share_a_commit_and_one_failure_stays_its_own() {
    use banter_server::store::SqliteStore;
    use sqlx::Connection;
    let (_db, store, mut holder) = store_and_lock_holder("group-commit").await;
    let store = Arc::new(store);
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
        take_write_lock(holder).await;
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
        until("the claims are queued", || {
            store.group_commit_stats().jobs >= queued_before + n
        })
        .await;
        let_go_of_write_lock(holder).await;
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

/// Players' steps that arrive together share a transaction (one fsync), and a step that fails
/// in a batch (its key taken, its quest not active) is answered with its own error while the
/// steps beside it land with their audit rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_in_a_burst_share_a_commit_and_one_refusal_stays_its_own() {
    use banter_server::store::{
        Applied, Change, SqliteStore, Step, StoredQuestStatus, sqlite::sqlite_options,
    };
    use sqlx::Connection;

    // Holds SQLite's write lock until every step is queued, then lets go.
    async fn burst(
        store: &SqliteStore,
        holder: &mut sqlx::sqlite::SqliteConnection,
        steps: &[Step<'_>],
    ) -> Vec<Result<Applied, StoreError>> {
        take_write_lock(holder).await;
        let queued_before = store.step_commit_stats().jobs;
        let n = steps.len() as u64;
        let all = futures_util::future::join_all(steps.iter().map(|s| store.applied(s)));
        let release = async {
            until("the steps are queued", || {
                store.step_commit_stats().jobs >= queued_before + n
            })
            .await;
            let_go_of_write_lock(holder).await;
        };
        tokio::join!(all, release).0
    }

    let db = TestDb::sqlite("step-commit");
    let url = db.url();
    let store = SqliteStore::connect(&url, ConnectOptions::default())
        .await
        .expect("connect");
    let objectives = vec!["fish".to_owned()];
    let accept = |player: &'static str, key: &'static str| Step {
        player,
        key,
        conversation: Some("Pim"),
        message: "action",
        detail: None,
        recorded_us: 1,
        change: Change::Accept {
            quest: "q1",
            objectives: &objectives,
        },
        tutorial: None,
    };
    let mut holder =
        sqlx::sqlite::SqliteConnection::connect_with(&sqlite_options(&url).expect("options"))
            .await
            .expect("connect");

    // A burst of 40 players' accepts: at most 2 transactions.
    let players: Vec<String> = (0..40).map(|i| format!("burst-{i}")).collect();
    let steps: Vec<Step<'_>> = players
        .iter()
        .map(|player| Step {
            player,
            ..accept("", "k/0/0")
        })
        .collect();
    let before = store.step_commit_stats();
    let outcomes = burst(&store, &mut holder, &steps).await;
    let after = store.step_commit_stats();
    assert!(
        outcomes.iter().all(|o| *o == Ok(Applied::Accepted)),
        "{outcomes:?}"
    );
    assert!(
        after.transactions - before.transactions <= 2,
        "40 steps in {} transactions",
        after.transactions - before.transactions
    );
    for player in &players {
        let record = load(&store, player).await;
        assert_eq!(
            record.quests.get("q1").map(|q| q.status),
            Some(StoredQuestStatus::Active),
            "{player}"
        );
        let audit = store.audit_for_player(player, 10).await.expect("audit");
        assert_eq!(audit.len(), 1, "{player}: one audit row, with its key");
        assert_eq!(audit[0].step_key.as_deref(), Some("k/0/0"));
    }

    // A burst with two steps that must fail: a key already taken, a payout for a quest nobody
    // accepted. Each gets its own refusal; the others land.
    load(&store, "burst-unpaid").await;
    let fresh: Vec<String> = (0..10).map(|i| format!("mixed-{i}")).collect();
    let mut steps: Vec<Step<'_>> = fresh
        .iter()
        .map(|player| Step {
            player,
            ..accept("", "k/0/0")
        })
        .collect();
    steps.insert(3, accept("burst-0", "k/0/0"));
    steps.insert(
        7,
        Step {
            player: "burst-unpaid",
            key: "k/1/0",
            change: Change::Complete {
                quest: "q1",
                coins: 10,
                experience: 0,
                advances: &[],
            },
            ..accept("", "")
        },
    );
    let outcomes = burst(&store, &mut holder, &steps).await;
    assert!(
        matches!(&outcomes[3], Err(StoreError::StepApplied { key }) if key == "k/0/0"),
        "{:?}",
        outcomes[3]
    );
    assert!(
        matches!(&outcomes[7], Err(StoreError::QuestState { .. })),
        "{:?}",
        outcomes[7]
    );
    for (i, outcome) in outcomes.iter().enumerate() {
        if i != 3 && i != 7 {
            assert_eq!(*outcome, Ok(Applied::Accepted), "step {i}");
        }
    }
    for player in &fresh {
        assert_eq!(
            store.audit_for_player(player, 10).await.map(|a| a.len()),
            Ok(1),
            "{player}"
        );
    }
    // The refused steps left nothing: still one row for the taken key, none for the unpaid.
    assert_eq!(
        store.audit_for_player("burst-0", 10).await.map(|a| a.len()),
        Ok(1)
    );
    assert_eq!(
        store
            .audit_for_player("burst-unpaid", 10)
            .await
            .map(|a| a.len()),
        Ok(0)
    );
    assert_eq!(store.ledger("burst-unpaid").await.map(|l| l.len()), Ok(0));
    holder.close().await.expect("close");
    store.close().await;
}

/// No commit checkpoints the WAL (every connection has `wal_autocheckpoint = 0`): the
/// checkpointer copies it beside the writers, holding no write turn, and is timed. The
/// best-effort rows (audit refusals, analytics counts) commit at `synchronous = NORMAL`, while
/// the pool that writes players' state stays `FULL`; the gate's turns are timed too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_run_beside_the_writers_and_best_effort_rows_skip_the_fsync() {
    use banter_server::store::{AuditRecord, SqliteStore};
    let db = TestDb::sqlite("checkpointer");
    let store = SqliteStore::connect(&db.url(), ConnectOptions::default())
        .await
        .expect("connect");
    let pragma = |pool: sqlx::SqlitePool, name: &'static str| async move {
        let (value,): (i64,) = sqlx::query_as(&format!("PRAGMA {name}"))
            .fetch_one(&pool)
            .await
            .expect(name);
        value
    };
    assert_eq!(pragma(store.pool().clone(), "wal_autocheckpoint").await, 0);
    assert_eq!(
        pragma(store.best_effort().clone(), "wal_autocheckpoint").await,
        0
    );
    assert_eq!(pragma(store.pool().clone(), "synchronous").await, 2, "FULL");
    assert_eq!(
        pragma(store.best_effort().clone(), "synchronous").await,
        1,
        "NORMAL"
    );

    accept(&store, "p1", "q1", &["o1"]).await;
    // About 1.2 MB of rows: far more than the schema alone, so the database file reaching that
    // size shows the WAL was copied into it, which no commit does here.
    let records: Vec<AuditRecord> = (0..2000)
        .map(|i| AuditRecord {
            player_id: "p1".into(),
            conversation: None,
            message: "malformed".into(),
            code: Some("malformed".into()),
            detail: Some("x".repeat(600)),
            recorded_us: i,
        })
        .collect();
    store.record_audit(&records).await.expect("record");
    assert_eq!(
        store
            .audit_for_player("p1", 1000)
            .await
            .expect("read")
            .len(),
        1000,
        "the newest refusals"
    );
    let timings = store.timings();
    let count = |family: &banter_server::store::WriteTimings, player: bool| {
        let labels = banter_server::store::PriorityLabels {
            priority: if player { "player" } else { "housekeeping" },
        };
        (
            family.turn_wait.get_or_create(&labels).count(),
            family.turn_held.get_or_create(&labels).count(),
        )
    };
    assert!(count(timings, true).0 >= 1 && count(timings, true).1 >= 1);
    assert!(
        count(timings, false).1 >= 4,
        "the audit's slices were timed"
    );

    // The checkpointer ticks every 500 ms.
    let file = std::path::PathBuf::from(db.url().trim_start_matches("sqlite://"));
    until("the WAL is copied into the database", || {
        std::fs::metadata(&file).map_or(0, |m| m.len()) >= 1_200_000
    })
    .await;
    assert!(
        timings.checkpoint.count() >= 1,
        "and the checkpoint was timed"
    );
    store.close().await;
}

/// A housekeeping turn commits early when a player comes to wait for the write turn: the
/// player's write goes after one claim, not after the whole storm (and the rest of the claims
/// go in the next turn).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_housekeeping_turn_yields_to_a_player_who_waits() {
    use banter_server::store::{PriorityLabels, SqliteStore};
    use sqlx::Connection;
    let (_db, store, mut holder) = store_and_lock_holder("yield").await;
    let store = Arc::new(store);
    let housekeeping_turns = |store: &SqliteStore| {
        store
            .timings()
            .turn_wait
            .get_or_create(&PriorityLabels {
                priority: "housekeeping",
            })
            .count()
    };
    // SQLite's lock is held elsewhere: the lane takes the turn with its storm and waits there.
    take_write_lock(&mut holder).await;
    let before = store.group_commit_stats();
    let turns_before = housekeeping_turns(&store);
    let claims = tokio::spawn({
        let store = store.clone();
        async move {
            let players: Vec<String> = (0..20).map(|i| format!("storm-{i}")).collect();
            futures_util::future::join_all(
                players.iter().map(|p| store.claim_session(p, "s1", "inst")),
            )
            .await
        }
    });
    until("the lane holds the turn", || {
        store.group_commit_stats().jobs == before.jobs + 20
            && housekeeping_turns(&store) > turns_before
    })
    .await;
    let player = tokio::spawn({
        let store = store.clone();
        async move { store.move_tutorial("player-1", 0, 1).await }
    });
    until("the player waits for the turn", || {
        store.players_waiting_for_a_turn() == 1
    })
    .await;
    let_go_of_write_lock(&mut holder).await;

    player.await.expect("player").expect("the player's write");
    let claims = claims.await.expect("claims");
    assert!(claims.iter().all(Result::is_ok), "{claims:?}");
    let after = store.group_commit_stats();
    assert_eq!(
        after.transactions - before.transactions,
        2,
        "one claim, the player's turn, then the other 19"
    );
    holder.close().await.expect("close");
    store.close().await;
}

/// Polls `done` until it holds, for at most [`WAIT`].
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "{what} within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Takes SQLite's write lock on `holder`, a connection of the test's own: the store's writers
/// queue behind it as behind another process.
async fn take_write_lock(holder: &mut sqlx::sqlite::SqliteConnection) {
    sqlx::query("BEGIN IMMEDIATE")
        .execute(holder)
        .await
        .expect("take the write lock");
}

/// Lets go of the write lock [`take_write_lock`] took on `holder`.
async fn let_go_of_write_lock(holder: &mut sqlx::sqlite::SqliteConnection) {
    sqlx::query("ROLLBACK")
        .execute(holder)
        .await
        .expect("let go of the lock");
}

/// A store on a fresh SQLite file, and a connection of the test's own to that file, to hold
/// SQLite's write lock from outside the store as another process would. The [`TestDb`] is kept
/// alive with them.
async fn store_and_lock_holder(
    name: &str,
) -> (
    TestDb,
    banter_server::store::SqliteStore,
    sqlx::sqlite::SqliteConnection,
) {
    use sqlx::Connection;
    let db = TestDb::sqlite(name);
    let url = db.url();
    let store = banter_server::store::SqliteStore::connect(&url, ConnectOptions::default())
        .await
        .expect("connect");
    let options = banter_server::store::sqlite::sqlite_options(&url).expect("options");
    let holder = sqlx::sqlite::SqliteConnection::connect_with(&options)
        .await
        .expect("connect");
    (db, store, holder)
}
