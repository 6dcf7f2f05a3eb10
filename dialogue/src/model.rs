//! The content model: a conversation as a flat map of named nodes (article section 2).
//!
//! Both source formats (canonical JSON and the editor export) parse into these types, and only
//! these types go on to the layer union and the graph build, so nothing downstream knows where a
//! conversation came from.

use std::collections::BTreeMap;

use banter_protocol::Action;

/// Where a node goes next when it has no responses: one node, or a list tried in order.
///
/// A list is Banter's extension: it becomes a transparent Branch vertex whose children are tried
/// by priority, and the first whose `Conditions` hold is shown. That is how a conversation
/// branches on state halfway through without a server action (the article's first limitation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    One(String),
    FirstOf(Vec<String>),
}

impl Next {
    /// Every node name this exit refers to, in priority order.
    pub fn targets(&self) -> &[String] {
        match self {
            Next::One(name) => std::slice::from_ref(name),
            Next::FirstOf(names) => names,
        }
    }
}

/// A player's response, shown as a button under the NPC line.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Response {
    pub text: String,
    pub actions: Vec<Action>,
    pub next: Option<Next>,
    pub conditions: Option<String>,
}

/// How a node ends: at most one of the three exits; none means the conversation ends there.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Exit {
    #[default]
    End,
    Close,
    Next(Next),
    Responses(Vec<Response>),
}

/// One named node of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Node {
    pub text: String,
    pub exit: Exit,
    pub actions: Vec<Action>,
    pub conditions: Option<String>,
}

/// A layer's node that changes only the fields it names (Banter's answer to "a layer can't
/// change just the text of a base node").
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct NodePatch {
    pub text: Option<String>,
    pub exit: Option<Exit>,
    pub actions: Option<Vec<Action>>,
    pub conditions: Option<String>,
}

impl NodePatch {
    /// The node with this patch applied.
    pub fn apply(&self, base: &Node) -> Node {
        Node {
            text: self.text.clone().unwrap_or_else(|| base.text.clone()),
            exit: self.exit.clone().unwrap_or_else(|| base.exit.clone()),
            actions: self.actions.clone().unwrap_or_else(|| base.actions.clone()),
            conditions: self.conditions.clone().or_else(|| base.conditions.clone()),
        }
    }
}

/// A node as a file states it: whole, or a patch over a lower layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeEntry {
    Whole(Node),
    Patch(NodePatch),
}

/// One parsed file: a base conversation or a layer over one.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ConversationFile {
    /// The file it came from, for diagnostics.
    pub file: String,
    pub first_node: Option<String>,
    pub speaker: Option<String>,
    /// Nodes by name. A `BTreeMap` so every later step iterates in one order on every machine.
    pub nodes: BTreeMap<String, NodeEntry>,
}

/// A conversation after the layer union: every node whole.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Conversation {
    pub name: String,
    pub first_node: Option<String>,
    pub speaker: Option<String>,
    pub nodes: BTreeMap<String, Node>,
    /// For each node, the file its final version came from (diagnostics name the right file).
    pub origin: BTreeMap<String, String>,
    /// The base file, for problems of the conversation as a whole (a missing `FirstNode`).
    pub base_file: String,
}
