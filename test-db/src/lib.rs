//! Test databases: a fresh SQLite file or a fresh PostgreSQL schema per test, removed when the
//! [`TestDb`] is dropped (even when the test panics). The store conformance suite and the
//! end-to-end tests both run on these, so every scenario runs on both backends the same way.
//!
//! PostgreSQL is `TEST_DATABASE_URL` (default [`DEFAULT_TEST_DATABASE_URL`]). An unreachable
//! PostgreSQL fails the test with a clear message: tests that need it never skip.
//!
//! A test's private folder works the same way: [`temp::TempDir`].

pub mod cutter;
pub mod temp;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{Connection, query, query_scalar};

/// The PostgreSQL the suite runs against when `TEST_DATABASE_URL` is not set.
pub const DEFAULT_TEST_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// Where the PostgreSQL of `url` listens.
pub fn postgres_addr(url: &str) -> Option<SocketAddr> {
    listen_addr(&PgConnectOptions::from_str(url).ok()?)
}

/// Where the PostgreSQL `options` connect to listens.
fn listen_addr(options: &PgConnectOptions) -> Option<SocketAddr> {
    (options.get_host(), options.get_port())
        .to_socket_addrs()
        .ok()?
        .next()
}

/// A `postgres://` URL with its host and port replaced by `proxy`'s, and TLS off.
pub fn postgres_url_via(url: &str, proxy: SocketAddr) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let (user, rest) = match rest.split_once('@') {
        Some((user, rest)) => (format!("{user}@"), rest),
        None => (String::new(), rest),
    };
    let path = rest.find(['/', '?']).map_or("", |at| &rest[at..]);
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{scheme}://{user}{proxy}{path}{sep}sslmode=disable")
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

fn unique(name: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    name.truncate(36);
    format!("banter_t_{}_{n}_{name}", std::process::id())
}

pub fn test_database_url() -> String {
    std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_TEST_DATABASE_URL.to_owned())
}

/// Which database a test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// One test's private database.
pub enum TestDb {
    Sqlite {
        path: PathBuf,
    },
    Postgres {
        url: String,
        base: Box<PgConnectOptions>,
        schema: String,
    },
}

impl TestDb {
    /// A fresh database of the given backend.
    pub async fn new(backend: Backend, name: &str) -> TestDb {
        match backend {
            Backend::Sqlite => TestDb::sqlite(name),
            Backend::Postgres => TestDb::postgres(name).await,
        }
    }

    /// A fresh SQLite file under the temp folder (not yet created: the store creates it).
    pub fn sqlite(name: &str) -> TestDb {
        let path = std::env::temp_dir().join(format!("{}.db", unique(name)));
        TestDb::Sqlite { path }
    }

    /// A fresh schema in the test PostgreSQL. Panics with a clear message when PostgreSQL is
    /// unreachable: the suite fails, it never skips.
    pub async fn postgres(name: &str) -> TestDb {
        let url = test_database_url();
        let base = PgConnectOptions::from_str(&url)
            .unwrap_or_else(|e| panic!("TEST_DATABASE_URL {url:?} is not a PostgreSQL URL: {e}"));
        let schema = unique(name);
        let mut conn = PgConnection::connect_with(&base).await.unwrap_or_else(|e| {
            panic!(
                "PostgreSQL is unreachable at {url} ({e}). The store conformance suite runs against \
                 a real PostgreSQL: start it (.ci/run does) or set TEST_DATABASE_URL."
            )
        });
        sqlx::query(&format!("CREATE SCHEMA \"{schema}\""))
            .execute(&mut conn)
            .await
            .expect("create test schema");
        conn.close().await.expect("close setup connection");
        TestDb::Postgres {
            url,
            base: Box::new(base),
            schema,
        }
    }

    pub fn backend(&self) -> &'static str {
        match self {
            TestDb::Sqlite { .. } => "sqlite",
            TestDb::Postgres { .. } => "postgres",
        }
    }

    /// The URL `store::connect` takes for this database.
    pub fn url(&self) -> String {
        match self {
            TestDb::Sqlite { path } => format!("sqlite://{}", path.display()),
            TestDb::Postgres { url, schema, .. } => {
                let sep = if url.contains('?') { '&' } else { '?' };
                format!("{url}{sep}options[search_path]={schema}")
            }
        }
    }

    /// The sqlx options a [`PgStore`] uses for this schema.
    pub fn pg_options(&self) -> Option<PgConnectOptions> {
        match self {
            TestDb::Postgres { base, schema, .. } => {
                Some((**base).clone().options([("search_path", schema.as_str())]))
            }
            TestDb::Sqlite { .. } => None,
        }
    }

    /// [`TestDb::url`] reaching the database through `proxy` instead (no TLS: the proxy reads
    /// the protocol).
    pub fn url_via(&self, proxy: SocketAddr) -> String {
        postgres_url_via(&self.url(), proxy)
    }

    /// Where the PostgreSQL server listens (to put a [`cutter::CommitCutter`] in front of it).
    pub fn pg_addr(&self) -> Option<SocketAddr> {
        listen_addr(&self.pg_options()?)
    }

    /// [`TestDb::pg_options`] reaching the database through `proxy` instead.
    pub fn pg_options_via(&self, proxy: SocketAddr) -> Option<PgConnectOptions> {
        Some(
            self.pg_options()?
                .host(&proxy.ip().to_string())
                .port(proxy.port())
                // The proxy reads the protocol: no TLS through it.
                .ssl_mode(sqlx::postgres::PgSslMode::Disable),
        )
    }

    pub fn schema(&self) -> Option<&str> {
        match self {
            TestDb::Postgres { schema, .. } => Some(schema),
            TestDb::Sqlite { .. } => None,
        }
    }

    /// Runs raw SQL on the test database (to tamper with state, or to look behind the store).
    pub async fn exec(&self, sql: &str) -> u64 {
        self.on_raw_connection(
            async |conn| query(sql).execute(conn).await.map(|d| d.rows_affected()),
            async |conn| query(sql).execute(conn).await.map(|d| d.rows_affected()),
        )
        .await
    }

    /// Runs a raw query returning one BIGINT/INTEGER.
    pub async fn scalar(&self, sql: &str) -> i64 {
        self.on_raw_connection(
            async |conn| query_scalar(sql).fetch_one(conn).await,
            async |conn| query_scalar(sql).fetch_one(conn).await,
        )
        .await
    }

    /// Runs `sqlite` or `postgres` (whichever is this database's) on a raw connection of its
    /// own, outside any store's pool, and closes it after; an error fails the test.
    async fn on_raw_connection<T>(
        &self,
        sqlite: impl AsyncFnOnce(&mut SqliteConnection) -> Result<T, sqlx::Error>,
        postgres: impl AsyncFnOnce(&mut PgConnection) -> Result<T, sqlx::Error>,
    ) -> T {
        match self {
            TestDb::Sqlite { path } => {
                let options = SqliteConnectOptions::new().filename(path);
                let mut conn = SqliteConnection::connect_with(&options)
                    .await
                    .expect("raw SQLite connection");
                let value = sqlite(&mut conn).await.expect("raw SQL");
                conn.close().await.expect("close raw connection");
                value
            }
            TestDb::Postgres { .. } => {
                let mut conn = PgConnection::connect_with(&self.pg_options().expect("pg options"))
                    .await
                    .expect("raw PG connection");
                let value = postgres(&mut conn).await.expect("raw SQL");
                conn.close().await.expect("close raw connection");
                value
            }
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        match self {
            TestDb::Sqlite { path } => {
                for suffix in ["", "-wal", "-shm"] {
                    let mut file = path.as_os_str().to_owned();
                    file.push(suffix);
                    let _ = std::fs::remove_file(PathBuf::from(file));
                }
            }
            TestDb::Postgres { base, schema, .. } => {
                let base = (**base).clone();
                let schema = schema.clone();
                // Drop runs inside the test's runtime: clean up from a thread with its own.
                let _ = std::thread::spawn(move || {
                    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    else {
                        return;
                    };
                    runtime.block_on(async move {
                        if let Ok(mut conn) = PgConnection::connect_with(&base).await {
                            let _ =
                                sqlx::query(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                                    .execute(&mut conn)
                                    .await;
                            let _ = conn.close().await;
                        }
                    });
                })
                .join();
            }
        }
    }
}
