//! A lock held elsewhere: a write that cannot get its lock in time is refused with a retryable
//! error and changes nothing; once the lock is gone the retry pays once. The scenario is one;
//! the lock is each database's own (PostgreSQL: the quest's row, with `lock_timeout`; SQLite: the
//! file's write lock, with its busy timeout), so each test sets up its store and the connection
//! that holds the lock.

use std::time::Duration;

use banter_server::store::sqlite::sqlite_options;
use banter_server::store::{ConnectOptions, PgStore, SqliteStore, Store, StoreError};
use sqlx::{Connection, Database, Executor, IntoArguments};

use crate::Writes;
use crate::store_support::TestDb;
use crate::{accept, snapshot};

/// `holder`, a connection of its own, takes the lock with the statements `lock` while the store
/// completes a quest; the refusal's text mentions `says`.
async fn a_held_lock_is_retryable_and_changes_nothing<C>(
    store: &dyn Store,
    mut holder: C,
    lock: &[&str],
    says: &str,
) where
    C: Connection,
    for<'c> &'c mut C: Executor<'c, Database = C::Database>,
    for<'q> <C::Database as Database>::Arguments<'q>: IntoArguments<'q, C::Database>,
{
    accept(store, "p1", "q1", &["fish"]).await;
    let before = snapshot(store, "p1").await;
    for statement in lock {
        sqlx::query(statement)
            .execute(&mut holder)
            .await
            .expect("take the lock");
    }
    let err = store
        .complete_quest("p1", "q1", 9, 9)
        .await
        .expect_err("locked out");
    assert!(
        matches!(&err, StoreError::Unavailable(m) if m.contains(says)),
        "{err:?}"
    );
    assert!(err.retryable());
    sqlx::query("ROLLBACK")
        .execute(&mut holder)
        .await
        .expect("rollback");
    holder.close().await.expect("close");

    assert_eq!(snapshot(store, "p1").await, before, "nothing changed");
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

/// Another instance holds the quest's row past the store's `lock_timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_row_lock() {
    let db = TestDb::postgres("lock_timeout").await;
    let pg_options = db.pg_options().expect("pg options");
    let options = pg_options.clone().options([("lock_timeout", "200ms")]);
    let store = PgStore::connect_with(options, ConnectOptions::default())
        .await
        .expect("connect");
    let holder = sqlx::postgres::PgConnection::connect_with(&pg_options)
        .await
        .expect("connect");
    let lock = [
        "BEGIN",
        "SELECT 1 FROM quest_states WHERE player_id = 'p1' AND quest_id = 'q1' FOR UPDATE",
    ];
    a_held_lock_is_retryable_and_changes_nothing(&store, holder, &lock, "55P03").await;
}

/// Another process holds SQLite's write lock past the store's busy timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_write_lock() {
    let db = TestDb::sqlite("locked");
    let url = db.url();
    let options = sqlite_options(&url)
        .expect("options")
        .busy_timeout(Duration::from_millis(200));
    let store = SqliteStore::connect_with(options, ConnectOptions::default())
        .await
        .expect("connect");
    let holder =
        sqlx::sqlite::SqliteConnection::connect_with(&sqlite_options(&url).expect("options"))
            .await
            .expect("connect");
    let lock = ["BEGIN IMMEDIATE"];
    a_held_lock_is_retryable_and_changes_nothing(&store, holder, &lock, "locked").await;
}
