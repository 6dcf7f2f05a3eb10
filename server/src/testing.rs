//! What the server's unit tests share: the sample content, a copy of it to edit, and an app on
//! a private SQLite file without a listener.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use banter_test_db::TestDb;
use banter_test_db::temp::copy_dir;

use crate::app::{App, SharedApp};
use crate::config::Config;
use crate::served::{ContentVersion, ServedContent};
use crate::store::{self, ConnectOptions};

/// The workspace's sample content.
pub fn sample_content() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../content")
}

/// A server's shared state on a private SQLite file (named after `tag`), serving `content`.
pub async fn app_on(tag: &str, content: PathBuf) -> (SharedApp, TestDb) {
    let db = TestDb::sqlite(tag);
    let config = Config {
        database_url: db.url(),
        content: content.clone(),
        ..Config::default()
    };
    let library = ContentVersion::load(&content, 1).expect("sample content loads");
    let store = store::connect(&db.url(), ConnectOptions::default())
        .await
        .expect("sqlite store");
    let app = Arc::new(App::new(
        config,
        ServedContent::new(content, library),
        store,
    ));
    (app, db)
}

/// A fresh copy of the sample content in a temp folder of its own, to edit.
pub fn sample_copy(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "banter-{tag}-{}-{}",
        std::process::id(),
        crate::incident::reference()
    ));
    copy_dir(&sample_content(), &dir);
    dir
}
