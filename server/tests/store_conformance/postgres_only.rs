//! What only PostgreSQL can show: schema placement, outages, several instances.

use std::time::{Duration, Instant};

use banter_server::store::{
    self, ClaimEvent, ConnectOptions, PgStore, SessionStore, Store, StoreError,
};
use sqlx::postgres::PgConnectOptions;

use crate::Writes;
use crate::store_support::{OpenStore, TestDb};
use crate::{WAIT, accept, next_claim_of, next_event};

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
    accept(&store, "p1", "q1", &["fish"]).await;
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
