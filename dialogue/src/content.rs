//! A game's content folder, loaded and merged: the one place in this crate that reads files.
//!
//! ```text
//! content/
//!   world.json                    islands and the NPC registry (required)
//!   quests.json                   quest definitions (required; `[]` if every quest is generated)
//!   tutorial.json                 the tutorial's stages (optional)
//!   world.generated/<npc>.json    one NPC each, written by `gen-content` (optional)
//!   quests.generated/<npc>.json   that NPC's quests, written by `gen-content` (optional)
//!   world.generated.json          the generator's older single files, still read (optional)
//!   quests.generated.json
//!   dialogue/base/<Name>.json     base conversations (or <Name>.editor.json)
//!   dialogue/side/<Name>.json     side-quest layer over the base conversation <Name>
//!   dialogue/story/<Name>.json    story layer over <Name>
//!   dialogue/lockout/*.json       the tutorial's lockout nodes, added to every conversation
//! ```
//!
//! Loading never stops at the first problem: it returns what it could build together with every
//! diagnostic, and the caller refuses content with errors (`check-content`, server start, hot
//! reload). Every island, NPC and quest keeps where it was read ([`Origins`]), so a check names
//! the file and the index a writer edits, generated or hand-written. A required file that is
//! missing or broken is one diagnostic and a mark in [`Content::unloaded`], so the checks leave
//! out what would only repeat its absence (every NPC "on an unknown island").
//!
//! Everything here is linear in the size of the folder: each file is read once, the generated
//! shards are one small file per NPC (none nears [`MAX_FILE_BYTES`](crate::json::MAX_FILE_BYTES)
//! at any size), and merging touches each node once.

use std::collections::{BTreeMap, BTreeSet, HashMap};
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

/// The hand-written world file, relative to the content folder.
pub const WORLD_FILE: &str = "world.json";
/// The hand-written quest file, relative to the content folder.
pub const QUESTS_FILE: &str = "quests.json";
/// The tutorial's file, relative to the content folder.
pub const TUTORIAL_FILE: &str = "tutorial.json";

/// Where one island, NPC or quest was read: its file and its 1-based place in that file's list
/// (`Npcs[3]` of `world.json`, `[2]` of `quests.generated/hattie.json`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub file: Arc<str>,
    pub index: usize,
}

/// [`Origin`]s parallel to `world.islands`, `world.npcs` and `quests`. Content built in memory
/// may leave them empty; [`Origins::npc`] and the others then name the hand-written file and
/// the entry's place in the merged list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Origins {
    pub islands: Vec<Origin>,
    pub npcs: Vec<Origin>,
    pub quests: Vec<Origin>,
}

impl Origins {
    /// The file and field path (`Islands[i]`) of island `i` of the merged world.
    pub fn island(&self, root: &Path, i: usize) -> (String, String) {
        let (file, k) = pick(&self.islands, root, WORLD_FILE, i);
        (file, format!("Islands[{k}]"))
    }

    /// The file and field path (`Npcs[i]`) of NPC `i` of the merged world.
    pub fn npc(&self, root: &Path, i: usize) -> (String, String) {
        let (file, k) = pick(&self.npcs, root, WORLD_FILE, i);
        (file, format!("Npcs[{k}]"))
    }

    /// The file and field path (`[i]`) of quest `i` of the merged quest list.
    pub fn quest(&self, root: &Path, i: usize) -> (String, String) {
        let (file, k) = pick(&self.quests, root, QUESTS_FILE, i);
        (file, format!("[{k}]"))
    }
}

fn pick(origins: &[Origin], root: &Path, fallback: &str, i: usize) -> (String, usize) {
    match origins.get(i) {
        Some(o) => (o.file.to_string(), o.index),
        None => (root.join(fallback).display().to_string(), i + 1),
    }
}

/// The required files that are missing or could not be read or parsed. Their diagnostics say
/// so; the checks skip what would only be a consequence (an island "unknown" because the file
/// declaring it did not load).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unloaded {
    /// `world.json`: the islands and the hand-written NPCs.
    pub world: bool,
    /// `quests.json`: the hand-written quests.
    pub quests: bool,
}

/// Everything loaded from a content folder.
#[derive(Clone, Debug, Default)]
pub struct Content {
    pub root: PathBuf,
    pub world: World,
    pub quests: Vec<QuestDef>,
    /// Where each island, NPC and quest was read.
    pub origins: Origins,
    /// Required files that did not load.
    pub unloaded: Unloaded,
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
    /// Quests and NPCs by id and quests by giver, kept by the loader (see [`Ids`]).
    pub ids: Ids,
    /// The story and derived variables, from `variables.json` (absent: none).
    pub variables: crate::variables::Variables,
}

/// Where each quest and NPC sits by id (the first of an id, as a scan finds it) and each giver's
/// quests in order, so [`Content::quest`], [`Content::npc`] and [`Content::quests_of`] answer
/// without reading every quest or NPC: the server asks once per quest for each `talk`'s fact
/// sheet, and a studio's world holds tens of thousands. The loader keeps it. It is used only
/// while it covers as many quests (NPCs) as the content holds, so content built by hand or whose
/// lists grew or shrank since is scanned as before; code that renames quests or NPCs of loaded
/// content in place, or changes a quest's giver, calls [`Content::reindex`].
#[derive(Clone, Debug, Default)]
pub struct Ids {
    quests: HashMap<String, usize>,
    givers: HashMap<String, Vec<usize>>,
    /// Each quest's dependents: the quests that name it among their prerequisites.
    dependents: HashMap<String, Vec<usize>>,
    npcs: HashMap<String, usize>,
    /// How many quests and NPCs the maps cover.
    quests_len: usize,
    npcs_len: usize,
}

impl Ids {
    /// Adds the quests from position `from` on (the maps cover those before it).
    fn add_quests(&mut self, quests: &[QuestDef], from: usize) {
        if self.quests_len != from {
            return;
        }
        for (i, quest) in quests.iter().enumerate().skip(from) {
            self.quests.entry(quest.id.clone()).or_insert(i);
            self.givers.entry(quest.giver.clone()).or_default().push(i);
            for prerequisite in &quest.prerequisites {
                self.dependents
                    .entry(prerequisite.clone())
                    .or_default()
                    .push(i);
            }
        }
        self.quests_len = quests.len();
    }

    /// Adds the NPCs from position `from` on (the map covers those before it).
    fn add_npcs(&mut self, npcs: &[NpcDef], from: usize) {
        if self.npcs_len != from {
            return;
        }
        for (i, npc) in npcs.iter().enumerate().skip(from) {
            self.npcs.entry(npc.id.clone()).or_insert(i);
        }
        self.npcs_len = npcs.len();
    }
}

impl Content {
    /// Appends a world file's islands and NPCs, remembering where each was read.
    fn add_world(&mut self, path: &Path, world: World) {
        let file: Arc<str> = path.display().to_string().into();
        let at = |i: usize| Origin {
            file: file.clone(),
            index: i + 1,
        };
        self.origins
            .islands
            .extend((0..world.islands.len()).map(at));
        self.origins.npcs.extend((0..world.npcs.len()).map(at));
        self.world.islands.extend(world.islands);
        let from = self.world.npcs.len();
        self.world.npcs.extend(world.npcs);
        self.ids.add_npcs(&self.world.npcs, from);
    }

    /// Appends a quest file's quests, remembering where each was read.
    fn add_quests(&mut self, path: &Path, quests: Vec<QuestDef>) {
        let file: Arc<str> = path.display().to_string().into();
        self.origins
            .quests
            .extend((0..quests.len()).map(|i| Origin {
                file: file.clone(),
                index: i + 1,
            }));
        let from = self.quests.len();
        self.quests.extend(quests);
        self.ids.add_quests(&self.quests, from);
    }

    /// Builds [`Content::ids`] again from the quests and NPCs as they are now.
    pub fn reindex(&mut self) {
        self.ids = Ids::default();
        self.ids.add_quests(&self.quests, 0);
        self.ids.add_npcs(&self.world.npcs, 0);
    }

    /// The quest with this id (the first, should two share it).
    pub fn quest(&self, id: &str) -> Option<&QuestDef> {
        self.quests.get(self.quest_index(id)?)
    }

    /// Where the quest with this id sits in [`Content::quests`] (the first, should two share it):
    /// content order, for code that walks a player's few quests instead of the world's.
    pub fn quest_index(&self, id: &str) -> Option<usize> {
        if self.ids.quests_len == self.quests.len() {
            match self.ids.quests.get(id) {
                None => return None,
                Some(&at) if self.quests.get(at).is_some_and(|q| q.id == id) => return Some(at),
                Some(_) => {}
            }
        }
        self.quests.iter().position(|q| q.id == id)
    }

    /// The NPC instance with this id (the first, should two share it).
    pub fn npc(&self, id: &str) -> Option<&NpcDef> {
        let npcs = &self.world.npcs;
        let scan = || npcs.iter().find(|n| n.id == id);
        if self.ids.npcs_len != npcs.len() {
            return scan();
        }
        let at = *self.ids.npcs.get(id)?;
        npcs.get(at).filter(|n| n.id == id).or_else(scan)
    }

    /// The quests `giver` gives, in the order of the quest list.
    pub fn quests_of(&self, giver: &str) -> Vec<&QuestDef> {
        if self.ids.quests_len != self.quests.len() {
            return self.quests.iter().filter(|q| q.giver == giver).collect();
        }
        self.ids
            .givers
            .get(giver)
            .into_iter()
            .flatten()
            .filter_map(|&at| self.quests.get(at))
            .filter(|q| q.giver == giver)
            .collect()
    }

    /// Where the quests that name `quest` among their prerequisites sit in [`Content::quests`],
    /// in order: what a completion (or an abandon) of `quest` can make available (or not).
    pub fn dependents_of(&self, quest: &str) -> Vec<usize> {
        if self.ids.quests_len != self.quests.len() {
            return (self.quests.iter().enumerate())
                .filter(|(_, q)| q.prerequisites.iter().any(|p| p == quest))
                .map(|(i, _)| i)
                .collect();
        }
        self.ids
            .dependents
            .get(quest)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&i| {
                self.quests
                    .get(i)
                    .is_some_and(|q| q.prerequisites.iter().any(|p| p == quest))
            })
            .collect()
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
        let world_path = root.join(WORLD_FILE);
        match read_required::<World>(
            &world_path,
            "every content folder has one: it declares the islands (and the hand-written NPCs)",
            &mut diagnostics,
        ) {
            Some(world) => content.add_world(&world_path, world),
            None => content.unloaded.world = true,
        }
        let quests_path = root.join(QUESTS_FILE);
        match read_required::<Vec<QuestDef>>(
            &quests_path,
            "every content folder has one, `[]` when every quest is generated",
            &mut diagnostics,
        ) {
            Some(quests) => content.add_quests(&quests_path, quests),
            None => content.unloaded.quests = true,
        }
        content.tutorial =
            read_json::<crate::tutorial::TutorialDef>(&root.join(TUTORIAL_FILE), &mut diagnostics);
        // What `gen-content` wrote (see `generate`): more NPCs and quests, read after the
        // hand-written files, one shard per NPC; the single files of older generators too.
        for (path, world) in read_generated::<World>(
            root,
            crate::generate::LEGACY_WORLD_FILE,
            crate::generate::WORLD_DIR,
            &mut diagnostics,
        ) {
            content.add_world(&path, world);
        }
        for (path, quests) in read_generated::<Vec<QuestDef>>(
            root,
            crate::generate::LEGACY_QUESTS_FILE,
            crate::generate::QUESTS_DIR,
            &mut diagnostics,
        ) {
            content.add_quests(&path, quests);
        }

        // `variables.json` (optional): read here, the one file reader, parsed by `variables.rs`.
        let variables = root.join(crate::variables::VARIABLES_FILE);
        if variables.is_file()
            && let Some(bytes) = read_bytes(&variables, &mut diagnostics)
        {
            content.variables = crate::variables::Variables::parse(
                &variables.display().to_string(),
                &bytes,
                &mut diagnostics,
            );
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
        // By value: each parsed base file is dropped once merged, so the parsed files and the
        // merged conversations are not all held at once.
        for (name, base_file) in base {
            let mut stack: Vec<(Layer, &ConversationFile)> = Vec::new();
            for layer in [Layer::Side, Layer::Story] {
                if let Some(file) = files.get(&layer).and_then(|m| m.get(&name)) {
                    stack.push((layer, file));
                }
            }
            stack.extend(lockout.iter().map(|f| (Layer::Lockout, f)));
            let mut merged = layers::merge(&name, &base_file, &stack, &mut diagnostics);
            // Derived variables are written into the conditions before the build, so the
            // graph and the `opened.content` a client walks read the same text.
            content.variables.inline_into(&mut merged);
            if merged.first_node.is_none() {
                diagnostics.push(Diagnostic::error(&base_file.file, Problem::NoFirstNode));
            }
            let graph = DialogueGraph::build(&merged, &mut diagnostics);
            content.conversations.insert(name.clone(), Arc::new(graph));
            content.merged.insert(name, merged);
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
/// table fails a reload as broken content does. Public: a client that plays barks in a locale
/// (`banter-sim barks --locale`) reads the tables without the rest of the content.
pub fn load_locales(folder: &Path, diagnostics: &mut Vec<Diagnostic>) -> crate::locale::Locales {
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
        .filter(|e| {
            // The entry's own type needs no second system call; a link is followed.
            e.file_type()
                .is_ok_and(|t| t.is_file() || (t.is_symlink() && e.path().is_file()))
        })
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// Reads a file whole, refusing one over [`MAX_FILE_BYTES`](crate::json::MAX_FILE_BYTES) before
/// reading it. One open, one size query and one read.
fn read_bytes(path: &Path, diagnostics: &mut Vec<Diagnostic>) -> Option<Vec<u8>> {
    use std::io::Read;
    let unreadable = |e: std::io::Error| {
        Diagnostic::error(
            path.display().to_string(),
            Problem::Unreadable(e.to_string()),
        )
    };
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) => {
            diagnostics.push(unreadable(e));
            return None;
        }
    };
    let size = match file.metadata() {
        Ok(meta) => meta.len(),
        Err(e) => {
            diagnostics.push(unreadable(e));
            return None;
        }
    };
    if size > crate::json::MAX_FILE_BYTES {
        diagnostics.push(Diagnostic::error(
            path.display().to_string(),
            Problem::TooLarge {
                size,
                limit: crate::json::MAX_FILE_BYTES,
            },
        ));
        return None;
    }
    // The limit again while reading: a file that grows after the size query stays bounded.
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    match (&mut file)
        .take(crate::json::MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
    {
        Ok(_) if bytes.len() as u64 > crate::json::MAX_FILE_BYTES => {
            diagnostics.push(Diagnostic::error(
                path.display().to_string(),
                Problem::TooLarge {
                    size: bytes.len() as u64,
                    limit: crate::json::MAX_FILE_BYTES,
                },
            ));
            None
        }
        Ok(_) => Some(bytes),
        Err(e) => {
            diagnostics.push(unreadable(e));
            None
        }
    }
}

/// Reads a file every content folder needs: missing, it is one [`Problem::MissingFile`] saying
/// `why` it is needed. `None` when it is missing or broken (with its diagnostic).
fn read_required<T: for<'de> Deserialize<'de>>(
    path: &Path,
    why: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<T> {
    if !path.exists() {
        diagnostics.push(Diagnostic::error(
            path.display().to_string(),
            Problem::MissingFile(why.to_owned()),
        ));
        return None;
    }
    read_json(path, diagnostics)
}

/// What `gen-content` wrote of one kind: the shards of `dir` (one file per NPC), sorted, or the
/// single `legacy` file an older generator wrote. Both at once would define every generated
/// entry twice: that is one error on the old file, which is then not read.
fn read_generated<T: for<'de> Deserialize<'de>>(
    root: &Path,
    legacy: &str,
    dir: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<(PathBuf, T)> {
    let mut out = Vec::new();
    let shards = json_files(&root.join(dir), diagnostics);
    let legacy_path = root.join(legacy);
    if legacy_path.exists() {
        if shards.is_empty() {
            if let Some(value) = read_json(&legacy_path, diagnostics) {
                out.push((legacy_path, value));
            }
        } else {
            diagnostics.push(Diagnostic::error(
                legacy_path.display().to_string(),
                Problem::Other(format!(
                    "an older gen-content's single file beside the shards in {dir}/, which hold \
                     the same entries; run gen-content again (it removes this file) or delete it"
                )),
            ));
        }
    }
    for path in shards {
        if let Some(value) = read_json(&path, diagnostics) {
            out.push((path, value));
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    fn quest(id: &str, giver: &str) -> QuestDef {
        QuestDef {
            giver: giver.into(),
            ..QuestDef::minimal(id, &[])
        }
    }

    fn npc(id: &str) -> NpcDef {
        NpcDef {
            id: id.into(),
            name: id.into(),
            island: "isle".into(),
            position: Vec3::default(),
            range: 8.0,
            conversation: "C".into(),
        }
    }

    fn ids<'c>(quests: impl IntoIterator<Item = &'c QuestDef>) -> Vec<&'c str> {
        quests.into_iter().map(|q| q.id.as_str()).collect()
    }

    #[test]
    fn lookups_by_id_answer_as_a_scan_does_indexed_or_not() {
        let mut content = Content::default();
        let a = Path::new("a.json");
        content.add_quests(a, vec![quest("A", "x"), quest("B", "y"), quest("A", "y")]);
        content.add_quests(Path::new("b.json"), vec![quest("C", "x")]);
        let world = World {
            islands: Vec::new(),
            npcs: vec![npc("x"), npc("y"), npc("x")],
        };
        content.add_world(Path::new("w.json"), world);
        let by_hand = Content {
            quests: content.quests.clone(),
            world: content.world.clone(),
            ..Content::default()
        };
        for c in [&content, &by_hand] {
            assert_eq!(
                c.quest("A").map(|q| q.giver.as_str()),
                Some("x"),
                "the first"
            );
            assert_eq!(c.quest("C").map(|q| q.giver.as_str()), Some("x"));
            assert!(c.quest("Z").is_none());
            assert_eq!(ids(c.quests_of("y")), ["B", "A"]);
            assert_eq!(ids(c.quests_of("x")), ["A", "C"]);
            assert!(c.quests_of("nobody").is_empty());
            assert!(std::ptr::eq(c.npc("x").expect("x"), &c.world.npcs[0]));
            assert!(c.npc("z").is_none());
        }
        // Lists changed by hand are scanned: a quest added, an NPC removed.
        content.quests.push(quest("D", "x"));
        assert_eq!(ids(content.quests_of("x")), ["A", "C", "D"]);
        assert!(content.quest("D").is_some());
        content.world.npcs.truncate(1);
        assert!(content.npc("y").is_none());
        // Renamed in place: `reindex` catches up.
        content.quests[1].id = "E".into();
        content.reindex();
        assert!(content.quest("B").is_none());
        assert_eq!(ids(content.quests_of("y")), ["E", "A"]);
    }
}
