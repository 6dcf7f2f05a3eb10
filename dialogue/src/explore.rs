//! Exploration: every conversation walked under every quest state the questline allows, to
//! find what no player can ever see or do (`test-content --explore`).
//!
//! The states are the questline's own progression: quests in the order a player can meet them
//! (each after its prerequisites, otherwise in the order of the quest files), each in turn
//! available, active with no progress, active with every objective done, and just completed
//! (what it unlocks available), the quests before it completed (so prerequisites hold the way a
//! player meets them); and each met last, every quest that does not need it completed first
//! (so a line that reads another giver's quest beside an offer is walked). Each is walked five
//! ways, so both sides of each tag, counter, variable and visit condition are taken:
//!
//! - a newcomer: no tag or counter condition holds, `opens` is 0, nothing was seen before, and
//!   every story variable has its `Default`;
//! - rich: every counter is high (`coins >= 100` and `opens >= 1` hold), and each story
//!   variable has a value some `SetVariable` gives it (one state per value, for a variable the
//!   content sets to several);
//! - tagged and rich: `has(PostReveal)` holds too;
//! - returning: tagged and rich, with every line shown (and response picked) many times before
//!   (`visited(...)` holds, every `Once` line and response is spent), the variables at their
//!   defaults;
//! - returning, with the variables set as for rich.
//!
//! Within a walk, visits follow the walk's own counting (a `Once` line shown in it is passed over
//! after), and a `SetVariable` the path runs gives the variable its value for the rest of the
//! path: a line's when it is shown, a response's once the player moves past it, as the server
//! applies them.
//!
//! For each NPC the entries are the ones the server can pick: the resolver's, untracked and with
//! each quest some `TrackQuest` action can track; and during each tutorial stage, the stage's
//! lockout line for every NPC it does not point at. An entry that is the greeting of an available
//! cutscene quest opens no conversation (the server accepts the quest and plays the scene), so
//! nothing is walked from it. From an entry every choice is taken, every line advanced past,
//! and a quest check's jump followed to both its targets, exhaustively: the walk never shows a
//! line twice in one run, so it ends. Where the next line is a line group's pick that depends on
//! what the player saw before or on the seed (`LeastRecent`, `Weighted`), or on facts the states
//! cannot all produce (`MostSpecific`: a candidate wins when the more specific ones fail), every
//! candidate that holds is taken as the next line in turn; a `First` group (a list) takes the
//! first that holds, as the walk does.
//!
//! What it reports, one finding each: NPC lines never reached, responses never offered,
//! actions never armed, quests never completed (no `CompleteQuest` for them ever armed, and no
//! cutscene that completes them), and dead ends (a line whose responses are all hidden in some
//! state, so the player can only walk away). A line the lockout layer adds to every conversation
//! is one line, as the string tables count it, reached if any NPC opens on it.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use banter_protocol::{Action, QuestStatus, VarValue};

use crate::condition::{Counter, Facts, VarRef};
use crate::content::{Content, NpcDef, QuestDef};
use crate::graph::{ActionIndex, DialogueGraph, Vertex, VertexId, VertexKind};
use crate::resolver::{cutscene_offer, resolve_entry};
use crate::walk::{Shown, Walk};

/// How often a returning player ([`ExploreState::seen`]) was shown every line before: enough
/// for any `visits(...) >= n` a writer means.
pub const SEEN_VISITS: u32 = 1_000_000;

/// A player's facts for exploring: quest statuses and progress, whether every tag and counter
/// condition holds (`rich`) or none does, whether every line was seen before, and the story
/// variables.
#[derive(Clone, Debug)]
pub struct ExploreState {
    pub label: String,
    pub quests: BTreeMap<String, QuestStatus>,
    pub progress: BTreeMap<(String, String), u32>,
    /// Every `has(...)` holds.
    pub tagged: bool,
    /// Every counter is high (`coins >= 100` holds, `opens` too), or zero.
    pub rich: bool,
    /// Every line was shown, and every response picked, [`SEEN_VISITS`] times before; or none.
    pub seen: bool,
    /// The story variables at the start of a walk: every declared one (its default, or a value
    /// some `SetVariable` gives it); a walk path's own `SetVariable`s change its copy.
    pub vars: BTreeMap<String, VarValue>,
}

impl Facts for ExploreState {
    fn quest_status(&self, quest: &str) -> QuestStatus {
        self.quests
            .get(quest)
            .copied()
            .unwrap_or(QuestStatus::Unavailable)
    }
    fn objective_progress(&self, quest: &str, objective: &str) -> u32 {
        self.progress
            .get(&(quest.to_owned(), objective.to_owned()))
            .copied()
            .unwrap_or(0)
    }
    fn has(&self, _name: &str) -> bool {
        self.tagged
    }
    fn counter(&self, _counter: Counter) -> i64 {
        if self.rich { 1_000_000 } else { 0 }
    }
    fn variable(&self, name: &str) -> Option<VarRef<'_>> {
        self.vars.get(name).map(VarRef::of)
    }
    fn visits(&self, _vertex: &str) -> u32 {
        if self.seen { SEEN_VISITS } else { 0 }
    }
}

/// A state's facts on one walk path: its story variables as the path set them.
struct PathFacts<'a> {
    state: &'a ExploreState,
    vars: &'a BTreeMap<String, VarValue>,
}

impl Facts for PathFacts<'_> {
    fn quest_status(&self, quest: &str) -> QuestStatus {
        self.state.quest_status(quest)
    }
    fn objective_progress(&self, quest: &str, objective: &str) -> u32 {
        self.state.objective_progress(quest, objective)
    }
    fn has(&self, name: &str) -> bool {
        self.state.has(name)
    }
    fn counter(&self, counter: Counter) -> i64 {
        self.state.counter(counter)
    }
    fn variable(&self, name: &str) -> Option<VarRef<'_>> {
        self.vars.get(name).map(VarRef::of)
    }
    fn visits(&self, vertex: &str) -> u32 {
        self.state.visits(vertex)
    }
}

/// One thing exploration found.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// The file that wrote it (the conversation's base file, or the quests file).
    pub file: String,
    pub message: String,
}

/// What exploration saw and found.
#[derive(Clone, Debug, Default)]
pub struct Exploration {
    pub states: usize,
    pub walks: usize,
    /// NPC lines reached, of all lines.
    pub lines_reached: usize,
    pub lines: usize,
    pub findings: Vec<Finding>,
}

impl Exploration {
    /// Lines reached as a whole percentage (100 only when all are).
    pub fn percent_reached(&self) -> usize {
        (self.lines_reached * 100)
            .checked_div(self.lines)
            .unwrap_or(100)
    }
}

/// The quests in the order a player can meet them: each after its prerequisites, otherwise in
/// the order of the quest files. A quest whose prerequisites can never all be completed (an
/// unknown one, or a cycle: `check-content` reports both) is left out, since no player ever
/// has it.
pub fn questline(content: &Content) -> Vec<&QuestDef> {
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::new();
    // Each round places the first quest in file order whose prerequisites are all placed.
    while let Some(next) = content.quests.iter().find(|q| {
        !placed.contains(q.id.as_str())
            && q.prerequisites.iter().all(|p| placed.contains(p.as_str()))
    }) {
        placed.insert(&next.id);
        out.push(next);
    }
    out
}

/// The questline's states, in the order a player meets them.
pub fn states(content: &Content) -> Vec<ExploreState> {
    let mut out = Vec::new();
    let mut done: BTreeSet<&str> = BTreeSet::new();
    let base = |done: &BTreeSet<&str>| -> BTreeMap<String, QuestStatus> {
        content
            .quests
            .iter()
            .map(|q| {
                let status = if done.contains(q.id.as_str()) {
                    QuestStatus::Completed
                } else if q.prerequisites.iter().all(|p| done.contains(p.as_str())) {
                    QuestStatus::Available
                } else {
                    QuestStatus::Unavailable
                };
                (q.id.clone(), status)
            })
            .collect()
    };
    let defaults: BTreeMap<String, VarValue> = content
        .variables
        .declared
        .iter()
        .map(|(name, d)| (name.clone(), d.default.clone()))
        .collect();
    let set = variables_set(content);
    let sets = set.len();
    let mut push = |label: String, quests, progress: BTreeMap<(String, String), u32>| {
        let mut ways = vec![(false, false, false, &defaults, String::new())];
        for (k, vars) in set.iter().enumerate() {
            let which = if sets > 1 {
                format!(" (variables set #{})", k + 1)
            } else {
                String::new()
            };
            ways.push((false, true, false, vars, format!(", rich{which}")));
            ways.push((true, true, false, vars, format!(", tagged and rich{which}")));
        }
        ways.push((true, true, true, &defaults, ", returning".to_owned()));
        for (k, vars) in set
            .iter()
            .enumerate()
            .filter(|(_, vars)| **vars != defaults)
        {
            let which = if sets > 1 {
                format!(" #{}", k + 1)
            } else {
                String::new()
            };
            ways.push((
                true,
                true,
                true,
                vars,
                format!(", returning, variables set{which}"),
            ));
        }
        for (tagged, rich, seen, vars, how) in ways {
            out.push(ExploreState {
                label: format!("{label}{how}"),
                quests: Clone::clone(&quests),
                progress: progress.clone(),
                tagged,
                rich,
                seen,
                vars: vars.clone(),
            });
        }
    };
    push("a new player".into(), base(&done), BTreeMap::new());
    for quest in questline(content) {
        // Its prerequisites are all done here: it is available, and a player can take it.
        let mut active = base(&done);
        active.insert(quest.id.clone(), QuestStatus::Active);
        push(
            format!("{} active", quest.id),
            active.clone(),
            BTreeMap::new(),
        );
        let finished = objectives_done(quest);
        push(
            format!("{} active, objectives done", quest.id),
            active,
            finished,
        );
        done.insert(&quest.id);
        // Just completed: the quests it unlocks are available here, before any is taken.
        push(
            format!("{} completed", quest.id),
            base(&done),
            BTreeMap::new(),
        );
    }
    push("every quest completed".into(), base(&done), BTreeMap::new());
    // Each quest met last, too: every quest that does not need it completed first, in any order
    // (they need none of it, so a player can), and it available or active. Content that
    // reads another giver's quest (`quest(X) == completed`) beside an offer is walked there.
    let line = questline(content);
    for quest in &line {
        let others: BTreeSet<&str> = line
            .iter()
            .filter(|q| q.id != quest.id && !needs(content, q, &quest.id))
            .map(|q| q.id.as_str())
            .collect();
        let available = base(&others);
        let mut active = available.clone();
        active.insert(quest.id.clone(), QuestStatus::Active);
        let finished = objectives_done(quest);
        push(
            format!("{} available, met last", quest.id),
            available,
            BTreeMap::new(),
        );
        push(
            format!("{} active, met last", quest.id),
            active.clone(),
            BTreeMap::new(),
        );
        push(
            format!("{} active, objectives done, met last", quest.id),
            active,
            finished,
        );
    }
    out
}

/// The story variables as the content's `SetVariable`s leave them: for each `k` below the most
/// values any one variable is set to, every declared variable at the `k`-th value it is set to
/// (in content order; its last for one set to fewer, its default for one never set). At least
/// one: the defaults, for content without variables.
fn variables_set(content: &Content) -> Vec<BTreeMap<String, VarValue>> {
    let declared = &content.variables.declared;
    let mut values: BTreeMap<&str, Vec<VarValue>> = BTreeMap::new();
    for graph in content.conversations.values() {
        for authored in graph.all_actions() {
            if let Action::SetVariable { variable, value } = &authored.action
                && let Some(d) = declared.get(variable.as_str())
                && let Some(value) = d.ty.parse(value)
            {
                let list = values.entry(variable.as_str()).or_default();
                if !list.contains(&value) {
                    list.push(value);
                }
            }
        }
    }
    let most = values.values().map(Vec::len).max().unwrap_or(1);
    (0..most)
        .map(|k| {
            declared
                .iter()
                .map(|(name, d)| {
                    let value = values
                        .get(name.as_str())
                        .and_then(|list| list.get(k).or(list.last()))
                        .unwrap_or(&d.default);
                    (name.clone(), value.clone())
                })
                .collect()
        })
        .collect()
}

/// Progress with every objective of `quest` at its target.
fn objectives_done(quest: &QuestDef) -> BTreeMap<(String, String), u32> {
    quest
        .objectives
        .iter()
        .map(|o| ((quest.id.clone(), o.id.clone()), o.target))
        .collect()
}

/// True if `quest` needs `other` completed first, directly or through its prerequisites.
fn needs(content: &Content, quest: &QuestDef, other: &str) -> bool {
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut stack: Vec<&str> = quest.prerequisites.iter().map(String::as_str).collect();
    while let Some(id) = stack.pop() {
        if id == other {
            return true;
        }
        if seen.insert(id)
            && let Some(q) = content.quest(id)
        {
            stack.extend(q.prerequisites.iter().map(String::as_str));
        }
    }
    false
}

/// The quests a player can be tracking: those some `TrackQuest` action names. Nothing else sets
/// a profile's tracked quest, and it stays set after the quest completes.
fn trackable(content: &Content) -> BTreeSet<&str> {
    content
        .conversations
        .values()
        .flat_map(|g| g.all_actions())
        .filter_map(|a| match &a.action {
            Action::TrackQuest { quest_id } => Some(quest_id.as_str()),
            _ => None,
        })
        .collect()
}

/// Where a conversation with `npc` can open in `state`: as the server picks it (the tutorial's
/// lockout line in each stage that does not point at it; the resolver's entry, untracked and
/// with each trackable quest), less an available cutscene quest's greeting, which opens no
/// conversation. Sorted, once each.
fn entries<'c>(
    content: &'c Content,
    npc: &NpcDef,
    state: &ExploreState,
    trackable: &BTreeSet<&str>,
) -> BTreeSet<&'c str> {
    let mut out = BTreeSet::new();
    if let Some(tutorial) = &content.tutorial {
        out.extend(
            tutorial
                .stages
                .iter()
                .filter_map(|s| crate::tutorial::lockout_entry(content, s.stage, &npc.id)),
        );
    }
    let first = content
        .merged
        .get(&npc.conversation)
        .and_then(|m| m.first_node.as_deref());
    let status = |q: &QuestDef| state.quest_status(&q.id);
    let tracked = std::iter::once(None).chain(trackable.iter().copied().map(Some));
    for tracked in tracked {
        let Some(entry) = resolve_entry(content, &npc.id, first, tracked, status) else {
            continue;
        };
        if cutscene_offer(content, &npc.id, entry, status).is_none() {
            out.insert(entry);
        }
    }
    out
}

/// Explores every conversation of `content`.
pub fn explore(content: &Content) -> Exploration {
    let states = states(content);
    let trackable = trackable(content);
    let mut seen = Seen::default();
    let mut walks = 0;
    for state in &states {
        for npc in &content.world.npcs {
            let Some(graph) = content.conversation(&npc.conversation) else {
                continue;
            };
            for entry in entries(content, npc, state, &trackable) {
                let Some(entry) = graph.find(entry) else {
                    continue;
                };
                walks += 1;
                walk_all(&npc.conversation, graph, entry, state, &mut seen);
            }
        }
    }
    let mut exploration = Exploration {
        states: states.len(),
        walks,
        ..Exploration::default()
    };
    report(content, &seen, &mut exploration);
    exploration
}

/// Everything any run saw, by conversation.
#[derive(Default)]
struct Seen {
    lines: BTreeSet<(String, VertexId)>,
    offered: BTreeSet<(String, VertexId)>,
    armed: BTreeSet<(String, ActionIndex)>,
    dead_ends: BTreeMap<(String, VertexId), String>,
}

/// Walks every path from `entry` in one state.
fn walk_all(
    conversation: &str,
    graph: &DialogueGraph,
    entry: VertexId,
    state: &ExploreState,
    seen: &mut Seen,
) {
    let start = Rc::new(state.vars.clone());
    let facts = PathFacts {
        state,
        vars: &start,
    };
    let Ok((walk, shown)) = Walk::open(graph, entry, &facts) else {
        return;
    };
    let mut shown_in_run: BTreeSet<VertexId> = BTreeSet::new();
    let mut stack = vec![(walk, shown, start)];
    // A bound on the work per run for content far larger than any conversation.
    let mut budget = 100_000usize;
    while let Some((walk, shown, vars)) = stack.pop() {
        budget = budget.saturating_sub(1);
        if budget == 0 {
            break;
        }
        let Shown::Line(line) = shown else {
            continue;
        };
        if !shown_in_run.insert(line) {
            continue;
        }
        let key = conversation.to_owned();
        seen.lines.insert((key.clone(), line));
        for (index, _) in graph.actions(line) {
            seen.armed.insert((key.clone(), index));
        }
        let Some(vertex) = graph.vertex(line) else {
            continue;
        };
        // The line's own `SetVariable`s run as it is shown: the player's next step reads them.
        let vars = run_set_variables(graph, line, state, vars);
        let facts = PathFacts { state, vars: &vars };
        if vertex.awaits_jump {
            // The server's answer to a quest check: both ways.
            for target in check_targets(graph, line) {
                let mut next = walk.clone();
                if let Ok(shown) = next.jump_to(graph, target, &facts) {
                    stack.push((next, shown, vars.clone()));
                }
            }
            continue;
        }
        let choices: Vec<VertexId> = walk.choices(graph, line, &facts).collect();
        let has_responses = graph.outputs(line).iter().any(|o| {
            graph
                .vertex(*o)
                .is_some_and(|v| v.kind == VertexKind::Response)
        });
        if choices.is_empty() {
            if has_responses {
                seen.dead_ends
                    .entry((key, line))
                    .or_insert_with(|| state.label.clone());
                continue;
            }
            let mut next = walk.clone();
            if let Ok(shown) = next.advance(graph, line, &facts) {
                // Every other line the step could show: a group's other candidates.
                for other in other_picks(graph, &walk, line, None, &facts, shown) {
                    let mut alt = walk.clone();
                    if alt.follow_advanced(graph, Some(other), &facts).is_ok() {
                        stack.push((alt, Shown::Line(other), vars.clone()));
                    }
                }
                stack.push((next, shown, vars.clone()));
            }
            continue;
        }
        for response in choices {
            seen.offered.insert((key.clone(), response));
            let mut next = walk.clone();
            let Ok(shown) = next.choose(graph, response, &facts) else {
                continue;
            };
            for (index, _) in graph.actions(response) {
                seen.armed.insert((key.clone(), index));
            }
            // The response's `SetVariable`s run once the player moves past it: the next line
            // was picked before, and its responses read them.
            let after = run_set_variables(graph, response, state, vars.clone());
            match shown {
                Shown::AwaitJump => {
                    let facts = PathFacts {
                        state,
                        vars: &after,
                    };
                    for target in check_targets(graph, response) {
                        let mut jumped = next.clone();
                        if let Ok(shown) = jumped.jump_to(graph, target, &facts) {
                            stack.push((jumped, shown, after.clone()));
                        }
                    }
                }
                shown => {
                    for other in other_picks(graph, &walk, response, Some(response), &facts, shown)
                    {
                        let mut alt = walk.clone();
                        if alt
                            .follow_chosen(graph, response, Some(other), &facts)
                            .is_ok()
                        {
                            stack.push((alt, Shown::Line(other), after.clone()));
                        }
                    }
                    stack.push((next, shown, after));
                }
            }
        }
    }
}

/// `vars` with the `SetVariable`s authored on `v` applied (a value not of the variable's
/// declared type, which `check-content` refuses, is left out).
fn run_set_variables(
    graph: &DialogueGraph,
    v: VertexId,
    state: &ExploreState,
    vars: Rc<BTreeMap<String, VarValue>>,
) -> Rc<BTreeMap<String, VarValue>> {
    let mut vars = vars;
    for (_, authored) in graph.actions(v) {
        let Action::SetVariable { variable, value } = &authored.action else {
            continue;
        };
        let Some(ty) = state.vars.get(variable).map(crate::condition::VarType::of) else {
            continue;
        };
        if let Some(value) = ty.parse(value)
            && vars.get(variable) != Some(&value)
        {
            Rc::make_mut(&mut vars).insert(variable.clone(), value);
        }
    }
    vars
}

/// The lines other than `shown` that the step from `from` (a line advanced past, or the
/// response `picked`) could show for another player: when the next line is a line group's pick
/// that depends on what was seen before or on the seed (`LeastRecent`, `Weighted`), or on facts
/// no state isolates (`MostSpecific`), every other candidate that holds. `walk` is the walk
/// before the step.
fn other_picks(
    graph: &DialogueGraph,
    walk: &Walk,
    from: VertexId,
    picked: Option<VertexId>,
    facts: &PathFacts<'_>,
    shown: Shown,
) -> Vec<VertexId> {
    walk.group_candidates(graph, from, picked, facts)
        .into_iter()
        .filter(|&c| Shown::Line(c) != shown)
        .collect()
}

/// The success and failure nodes of the quest checks on `v`.
fn check_targets(graph: &DialogueGraph, v: VertexId) -> Vec<VertexId> {
    graph
        .actions(v)
        .filter_map(|(_, a)| match &a.action {
            Action::CheckQuest {
                success_node,
                failure_node,
                ..
            } => Some([success_node.clone(), failure_node.clone()]),
            _ => None,
        })
        .flatten()
        .filter_map(|name| graph.find(&name))
        .collect()
}

/// The node a vertex is written in: a response `<Node>_r<i>` is written in `<Node>`.
fn node_of(vertex: &Vertex) -> &str {
    match vertex.name.rsplit_once("_r") {
        Some((node, i))
            if vertex.kind == VertexKind::Response
                && !i.is_empty()
                && i.bytes().all(|b| b.is_ascii_digit()) =>
        {
            node
        }
        _ => &vertex.name,
    }
}

fn report(content: &Content, seen: &Seen, out: &mut Exploration) {
    let mut completed: BTreeSet<String> = BTreeSet::new();
    // The lockout layer's findings, once each whatever the conversation: (file, message) to
    // whether any conversation reached it, and whether it is a line.
    let mut lockout: BTreeMap<(String, String), (bool, bool)> = BTreeMap::new();
    for (name, graph) in &content.conversations {
        let file = content
            .merged
            .get(name)
            .map(|m| m.base_file.clone())
            .unwrap_or_default();
        for (id, vertex) in graph.vertices() {
            let key = (name.clone(), id);
            // The file that wrote the node (a layer's, for a node a layer adds or replaces).
            let node = node_of(vertex);
            let file = content
                .merged
                .get(name)
                .and_then(|m| m.origin.get(node))
                .cloned()
                .unwrap_or_else(|| file.clone());
            // A lockout node is in every conversation, and one line in them all.
            let shared = content.lockout_nodes.contains(node);
            let place = if shared {
                "lockout layer".to_owned()
            } else {
                format!("conversation {name}")
            };
            let mut found = |file: String, message: String, reached: bool, line: bool| {
                if shared {
                    let entry = lockout.entry((file, message)).or_insert((false, line));
                    entry.0 |= reached;
                    return;
                }
                if line {
                    out.lines += 1;
                    out.lines_reached += usize::from(reached);
                }
                if !reached {
                    out.findings.push(Finding { file, message });
                }
            };
            match vertex.kind {
                VertexKind::Prompt => found(
                    file.clone(),
                    format!(
                        "{place}: node `{}` is never reached in any quest state",
                        vertex.name
                    ),
                    seen.lines.contains(&key),
                    true,
                ),
                VertexKind::Response => found(
                    file.clone(),
                    format!(
                        "{place}: response `{}` (\"{}\") is never offered",
                        vertex.name, vertex.text
                    ),
                    seen.offered.contains(&key),
                    false,
                ),
                _ => {}
            }
            for (index, action) in graph.actions(id) {
                let armed = seen.armed.contains(&(name.clone(), index));
                if armed && let Action::CompleteQuest { quest_id } = &action.action {
                    completed.insert(quest_id.clone());
                }
                found(
                    file.clone(),
                    format!(
                        "{place}: action {} `{}` on `{}` is never armed",
                        action.action_type.name(),
                        action.payload,
                        vertex.name
                    ),
                    armed,
                    false,
                );
            }
        }
    }
    for ((file, message), (reached, line)) in lockout {
        if line {
            out.lines += 1;
            out.lines_reached += usize::from(reached);
        }
        if !reached {
            out.findings.push(Finding { file, message });
        }
    }
    for ((name, line), state) in &seen.dead_ends {
        let vertex = content
            .conversation(name)
            .and_then(|g| g.vertex(*line))
            .map(|v| v.name.to_string())
            .unwrap_or_default();
        let file = content
            .merged
            .get(name)
            .map(|m| m.base_file.clone())
            .unwrap_or_default();
        out.findings.push(Finding {
            file,
            message: format!(
                "conversation {name}: dead end at `{vertex}`: every response is hidden for {state}; the player can only walk away"
            ),
        });
    }
    for quest in &content.quests {
        if quest.cutscene.is_none() && !completed.contains(&quest.id) {
            out.findings.push(Finding {
                file: content.root.join("quests.json").display().to_string(),
                message: format!(
                    "quest `{}` can never be completed: no CompleteQuest for it is ever armed",
                    quest.id
                ),
            });
        }
    }
    out.findings.sort();
    out.findings.dedup();
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::canonical::parse_conversation_with_limit;
    use crate::content::{NpcDef, Vec3, World};
    use crate::layers::{Layer, merge};
    use crate::tutorial::TutorialDef;

    /// Content from inline files: quests.json, `(npc id, conversation)` pairs (each NPC speaks
    /// the conversation of that name), `(name, json)` base conversations, and an optional
    /// lockout layer and tutorial.
    fn content(
        quests: &str,
        npcs: &[(&str, &str)],
        conversations: &[(&str, &str)],
        lockout: Option<&str>,
        tutorial: Option<&str>,
    ) -> Content {
        content_with_variables("{}", quests, npcs, conversations, lockout, tutorial)
    }

    /// [`content`] with a `variables.json`, whose derived variables are written into the
    /// conditions as the loader writes them.
    fn content_with_variables(
        variables: &str,
        quests: &str,
        npcs: &[(&str, &str)],
        conversations: &[(&str, &str)],
        lockout: Option<&str>,
        tutorial: Option<&str>,
    ) -> Content {
        let mut diagnostics = Vec::new();
        let variables = crate::variables::Variables::parse(
            "variables.json",
            variables.as_bytes(),
            &mut diagnostics,
        );
        let parse = |file: &str, json: &str, diagnostics: &mut Vec<_>| {
            parse_conversation_with_limit(file, json.as_bytes(), u64::MAX, diagnostics)
                .expect("a conversation")
        };
        let lockout = lockout.map(|json| parse("lockout/Tutorial.json", json, &mut diagnostics));
        let mut content = Content {
            quests: serde_json::from_str(quests).expect("quests"),
            world: World {
                islands: Vec::new(),
                npcs: npcs
                    .iter()
                    .map(|(id, conversation)| NpcDef {
                        id: (*id).into(),
                        name: (*id).into(),
                        island: "isle".into(),
                        position: Vec3::default(),
                        range: 8.0,
                        conversation: (*conversation).into(),
                    })
                    .collect(),
            },
            tutorial: tutorial
                .map(|json| serde_json::from_str::<TutorialDef>(json).expect("tutorial")),
            variables,
            ..Content::default()
        };
        if let Some(lockout) = &lockout {
            content.lockout_nodes.extend(lockout.nodes.keys().cloned());
        }
        for (name, json) in conversations {
            let base = parse(&format!("base/{name}.json"), json, &mut diagnostics);
            let layers: Vec<(Layer, &_)> = lockout.iter().map(|l| (Layer::Lockout, l)).collect();
            let mut merged = merge(name, &base, &layers, &mut diagnostics);
            content.variables.inline_into(&mut merged);
            let graph = DialogueGraph::build(&merged, &mut diagnostics);
            content
                .conversations
                .insert((*name).into(), Arc::new(graph));
            content.merged.insert((*name).into(), merged);
        }
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        content
    }

    /// Content with one NPC, `a`, speaking conversation `A`: the plain [`giver`] of `quest_ids`.
    fn one_giver(quests: &str, quest_ids: &[&str]) -> Content {
        content(
            quests,
            &[("a", "A")],
            &[("A", &giver(quest_ids, ""))],
            None,
            None,
        )
    }

    fn quest(id: &str, giver: &str, prerequisites: &[&str], extra: &str) -> String {
        format!(
            r#"{{ "Id": "{id}", "Giver": "{giver}", "Kind": "side", "Prerequisites": {prerequisites:?},
                 "Objectives": [ {{ "Id": "O", "Kind": "talk" }} ]{extra},
                 "Nodes": {{ "Greeting": "{id}_Greet", "Check": "{id}_Check" }} }}"#
        )
    }

    /// A quest giver's conversation: each of `quests` has a greeting that accepts it and a check
    /// line that completes it, plus `extra` nodes. Its FirstNode is `AllDone`, where a quest giver
    /// does open (never on its FirstNode as such).
    fn giver(quests: &[&str], extra: &str) -> String {
        let mut nodes = vec![
            r#""FirstNode": "AllDone", "Speaker": "Giver",
               "AllDone": { "Text": "All done.", "Close": true }"#
                .to_owned(),
        ];
        for q in quests {
            nodes.push(format!(
                r#""{q}_Greet": {{ "Text": "Will you?", "Responses": [
                     {{ "Text": "Yes.", "NextNode": "{q}_Accepted",
                       "Actions": [ {{ "Type": "AcceptQuest", "QuestId": "{q}" }} ] }} ] }},
                   "{q}_Accepted": {{ "Text": "Thanks.", "Close": true }},
                   "{q}_Check": {{ "Text": "Done.", "Close": true,
                     "Actions": [ {{ "Type": "CompleteQuest", "QuestId": "{q}" }} ] }}"#
            ));
        }
        if !extra.is_empty() {
            nodes.push(extra.to_owned());
        }
        format!("{{ {} }}", nodes.join(",\n"))
    }

    fn messages(found: &Exploration) -> Vec<&str> {
        found.findings.iter().map(|f| f.message.as_str()).collect()
    }

    #[test]
    fn a_quest_written_before_its_prerequisite_is_still_offered_once_that_is_done() {
        // `Later` needs `First`, but comes first in the file (as sorted, generated quests can).
        let quests = format!(
            "[{}, {}]",
            quest("Later", "b", &["First"], ""),
            quest("First", "a", &[], "")
        );
        let content = content(
            &quests,
            &[("a", "A"), ("b", "B")],
            &[("A", &giver(&["First"], "")), ("B", &giver(&["Later"], ""))],
            None,
            None,
        );
        let line: Vec<&str> = questline(&content).iter().map(|q| q.id.as_str()).collect();
        assert_eq!(line, ["First", "Later"]);
        // No state has a quest active, or completed, before what it needs is completed.
        for state in states(&content) {
            if state.quest_status("Later") != QuestStatus::Unavailable {
                assert_eq!(
                    state.quest_status("First"),
                    QuestStatus::Completed,
                    "{}",
                    state.label
                );
            }
        }
        let found = explore(&content);
        assert!(found.findings.is_empty(), "{:?}", messages(&found));
        assert_eq!(found.lines_reached, found.lines);
    }

    #[test]
    fn a_quest_whose_prerequisite_never_completes_is_never_active() {
        let quests = format!("[{}]", quest("Orphan", "a", &["Nowhere"], ""));
        let content = one_giver(&quests, &["Orphan"]);
        assert!(questline(&content).is_empty());
        let found = explore(&content);
        assert!(
            messages(&found).contains(
                &"conversation A: node `Orphan_Greet` is never reached in any quest state"
            ),
            "{:?}",
            messages(&found)
        );
    }

    #[test]
    fn only_a_quest_some_action_tracks_opens_on_its_greeting_out_of_turn() {
        // Two available quests: the resolver offers the first, unless the player tracks the
        // second, which only a TrackQuest action can make them do.
        let quests = format!(
            "[{}, {}]",
            quest("One", "a", &[], ""),
            quest("Two", "a", &[], "")
        );
        let untracked = content(
            &quests,
            &[("a", "A")],
            &[("A", &giver(&["One", "Two"], ""))],
            None,
            None,
        );
        let fresh = &states(&untracked)[0];
        let npc = &untracked.world.npcs[0];
        let none = trackable(&untracked);
        assert!(none.is_empty());
        assert_eq!(
            entries(&untracked, npc, fresh, &none),
            BTreeSet::from(["One_Greet"])
        );

        let tracking = r#""Board": { "Text": "Notices.", "Close": true,
            "Actions": [ { "Type": "TrackQuest", "QuestId": "Two" } ] }"#;
        let tracked = content(
            &quests,
            &[("a", "A"), ("board", "Board")],
            &[
                ("A", &giver(&["One", "Two"], "")),
                (
                    "Board",
                    &format!(r#"{{ "FirstNode": "Board", {tracking} }}"#),
                ),
            ],
            None,
            None,
        );
        let two = trackable(&tracked);
        assert_eq!(two, BTreeSet::from(["Two"]));
        assert_eq!(
            entries(&tracked, &tracked.world.npcs[0], fresh, &two),
            BTreeSet::from(["One_Greet", "Two_Greet"])
        );
    }

    #[test]
    fn an_available_cutscene_quest_opens_no_conversation() {
        // Talking to the giver accepts the quest and plays the scene: its greeting is never
        // shown. A player whose scene was cut short opens on the check line.
        let quests = format!(
            "[{}]",
            quest("Scene", "a", &[], r#", "Cutscene": "Lighting""#)
        );
        let content = one_giver(&quests, &["Scene"]);
        let found = explore(&content);
        let messages = messages(&found);
        assert!(
            messages.contains(
                &"conversation A: node `Scene_Greet` is never reached in any quest state"
            ),
            "{messages:?}"
        );
        assert!(
            !messages.iter().any(|m| m.contains("Scene_Check")),
            "{messages:?}"
        );
    }

    #[test]
    fn an_offer_is_also_walked_with_every_quest_it_does_not_need_completed() {
        // A player can finish B's quest before taking A's: A's offer then has a word about it.
        // In file order A's quest comes first, so only a state that meets it last walks that.
        let quests = format!(
            "[{}, {}, {}]",
            quest("First", "a", &[], ""),
            quest("Second", "b", &[], ""),
            quest("Third", "b", &["First"], "")
        );
        let aside = r#""Aside": { "Text": "You helped B!", "Close": true }"#;
        let a = giver(&["First"], aside).replace(
            r#"{ "Text": "Yes.""#,
            r#"{ "Text": "B sends word.", "Conditions": "quest(Second) == completed",
                 "NextNode": "Aside" },
               { "Text": "Yes.""#,
        );
        let content = content(
            &quests,
            &[("a", "A"), ("b", "B")],
            &[("A", &a), ("B", &giver(&["Second", "Third"], ""))],
            None,
            None,
        );
        let met_last = states(&content)
            .into_iter()
            .find(|s| s.label == "First available, met last")
            .expect("the state");
        assert_eq!(met_last.quest_status("Second"), QuestStatus::Completed);
        // What needs the quest is not available before it is done.
        assert_eq!(met_last.quest_status("Third"), QuestStatus::Unavailable);
        let found = explore(&content);
        assert!(found.findings.is_empty(), "{:?}", messages(&found));
    }

    #[test]
    fn a_lockout_line_is_one_line_said_only_by_the_npcs_its_stage_does_not_point_at() {
        let quests = format!("[{}]", quest("Intro", "a", &[], ""));
        let lockout = r#"{
            "Wait": { "Text": "Talk to A first.", "Close": true },
            "Unused": { "Text": "No stage uses me.", "Close": true } }"#;
        let tutorial = r#"{ "Stages": [
            { "Stage": 1, "PointsAt": "a", "Lockout": "Wait", "Until": { "Accepted": "Intro" } } ] }"#;
        let content = content(
            &quests,
            &[("a", "A"), ("b", "B")],
            &[
                ("A", &giver(&["Intro"], "")),
                (
                    "B",
                    r#"{ "FirstNode": "Hi", "Hi": { "Text": "Hi.", "Close": true } }"#,
                ),
            ],
            Some(lockout),
            Some(tutorial),
        );
        let fresh = &states(&content)[0];
        let none = BTreeSet::new();
        // The NPC the stage points at resolves as usual; everyone else is locked out.
        let a = entries(&content, &content.world.npcs[0], fresh, &none);
        let b = entries(&content, &content.world.npcs[1], fresh, &none);
        assert_eq!(a, BTreeSet::from(["Intro_Greet"]));
        assert_eq!(b, BTreeSet::from(["Hi", "Wait"]));

        let found = explore(&content);
        // `Unused` is found once, in the lockout file, not once per conversation; `Wait` counts
        // as one line reached, though A never says it.
        assert_eq!(
            found.findings,
            vec![Finding {
                file: "lockout/Tutorial.json".into(),
                message: "lockout layer: node `Unused` is never reached in any quest state".into()
            }]
        );
        // A: AllDone and the quest's three lines; B: Hi; the lockout's two lines, once each.
        assert_eq!((found.lines_reached, found.lines), (6, 7));
    }

    /// A chatty NPC that gives no quests (it opens on its `FirstNode`, `Hub`): a story that
    /// sets a variable the next line reads, a once tip before a plain line, an idle group by
    /// recency, a weighted group, storylets by specificity and a greyed-out option.
    const CHATTY: &str = r#"{ "FirstNode": "Hub", "Speaker": "Chatty",
        "Hub": { "Text": "Well?", "Responses": [
            { "Text": "A story.", "NextNode": "Story" },
            { "Text": "Any tips?", "NextNode": ["Tip", "Plain"] },
            { "Text": "Idle talk.",
              "NextNode": { "Pick": "LeastRecent", "Among": ["Gulls", "Tide", "Oars"] } },
            { "Text": "Roll.",
              "NextNode": { "Pick": "Weighted", "Among": ["Heads", { "Node": "Tails", "Weight": 3 }] } },
            { "Text": "Storylets.",
              "NextNode": { "Pick": "MostSpecific", "Among": ["Special", "General", "Never"],
                            "Fallback": "Nothing" } },
            { "Text": "Listen.", "Conditions": "$Heard", "Disabled": "Hear the story first.",
              "NextNode": "Listened" } ] },
        "Story": { "Text": "Once upon a tide.", "NextNode": ["Knows", "Stranger"],
                   "Actions": [ { "Type": "SetVariable", "Variable": "Heard", "Value": "true" } ] },
        "Knows": { "Text": "Now you know.", "Conditions": "$Heard", "Close": true },
        "Stranger": { "Text": "You never listen.", "Close": true },
        "Tip": { "Text": "A tip, once.", "Once": true, "Close": true },
        "Plain": { "Text": "No more tips.", "Close": true },
        "Gulls": { "Text": "Gulls.", "Close": true },
        "Tide": { "Text": "Tide.", "Close": true },
        "Oars": { "Text": "Oars.", "Close": true },
        "Heads": { "Text": "Heads.", "Close": true },
        "Tails": { "Text": "Tails.", "Close": true },
        "Special": { "Text": "For regulars.", "Once": true, "Conditions": "$Regular && has(Hat)",
                     "Close": true },
        "General": { "Text": "For anyone.", "Once": true, "Close": true },
        "Never": { "Text": "Never told.", "Conditions": "false", "Close": true },
        "Nothing": { "Text": "No stories left.", "Close": true },
        "Listened": { "Text": "Hush.", "Close": true }
    }"#;

    const CHATTY_VARIABLES: &str = r#"{ "Variables": { "Heard": { "Type": "bool", "Default": false } },
        "Derived": { "Regular": "opens >= 2 && $Heard" } }"#;

    fn chatty() -> Content {
        content_with_variables(
            CHATTY_VARIABLES,
            "[]",
            &[("chatty", "Chatty")],
            &[("Chatty", CHATTY)],
            None,
            None,
        )
    }

    /// The lines one walk from `Hub` reaches in `state`, by name.
    fn reached(content: &Content, state: &ExploreState) -> BTreeSet<String> {
        let graph = content.conversation("Chatty").expect("Chatty");
        let mut seen = Seen::default();
        let hub = graph.find("Hub").expect("Hub");
        walk_all("Chatty", graph, hub, state, &mut seen);
        seen.lines
            .iter()
            .filter_map(|(_, v)| graph.vertex(*v).map(|v| v.name.to_string()))
            .collect()
    }

    #[test]
    fn variables_visits_and_every_group_candidate_are_explored() {
        let content = chatty();
        let states = states(&content);
        let labels: Vec<&str> = states.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "a new player",
                "a new player, rich",
                "a new player, tagged and rich",
                "a new player, returning",
                "a new player, returning, variables set",
                "every quest completed",
                "every quest completed, rich",
                "every quest completed, tagged and rich",
                "every quest completed, returning",
                "every quest completed, returning, variables set",
            ]
        );
        // Every variable is seeded: its default for a newcomer, the value a SetVariable gives
        // it for the rich.
        let newcomer = &states[0];
        assert_eq!(newcomer.vars.get("Heard"), Some(&VarValue::Bool(false)));
        assert_eq!(states[1].vars.get("Heard"), Some(&VarValue::Bool(true)));
        assert!(!states[2].seen && states[3].seen);

        let first = reached(&content, newcomer);
        // The story's SetVariable holds for the rest of the path: its next line reads it.
        assert!(
            first.contains("Knows") && !first.contains("Stranger"),
            "{first:?}"
        );
        // Nothing seen before: the once tip; every idle and weighted candidate is a possible
        // next line, whatever the player saw before or the seed.
        for name in ["Tip", "Gulls", "Tide", "Oars", "Heads", "Tails", "General"] {
            assert!(first.contains(name), "{name}: {first:?}");
        }
        assert!(
            !first.contains("Plain") && !first.contains("Special"),
            "{first:?}"
        );
        // The greyed-out option is not a choice while its conditions fail.
        assert!(!first.contains("Listened"), "{first:?}");
        // The most specific storylet holds for a rich, tagged player who heard the story; one
        // who saw every line before has spent the once ones and gets the fallback.
        let tagged = reached(&content, &states[2]);
        assert!(
            tagged.contains("Special") && tagged.contains("General"),
            "{tagged:?}"
        );
        assert!(tagged.contains("Listened"), "{tagged:?}");
        let returning = reached(&content, &states[3]);
        assert!(
            returning.contains("Plain") && returning.contains("Nothing"),
            "{returning:?}"
        );
        assert!(!returning.contains("Tip") && !returning.contains("General"));

        // Over every state: only the candidate that never holds and the line no path sets
        // the variable away from are unreached.
        let found = explore(&content);
        assert_eq!(
            messages(&found),
            [
                "conversation Chatty: node `Never` is never reached in any quest state",
                "conversation Chatty: node `Stranger` is never reached in any quest state",
            ]
        );
    }
}
