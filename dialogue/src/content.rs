//! A game's content folder, loaded and merged: the one place in this crate that reads files.
//!
//! ```text
//! content/
//!   world.json                    islands and the NPC registry
//!   quests.json                   quest definitions
//!   tutorial.json                 the tutorial's stages (optional)
//!   world.generated.json          NPCs written by `gen-content` (optional)
//!   quests.generated.json         quests written by `gen-content` (optional)
//!   dialogue/base/<Name>.json     base conversations (or <Name>.editor.json)
//!   dialogue/side/<Name>.json     side-quest layer over the base conversation <Name>
//!   dialogue/story/<Name>.json    story layer over <Name>
//!   dialogue/lockout/*.json       the tutorial's lockout nodes, added to every conversation
//! ```
//!
//! Loading never stops at the first problem: it returns what it could build together with every
//! diagnostic, and the caller refuses content with errors (`check-content`, server start, hot
//! reload).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::diagnostic::{Diagnostic, Position, Problem};
use crate::graph::DialogueGraph;
use crate::layers::{self, Layer};
use crate::model::{Conversation, ConversationFile};

/// A 3D position in studs.
pub type Vec3 = [f64; 3];

/// One island of the world.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct Island {
    pub id: String,
    pub name: String,
}

/// One NPC instance. Names are not unique (four boat managers share one); ids are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct NpcDef {
    /// The instance id, unique in the world: the client's hint names it.
    pub id: String,
    /// The display name, shared by look-alikes.
    pub name: String,
    pub island: String,
    pub position: Vec3,
    /// Interaction range in studs (the article's 8).
    #[serde(default = "default_range")]
    pub range: f64,
    /// The base conversation this NPC speaks.
    pub conversation: String,
}

fn default_range() -> f64 {
    8.0
}

/// The world file: islands and NPCs.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct World {
    pub islands: Vec<Island>,
    pub npcs: Vec<NpcDef>,
}

/// Side quests or story quests; story quests are checked first by the entry resolver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuestKind {
    Side,
    Story,
}

/// What kind of progress an objective counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectiveKind {
    Catch,
    Find,
    Talk,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct ObjectiveDef {
    pub id: String,
    pub kind: ObjectiveKind,
    #[serde(default = "one")]
    pub target: u32,
    #[serde(default)]
    pub island: Option<String>,
    #[serde(default)]
    pub species: Option<String>,
    #[serde(default)]
    pub rarity: Option<String>,
}

fn one() -> u32 {
    1
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct Rewards {
    #[serde(default)]
    pub coins: u32,
    #[serde(default)]
    pub experience: u32,
}

/// The nodes of the giver's conversation that the quest flow uses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct QuestNodes {
    pub greeting: String,
    pub check: String,
    #[serde(default)]
    pub completion: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct QuestDef {
    pub id: String,
    /// The NPC instance id that gives it.
    pub giver: String,
    pub kind: QuestKind,
    #[serde(default)]
    pub prerequisites: Vec<String>,
    pub objectives: Vec<ObjectiveDef>,
    #[serde(default)]
    pub rewards: Rewards,
    pub nodes: QuestNodes,
    #[serde(default)]
    pub cutscene: Option<String>,
}

impl QuestDef {
    /// The smallest well-formed quest: a side quest given by `npc` with one objective `O` (catch
    /// 3), no rewards, greeting node `G` and check node `C`. For tests and examples of the rules
    /// that read only a quest's id, prerequisites and objectives.
    pub fn minimal(id: &str, prerequisites: &[&str]) -> QuestDef {
        QuestDef {
            id: id.into(),
            giver: "npc".into(),
            kind: QuestKind::Side,
            prerequisites: prerequisites.iter().map(|p| (*p).to_owned()).collect(),
            objectives: vec![ObjectiveDef {
                id: "O".into(),
                kind: ObjectiveKind::Catch,
                target: 3,
                island: None,
                species: None,
                rarity: None,
            }],
            rewards: Rewards::default(),
            nodes: QuestNodes {
                greeting: "G".into(),
                check: "C".into(),
                completion: None,
            },
            cutscene: None,
        }
    }
}

/// Everything loaded from a content folder.
#[derive(Clone, Debug, Default)]
pub struct Content {
    pub root: PathBuf,
    pub world: World,
    pub quests: Vec<QuestDef>,
    /// Merged graphs by conversation name, shared by every session that opens them.
    pub conversations: BTreeMap<String, Arc<DialogueGraph>>,
    /// The merged conversations before the build, kept for checks and export.
    pub merged: BTreeMap<String, Conversation>,
    /// Node names each conversation got from the lockout layer (entry points for the tutorial).
    pub lockout_nodes: BTreeSet<String>,
    /// The tutorial's stages, from `tutorial.json` (absent: no tutorial).
    pub tutorial: Option<crate::tutorial::TutorialDef>,
    /// The source language and the string tables of `locales/`.
    pub locales: crate::locale::Locales,
    /// The bark catalog's lines (`barks/catalog.json`, if any) as (bark id, text): only their
    /// text, for the string tables; the catalog itself is `banter-barks`'s.
    pub bark_lines: Vec<(String, String)>,
    /// `voice/manifest.json`, if the content ships one: every clip's length, by path.
    pub voice: Option<crate::text::VoiceManifest>,
}

impl Content {
    pub fn quest(&self, id: &str) -> Option<&QuestDef> {
        self.quests.iter().find(|q| q.id == id)
    }

    pub fn npc(&self, id: &str) -> Option<&NpcDef> {
        self.world.npcs.iter().find(|n| n.id == id)
    }

    pub fn conversation(&self, name: &str) -> Option<&Arc<DialogueGraph>> {
        self.conversations.get(name)
    }

    /// Loads a content folder. Always returns what could be built, with every diagnostic.
    pub fn load(root: &Path) -> (Content, Vec<Diagnostic>) {
        let mut diagnostics = Vec::new();
        let mut content = Content {
            root: root.to_owned(),
            ..Content::default()
        };
        if let Some(world) = read_json::<World>(&root.join("world.json"), &mut diagnostics) {
            content.world = world;
        }
        if let Some(quests) =
            read_json::<Vec<QuestDef>>(&root.join("quests.json"), &mut diagnostics)
        {
            content.quests = quests;
        }
        content.tutorial = read_json::<crate::tutorial::TutorialDef>(
            &root.join("tutorial.json"),
            &mut diagnostics,
        );
        // What `gen-content` wrote (see `generate`): more NPCs and quests, read after the
        // hand-written files. Both are optional.
        if let Some(world) =
            read_json::<World>(&root.join(crate::generate::WORLD_FILE), &mut diagnostics)
        {
            content.world.islands.extend(world.islands);
            content.world.npcs.extend(world.npcs);
        }
        if let Some(quests) =
            read_json::<Vec<QuestDef>>(&root.join(crate::generate::QUESTS_FILE), &mut diagnostics)
        {
            content.quests.extend(quests);
        }

        let dialogue = root.join("dialogue");
        let mut files: BTreeMap<Layer, BTreeMap<String, ConversationFile>> = BTreeMap::new();
        for layer in Layer::ALL {
            let folder = dialogue.join(layer.folder());
            for path in json_files(&folder, &mut diagnostics) {
                let display = path.display().to_string();
                let Some(bytes) = read_bytes(&path, &mut diagnostics) else {
                    continue;
                };
                if let Some(file) =
                    crate::parse_conversation_file(&display, &bytes, &mut diagnostics)
                {
                    files
                        .entry(layer)
                        .or_default()
                        .insert(conversation_name(&path), file);
                }
            }
        }
        let base = files.remove(&Layer::Base).unwrap_or_default();
        let lockout: Vec<ConversationFile> = files
            .remove(&Layer::Lockout)
            .unwrap_or_default()
            .into_values()
            .collect();
        for file in &lockout {
            content.lockout_nodes.extend(file.nodes.keys().cloned());
            // The lockout layer is applied to every conversation: a FirstNode or Speaker in it
            // would silently take over every NPC.
            for (field, set) in [
                ("FirstNode", file.first_node.is_some()),
                ("Speaker", file.speaker.is_some()),
            ] {
                if set {
                    diagnostics.push(
                        Diagnostic::error(
                            &file.file,
                            Problem::Other(format!(
                                "the lockout layer is added to every conversation; it may not set {field}"
                            )),
                        )
                        .field(field),
                    );
                }
            }
        }
        for layer in [Layer::Side, Layer::Story] {
            for (name, file) in files.get(&layer).into_iter().flatten() {
                if !base.contains_key(name) {
                    diagnostics.push(Diagnostic::error(
                        &file.file,
                        Problem::Other(format!(
                            "a {layer} layer for `{name}`, but there is no base conversation `{name}`"
                        )),
                    ));
                }
            }
        }
        for (name, base_file) in &base {
            let mut stack: Vec<(Layer, &ConversationFile)> = Vec::new();
            for layer in [Layer::Side, Layer::Story] {
                if let Some(file) = files.get(&layer).and_then(|m| m.get(name)) {
                    stack.push((layer, file));
                }
            }
            stack.extend(lockout.iter().map(|f| (Layer::Lockout, f)));
            let merged = layers::merge(name, base_file, &stack, &mut diagnostics);
            if merged.first_node.is_none() {
                diagnostics.push(Diagnostic::error(&base_file.file, Problem::NoFirstNode));
            }
            let graph = DialogueGraph::build(&merged, &mut diagnostics);
            content.conversations.insert(name.clone(), Arc::new(graph));
            content.merged.insert(name.clone(), merged);
        }
        content.locales = load_locales(&root.join(crate::locale::FOLDER), &mut diagnostics);
        content.bark_lines = bark_lines(&root.join(BARK_CATALOG), &mut diagnostics);
        let manifest = root.join(VOICE_MANIFEST);
        if manifest.is_file()
            && let Some(bytes) = read_bytes(&manifest, &mut diagnostics)
        {
            match crate::text::VoiceManifest::parse(&manifest.display().to_string(), &bytes) {
                Ok(voice) => content.voice = Some(voice),
                Err(e) => diagnostics.push(Diagnostic::error(
                    manifest.display().to_string(),
                    Problem::Other(e.to_string()),
                )),
            }
        }
        (content, diagnostics)
    }
}

/// `locales/`: its settings file (optional: the source is `en`, no limits) and one
/// `<tag>.po` string table per locale. A table that cannot be read is an error, so a broken
/// table fails a reload as broken content does.
fn load_locales(folder: &Path, diagnostics: &mut Vec<Diagnostic>) -> crate::locale::Locales {
    use crate::locale::{Locale, Locales, SETTINGS_FILE, table};
    let mut locales = Locales::default();
    let settings = folder.join(SETTINGS_FILE);
    if settings.is_file()
        && let Some(read) = read_json(&settings, diagnostics)
    {
        locales.settings = read;
    }
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(_) => return locales,
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "po"))
        .collect();
    paths.sort();
    for path in paths {
        let display = path.display().to_string();
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let locale = match Locale::parse(&stem) {
            Ok(locale) => locale,
            Err(e) => {
                diagnostics.push(Diagnostic::error(
                    &display,
                    Problem::BadTable(e.to_string()),
                ));
                continue;
            }
        };
        let Some(bytes) = read_bytes(&path, diagnostics) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            diagnostics.push(Diagnostic::error(&display, Problem::NotUtf8));
            continue;
        };
        match table::read(&display, locale.clone(), &text) {
            Ok(table) => {
                locales.tables.insert(locale, table);
            }
            Err(e) => diagnostics.push(Diagnostic::error(
                &display,
                Problem::BadTable(e.to_string()),
            )),
        }
    }
    locales
}

/// Where the voice manifest lives in a content folder.
pub const VOICE_MANIFEST: &str = "voice/manifest.json";

/// Where the bark catalog lives in a content folder.
pub const BARK_CATALOG: &str = "barks/catalog.json";

/// The text of every bark line, played or unplaced (`banter-barks` checks the rest of the
/// catalog). No catalog: none.
fn bark_lines(path: &Path, diagnostics: &mut Vec<Diagnostic>) -> Vec<(String, String)> {
    #[derive(Deserialize)]
    struct Catalog {
        #[serde(default)]
        lines: Vec<BarkText>,
        #[serde(default)]
        unplaced: Vec<BarkText>,
    }
    #[derive(Deserialize)]
    struct BarkText {
        id: String,
        text: String,
    }
    if !path.is_file() {
        return Vec::new();
    }
    read_json::<Catalog>(path, diagnostics)
        .map(|c| {
            c.lines
                .into_iter()
                .chain(c.unplaced)
                .map(|l| (l.id, l.text))
                .collect()
        })
        .unwrap_or_default()
}

/// `Harbour.editor.json` and `Harbour.json` both name the conversation `Harbour`.
fn conversation_name(path: &Path) -> String {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    file.strip_suffix(crate::editor::SUFFIX)
        .or_else(|| file.strip_suffix(".json"))
        .unwrap_or(&file)
        .to_owned()
}

/// The `.json` files of a folder, sorted; a missing folder is simply empty.
fn json_files(folder: &Path, diagnostics: &mut Vec<Diagnostic>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            diagnostics.push(Diagnostic::error(
                folder.display().to_string(),
                Problem::Unreadable(e.to_string()),
            ));
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    files.sort();
    files
}

fn read_bytes(path: &Path, diagnostics: &mut Vec<Diagnostic>) -> Option<Vec<u8>> {
    let display = path.display().to_string();
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() > crate::json::MAX_FILE_BYTES => {
            diagnostics.push(Diagnostic::error(
                display,
                Problem::TooLarge {
                    size: meta.len(),
                    limit: crate::json::MAX_FILE_BYTES,
                },
            ));
            return None;
        }
        Ok(_) => {}
        Err(e) => {
            diagnostics.push(Diagnostic::error(
                display,
                Problem::Unreadable(e.to_string()),
            ));
            return None;
        }
    }
    match std::fs::read(path) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            diagnostics.push(Diagnostic::error(
                display,
                Problem::Unreadable(e.to_string()),
            ));
            None
        }
    }
}

/// Reads a typed JSON file (world, quests); a missing file is an empty default with no error.
fn read_json<T: for<'de> Deserialize<'de>>(
    path: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<T> {
    if !path.exists() {
        return None;
    }
    let bytes = read_bytes(path, diagnostics)?;
    let display = path.display().to_string();
    // Parse strictly first, so duplicate keys and syntax errors are located.
    if let Err(d) = crate::json::parse_bytes(&display, &bytes) {
        diagnostics.push(*d);
        return None;
    }
    match serde_json::from_slice::<T>(&bytes) {
        Ok(value) => Some(value),
        Err(e) => {
            let message = e.to_string();
            let message = message
                .rsplit_once(" at line ")
                .map_or(message.as_str(), |(m, _)| m)
                .to_owned();
            diagnostics.push(
                Diagnostic::error(display, Problem::Other(message)).at(Position {
                    line: e.line(),
                    column: e.column(),
                }),
            );
            None
        }
    }
}
