//! Content checks: the problems no single file shows, found on the loaded [`Content`].
//!
//! [`Content::load`] reports what is wrong inside each file (syntax, unknown fields, two exits,
//! dangling names, layer overrides). [`check`] adds what only the whole game shows: a quest,
//! objective, island or node that an action, a condition, an NPC or a quest names and that does
//! not exist; a `NextNode` cycle a player can never leave; a line no entry point reaches; a
//! quest completed before it is accepted. `check-content` prints both lists, and the server
//! refuses content with any error, so a writer hears about a broken moment before a player does.
//!
//! Every diagnostic names a file and, where there is one, the node (`conversation.origin` says
//! which layer file a merged node came from) or the world/quest entry and field. Everything is
//! linear in the size of the content: the cycle search is an iterative Tarjan, so a long chain of
//! generated nodes cannot overflow the stack.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use banter_protocol::{Action, ActionType};

use crate::condition::Reference;
use crate::content::{Content, QuestDef};
use crate::diagnostic::{Diagnostic, Problem, has_errors};
use crate::graph::{DialogueGraph, VertexId, VertexKind};
use crate::model::{Conversation, Exit};

/// The node that resolvers open on when an NPC has nothing left to offer (article section 5).
pub const ALL_DONE: &str = crate::resolver::ALL_DONE;

/// Runs every semantic check over loaded content. The result is sorted with [`sort`].
pub fn check(content: &Content) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let index = Index::new(content);
    check_world(content, &index, &mut out);
    check_quests(content, &index, &mut out);
    check_objectives_can_advance(content, &index, &mut out);
    check_resolver_totality(content, &index, &mut out);
    check_tutorial(content, &index, &mut out);
    for (name, graph) in &content.conversations {
        let Some(conversation) = content.merged.get(name) else {
            continue;
        };
        ConversationCheck {
            content,
            index: &index,
            graph,
            conversation,
            owners: owners(graph),
            out: &mut out,
        }
        .run();
    }
    sort(&mut out);
    out
}

/// Loads a content folder and checks it: the loader's diagnostics and [`check`]'s, sorted.
pub fn load_and_check(root: &Path) -> (Content, Vec<Diagnostic>) {
    let (content, mut diagnostics) = Content::load(root);
    diagnostics.extend(check(&content));
    sort(&mut diagnostics);
    (content, diagnostics)
}

/// True if content with these diagnostics may be served: warnings are for writers to read,
/// only errors make content unusable.
pub fn is_clean(diagnostics: &[Diagnostic]) -> bool {
    !has_errors(diagnostics)
}

/// Sorts diagnostics the way `check-content` prints them: errors first, then by file, node,
/// field, position and message, and drops exact repeats. Deterministic on every machine, so a
/// CI log diff shows only what changed.
pub fn sort(diagnostics: &mut Vec<Diagnostic>) {
    diagnostics.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.file.cmp(&b.file))
            .then_with(|| a.node.cmp(&b.node))
            .then_with(|| a.field.cmp(&b.field))
            .then_with(|| {
                let at = |d: &Diagnostic| d.position.map(|p| (p.line, p.column));
                at(a).cmp(&at(b))
            })
            .then_with(|| a.problem.to_string().cmp(&b.problem.to_string()))
    });
    diagnostics.dedup();
}

/// Lookups built once, so each check is a hash probe instead of a scan.
struct Index<'a> {
    world_file: String,
    quests_file: String,
    islands: HashSet<&'a str>,
    npcs: HashMap<&'a str, &'a crate::content::NpcDef>,
    quests: HashMap<&'a str, &'a QuestDef>,
}

impl<'a> Index<'a> {
    fn new(content: &'a Content) -> Self {
        Index {
            world_file: content.root.join("world.json").display().to_string(),
            quests_file: content.root.join("quests.json").display().to_string(),
            islands: content
                .world
                .islands
                .iter()
                .map(|i| i.id.as_str())
                .collect(),
            // First definition wins; a duplicate id is reported by `check_world`.
            npcs: content
                .world
                .npcs
                .iter()
                .rev()
                .map(|n| (n.id.as_str(), n))
                .collect(),
            quests: content
                .quests
                .iter()
                .rev()
                .map(|q| (q.id.as_str(), q))
                .collect(),
        }
    }
}

fn check_world(content: &Content, index: &Index<'_>, out: &mut Vec<Diagnostic>) {
    let file = &index.world_file;
    let error = |field: String, message: String| {
        Diagnostic::error(file.clone(), Problem::Other(message)).field(field)
    };
    let mut seen = HashSet::new();
    for (i, island) in content.world.islands.iter().enumerate() {
        if !seen.insert(island.id.as_str()) {
            out.push(
                Diagnostic::error(file.clone(), Problem::Duplicate(island.id.clone()))
                    .field(format!("Islands[{}].Id", i + 1)),
            );
        }
    }
    let mut seen = HashSet::new();
    for (i, npc) in content.world.npcs.iter().enumerate() {
        let at = format!("Npcs[{}]", i + 1);
        if !seen.insert(npc.id.as_str()) {
            // Ids are what the client's hint names; two NPCs with one id make the hint ambiguous
            // again, which is the whole bug ids exist to fix (article section 7.4).
            out.push(
                Diagnostic::error(file.clone(), Problem::Duplicate(npc.id.clone()))
                    .field(format!("{at}.Id")),
            );
        }
        if !index.islands.contains(npc.island.as_str()) {
            out.push(error(
                format!("{at}.Island"),
                format!("NPC `{}` stands on unknown island `{}`", npc.id, npc.island),
            ));
        }
        if !content.merged.contains_key(&npc.conversation) {
            out.push(error(
                format!("{at}.Conversation"),
                format!(
                    "NPC `{}` speaks conversation `{}`, but no base conversation of that name \
                     was loaded (dialogue/base/{}.json is missing or has errors)",
                    npc.id, npc.conversation, npc.conversation
                ),
            ));
        }
    }
}

fn check_quests(content: &Content, index: &Index<'_>, out: &mut Vec<Diagnostic>) {
    let file = &index.quests_file;
    let error = |field: String, message: String| {
        Diagnostic::error(file.clone(), Problem::Other(message)).field(field)
    };
    let mut seen = HashSet::new();
    for (i, quest) in content.quests.iter().enumerate() {
        let at = format!("[{}]", i + 1);
        let id = &quest.id;
        if !seen.insert(id.as_str()) {
            out.push(
                Diagnostic::error(file.clone(), Problem::Duplicate(id.clone()))
                    .field(format!("{at}.Id")),
            );
        }
        for (j, prerequisite) in quest.prerequisites.iter().enumerate() {
            if !index.quests.contains_key(prerequisite.as_str()) {
                out.push(error(
                    format!("{at}.Prerequisites[{}]", j + 1),
                    format!("quest `{id}` requires unknown quest `{prerequisite}`"),
                ));
            }
        }
        let mut objectives = HashSet::new();
        for (j, objective) in quest.objectives.iter().enumerate() {
            let at = format!("{at}.Objectives[{}]", j + 1);
            if !objectives.insert(objective.id.as_str()) {
                out.push(
                    Diagnostic::error(file.clone(), Problem::Duplicate(objective.id.clone()))
                        .field(format!("{at}.Id")),
                );
            }
            if let Some(island) = &objective.island
                && !index.islands.contains(island.as_str())
            {
                out.push(error(
                    format!("{at}.Island"),
                    format!(
                        "objective `{}` of quest `{id}` is on unknown island `{island}`",
                        objective.id
                    ),
                ));
            }
        }
        let Some(giver) = index.npcs.get(quest.giver.as_str()) else {
            out.push(error(
                format!("{at}.Giver"),
                format!(
                    "quest `{id}` is given by `{}`, which is not an NPC id in world.json",
                    quest.giver
                ),
            ));
            continue;
        };
        // An unknown conversation is already reported on the NPC in world.json.
        let Some(conversation) = content.merged.get(&giver.conversation) else {
            continue;
        };
        let nodes = [
            ("Greeting", Some(&quest.nodes.greeting)),
            ("Check", Some(&quest.nodes.check)),
            ("Completion", quest.nodes.completion.as_ref()),
        ];
        for (field, node) in nodes {
            let Some(node) = node else { continue };
            if !conversation.nodes.contains_key(node) {
                out.push(error(
                    format!("{at}.Nodes.{field}"),
                    format!(
                        "quest `{id}` opens on node `{node}`, which is not in conversation `{}` \
                         of its giver `{}`",
                        giver.conversation, giver.id
                    ),
                ));
            }
        }
    }
    check_prerequisite_cycles(content, index, out);
}

/// Every objective can be advanced by something (issue 6): a `catch` objective by a `fish_caught`
/// event, a `find` objective by an `item_found` event, a `talk` objective by an AdvanceObjective
/// action authored in some conversation (or, in a cutscene quest, by the scene ending). An
/// objective nothing can advance would leave its quest active forever.
///
/// Events carry what they carry: an `item_found` event has no species, so a `find` objective
/// that filters on one never matches; and a target of 0 is refused by the store.
fn check_objectives_can_advance(content: &Content, index: &Index<'_>, out: &mut Vec<Diagnostic>) {
    use crate::content::ObjectiveKind;

    let mut spoken: HashSet<(&str, &str)> = HashSet::new();
    for graph in content.conversations.values() {
        for (id, _) in graph.vertices() {
            for (_, authored) in graph.actions(id) {
                if let Action::AdvanceObjective {
                    quest_id,
                    objective_id,
                    ..
                } = &authored.action
                {
                    spoken.insert((quest_id.as_str(), objective_id.as_str()));
                }
            }
        }
    }
    let file = &index.quests_file;
    for (i, quest) in content.quests.iter().enumerate() {
        for (j, objective) in quest.objectives.iter().enumerate() {
            let at = format!("[{}].Objectives[{}]", i + 1, j + 1);
            let never = |field: &str, why: String| {
                Diagnostic::error(
                    file.clone(),
                    Problem::Other(format!(
                        "objective `{}` of quest `{}` can never advance: {why}",
                        objective.id, quest.id
                    )),
                )
                .field(format!("{at}{field}"))
            };
            if objective.target == 0 {
                out.push(never(".Target", "its target is 0 (at least 1)".into()));
            }
            match objective.kind {
                ObjectiveKind::Catch => {}
                ObjectiveKind::Find => {
                    if let Some(species) = &objective.species {
                        out.push(never(
                            ".Species",
                            format!(
                                "it wants species `{species}`, and item_found events carry no \
                                 species"
                            ),
                        ));
                    }
                }
                ObjectiveKind::Talk => {
                    let by_scene = quest.cutscene.is_some();
                    if !by_scene && !spoken.contains(&(quest.id.as_str(), objective.id.as_str())) {
                        out.push(never(
                            "",
                            "it is a talk objective and no AdvanceObjective action in any \
                             conversation names it"
                                .into(),
                        ));
                    }
                }
            }
        }
    }
}

/// NPCs with more quests than this are not enumerated (4^n combinations); a warning says so.
const MAX_ENUMERATED_QUESTS: usize = 8;

/// The resolver is total (issue 6): for every NPC that gives quests and every reachable
/// combination of its quests' states (and every tracked quest it could be offering), the
/// QuestlineResolver yields exactly one node, and that node exists in the NPC's conversation.
///
/// A combination is reachable when each quest's status agrees with its prerequisites among this
/// NPC's quests: a quest is available, active or completed only if those are all completed, and
/// unavailable only if one of them is not, or if it has prerequisites given by other NPCs (whose
/// states are free).
fn check_resolver_totality(content: &Content, index: &Index<'_>, out: &mut Vec<Diagnostic>) {
    use crate::condition::QuestStatus;
    use crate::resolver;
    let mut seen_npcs = HashSet::new();
    for npc in &content.world.npcs {
        if !seen_npcs.insert(npc.id.as_str()) {
            continue;
        }
        let offered = resolver::offered(content, &npc.id);
        if offered.is_empty() {
            continue;
        }
        // An unknown conversation is reported on the NPC already.
        let Some(conversation) = content.merged.get(&npc.conversation) else {
            continue;
        };
        if offered.len() > MAX_ENUMERATED_QUESTS {
            out.push(Diagnostic::warning(
                index.world_file.clone(),
                Problem::Other(format!(
                    "NPC `{}` gives {} quests; the resolver's totality is checked for at most {}",
                    npc.id,
                    offered.len(),
                    MAX_ENUMERATED_QUESTS
                )),
            ));
            continue;
        }
        let position: HashMap<&str, usize> = offered
            .iter()
            .enumerate()
            .map(|(i, q)| (q.id.as_str(), i))
            .collect();
        let n = offered.len();
        let mut reported = BTreeSet::new();
        let mut statuses = vec![QuestStatus::Unavailable; n];
        for combination in 0..4usize.pow(n as u32) {
            let mut code = combination;
            for status in statuses.iter_mut() {
                *status = QuestStatus::ALL[code % 4];
                code /= 4;
            }
            let reachable = offered.iter().enumerate().all(|(i, q)| {
                let inside_done = q.prerequisites.iter().all(|p| {
                    position
                        .get(p.as_str())
                        .is_none_or(|&j| statuses[j] == QuestStatus::Completed)
                });
                let outside = q
                    .prerequisites
                    .iter()
                    .any(|p| !position.contains_key(p.as_str()));
                match statuses[i] {
                    QuestStatus::Unavailable => !inside_done || outside,
                    _ => inside_done,
                }
            });
            if !reachable {
                continue;
            }
            let status_of = |q: &QuestDef| {
                position
                    .get(q.id.as_str())
                    .map_or(QuestStatus::Unavailable, |&i| statuses[i])
            };
            let tracked = std::iter::once(None).chain(
                offered
                    .iter()
                    .filter(|q| status_of(q) == QuestStatus::Available)
                    .map(|q| Some(q.id.as_str())),
            );
            for tracked in tracked {
                let first = conversation.first_node.as_deref();
                let entry = resolver::resolve_entry(content, &npc.id, first, tracked, status_of);
                let missing = match entry {
                    None => Some("no node".to_owned()),
                    Some(node) if !conversation.nodes.contains_key(node) => Some(format!(
                        "node `{node}`, which is not in conversation `{}`",
                        npc.conversation
                    )),
                    Some(_) => None,
                };
                let Some(missing) = missing else { continue };
                if !reported.insert(missing.clone()) {
                    continue;
                }
                let states: Vec<String> = offered
                    .iter()
                    .zip(&statuses)
                    .map(|(q, s)| format!("{} {}", q.id, s.name()))
                    .collect();
                let tracked = tracked.map_or(String::new(), |t| format!(", tracking {t}"));
                out.push(
                    Diagnostic::error(
                        index.world_file.clone(),
                        Problem::Other(format!(
                            "the entry resolver of NPC `{}` yields {missing} when {}{tracked}",
                            npc.id,
                            states.join(", ")
                        )),
                    )
                    .node(npc.id.clone()),
                );
            }
        }
    }
}

/// The tutorial's stages name NPCs that exist and lockout nodes the lockout layer defines.
fn check_tutorial(content: &Content, index: &Index<'_>, out: &mut Vec<Diagnostic>) {
    let Some(tutorial) = &content.tutorial else {
        return;
    };
    let file = content.root.join("tutorial.json").display().to_string();
    let mut stages = HashSet::new();
    for (i, stage) in tutorial.stages.iter().enumerate() {
        let at = format!("Stages[{}]", i + 1);
        let error = |field: &str, message: String| {
            Diagnostic::error(file.clone(), Problem::Other(message)).field(format!("{at}.{field}"))
        };
        if stage.stage < 1 {
            out.push(error(
                "Stage",
                format!("tutorial stage {} must be 1 or more", stage.stage),
            ));
        }
        if !stages.insert(stage.stage) {
            out.push(error(
                "Stage",
                format!("tutorial stage {} is defined twice", stage.stage),
            ));
        }
        if !index.npcs.contains_key(stage.points_at.as_str()) {
            out.push(error(
                "PointsAt",
                format!(
                    "tutorial stage {} points at unknown NPC `{}`",
                    stage.stage, stage.points_at
                ),
            ));
        }
        if !content.lockout_nodes.contains(&stage.lockout) {
            out.push(error(
                "Lockout",
                format!(
                    "tutorial stage {} locks out on `{}`, which is not a node of dialogue/lockout",
                    stage.stage, stage.lockout
                ),
            ));
        }
        // The stage ends through a quest of the NPC it points at: every other NPC is locked
        // out, so a quest anyone else gives could never move the player on.
        if let Some(until) = &stage.until {
            let quest = until.quest();
            match index.quests.get(quest) {
                None => out.push(error(
                    "Until",
                    format!(
                        "tutorial stage {} ends with unknown quest `{quest}`",
                        stage.stage
                    ),
                )),
                Some(def) if def.giver != stage.points_at => out.push(error(
                    "Until",
                    format!(
                        "tutorial stage {} ends with quest `{quest}`, given by `{}`, but points \
                         at `{}`: every other NPC is locked out, so the stage could never end",
                        stage.stage, def.giver, stage.points_at
                    ),
                )),
                Some(_) => {}
            }
        }
    }
}

/// A quest that (transitively) requires itself can never become available.
fn check_prerequisite_cycles(content: &Content, index: &Index<'_>, out: &mut Vec<Diagnostic>) {
    let position: HashMap<&str, usize> = content
        .quests
        .iter()
        .enumerate()
        .rev()
        .map(|(i, q)| (q.id.as_str(), i))
        .collect();
    let adjacency: Vec<Vec<usize>> = content
        .quests
        .iter()
        .map(|q| {
            q.prerequisites
                .iter()
                .filter_map(|p| position.get(p.as_str()).copied())
                .collect()
        })
        .collect();
    for component in strongly_connected(&adjacency) {
        let cyclic = component.len() > 1 || adjacency[component[0]].contains(&component[0]);
        if !cyclic {
            continue;
        }
        let mut names: Vec<&str> = component
            .iter()
            .map(|&i| content.quests[i].id.as_str())
            .collect();
        names.sort_unstable();
        let first = component.iter().copied().min().unwrap_or(0);
        out.push(
            Diagnostic::error(
                index.quests_file.clone(),
                Problem::Other(format!(
                    "quests {} require each other, so none of them can ever become available",
                    name_list(&names)
                )),
            )
            .field(format!("[{}].Prerequisites", first + 1)),
        );
    }
}

/// Where an authored thing sits in the source: the node, and the response if it is on one.
#[derive(Clone, Debug, Default)]
struct Owner {
    node: Box<str>,
    /// 1-based response index (`Responses[i]`), `None` for the node itself.
    response: Option<u32>,
}

impl Owner {
    fn field(&self, field: &str) -> String {
        match self.response {
            Some(i) => format!("Responses[{i}].{field}"),
            None => field.to_owned(),
        }
    }
}

/// The node (and response) each vertex was built from, so a diagnostic found on the graph
/// names the source a writer edits. Responses and branches belong to the node they hang from.
fn owners(graph: &DialogueGraph) -> Vec<Owner> {
    let mut owners = vec![Owner::default(); graph.len()];
    for (id, v) in graph.vertices() {
        if v.kind != VertexKind::Prompt {
            continue;
        }
        owners[id.index()].node = v.name.clone();
        for &out in graph.outputs(id) {
            let Some(child) = graph.vertex(out) else {
                continue;
            };
            match child.kind {
                VertexKind::Response => {
                    owners[out.index()] = Owner {
                        node: v.name.clone(),
                        response: Some(child.priority),
                    };
                    for &next in graph.outputs(out) {
                        if graph
                            .vertex(next)
                            .is_some_and(|n| n.kind != VertexKind::Prompt)
                        {
                            owners[next.index()] = owners[out.index()].clone();
                        }
                    }
                }
                VertexKind::Prompt => {}
                _ => owners[out.index()].node = v.name.clone(),
            }
        }
    }
    owners
}

struct ConversationCheck<'a, 'o> {
    content: &'a Content,
    index: &'a Index<'a>,
    graph: &'a DialogueGraph,
    conversation: &'a Conversation,
    owners: Vec<Owner>,
    out: &'o mut Vec<Diagnostic>,
}

impl ConversationCheck<'_, '_> {
    fn run(mut self) {
        if self.conversation.speaker.is_none() {
            let file = self.base_file();
            self.out
                .push(Diagnostic::warning(file, Problem::NoSpeaker).field("Speaker"));
        }
        self.actions();
        self.conditions();
        self.duplicate_responses();
        self.endless_cycles();
        self.unreachable();
        self.missing_moments();
    }

    /// The file a node's final version came from.
    fn file(&self, node: &str) -> String {
        self.conversation
            .origin
            .get(node)
            .cloned()
            .unwrap_or_else(|| self.base_file())
    }

    /// The base file of the conversation, for problems of the conversation as a whole.
    fn base_file(&self) -> String {
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
    fn error(&self, owner: &Owner, field: &str, problem: Problem) -> Diagnostic {
        Diagnostic::error(self.file(&owner.node), problem)
            .node(&*owner.node)
            .field(owner.field(field))
    }

    /// Every authored action names a quest, objective, island and node that exist.
    fn actions(&mut self) {
        let mut found = Vec::new();
        for (id, _) in self.graph.vertices() {
            let owner = &self.owners[id.index()];
            for (k, (_, authored)) in self.graph.actions(id).enumerate() {
                let at = format!("Actions[{}]", k + 1);
                let unknown = |what: &'static str, name: &str, field: &str| {
                    self.error(
                        owner,
                        &format!("{at}.{field}"),
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
                            found.push(self.error(owner, &at, Problem::CheckQuestTargets));
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
            condition.visit_references(&mut |reference| match reference {
                Reference::Fact(_) => {}
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
        let speakers: HashSet<&str> = self
            .content
            .world
            .npcs
            .iter()
            .filter(|n| n.conversation == name)
            .map(|n| n.id.as_str())
            .collect();
        for quest in &self.content.quests {
            if speakers.contains(quest.giver.as_str()) {
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
fn possible_lines(graph: &DialogueGraph, from: VertexId) -> Vec<VertexId> {
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

/// "`A`, `B` and `C`", at most ten names, so a huge cycle gives one readable line.
fn name_list(names: &[&str]) -> String {
    const SHOWN: usize = 10;
    let quoted: Vec<String> = names.iter().take(SHOWN).map(|n| format!("`{n}`")).collect();
    let mut text = match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] if names.len() <= SHOWN => format!("{} and {last}", init.join(", ")),
        all => all.join(", "),
    };
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

/// Strongly connected components (Tarjan), with an explicit stack instead of recursion so a
/// chain as long as the content cannot overflow the thread's stack. Components come out in
/// reverse topological order; each lists its members in the order they were closed.
pub(crate) fn strongly_connected(adjacency: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const UNVISITED: usize = usize::MAX;
    let n = adjacency.len();
    let mut index = vec![UNVISITED; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    // (vertex, index of the next successor to look at): the frames recursion would keep.
    let mut calls: Vec<(usize, usize)> = Vec::new();
    let mut next_index = 0;
    let mut components = Vec::new();
    for root in 0..n {
        if index[root] != UNVISITED {
            continue;
        }
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root] = true;
        calls.push((root, 0));
        while let Some(frame) = calls.last_mut() {
            let v = frame.0;
            if let Some(&w) = adjacency[v].get(frame.1) {
                frame.1 += 1;
                if w >= n {
                    continue;
                }
                if index[w] == UNVISITED {
                    index[w] = next_index;
                    low[w] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tarjan_finds_cycles_and_survives_long_chains() {
        let adjacency = vec![vec![1], vec![2], vec![0, 3], vec![3], vec![]];
        let mut components: Vec<Vec<usize>> = strongly_connected(&adjacency)
            .into_iter()
            .map(|mut c| {
                c.sort_unstable();
                c
            })
            .collect();
        components.sort();
        assert_eq!(components, vec![vec![0, 1, 2], vec![3], vec![4]]);

        // A million-long chain closing into one cycle: recursion would overflow here.
        let n = 1_000_000;
        let chain: Vec<Vec<usize>> = (0..n).map(|i| vec![(i + 1) % n]).collect();
        let components = strongly_connected(&chain);
        assert_eq!(components.len(), 1);
        assert_eq!(components[0].len(), n);
    }

    #[test]
    fn name_lists_read_well() {
        assert_eq!(name_list(&["A"]), "`A`");
        assert_eq!(name_list(&["A", "B", "C"]), "`A`, `B` and `C`");
        let many: Vec<String> = (0..12).map(|i| format!("N{i:02}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(
            name_list(&many).ends_with(" and 2 more"),
            "{}",
            name_list(&many)
        );
    }
}
