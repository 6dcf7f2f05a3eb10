//! Banter's dialogue: the content model, its two source formats, the layer union, the dialogue
//! graph, content checks and the walk rules shared by the server and every client.
//!
//! Pure: no network, no database, no clock. The only I/O is the thin loader in [`content`],
//! which reads files and hands their bytes to the parsers.

pub mod against;
pub mod ballot;
pub mod canonical;
pub mod check;
pub mod client;
pub mod condition;
pub mod content;
pub mod diagnostic;
pub mod editor;
pub mod explore;
pub mod export;
pub mod generate;
pub mod graph;
pub mod json;
pub mod layers;
pub mod lines;
pub mod locale;
pub mod model;
pub mod resolver;
pub mod synth;
pub mod text;
pub mod tutorial;
pub mod variables;
pub mod walk;

pub use client::{ClientWalk, Outgoing, Screen, SharedError};
pub use condition::{Condition, Counter, Facts, NoFacts, QuestStatus};
pub use diagnostic::{Diagnostic, Position, Problem, Severity, has_errors};
pub use graph::{ActionIndex, AuthoredAction, DialogueGraph, Vertex, VertexId, VertexKind};
pub use layers::Layer;
pub use model::{
    ChoiceRule, ChoiceSpec, Conversation, ConversationFile, Exit, Next, Node, NodeEntry, NodePatch,
    Response,
};
pub use walk::{ARM_CAP, Shown, SnapshotError, Walk, WalkError, WalkSnapshot, next_line};

/// Parses one conversation file, choosing the format by its name: `*.editor.json` is the
/// editor export, any other `*.json` the canonical format.
pub fn parse_conversation_file(
    file: &str,
    bytes: &[u8],
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<ConversationFile> {
    if file.ends_with(editor::SUFFIX) {
        editor::parse_editor_export(file, bytes, diagnostics)
    } else {
        canonical::parse_conversation(file, bytes, diagnostics)
    }
}

/// Parses, merges (no layers) and builds one canonical conversation from text: for tests,
/// benchmarks and tools that hold a conversation in memory.
pub fn build_conversation(name: &str, json: &str) -> (DialogueGraph, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let file =
        canonical::parse_conversation_with_limit(name, json.as_bytes(), u64::MAX, &mut diagnostics)
            .unwrap_or_default();
    let merged = layers::merge(name, &file, &[], &mut diagnostics);
    let graph = DialogueGraph::build(&merged, &mut diagnostics);
    (graph, diagnostics)
}
