//! The store conformance suite's databases: [`banter_test_db::TestDb`] (a fresh SQLite file or
//! PostgreSQL schema per test), plus opening a store on one.

use std::sync::Arc;

use banter_server::store::{ConnectOptions, PgStore, SqliteStore, Store};
pub use banter_test_db::TestDb;

/// Opens stores on a test database.
pub trait OpenStore {
    /// A new store on this database (its own pool), migrations run.
    async fn open(&self) -> Arc<dyn Store> {
        self.open_with(ConnectOptions::default()).await
    }

    async fn open_with(&self, options: ConnectOptions) -> Arc<dyn Store>;
}

impl OpenStore for TestDb {
    async fn open_with(&self, options: ConnectOptions) -> Arc<dyn Store> {
        match self {
            TestDb::Sqlite { path } => Arc::new(
                SqliteStore::connect(&path.display().to_string(), options)
                    .await
                    .expect("open SQLite store"),
            ),
            TestDb::Postgres { .. } => Arc::new(
                PgStore::connect_with(self.pg_options().expect("pg options"), options)
                    .await
                    .expect("open PostgreSQL store"),
            ),
        }
    }
}
