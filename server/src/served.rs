//! The content the server is serving. Three names, three ideas: `banter_dialogue::Content` is
//! content as loaded from a folder; a [`ContentVersion`] is one loaded, checked and published
//! version of it (with the NPC registry and each conversation's graph, JSON and hash); the
//! [`ServedContent`] is the version in force now, swapped atomically on reload.
//!
//! A reload loads and checks the new content off to the side and swaps it in only if it has no
//! errors; a failed reload changes nothing and says why. A conversation already open holds an
//! `Arc` of the graph it opened with, so it finishes on that version whatever is swapped in.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;

use banter_dialogue::content::Content;
use banter_dialogue::{Diagnostic, DialogueGraph, canonical, check};
use sha2::{Digest, Sha256};

use crate::world::NpcRegistry;

/// One conversation as the server publishes it: the graph it walks and the canonical JSON a
/// client builds the same graph from, with its hash for client caches.
#[derive(Debug)]
pub struct Published {
    pub graph: Arc<DialogueGraph>,
    pub json: Arc<str>,
    pub hash: String,
}

/// One immutable version of the content: loaded, checked and published.
#[derive(Debug)]
pub struct ContentVersion {
    pub content: Content,
    pub npcs: NpcRegistry,
    pub conversations: HashMap<String, Published>,
    /// Counts reloads: 1 for the content the server started with.
    pub version: u64,
}

/// Content that failed to load or check.
#[derive(Debug, thiserror::Error)]
#[error("content in {dir} has {} error(s); first: {}", errors.len(), errors.first().map(ToString::to_string).unwrap_or_default())]
pub struct ContentErrors {
    pub dir: PathBuf,
    pub errors: Vec<Diagnostic>,
}

impl ContentVersion {
    /// Loads and checks a content folder; refuses it on any error.
    pub fn load(dir: &Path, version: u64) -> Result<ContentVersion, ContentErrors> {
        if !dir.is_dir() {
            return Err(ContentErrors {
                dir: dir.to_owned(),
                errors: vec![Diagnostic::error(
                    dir.display().to_string(),
                    banter_dialogue::Problem::Unreadable("not a folder".into()),
                )],
            });
        }
        let (content, diagnostics) = check::load_and_check(dir);
        let errors: Vec<Diagnostic> = diagnostics.into_iter().filter(|d| d.is_error()).collect();
        if !errors.is_empty() {
            return Err(ContentErrors {
                dir: dir.to_owned(),
                errors,
            });
        }
        let conversations = content
            .merged
            .iter()
            .filter_map(|(name, merged)| {
                let graph = content.conversation(name)?.clone();
                let json = canonical::to_json(merged);
                let digest = Sha256::digest(json.as_bytes());
                let hash = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
                Some((
                    name.clone(),
                    Published {
                        graph,
                        json: json.into(),
                        hash,
                    },
                ))
            })
            .collect();
        Ok(ContentVersion {
            npcs: NpcRegistry::from_content(&content),
            content,
            conversations,
            version,
        })
    }
}

/// The version in force, swappable: readers load the `Arc` without a lock (and so never see a
/// poisoned one), a reload stores a new one whole.
#[derive(Debug)]
pub struct ServedContent {
    dir: PathBuf,
    current: ArcSwap<ContentVersion>,
}

impl ServedContent {
    pub fn new(dir: PathBuf, library: ContentVersion) -> ServedContent {
        ServedContent {
            dir,
            current: ArcSwap::from_pointee(library),
        }
    }

    /// The version served now. Cheap: one `Arc` clone, no lock.
    pub fn current(&self) -> Arc<ContentVersion> {
        self.current.load_full()
    }

    /// Loads the folder again; swaps it in only if it is clean. Returns the new version.
    pub fn reload(&self) -> Result<u64, ContentErrors> {
        let version = self.current().version + 1;
        let library = ContentVersion::load(&self.dir, version)?;
        self.current.store(Arc::new(library));
        Ok(version)
    }
}
