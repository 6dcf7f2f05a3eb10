//! The dialogue graph `G = (V, E)` (article section 3), built in two passes like an assembler
//! resolving forward jumps.
//!
//! Pass one makes a Prompt vertex for every node, so a `NextNode` may name a node that comes
//! later. Pass two wires them: the root to `FirstNode`, each node to its responses (named
//! `<key>_r<i>`, priority `i`, 1-based), each response or linear node to its `NextNode`. A name
//! that does not exist yields a diagnostic and the edge is skipped; the rest still works.
//!
//! The graph is immutable once built and shared (`Arc`) by every conversation that walks it.
//! Vertex ids are dense integers and edges live in one array (compressed sparse rows), so a walk
//! step is a few index lookups. Each authored action's canonical payload is built here, once,
//! so validating a client's action is a string comparison, not a rebuild.

use std::collections::HashMap;

use banter_protocol::{Action, ActionPayload, ActionType};

use crate::condition::Condition;
use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{Conversation, Exit, Next, Response};

/// A vertex's index in its graph. Dense: `0..graph.len()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VertexId(pub u32);

impl VertexId {
    /// The root vertex of every graph.
    pub const ROOT: VertexId = VertexId(0);

    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The six vertex types of the article. Tables produce Root, Prompt and Response; a `NextNode`
/// list produces a Branch. Condition and Action are part of the vocabulary for editor tooling and
/// are walked as transparent (a Condition gates on its expression, an Action carries actions);
/// no source format produces them today.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VertexKind {
    Root,
    /// An NPC line.
    Prompt,
    /// A player's response button.
    Response,
    /// Transparent: walkers pass straight through it to its children.
    Branch,
    Condition,
    Action,
}

/// A contiguous range in one of the graph's arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

/// One vertex. Names are kept for messages and the wire; ids are what the walk uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vertex {
    pub kind: VertexKind,
    pub name: Box<str>,
    pub text: Box<str>,
    /// Order among its siblings (responses: 1-based index in the node).
    pub priority: u32,
    /// A Prompt with `Close: true`: the conversation ends after it.
    pub close: bool,
    /// Carries a CheckQuest: a client does not follow its exit and waits for the server's jump.
    pub awaits_jump: bool,
    outputs: Span,
    actions: Span,
    condition: Option<u32>,
}

/// An action as authored on a vertex, with its canonical payload built once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthoredAction {
    pub action: Action,
    pub action_type: ActionType,
    pub payload: Box<str>,
    /// The node or response it is authored on.
    pub vertex: VertexId,
}

/// An immutable dialogue graph for one conversation (after the layer union).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DialogueGraph {
    name: String,
    speaker: Option<String>,
    vertices: Vec<Vertex>,
    edges: Vec<VertexId>,
    actions: Vec<AuthoredAction>,
    conditions: Vec<Condition>,
    by_name: HashMap<Box<str>, VertexId>,
}

/// The index of an authored action in its graph; what the walk's arming counters key on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ActionIndex(pub u32);

impl DialogueGraph {
    /// Builds the graph of a merged conversation. `file` names the conversation in diagnostics
    /// when a node's origin file is unknown.
    pub fn build(conversation: &Conversation, diagnostics: &mut Vec<Diagnostic>) -> DialogueGraph {
        Builder::new(conversation, diagnostics).build()
    }

    /// The conversation's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn speaker(&self) -> Option<&str> {
        self.speaker.as_deref()
    }

    /// Number of vertices, root included.
    pub fn len(&self) -> usize {
        self.vertices.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vertices.len() <= 1
    }

    pub fn vertex(&self, id: VertexId) -> Option<&Vertex> {
        self.vertices.get(id.index())
    }

    pub fn vertices(&self) -> impl ExactSizeIterator<Item = (VertexId, &Vertex)> {
        self.vertices
            .iter()
            .enumerate()
            .map(|(i, v)| (VertexId(i as u32), v))
    }

    /// The vertex of a node or response name (`Greet`, `Greet_r2`).
    pub fn find(&self, name: &str) -> Option<VertexId> {
        self.by_name.get(name).copied()
    }

    /// The `FirstNode`, if the conversation has one that exists.
    pub fn first_node(&self) -> Option<VertexId> {
        self.outputs(VertexId::ROOT).first().copied()
    }

    /// A vertex's outputs, sorted by priority. Empty for an unknown id.
    pub fn outputs(&self, id: VertexId) -> &[VertexId] {
        self.vertices
            .get(id.index())
            .map_or(&[], |v| &self.edges[v.outputs.range()])
    }

    /// The actions authored on a vertex, with their indices.
    pub fn actions(
        &self,
        id: VertexId,
    ) -> impl ExactSizeIterator<Item = (ActionIndex, &AuthoredAction)> {
        let span = self
            .vertices
            .get(id.index())
            .map_or(Span::default(), |v| v.actions);
        self.actions[span.range()]
            .iter()
            .enumerate()
            .map(move |(i, a)| (ActionIndex(span.start + i as u32), a))
    }

    /// One authored action by index.
    pub fn action(&self, index: ActionIndex) -> Option<&AuthoredAction> {
        self.actions.get(index.0 as usize)
    }

    /// Every authored action in the graph.
    pub fn all_actions(&self) -> &[AuthoredAction] {
        &self.actions
    }

    /// The vertex's `Conditions`, if it has any.
    pub fn condition(&self, id: VertexId) -> Option<&Condition> {
        self.vertices
            .get(id.index())
            .and_then(|v| v.condition)
            .and_then(|c| self.conditions.get(c as usize))
    }
}

struct Builder<'a> {
    conversation: &'a Conversation,
    diagnostics: &'a mut Vec<Diagnostic>,
    graph: DialogueGraph,
}

impl<'a> Builder<'a> {
    fn new(conversation: &'a Conversation, diagnostics: &'a mut Vec<Diagnostic>) -> Self {
        let nodes = conversation.nodes.len();
        let graph = DialogueGraph {
            name: conversation.name.clone(),
            speaker: conversation.speaker.clone(),
            vertices: Vec::with_capacity(nodes * 2 + 1),
            edges: Vec::with_capacity(nodes * 2 + 1),
            actions: Vec::new(),
            conditions: Vec::new(),
            by_name: HashMap::with_capacity(nodes * 2),
        };
        Builder {
            conversation,
            diagnostics,
            graph,
        }
    }

    fn file(&self, node: &str) -> &str {
        self.conversation
            .origin
            .get(node)
            .map_or(self.conversation.name.as_str(), String::as_str)
    }

    fn push_vertex(
        &mut self,
        kind: VertexKind,
        name: String,
        text: &str,
        priority: u32,
    ) -> VertexId {
        let id = VertexId(self.graph.vertices.len() as u32);
        self.graph.vertices.push(Vertex {
            kind,
            name: name.as_str().into(),
            text: text.into(),
            priority,
            close: false,
            awaits_jump: false,
            outputs: Span::default(),
            actions: Span::default(),
            condition: None,
        });
        if kind != VertexKind::Root {
            match self.graph.by_name.entry(name.into_boxed_str()) {
                std::collections::hash_map::Entry::Occupied(taken) => {
                    // A node literally named like a generated vertex (`Greet_r1`): names must
                    // be unique because the wire refers to vertices by name.
                    let name = taken.key().to_string();
                    let file = self.file(&name).to_owned();
                    self.diagnostics
                        .push(Diagnostic::error(file, Problem::Duplicate(name.clone())).node(name));
                }
                std::collections::hash_map::Entry::Vacant(free) => {
                    free.insert(id);
                }
            }
        }
        id
    }

    fn build(mut self) -> DialogueGraph {
        // Pass one: a Prompt per node, so any name can be resolved in pass two.
        self.push_vertex(VertexKind::Root, String::new(), "", 0);
        for name in self.conversation.nodes.keys() {
            self.push_vertex(VertexKind::Prompt, name.clone(), "", 0);
        }

        // Pass two: wire the root, then every node in id order.
        let first = self.conversation.first_node.clone();
        let root_targets: Vec<VertexId> = match &first {
            Some(name) => self
                .resolve(
                    name,
                    None,
                    "FirstNode",
                    &self.conversation.base_file.clone(),
                )
                .into_iter()
                .collect(),
            None => Vec::new(),
        };
        self.set_outputs(VertexId::ROOT, &root_targets);

        let conversation = self.conversation;
        for (i, (name, node)) in conversation.nodes.iter().enumerate() {
            let id = VertexId(i as u32 + 1);
            let file = self.file(name).to_owned();
            let v = &mut self.graph.vertices[id.index()];
            v.text = node.text.as_str().into();
            v.close = matches!(node.exit, Exit::Close);
            self.set_actions(id, &node.actions);
            self.set_condition(id, node.conditions.as_deref(), &file, name, "Conditions");
            match &node.exit {
                Exit::End | Exit::Close => self.set_outputs(id, &[]),
                Exit::Next(next) => {
                    let target = self.wire_next(name, next, &file, "NextNode");
                    self.set_outputs(id, &target);
                }
                Exit::Responses(responses) => self.wire_responses(id, name, responses, &file),
            }
        }
        self.graph
    }

    fn wire_responses(&mut self, id: VertexId, name: &str, responses: &[Response], file: &str) {
        let ids: Vec<VertexId> = responses
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let priority = i as u32 + 1;
                self.push_vertex(
                    VertexKind::Response,
                    format!("{name}_r{priority}"),
                    &r.text,
                    priority,
                )
            })
            .collect();
        self.set_outputs(id, &ids);
        for (i, (response, rid)) in responses.iter().zip(ids).enumerate() {
            let field = format!("Responses[{}]", i + 1);
            self.set_actions(rid, &response.actions);
            self.set_condition(
                rid,
                response.conditions.as_deref(),
                file,
                name,
                &format!("{field}.Conditions"),
            );
            let targets = match &response.next {
                Some(next) => self.wire_next(name, next, file, &format!("{field}.NextNode")),
                None => Vec::new(),
            };
            self.set_outputs(rid, &targets);
        }
    }

    /// Resolves an exit to the vertices it leads to: one Prompt, or a new Branch.
    fn wire_next(&mut self, from: &str, next: &Next, file: &str, field: &str) -> Vec<VertexId> {
        match next {
            Next::One(target) => self
                .resolve(target, Some(from), field, file)
                .into_iter()
                .collect(),
            Next::FirstOf(targets) => {
                let branch_name = format!("{from}_b{}", self.graph.vertices.len());
                let branch = self.push_vertex(VertexKind::Branch, branch_name, "", 1);
                let children: Vec<VertexId> = targets
                    .iter()
                    .enumerate()
                    .filter_map(|(i, t)| {
                        self.resolve(t, Some(from), &format!("{field}[{}]", i + 1), file)
                    })
                    .collect();
                self.set_outputs(branch, &children);
                vec![branch]
            }
        }
    }

    fn resolve(
        &mut self,
        target: &str,
        from: Option<&str>,
        field: &str,
        file: &str,
    ) -> Option<VertexId> {
        match self.graph.by_name.get(target) {
            Some(&id) if self.graph.vertices[id.index()].kind == VertexKind::Prompt => Some(id),
            _ => {
                let mut d =
                    Diagnostic::error(file, Problem::Dangling(target.to_owned())).field(field);
                if let Some(from) = from {
                    d = d.node(from);
                }
                self.diagnostics.push(d);
                None
            }
        }
    }

    fn set_outputs(&mut self, id: VertexId, targets: &[VertexId]) {
        let start = self.graph.edges.len() as u32;
        self.graph.edges.extend_from_slice(targets);
        self.graph.vertices[id.index()].outputs = Span {
            start,
            len: targets.len() as u32,
        };
    }

    fn set_actions(&mut self, id: VertexId, actions: &[Action]) {
        let start = self.graph.actions.len() as u32;
        let mut awaits_jump = false;
        for action in actions {
            awaits_jump |= action.action_type() == ActionType::CheckQuest;
            self.graph.actions.push(AuthoredAction {
                action: action.clone(),
                action_type: action.action_type(),
                payload: ActionPayload::build(action).into_boxed_str(),
                vertex: id,
            });
        }
        let v = &mut self.graph.vertices[id.index()];
        v.actions = Span {
            start,
            len: actions.len() as u32,
        };
        v.awaits_jump = awaits_jump;
    }

    fn set_condition(
        &mut self,
        id: VertexId,
        text: Option<&str>,
        file: &str,
        node: &str,
        field: &str,
    ) {
        let Some(text) = text else { return };
        let condition = match Condition::parse(text) {
            Ok(c) => c,
            Err(e) => {
                self.diagnostics.push(
                    Diagnostic::error(file, Problem::BadCondition(e.to_string()))
                        .node(node)
                        .field(field),
                );
                // Fail closed: a condition that cannot be read never holds.
                Condition::Const(false)
            }
        };
        self.graph.vertices[id.index()].condition = Some(self.graph.conditions.len() as u32);
        self.graph.conditions.push(condition);
    }
}
