//! The content generator (article section 8): per-NPC quest transcriptions in, the NPC's base
//! conversation, its quest definitions and its world entry out.
//!
//! Pure: [`generate`] takes the transcription files' names and bytes and returns every output
//! file as text, keyed by its path relative to the content folder. The same input always gives
//! byte-identical output (sorted, fixed field order, two-space indentation, trailing newline).
//!
//! Per NPC it writes three files, so no file grows with the number of NPCs and each stays far
//! below the loader's per-file limit at any size: `dialogue/base/<Conversation>.json`,
//! `world.generated/<npc id>.json` (a world file listing that NPC alone) and, if it gives quests,
//! `quests.generated/<npc id>.json` (its quests, sorted by id). NPC ids and conversation names
//! that differ only in case are refused: they would be one file on a case-insensitive disk.
//!
//! Two quest shapes:
//!
//! - **work** (`catch`/`find` objectives): `<Q>_Greet` offers (accept with AcceptQuest →
//!   `<Q>_Accepted`, or decline → `<Q>_Declined`); `<Q>_Check` checks with CheckQuest, success
//!   `<Q>_Complete` (CompleteQuest), failure `<Q>_NotYet` (the reminder; the next talk opens on
//!   the check node again).
//! - **talk** (one `talk` objective, the conversation itself): the accept response carries
//!   AcceptQuest and leads to `<Q>_Accepted`, then the intermediate line `<Q>_Telling` advances
//!   the objective, then `<Q>_Complete` pays. The client sends a response's actions only once the
//!   player advances past the reply, so the intermediate line is what keeps the completion from
//!   arriving before the acceptance. `<Q>_Check` (an interrupted telling) resumes at `<Q>_Telling`.
//!
//! Every generated conversation also has `<Conversation>_Hello` (its `FirstNode`),
//! `<Conversation>_Bye` and `AllDone`.
//!
//! Why one file over 600 lines: validation and output are the two halves of one pure function;
//! the transcription schema (`Transcribed*`) and the output schema (`*Out`) must change together,
//! and side by side a reviewer sees both.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::content::{NpcDef, ObjectiveDef, ObjectiveKind, QuestKind, Rewards, Vec3};

/// The folder of generated NPC entries, relative to the content folder: one shard per NPC,
/// `world.generated/<npc id>.json`, a world file with that NPC alone.
pub const WORLD_DIR: &str = "world.generated";
/// The folder of generated quest definitions, relative to the content folder: one shard per NPC
/// that gives quests, `quests.generated/<npc id>.json`, its quests sorted by id.
pub const QUESTS_DIR: &str = "quests.generated";
/// The single file older generators wrote every NPC into; still read when the shard folder is
/// absent, and removed by `gen-content` when it writes the shards.
pub const LEGACY_WORLD_FILE: &str = "world.generated.json";
/// The single file older generators wrote every quest into (see [`LEGACY_WORLD_FILE`]).
pub const LEGACY_QUESTS_FILE: &str = "quests.generated.json";
/// The folder of generated base conversations, relative to the content folder.
pub const BASE_DIR: &str = "dialogue/base";

/// One transcription file: one NPC and its quests.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct Transcription {
    pub npc: TranscribedNpc,
    /// The base conversation to write (`dialogue/base/<Conversation>.json`).
    pub conversation: String,
    pub lines: NpcLines,
    #[serde(default)]
    pub quests: Vec<TranscribedQuest>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct TranscribedNpc {
    pub id: String,
    pub name: String,
    pub island: String,
    pub position: Vec3,
    #[serde(default)]
    pub range: Option<f64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct NpcLines {
    pub greeting: String,
    pub goodbye: String,
    /// The player's line that ends the greeting.
    #[serde(default)]
    pub goodbye_reply: Option<String>,
    pub all_done: String,
}

/// The two node shapes of section 8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    /// Offer, accept, check, complete.
    Work,
    /// The conversation is the quest: accepting satisfies its only objective.
    Talk,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct TranscribedQuest {
    pub id: String,
    pub kind: QuestKind,
    pub shape: Shape,
    #[serde(default)]
    pub prerequisites: Vec<String>,
    pub objectives: Vec<ObjectiveDef>,
    #[serde(default)]
    pub rewards: Rewards,
    /// The player's line on the greeting that leads to this quest's offer.
    pub ask: String,
    pub lines: QuestLines,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct QuestLines {
    /// The NPC's offer (`<Q>_Greet`).
    pub offer: String,
    /// The player's accepting response.
    #[serde(default)]
    pub accept_reply: Option<String>,
    /// The NPC's answer to the acceptance (`<Q>_Accepted`).
    pub accept: String,
    #[serde(default)]
    pub decline_reply: Option<String>,
    /// The NPC's answer to a refusal (`<Q>_Declined`).
    pub decline: String,
    /// Work: the NPC asking how it went (`<Q>_Check`).
    #[serde(default)]
    pub check: Option<String>,
    /// Work: the player's line that hands the work in.
    #[serde(default)]
    pub check_reply: Option<String>,
    /// Work: the failure line (`<Q>_NotYet`). Talk: the resumption line (`<Q>_Check`).
    pub reminder: String,
    /// Talk: the line between accepting and completing (`<Q>_Telling`).
    #[serde(default)]
    pub intermediate: Option<String>,
    /// The NPC's thanks as the reward is paid (`<Q>_Complete`).
    pub completion: String,
}

const DEFAULT_ACCEPT_REPLY: &str = "I'll do it.";
const DEFAULT_DECLINE_REPLY: &str = "Not right now.";
const DEFAULT_CHECK_REPLY: &str = "Here's how it went.";
const DEFAULT_GOODBYE_REPLY: &str = "Just passing by.";
const NOT_YET_REPLY: &str = "Still working on it.";

/// A problem with one transcription, naming the file and the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenError {
    pub file: String,
    pub field: Option<String>,
    pub message: String,
}

impl GenError {
    fn new(file: &str, field: Option<String>, message: impl Into<String>) -> GenError {
        GenError {
            file: file.to_owned(),
            field,
            message: message.into(),
        }
    }
}

impl fmt::Display for GenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{}: {}: {}", self.file, field, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// Every output file, by path relative to the content folder (`/`-separated), with its text.
pub type Generated = BTreeMap<String, String>;

/// Parses and validates every transcription, then generates. All problems are reported, none
/// stops the others; any problem means nothing is generated.
pub fn generate(files: &[(String, Vec<u8>)]) -> Result<Generated, Vec<GenError>> {
    let mut errors = Vec::new();
    let mut parsed: Vec<(String, Transcription)> = Vec::new();
    for (file, bytes) in files {
        match serde_json::from_slice::<Transcription>(bytes) {
            Ok(t) => {
                validate(file, &t, &mut errors);
                parsed.push((file.clone(), t));
            }
            Err(e) => errors.push(GenError::new(
                file,
                None,
                format!("not a transcription: {e}"),
            )),
        }
    }
    check_unique(&parsed, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    parsed.sort_by(|a, b| a.1.npc.id.cmp(&b.1.npc.id));
    Ok(write_all(&parsed))
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

fn validate(file: &str, t: &Transcription, errors: &mut Vec<GenError>) {
    let mut err =
        |field: String, message: String| errors.push(GenError::new(file, Some(field), message));
    let need_name = |field: String, value: &str, err: &mut dyn FnMut(String, String)| {
        if !is_name(value) {
            err(
                field,
                format!("`{value}` is not a name ([A-Za-z_][A-Za-z0-9_.]*)"),
            );
        }
    };
    need_name("Npc.Id".into(), &t.npc.id, &mut err);
    need_name("Npc.Island".into(), &t.npc.island, &mut err);
    need_name("Conversation".into(), &t.conversation, &mut err);
    if t.conversation.contains('.') {
        err(
            "Conversation".into(),
            "a conversation name may not contain `.` (it names a file)".into(),
        );
    }
    let need_text = |field: String, value: &str, err: &mut dyn FnMut(String, String)| {
        if value.trim().is_empty() {
            err(field, "must not be empty".into());
        }
    };
    need_text("Npc.Name".into(), &t.npc.name, &mut err);
    need_text("Lines.Greeting".into(), &t.lines.greeting, &mut err);
    need_text("Lines.Goodbye".into(), &t.lines.goodbye, &mut err);
    need_text("Lines.AllDone".into(), &t.lines.all_done, &mut err);
    if let Some(reply) = &t.lines.goodbye_reply {
        need_text("Lines.GoodbyeReply".into(), reply, &mut err);
    }
    if !t.npc.position.iter().all(|c| c.is_finite()) {
        err(
            "Npc.Position".into(),
            "every coordinate must be a finite number".into(),
        );
    }
    if let Some(range) = t.npc.range
        && !(range.is_finite() && range > 0.0)
    {
        err("Npc.Range".into(), "must be a positive number".into());
    }
    let mut seen = BTreeSet::new();
    for (i, q) in t.quests.iter().enumerate() {
        let at = |field: &str| format!("Quests[{i}].{field}");
        need_name(at("Id"), &q.id, &mut err);
        if !seen.insert(q.id.as_str()) {
            err(at("Id"), format!("quest `{}` is transcribed twice", q.id));
        }
        for (j, p) in q.prerequisites.iter().enumerate() {
            need_name(at(&format!("Prerequisites[{j}]")), p, &mut err);
            if *p == q.id {
                err(
                    at(&format!("Prerequisites[{j}]")),
                    "a quest cannot require itself".into(),
                );
            }
        }
        need_text(at("Ask"), &q.ask, &mut err);
        let l = &q.lines;
        for (field, value) in [
            ("Lines.Offer", Some(&l.offer)),
            ("Lines.Accept", Some(&l.accept)),
            ("Lines.Decline", Some(&l.decline)),
            ("Lines.Reminder", Some(&l.reminder)),
            ("Lines.Completion", Some(&l.completion)),
            ("Lines.AcceptReply", l.accept_reply.as_ref()),
            ("Lines.DeclineReply", l.decline_reply.as_ref()),
            ("Lines.CheckReply", l.check_reply.as_ref()),
            ("Lines.Check", l.check.as_ref()),
            ("Lines.Intermediate", l.intermediate.as_ref()),
        ] {
            if let Some(value) = value {
                need_text(at(field), value, &mut err);
            }
        }
        if q.objectives.is_empty() {
            err(
                at("Objectives"),
                "a quest needs at least one objective".into(),
            );
        }
        let mut objective_ids = BTreeSet::new();
        for (j, o) in q.objectives.iter().enumerate() {
            let field = at(&format!("Objectives[{j}]"));
            need_name(format!("{field}.Id"), &o.id, &mut err);
            if !objective_ids.insert(o.id.as_str()) {
                err(
                    format!("{field}.Id"),
                    format!("objective `{}` appears twice", o.id),
                );
            }
            if o.target == 0 {
                err(format!("{field}.Target"), "must be at least 1".into());
            }
            if let Some(island) = &o.island {
                need_name(format!("{field}.Island"), island, &mut err);
            }
        }
        match q.shape {
            Shape::Work => {
                if l.check.is_none() {
                    err(at("Lines.Check"), "a work quest needs a check line".into());
                }
                if l.intermediate.is_some() {
                    err(
                        at("Lines.Intermediate"),
                        "only a talk quest has an intermediate line".into(),
                    );
                }
                if let Some(j) = q
                    .objectives
                    .iter()
                    .position(|o| o.kind == ObjectiveKind::Talk)
                {
                    err(
                        at(&format!("Objectives[{j}].Kind")),
                        "a work quest's objectives are caught or found; a talk objective needs the talk shape".into(),
                    );
                }
            }
            Shape::Talk => {
                if l.intermediate.is_none() {
                    err(
                        at("Lines.Intermediate"),
                        "a talk quest needs the line between accepting and completing".into(),
                    );
                }
                for (field, set) in [
                    ("Lines.Check", l.check.is_some()),
                    ("Lines.CheckReply", l.check_reply.is_some()),
                ] {
                    if set {
                        err(
                            at(field),
                            "a talk quest is not checked; use Reminder for the resumption line"
                                .into(),
                        );
                    }
                }
                let talk_only = q.objectives.len() == 1
                    && q.objectives[0].kind == ObjectiveKind::Talk
                    && q.objectives[0].target == 1;
                if !talk_only {
                    err(
                        at("Objectives"),
                        "a talk quest has exactly one talk objective with target 1".into(),
                    );
                }
            }
        }
    }
}

fn check_unique(parsed: &[(String, Transcription)], errors: &mut Vec<GenError>) {
    // Keyed in lower case: `Hattie` and `hattie` name one file on a case-insensitive disk.
    let mut npcs: BTreeMap<String, (&str, &str)> = BTreeMap::new();
    let mut conversations: BTreeMap<String, (&str, &str)> = BTreeMap::new();
    let mut quests: BTreeMap<&str, &str> = BTreeMap::new();
    for (file, t) in parsed {
        if let Some((other_id, other)) = npcs.insert(t.npc.id.to_lowercase(), (&t.npc.id, file)) {
            let message = if other_id == t.npc.id {
                format!("NPC `{}` is also transcribed in {other}", t.npc.id)
            } else {
                format!(
                    "NPC `{}` differs from `{other_id}` in {other} only in case: their files \
                     ({WORLD_DIR}/{}.json) would be one on a case-insensitive disk",
                    t.npc.id, t.npc.id
                )
            };
            errors.push(GenError::new(file, Some("Npc.Id".into()), message));
        }
        if let Some((other_name, other)) =
            conversations.insert(t.conversation.to_lowercase(), (&t.conversation, file))
        {
            let message = if other_name == t.conversation {
                format!(
                    "conversation `{}` is also generated from {other}",
                    t.conversation
                )
            } else {
                format!(
                    "conversation `{}` differs from `{other_name}` in {other} only in case: \
                     their files ({BASE_DIR}/{}.json) would be one on a case-insensitive disk",
                    t.conversation, t.conversation
                )
            };
            errors.push(GenError::new(file, Some("Conversation".into()), message));
        }
        for (i, q) in t.quests.iter().enumerate() {
            if let Some(other) = quests.insert(&q.id, file)
                && other != file
            {
                errors.push(GenError::new(
                    file,
                    Some(format!("Quests[{i}].Id")),
                    format!("quest `{}` is also transcribed in {other}", q.id),
                ));
            }
        }
    }
}

// ---- output ----

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct ActionOut<'a> {
    #[serde(rename = "Type")]
    kind: &'static str,
    quest_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    success_node: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure_node: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    objective_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    amount: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    island: Option<&'a str>,
}

impl<'a> ActionOut<'a> {
    fn quest(kind: &'static str, quest_id: &'a str) -> ActionOut<'a> {
        ActionOut {
            kind,
            quest_id,
            success_node: None,
            failure_node: None,
            objective_id: None,
            amount: None,
            island: None,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct ResponseOut<'a> {
    #[serde(rename = "LineId", skip_serializing_if = "Option::is_none")]
    line_id: Option<String>,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    conditions: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    actions: Vec<ActionOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_node: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct NodeOut<'a> {
    #[serde(rename = "LineId", skip_serializing_if = "Option::is_none")]
    line_id: Option<String>,
    text: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    actions: Vec<ActionOut<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    responses: Vec<ResponseOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_node: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    close: bool,
}

impl<'a> NodeOut<'a> {
    fn line(text: &'a str) -> NodeOut<'a> {
        NodeOut {
            line_id: None,
            text,
            actions: Vec::new(),
            responses: Vec::new(),
            next_node: None,
            close: false,
        }
    }
    fn closing(text: &'a str) -> NodeOut<'a> {
        NodeOut {
            close: true,
            ..NodeOut::line(text)
        }
    }
    fn then(text: &'a str, next: String) -> NodeOut<'a> {
        NodeOut {
            next_node: Some(next),
            ..NodeOut::line(text)
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct ObjectiveOut<'a> {
    id: &'a str,
    kind: ObjectiveKind,
    target: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    island: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    species: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rarity: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct NodesOut {
    greeting: String,
    check: String,
    completion: String,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct QuestOut<'a> {
    id: &'a str,
    giver: &'a str,
    kind: QuestKind,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    prerequisites: &'a [String],
    objectives: Vec<ObjectiveOut<'a>>,
    rewards: &'a Rewards,
    nodes: NodesOut,
}

/// The generated world lists NPCs only; islands are declared in the hand-written `world.json`.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct WorldOut {
    islands: [(); 0],
    npcs: Vec<NpcDef>,
}

fn pretty<T: Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).expect("generated values serialize")
}

fn write_all(parsed: &[(String, Transcription)]) -> Generated {
    let mut out = Generated::new();
    // Every line id written so far: ids are 40-bit hashes, and among the millions of lines of a
    // large generated world two would clash (about three at 50,000 NPCs).
    let mut taken: HashSet<String> = HashSet::new();
    for (_, t) in parsed {
        out.insert(
            format!("{BASE_DIR}/{}.json", t.conversation),
            conversation(t, &mut taken),
        );
        let npc = NpcDef {
            id: t.npc.id.clone(),
            name: t.npc.name.clone(),
            island: t.npc.island.clone(),
            position: t.npc.position,
            range: t.npc.range.unwrap_or(8.0),
            conversation: t.conversation.clone(),
        };
        // One shard per NPC: no generated file grows with the number of NPCs, so none nears
        // the loader's per-file limit, and adding an NPC adds files instead of changing one.
        let world = WorldOut {
            islands: [],
            npcs: vec![npc],
        };
        out.insert(
            format!("{WORLD_DIR}/{}.json", t.npc.id),
            pretty(&world) + "\n",
        );
        if t.quests.is_empty() {
            continue;
        }
        let mut quests: Vec<QuestOut<'_>> = t
            .quests
            .iter()
            .map(|q| QuestOut {
                id: &q.id,
                giver: &t.npc.id,
                kind: q.kind,
                prerequisites: &q.prerequisites,
                objectives: q
                    .objectives
                    .iter()
                    .map(|o| ObjectiveOut {
                        id: &o.id,
                        kind: o.kind,
                        target: o.target,
                        island: o.island.as_deref(),
                        species: o.species.as_deref(),
                        rarity: o.rarity.as_deref(),
                    })
                    .collect(),
                rewards: &q.rewards,
                nodes: NodesOut {
                    greeting: format!("{}_Greet", q.id),
                    check: format!("{}_Check", q.id),
                    completion: format!("{}_Complete", q.id),
                },
            })
            .collect();
        quests.sort_by(|a, b| a.id.cmp(b.id));
        out.insert(
            format!("{QUESTS_DIR}/{}.json", t.npc.id),
            pretty(&quests) + "\n",
        );
    }
    out
}

/// One NPC's base conversation, as canonical JSON with `FirstNode` and `Speaker` first and the
/// nodes in generation order.
fn conversation(t: &Transcription, taken: &mut HashSet<String>) -> String {
    let c = &t.conversation;
    let hello = format!("{c}_Hello");
    let bye = format!("{c}_Bye");
    let mut nodes: Vec<(String, NodeOut<'_>)> = Vec::new();

    let mut responses: Vec<ResponseOut<'_>> = t
        .quests
        .iter()
        .map(|q| ResponseOut {
            line_id: None,
            text: &q.ask,
            conditions: Some(format!("quest({}) == available", q.id)),
            actions: Vec::new(),
            next_node: Some(format!("{}_Greet", q.id)),
        })
        .collect();
    responses.push(ResponseOut {
        line_id: None,
        text: t
            .lines
            .goodbye_reply
            .as_deref()
            .unwrap_or(DEFAULT_GOODBYE_REPLY),
        conditions: None,
        actions: Vec::new(),
        next_node: Some(bye.clone()),
    });
    nodes.push((
        hello.clone(),
        NodeOut {
            responses,
            ..NodeOut::line(&t.lines.greeting)
        },
    ));
    nodes.push((bye, NodeOut::closing(&t.lines.goodbye)));

    for q in &t.quests {
        quest_nodes(q, &mut nodes);
    }
    nodes.push(("AllDone".to_owned(), NodeOut::closing(&t.lines.all_done)));
    // Line ids from the conversation, the node and (for a response) its text, salted as
    // `strings tag` does when an earlier line has one: the same transcription always generates
    // the same ids (NPCs are generated in id order), and reordering quests or responses keeps them.
    for (name, node) in &mut nodes {
        node.line_id = Some(crate::lines::unique_id(&[c, name], taken));
        for response in &mut node.responses {
            response.line_id = Some(crate::lines::unique_id(&[c, name, response.text], taken));
        }
    }

    let mut text = String::from("{\n");
    text.push_str(&format!("  \"FirstNode\": {},\n", pretty(&hello)));
    text.push_str(&format!("  \"Speaker\": {}", pretty(&t.npc.name)));
    for (name, node) in &nodes {
        let body = pretty(node).replace('\n', "\n  ");
        text.push_str(&format!(",\n  {}: {body}", pretty(name)));
    }
    text.push_str("\n}\n");
    text
}

fn quest_nodes<'a>(q: &'a TranscribedQuest, nodes: &mut Vec<(String, NodeOut<'a>)>) {
    let id = q.id.as_str();
    let n = |suffix: &str| format!("{id}_{suffix}");
    let l = &q.lines;
    nodes.push((
        n("Greet"),
        NodeOut {
            responses: vec![
                ResponseOut {
                    line_id: None,
                    text: l.accept_reply.as_deref().unwrap_or(DEFAULT_ACCEPT_REPLY),
                    conditions: None,
                    actions: vec![ActionOut::quest("AcceptQuest", id)],
                    next_node: Some(n("Accepted")),
                },
                ResponseOut {
                    line_id: None,
                    text: l.decline_reply.as_deref().unwrap_or(DEFAULT_DECLINE_REPLY),
                    conditions: None,
                    actions: Vec::new(),
                    next_node: Some(n("Declined")),
                },
            ],
            ..NodeOut::line(&l.offer)
        },
    ));
    match q.shape {
        Shape::Work => {
            nodes.push((n("Accepted"), NodeOut::closing(&l.accept)));
            nodes.push((n("Declined"), NodeOut::closing(&l.decline)));
            let check_text = l.check.as_deref().unwrap_or(&l.reminder);
            nodes.push((
                n("Check"),
                NodeOut {
                    responses: vec![
                        ResponseOut {
                            line_id: None,
                            text: l.check_reply.as_deref().unwrap_or(DEFAULT_CHECK_REPLY),
                            conditions: None,
                            actions: vec![ActionOut {
                                success_node: Some(n("Complete")),
                                failure_node: Some(n("NotYet")),
                                ..ActionOut::quest("CheckQuest", id)
                            }],
                            next_node: None,
                        },
                        ResponseOut {
                            line_id: None,
                            text: NOT_YET_REPLY,
                            conditions: None,
                            actions: Vec::new(),
                            next_node: Some(n("NotYet")),
                        },
                    ],
                    ..NodeOut::line(check_text)
                },
            ));
            nodes.push((n("NotYet"), NodeOut::closing(&l.reminder)));
        }
        Shape::Talk => {
            let objective = &q.objectives[0];
            nodes.push((n("Accepted"), NodeOut::then(&l.accept, n("Telling"))));
            nodes.push((n("Declined"), NodeOut::closing(&l.decline)));
            nodes.push((n("Check"), NodeOut::then(&l.reminder, n("Telling"))));
            let intermediate = l.intermediate.as_deref().unwrap_or(&l.reminder);
            nodes.push((
                n("Telling"),
                NodeOut {
                    actions: vec![ActionOut {
                        objective_id: Some(&objective.id),
                        amount: Some(objective.target),
                        island: objective.island.as_deref(),
                        ..ActionOut::quest("AdvanceObjective", id)
                    }],
                    ..NodeOut::then(intermediate, n("Complete"))
                },
            ));
        }
    }
    nodes.push((
        n("Complete"),
        NodeOut {
            actions: vec![ActionOut::quest("CompleteQuest", id)],
            ..NodeOut::closing(&l.completion)
        },
    ));
}
