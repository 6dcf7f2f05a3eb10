//! [`TempDir`]: a test's private folder, as [`TestDb`](crate::TestDb) is its private database: a
//! fresh, empty folder under the temp folder, removed when dropped (even when the test panics).
//! [`copy_dir`] fills one with a copy of another (the sample content, to edit).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh, unique, empty temporary folder, removed when dropped.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new folder named after `label`: `banter-{label}-{process}-{n}`.
    pub fn new(label: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "banter-{label}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    /// A new folder (see [`TempDir::new`]) holding a copy of everything under `from`.
    pub fn copy_of(from: &Path, label: &str) -> TempDir {
        let dir = TempDir::new(label);
        copy_dir(from, dir.path());
        dir
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies every file under `from` to the same place under `to`, creating folders as needed.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create folder");
    for entry in std::fs::read_dir(from).expect("read folder") {
        let entry = entry.expect("folder entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}
