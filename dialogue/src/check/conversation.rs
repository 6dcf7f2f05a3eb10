//! One conversation against the whole game: names, cycles, reachability, quest order.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use banter_protocol::{Action, ActionType, Placement};

use super::{ALL_DONE, Index, name_list, strongly_connected};
use crate::condition::Reference;
use crate::content::Content;
use crate::diagnostic::{Diagnostic, Problem};
use crate::graph::{DialogueGraph, VertexId, VertexKind};
use crate::model::{Conversation, Exit};

/// Where an authored thing sits in the source: the node, and the response if it is on one.
/// Borrowed from the graph: nothing is copied per vertex while the content is clean.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Owner<'g> {
    node: &'g str,
    /// 1-based response index (`Responses[i]`), `None` for the node itself.
    response: Option<u32>,
}

impl Owner<'_> {
    fn field(&self, field: &str) -> String {
        match self.response {
            Some(i) => format!("Responses[{i}].{field}"),
            None => field.to_owned(),
        }
    }
}

/// The node (and response) each vertex was built from, so a diagnostic found on the graph
/// names the source a writer edits. Responses and branches belong to the node they hang from.
pub(super) fn owners(graph: &DialogueGraph) -> Vec<Owner<'_>> {
    let mut owners = vec![Owner::default(); graph.len()];
    for (id, v) in graph.vertices() {
        if v.kind != VertexKind::Prompt {
            continue;
        }
        owners[id.index()].node = &v.name;
        for &out in graph.outputs(id) {
            let Some(child) = graph.vertex(out) else {
                continue;
            };
            match child.kind {
                VertexKind::Response => {
                    owners[out.index()] = Owner {
                        node: &v.name,
                        response: Some(child.priority),
                    };
                    for &next in graph.outputs(out) {
                        if graph
                            .vertex(next)
                            .is_some_and(|n| n.kind != VertexKind::Prompt)
                        {
                            owners[next.index()] = owners[out.index()];
                        }
                    }
                }
                VertexKind::Prompt => {}
                _ => owners[out.index()].node = &v.name,
            }
        }
    }
    owners
}

pub(super) struct ConversationCheck<'a, 'o> {
    pub(super) content: &'a Content,
    pub(super) index: &'a Index<'a>,
    pub(super) graph: &'a DialogueGraph,
    pub(super) conversation: &'a Conversation,
    pub(super) owners: Vec<Owner<'a>>,
    pub(super) out: &'o mut Vec<Diagnostic>,
}

impl ConversationCheck<'_, '_> {
    pub(super) fn run(mut self) {
        if self.conversation.speaker.is_none() {
            let file = self.base_file();
            self.out
                .push(Diagnostic::warning(file, Problem::NoSpeaker).field("Speaker"));
        }
        self.actions();
        self.conditions();
        self.duplicate_responses();
        self.endless_cycles();
        // The nodes of the quests its NPCs give are entry points: without world.json or
        // quests.json they would look unreached, which only repeats that the file is missing.
        let unloaded = self.content.unloaded;
        if !unloaded.world && !unloaded.quests {
            self.unreachable();
        }
        self.missing_moments();
        self.shared();
        self.writing();
    }

    /// The file a node's final version came from.
    pub(super) fn file(&self, node: &str) -> String {
        self.conversation
            .origin
            .get(node)
            .cloned()
            .unwrap_or_else(|| self.base_file())
    }

    /// The base file of the conversation, for problems of the conversation as a whole.
    pub(super) fn base_file(&self) -> String {
        if !self.conversation.base_file.is_empty() {
            return self.conversation.base_file.clone();
        }
        let in_base = |f: &&String| {
            Path::new(f.as_str())
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|d| d == crate::layers::Layer::Base.folder())
        };
        self.conversation
            .origin
            .values()
            .find(in_base)
            .cloned()
            .unwrap_or_else(|| {
                self.content
                    .root
                    .join("dialogue")
                    .join(crate::layers::Layer::Base.folder())
                    .join(format!("{}.json", self.conversation.name))
                    .display()
                    .to_string()
            })
    }

    /// An error on a node (or one of its responses) of this conversation.
    fn error(&self, owner: &Owner<'_>, field: &str, problem: Problem) -> Diagnostic {
        Diagnostic::error(self.file(owner.node), problem)
            .node(owner.node)
            .field(owner.field(field))
    }

    /// Every authored action names a quest, objective, island and node that exist.
    fn actions(&mut self) {
        let mut found = Vec::new();
        for (id, _) in self.graph.vertices() {
            let owner = &self.owners[id.index()];
            for (k, (_, authored)) in self.graph.actions(id).enumerate() {
                // Field paths are spelled only for a diagnostic, never on the clean path.
                let at = || format!("Actions[{}]", k + 1);
                // Where the action may sit comes from its declaration (banter-protocol).
                let misplaced = match authored.action_type.placement() {
                    Placement::NodeOrResponse => None,
                    Placement::Node => owner.response.map(|_| "a response"),
                    Placement::Response => owner.response.is_none().then_some("an NPC line"),
                };
                if let Some(place) = misplaced {
                    found.push(self.error(
                        owner,
                        &at(),
                        Problem::Other(format!(
                            "`{}` may not sit on {place}",
                            authored.action_type
                        )),
                    ));
                }
                let unknown = |what: &'static str, name: &str, field: &str| {
                    self.error(
                        owner,
                        &format!("{}.{field}", at()),
                        Problem::UnknownReference {
                            action: authored.action_type.name(),
                            what,
                            name: name.to_owned(),
                        },
                    )
                };
                let quest = match authored.action.quest_id() {
                    Some(q) => match self.index.quests.get(q) {
                        Some(quest) => Some(*quest),
                        // Unknown because quests.json did not load: said once, by the loader.
                        None if self.content.unloaded.quests => None,
                        None => {
                            found.push(unknown("quest", q, "QuestId"));
                            None
                        }
                    },
                    None => None,
                };
                match &authored.action {
                    Action::AdvanceObjective {
                        objective_id,
                        amount,
                        ..
                    } => {
                        if let Some(quest) = quest
                            && !quest.objectives.iter().any(|o| o.id == *objective_id)
                        {
                            found.push(unknown("objective", objective_id, "ObjectiveId"));
                        }
                        if let Some(island) = amount.as_ref().and_then(|a| a.island.as_ref())
                            && !self.content.unloaded.world
                            && !self.index.islands.contains(island.as_str())
                        {
                            found.push(unknown("island", island, "Island"));
                        }
                    }
                    Action::CheckQuest {
                        success_node,
                        failure_node,
                        ..
                    } => {
                        // The decoder leaves a missing target empty (json.rs) so it lands here.
                        if success_node.is_empty() || failure_node.is_empty() {
                            found.push(self.error(owner, &at(), Problem::CheckQuestTargets));
                        }
                        for (field, target) in
                            [("SuccessNode", success_node), ("FailureNode", failure_node)]
                        {
                            if !target.is_empty() && self.prompt(target).is_none() {
                                found.push(unknown("node", target, field));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        self.out.extend(found);
    }

    /// The NPC line of this name, if there is one (jump targets must be lines).
    fn prompt(&self, name: &str) -> Option<VertexId> {
        self.graph.find(name).filter(|&id| {
            self.graph
                .vertex(id)
                .is_some_and(|v| v.kind == VertexKind::Prompt)
        })
    }

    /// Conditions name quests and objectives that exist. States and tags (`has(...)`) belong to
    /// the player crate's closed vocabulary and are not content's to check.
    fn conditions(&mut self) {
        let mut found = Vec::new();
        for (id, _) in self.graph.vertices() {
            let Some(condition) = self.graph.condition(id) else {
                continue;
            };
            let owner = &self.owners[id.index()];
            let unknown = |what: &'static str, name: &str| {
                self.error(
                    owner,
                    "Conditions",
                    Problem::UnknownReference {
                        action: "a condition",
                        what,
                        name: name.to_owned(),
                    },
                )
            };
            let quests_unloaded = self.content.unloaded.quests;
            condition.visit_references(&mut |reference| match reference {
                // Variables and visits have their own check (check/writing.rs).
                Reference::Fact(_) | Reference::Variable(_) | Reference::Visits(_) => {}
                Reference::Quest(_) | Reference::Objective { .. } if quests_unloaded => {}
                Reference::Quest(q) => {
                    if !self.index.quests.contains_key(q) {
                        found.push(unknown("quest", q));
                    }
                }
                Reference::Objective { quest, objective } => match self.index.quests.get(quest) {
                    None => found.push(unknown("quest", quest)),
                    Some(q) => {
                        if !q.objectives.iter().any(|o| o.id == objective) {
                            found.push(unknown("objective", objective));
                        }
                    }
                },
            });
        }
        self.out.extend(found);
    }

    /// Two buttons with the same words under one line: the player cannot tell them apart.
    /// Responses whose `Conditions` differ are conditional variants that never show together,
    /// so they are not reported.
    fn duplicate_responses(&mut self) {
        for (name, node) in &self.conversation.nodes {
            let Exit::Responses(responses) = &node.exit else {
                continue;
            };
            let mut seen: HashMap<(&str, Option<&str>), usize> = HashMap::new();
            for (i, response) in responses.iter().enumerate() {
                let key = (response.text.trim(), response.conditions.as_deref());
                if let Some(&first) = seen.get(&key) {
                    self.out.push(
                        Diagnostic::warning(
                            self.file(name),
                            Problem::DuplicateResponseText(first + 1, i + 1),
                        )
                        .node(name)
                        .field(format!("Responses[{}].Text", i + 1)),
                    );
                } else {
                    seen.insert(key, i);
                }
            }
        }
    }

    /// A set of lines that only lead to each other by `NextNode`, with no response, no quest
    /// check, no close and no end: the player advances through them forever.
    ///
    /// The walk takes the first output whose conditions hold (walk.rs `next_line`), so an edge
    /// the walk may take is every conditional output up to and including the first
    /// unconditional one; a vertex whose outputs may all fail can end the conversation, which
    /// is a way out. A set is endless when it is strongly connected over those edges and none
    /// of them leaves it (a bottom component); every endless set contains one, so reporting
    /// bottom components finds them all.
    fn endless_cycles(&mut self) {
        let graph = self.graph;
        let n = graph.len();
        let conditional = |id: VertexId| graph.condition(id).is_some();
        let mut adjacency: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut exits = vec![true; n];
        for (id, v) in graph.vertices() {
            let linear = match v.kind {
                VertexKind::Prompt => {
                    !v.awaits_jump
                        && !v.close
                        && graph.outputs(id).iter().all(|&o| {
                            graph
                                .vertex(o)
                                .is_some_and(|c| c.kind != VertexKind::Response)
                        })
                }
                VertexKind::Branch | VertexKind::Condition | VertexKind::Action => true,
                VertexKind::Root | VertexKind::Response => false,
            };
            if !linear {
                continue;
            }
            let mut may_end = true;
            for &out in graph.outputs(id) {
                adjacency[id.index()].push(out.index());
                let definite = !conditional(out)
                    && match graph.vertex(out).map(|c| c.kind) {
                        Some(VertexKind::Prompt) => true,
                        // A transparent child yields nothing when all its children may fail.
                        Some(VertexKind::Branch | VertexKind::Condition | VertexKind::Action) => {
                            graph.outputs(out).iter().any(|&g| {
                                !conditional(g)
                                    && graph
                                        .vertex(g)
                                        .is_some_and(|c| c.kind == VertexKind::Prompt)
                            })
                        }
                        _ => false,
                    };
                if definite {
                    may_end = false;
                    break;
                }
            }
            exits[id.index()] = may_end;
        }
        let mut found = Vec::new();
        for component in strongly_connected(&adjacency) {
            let cyclic = component.len() > 1 || adjacency[component[0]].contains(&component[0]);
            if !cyclic || component.iter().any(|&v| exits[v]) {
                continue;
            }
            let members: HashSet<usize> = component.iter().copied().collect();
            let leaves = component
                .iter()
                .any(|&v| adjacency[v].iter().any(|w| !members.contains(w)));
            if leaves {
                continue;
            }
            let mut names: Vec<&str> = component
                .iter()
                .filter_map(|&v| graph.vertex(VertexId(v as u32)))
                .filter(|v| v.kind == VertexKind::Prompt)
                .map(|v| &*v.name)
                .collect();
            names.sort_unstable();
            let Some(first) = names.first() else {
                continue;
            };
            found.push(
                Diagnostic::error(self.file(first), Problem::EndlessCycle(name_list(&names)))
                    .node(*first)
                    .field("NextNode"),
            );
        }
        self.out.extend(found);
    }

    /// Lines no entry point leads to. Entry points: `FirstNode`, the nodes of quests this
    /// conversation's NPCs give (the resolver opens on them), `AllDone`, the tutorial's lockout
    /// nodes, and the targets of a quest check, reached by the server's jump from the vertex
    /// that carries it.
    fn unreachable(&mut self) {
        let graph = self.graph;
        let name = self.conversation.name.as_str();
        let mut entries: Vec<VertexId> = vec![VertexId::ROOT];
        for speaker in self.index.speakers(name) {
            for quest in self.index.offered(speaker) {
                let nodes = [Some(&quest.nodes.greeting), Some(&quest.nodes.check)];
                let completion = [quest.nodes.completion.as_ref()];
                for node in nodes.into_iter().chain(completion).flatten() {
                    entries.extend(self.prompt(node));
                }
            }
        }
        entries.extend(self.prompt(ALL_DONE));
        for node in &self.content.lockout_nodes {
            entries.extend(self.prompt(node));
        }

        let mut seen = vec![false; graph.len()];
        let mut stack = entries;
        while let Some(id) = stack.pop() {
            if std::mem::replace(&mut seen[id.index()], true) {
                continue;
            }
            stack.extend(graph.outputs(id).iter().filter(|o| !seen[o.index()]));
            // A line group's `Fallback` is reached when no candidate holds.
            if let Some(fallback) = graph.group(id).and_then(|g| g.fallback) {
                stack.push(fallback);
            }
            if graph.vertex(id).is_some_and(|v| v.awaits_jump) {
                for (_, authored) in graph.actions(id) {
                    if let Action::CheckQuest {
                        success_node,
                        failure_node,
                        ..
                    } = &authored.action
                    {
                        stack.extend(self.prompt(success_node));
                        stack.extend(self.prompt(failure_node));
                    }
                }
            }
        }
        for (id, v) in graph.vertices() {
            if v.kind == VertexKind::Prompt && !seen[id.index()] {
                self.out.push(
                    Diagnostic::warning(self.file(&v.name), Problem::Unreachable).node(&*v.name),
                );
            }
        }
    }

    /// The article's lost quest: a response's actions are sent only once the player advances
    /// past the reply (client.rs), but the reply's own actions are sent when it is shown. So an
    /// `AcceptQuest` on a response followed directly by a line that completes or advances the
    /// same quest sends the completion first, the server refuses it (the quest is not active
    /// yet) and the quest stays active forever, unpaid. The fix is a line in between, as the
    /// article's story tool learned to insert.
    fn missing_moments(&mut self) {
        let graph = self.graph;
        let mut found = Vec::new();
        for (id, v) in graph.vertices() {
            if v.kind != VertexKind::Response {
                continue;
            }
            let accepted: BTreeSet<&str> = graph
                .actions(id)
                .filter_map(|(_, a)| match &a.action {
                    Action::AcceptQuest { quest_id } => Some(quest_id.as_str()),
                    _ => None,
                })
                .collect();
            if accepted.is_empty() {
                continue;
            }
            for reply in possible_lines(graph, id) {
                for (k, (_, a)) in graph.actions(reply).enumerate() {
                    let early = matches!(
                        a.action_type,
                        ActionType::CompleteQuest | ActionType::AdvanceObjective
                    ) && a.action.quest_id().is_some_and(|q| accepted.contains(q));
                    if !early {
                        continue;
                    }
                    let Some(line) = graph.vertex(reply) else {
                        continue;
                    };
                    let owner = &self.owners[id.index()];
                    found.push(
                        Diagnostic::error(
                            self.file(&line.name),
                            Problem::Other(format!(
                                "`{}` on this line is sent when it is shown, before the \
                                 `AcceptQuest` of `{}_r{}` that leads here (a response's \
                                 actions go out once the player moves past the reply); put a \
                                 line between accepting and this one",
                                a.action_type,
                                owner.node,
                                owner.response.unwrap_or(0)
                            )),
                        )
                        .node(&*line.name)
                        .field(format!("Actions[{}]", k + 1)),
                    );
                }
            }
        }
        self.out.extend(found);
    }
}

/// Every NPC line the walk may show right after `from`: conditional outputs up to and
/// including the first unconditional one, through transparent vertices (one level, which is all
/// the builder makes).
pub(super) fn possible_lines(graph: &DialogueGraph, from: VertexId) -> Vec<VertexId> {
    let mut lines = Vec::new();
    for &out in graph.outputs(from) {
        let Some(v) = graph.vertex(out) else { continue };
        let conditional = graph.condition(out).is_some();
        match v.kind {
            VertexKind::Prompt => {
                lines.push(out);
                if !conditional {
                    break;
                }
            }
            VertexKind::Branch | VertexKind::Condition | VertexKind::Action => {
                let mut definite = false;
                for &child in graph.outputs(out) {
                    if graph
                        .vertex(child)
                        .is_some_and(|c| c.kind == VertexKind::Prompt)
                    {
                        lines.push(child);
                        if graph.condition(child).is_none() {
                            definite = true;
                            break;
                        }
                    }
                }
                if definite && !conditional {
                    break;
                }
            }
            VertexKind::Root | VertexKind::Response => {}
        }
    }
    lines
}
