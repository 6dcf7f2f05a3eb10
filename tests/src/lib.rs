//! The end-to-end harness: a real server on 127.0.0.1 port 0 with a fresh database and the sample
//! content, and a real WebSocket client that speaks the wire protocol. The WebSocket client here
//! is raw on purpose (tests send malformed frames, hold sockets, reset connections); HTTP calls,
//! device login and tokens go through the client library, `banter-client`.
//!
//! The database is a private SQLite file by default, or a private PostgreSQL schema
//! ([`TestServer::start_on`], [`on_both_backends!`]): the quest scenarios run on both.
//!
//! Nothing here sleeps to wait for something: every wait is on a message, with a timeout that
//! only exists to turn a hang into a failure.

mod channel;
mod client;
mod http;
mod play;
mod server;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub use banter_test_db::temp::copy_dir;
pub use banter_test_db::{Backend, TestDb};

pub use crate::channel::*;
pub use crate::client::*;
pub use crate::http::*;
pub use crate::play::*;
pub use crate::server::*;

/// How long any single wait may take before the test fails instead of hanging.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// The workspace's sample content.
pub fn content_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../content")
}

/// A private copy of the sample content in a fresh temporary folder, for a test that edits it.
pub fn content_copy(label: &str) -> PathBuf {
    let dir = temp_dir(label).join("content");
    copy_dir(&content_dir(), &dir);
    dir
}

/// A fresh, unique temporary folder.
pub fn temp_dir(label: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "banter-e2e-{label}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Runs each named scenario, an `async fn(Backend)` in the calling file, as two tests: one on
/// SQLite (`sqlite::name`) and one on PostgreSQL (`postgres::name`, which fails when
/// `TEST_DATABASE_URL` is unreachable; it never skips).
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::Backend::Sqlite).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::Backend::Postgres).await;
                }
            )*
        }
    };
}
