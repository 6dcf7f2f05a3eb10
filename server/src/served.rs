//! The content the server is serving. Three names, three ideas: `banter_dialogue::Content` is
//! content as loaded from a folder; a [`ContentVersion`] is one loaded, checked and published
//! version of it (with the NPC registry and each conversation's graph, JSON and hash); the
//! [`ServedContent`] is the version in force now, swapped atomically on reload.
//!
//! A reload loads and checks the new content off to the side and swaps it in only if it has no
//! errors; a failed reload changes nothing and says why. A conversation already open holds an
//! `Arc` of the graph it opened with, so it finishes on that version whatever is swapped in.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;

use banter_dialogue::content::Content;
use banter_dialogue::locale::Locale;
use banter_dialogue::{Diagnostic, DialogueGraph, canonical, check};
use sha2::{Digest, Sha256};

use crate::store::Held;
use crate::world::NpcRegistry;

/// One conversation as the server publishes it: the graph it walks and the canonical JSON a
/// client builds the same graph from, with its hash for client caches.
#[derive(Debug)]
pub struct Published {
    pub graph: Arc<DialogueGraph>,
    pub json: Arc<str>,
    pub hash: String,
    /// The same conversation's text in each locale the content has (the pseudo-locale
    /// included), by tag: the same nodes, exits and actions, other text, its own hash.
    pub localized: HashMap<String, Localized>,
}

/// A conversation as a player in one locale reads it.
#[derive(Debug)]
pub struct Localized {
    pub json: Arc<str>,
    pub hash: String,
}

impl Published {
    /// The JSON and hash a player in `locale` gets: the first of its fallback chain the
    /// content has, else the source.
    pub fn for_locale(&self, locale: Option<&Locale>) -> (&Arc<str>, &str) {
        locale
            .into_iter()
            .flat_map(Locale::chain)
            .find_map(|tag| self.localized.get(tag))
            .map_or((&self.json, self.hash.as_str()), |l| {
                (&l.json, l.hash.as_str())
            })
    }
}

/// The hash clients cache a conversation's content by: the first 16 bytes of SHA-256, in hex.
fn content_hash(json: &str) -> String {
    let digest = Sha256::digest(json.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

impl ContentVersion {
    /// The locale a player asking for `asked` is served (the first of its fallback chain the
    /// content has), or `None` for the source language.
    ///
    /// The same lookup as [`Published::for_locale`], which picks the text: a string table's tag
    /// or the pseudo-locale's (`en-XA-u-nu-latn` is served, and named, `en-XA`).
    pub fn served_locale(&self, asked: &Locale) -> Option<Locale> {
        asked
            .fallback_chain()
            .into_iter()
            .find(|tag| tag.is_pseudo() || self.content.locales.tables.contains_key(tag))
    }
}

/// One immutable version of the content: loaded, checked and published.
#[derive(Debug)]
pub struct ContentVersion {
    pub content: Content,
    pub npcs: NpcRegistry,
    pub conversations: HashMap<String, Published>,
    /// Counts reloads: 1 for the content the server started with.
    pub version: u64,
    /// Each quest's version for analytics: the hash of its definition, so a quest's funnel
    /// starts again when the quest changes, not when any content does.
    pub quest_versions: HashMap<String, String>,
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
        let content = ContentVersion::check(dir)?;
        Ok(ContentVersion::from_checked(content, version, None))
    }

    /// Loads and checks a content folder without publishing it; refuses it on any error.
    pub fn check(dir: &Path) -> Result<Content, ContentErrors> {
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
        Ok(content)
    }

    /// Publishes content that was loaded and checked without errors: every conversation, or
    /// only those `only` names (the writer test plans publish what they talk to, not every
    /// conversation of a world in every locale).
    pub fn from_checked(
        content: Content,
        version: u64,
        only: Option<&BTreeSet<String>>,
    ) -> ContentVersion {
        let conversations = content
            .merged
            .iter()
            .filter(|(name, _)| only.is_none_or(|only| only.contains(*name)))
            .filter_map(|(name, merged)| {
                let graph = content.conversation(name)?.clone();
                // With a voice manifest, each locale's lines carry their clips (the walk never
                // reads them).
                let voiced =
                    |mut conversation: banter_dialogue::Conversation, tag: &str, source: bool| {
                        if let Some(manifest) = &content.voice {
                            banter_dialogue::locale::attach_voice(
                                &mut conversation,
                                manifest,
                                tag,
                                source,
                            );
                        }
                        conversation
                    };
                let source = &content.locales.settings.source;
                let json = match content.voice {
                    Some(_) => canonical::to_json(&voiced(merged.clone(), source, true)),
                    None => canonical::to_json(merged),
                };
                let hash = content_hash(&json);
                let pseudo = Locale::parse(banter_dialogue::locale::PSEUDO).ok();
                let localized = content
                    .locales
                    .tables
                    .keys()
                    .chain(pseudo.as_ref())
                    .filter_map(|locale| {
                        let text = content.locales.localize(merged, locale)?;
                        let json = canonical::to_json(&voiced(text, locale.as_str(), false));
                        let hash = content_hash(&json);
                        Some((
                            locale.to_string(),
                            Localized {
                                json: json.into(),
                                hash,
                            },
                        ))
                    })
                    .collect();
                Some((
                    name.clone(),
                    Published {
                        graph,
                        json: json.into(),
                        hash,
                        localized,
                    },
                ))
            })
            .collect();
        let quest_versions = content
            .quests
            .iter()
            .map(|quest| {
                // A definition that cannot be serialized cannot have been loaded; its id alone
                // then stands for its version.
                let json = serde_json::to_string(quest).unwrap_or_else(|_| quest.id.clone());
                (quest.id.clone(), content_hash(&json))
            })
            .collect();
        ContentVersion {
            npcs: NpcRegistry::from_content(&content),
            content,
            conversations,
            version,
            quest_versions,
        }
    }

    /// The version of quest `id` for analytics (`""` for a quest this content does not have).
    pub fn quest_version(&self, id: &str) -> &str {
        self.quest_versions.get(id).map_or("", String::as_str)
    }
}

/// The version in force, swappable: readers load the `Arc` without a lock (and so never see a
/// poisoned one), a reload stores a new one whole.
#[derive(Debug)]
pub struct ServedContent {
    dir: PathBuf,
    current: ArcSwap<ContentVersion>,
    /// Held for a whole reload (load, check, admit, swap): reloads run one at a time, in the
    /// order they asked (`tokio`'s lock is fair).
    reloading: tokio::sync::Mutex<()>,
    /// Where reloads load and check, and where a replaced version is freed once the last
    /// session that opened a conversation with it lets go.
    background: crate::background::Background,
}

impl ServedContent {
    pub fn new(dir: PathBuf, library: ContentVersion) -> ServedContent {
        ServedContent {
            dir,
            current: ArcSwap::from_pointee(library),
            reloading: tokio::sync::Mutex::new(()),
            background: crate::background::Background::start(),
        }
    }

    /// The content folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Waits for this reload's turn: reloads run one at a time, in the order they asked.
    pub async fn reload_turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.reloading.lock().await
    }

    /// The version served now. Cheap: one `Arc` clone, no lock.
    pub fn current(&self) -> Arc<ContentVersion> {
        self.current.load_full()
    }

    /// Loads and checks the folder again as the next version, without serving it.
    pub fn load_next(&self) -> Result<ContentVersion, ContentErrors> {
        ContentVersion::load(&self.dir, self.current().version + 1)
    }

    /// The low-priority thread reloads work on (`crate::background`).
    pub fn background(&self) -> &crate::background::Background {
        &self.background
    }

    /// Serves `next` from now on. Returns its version. The version it replaces is freed on the
    /// background thread once nothing holds it (never by a session's step).
    pub fn publish(&self, next: ContentVersion) -> u64 {
        let version = next.version;
        let replaced = self.current.swap(Arc::new(next));
        self.background.retire(replaced);
        version
    }
}

/// What a content version would strand of what stored players hold: every active or tracked
/// quest, objective in progress and parked conversation it no longer has, one line each with
/// how many players hold it. Empty: nobody is stranded.
pub fn stranded(held: &Held, next: &ContentVersion) -> Vec<String> {
    let content = &next.content;
    let players = |n: u64| {
        if n == 1 {
            "1 player".to_owned()
        } else {
            format!("{n} players")
        }
    };
    let mut lines = Vec::new();
    for (quest, n) in &held.active_quests {
        if content.quest(quest).is_none() {
            lines.push(format!("quest `{quest}` is active for {}", players(*n)));
        }
    }
    for ((quest, objective), n) in &held.objectives {
        let kept = content
            .quest(quest)
            .is_none_or(|q| q.objectives.iter().any(|o| o.id == *objective));
        if !kept {
            lines.push(format!(
                "objective `{objective}` of quest `{quest}` has progress for {}",
                players(*n)
            ));
        }
    }
    for (quest, n) in &held.tracked_quests {
        if content.quest(quest).is_none() {
            lines.push(format!("quest `{quest}` is tracked by {}", players(*n)));
        }
    }
    let mut parked: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    for json in &held.parked {
        let name = serde_json::from_str::<serde_json::Value>(json)
            .ok()
            .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_owned));
        if let Some(name) = name
            && !next.conversations.contains_key(&name)
        {
            *parked.entry(name).or_default() += 1;
        }
    }
    for (name, n) in parked {
        lines.push(format!(
            "conversation `{name}` is parked for a resume by {}",
            players(n)
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ContentVersion {
        ContentVersion::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../content"), 1)
            .expect("the sample content loads")
    }

    #[test]
    fn what_players_hold_and_the_content_keeps_strands_nobody() {
        let held = Held {
            active_quests: vec![("PimsTideTale".into(), 3)],
            objectives: vec![(("PimsTideTale".into(), "HearTheTale".into()), 3)],
            tracked_quests: vec![("PimsTideTale".into(), 1)],
            parked: vec![r#"{"name":"Pim","walk":{}}"#.into()],
        };
        assert_eq!(stranded(&held, &sample()), Vec::<String>::new());
    }

    #[test]
    fn everything_held_and_gone_is_named_once_with_its_players() {
        let held = Held {
            active_quests: vec![("Gone".into(), 2)],
            objectives: vec![
                (("Gone".into(), "Any".into()), 2),
                (("PimsTideTale".into(), "Renamed".into()), 1),
            ],
            tracked_quests: vec![("Gone".into(), 1)],
            parked: vec![
                r#"{"name":"Vanished"}"#.into(),
                r#"{"name":"Vanished"}"#.into(),
                "not json".into(),
            ],
        };
        assert_eq!(
            stranded(&held, &sample()),
            [
                "quest `Gone` is active for 2 players",
                "objective `Renamed` of quest `PimsTideTale` has progress for 1 player",
                "quest `Gone` is tracked by 1 player",
                "conversation `Vanished` is parked for a resume by 2 players",
            ]
        );
    }
}
