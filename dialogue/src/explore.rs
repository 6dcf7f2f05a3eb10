//! Exploration: every conversation walked under every quest state the questline allows, to
//! find what no player can ever see or do (`test-content --explore`).
//!
//! The states are the questline's own progression: quests in the order of `quests.json`, each
//! in turn available, active with no progress, active with every objective done, and just
//! completed (what it unlocks available), the quests before it completed (so prerequisites hold the way a player meets them). Each is
//! walked twice, once with every tag and counter condition true (a rich, tagged player) and
//! once with none, so both sides of `coins >= 100` and `has(PostReveal)` are taken. For each
//! NPC the resolver picks the entry as the server does; a tutorial's lockout lines are entries
//! too. From the entry every choice is taken, every line advanced past, and a quest check's
//! jump followed to both its targets, exhaustively: the walk never shows a line twice in one
//! run, so it ends.
//!
//! What it reports, one finding each: NPC lines never reached, responses never offered,
//! actions never armed, quests never completed (no `CompleteQuest` for them ever armed, and no
//! cutscene that completes them), and dead ends (a line whose responses are all hidden in some
//! state, so the player can only walk away).

use std::collections::{BTreeMap, BTreeSet};

use banter_protocol::{Action, QuestStatus};

use crate::condition::{Counter, Facts};
use crate::content::{Content, QuestDef};
use crate::graph::{ActionIndex, DialogueGraph, VertexId, VertexKind};
use crate::resolver::resolve_entry;
use crate::walk::{Shown, Walk};

/// A player's facts for exploring: quest statuses and progress, and whether every tag and
/// counter condition holds (`rich`) or none does.
#[derive(Clone, Debug)]
pub struct ExploreState {
    pub label: String,
    pub quests: BTreeMap<String, QuestStatus>,
    pub progress: BTreeMap<(String, String), u32>,
    /// Every `has(...)` holds.
    pub tagged: bool,
    /// Every counter is high (`coins >= 100` holds), or zero.
    pub rich: bool,
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
    let mut push = |label: String, quests, progress: BTreeMap<(String, String), u32>| {
        for (tagged, rich, how) in [
            (false, false, ""),
            (false, true, ", rich"),
            (true, true, ", tagged and rich"),
        ] {
            out.push(ExploreState {
                label: format!("{label}{how}"),
                quests: Clone::clone(&quests),
                progress: progress.clone(),
                tagged,
                rich,
            });
        }
    };
    push("a new player".into(), base(&done), BTreeMap::new());
    for quest in &content.quests {
        let mut active = base(&done);
        active.insert(quest.id.clone(), QuestStatus::Active);
        push(
            format!("{} active", quest.id),
            active.clone(),
            BTreeMap::new(),
        );
        let finished: BTreeMap<(String, String), u32> = quest
            .objectives
            .iter()
            .map(|o| ((quest.id.clone(), o.id.clone()), o.target))
            .collect();
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
    out
}

/// Explores every conversation of `content`.
pub fn explore(content: &Content) -> Exploration {
    let states = states(content);
    let mut seen = Seen::default();
    let mut walks = 0;
    let lockout: Vec<&str> = content.lockout_nodes.iter().map(String::as_str).collect();
    for state in &states {
        for npc in &content.world.npcs {
            let Some(graph) = content.conversation(&npc.conversation) else {
                continue;
            };
            let merged = content.merged.get(&npc.conversation);
            let first = merged.and_then(|m| m.first_node.as_deref());
            let status = |q: &QuestDef| state.quest_status(&q.id);
            let mut entries: Vec<&str> = Vec::new();
            if let Some(entry) = resolve_entry(content, &npc.id, first, None, status) {
                entries.push(entry);
            }
            // Tracked quests open on their greeting too.
            for quest in crate::resolver::offered(content, &npc.id) {
                if state.quest_status(&quest.id) == QuestStatus::Available {
                    entries.push(&quest.nodes.greeting);
                }
            }
            if content.tutorial.is_some() {
                entries.extend(lockout.iter().copied());
            }
            for entry in entries {
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
    let Ok((walk, shown)) = Walk::open(graph, entry, state) else {
        return;
    };
    let mut shown_in_run: BTreeSet<VertexId> = BTreeSet::new();
    let mut stack = vec![(walk, shown)];
    // A bound on the work per run for content far larger than any conversation.
    let mut budget = 100_000usize;
    while let Some((walk, shown)) = stack.pop() {
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
        if vertex.awaits_jump {
            // The server's answer to a quest check: both ways.
            for target in check_targets(graph, line) {
                let mut next = walk.clone();
                if let Ok(shown) = next.jump_to(graph, target, state) {
                    stack.push((next, shown));
                }
            }
            continue;
        }
        let choices: Vec<VertexId> = walk.choices(graph, line).collect();
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
            if let Ok(shown) = next.advance(graph, line, state) {
                stack.push((next, shown));
            }
            continue;
        }
        for response in choices {
            seen.offered.insert((key.clone(), response));
            let mut next = walk.clone();
            match next.choose(graph, response, state) {
                Ok(Shown::AwaitJump) => {
                    for (index, _) in graph.actions(response) {
                        seen.armed.insert((key.clone(), index));
                    }
                    for target in check_targets(graph, response) {
                        let mut after = next.clone();
                        if let Ok(shown) = after.jump_to(graph, target, state) {
                            stack.push((after, shown));
                        }
                    }
                }
                Ok(shown) => {
                    for (index, _) in graph.actions(response) {
                        seen.armed.insert((key.clone(), index));
                    }
                    stack.push((next, shown));
                }
                Err(_) => {}
            }
        }
    }
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

fn report(content: &Content, seen: &Seen, out: &mut Exploration) {
    let mut completed: BTreeSet<String> = BTreeSet::new();
    for (name, graph) in &content.conversations {
        let file = content
            .merged
            .get(name)
            .map(|m| m.base_file.clone())
            .unwrap_or_default();
        let origin = |v: &str| {
            content
                .merged
                .get(name)
                .and_then(|m| m.origin.get(v))
                .cloned()
                .unwrap_or_else(|| file.clone())
        };
        for (id, vertex) in graph.vertices() {
            let key = (name.clone(), id);
            match vertex.kind {
                VertexKind::Prompt => {
                    out.lines += 1;
                    if seen.lines.contains(&key) {
                        out.lines_reached += 1;
                    } else {
                        out.findings.push(Finding {
                            file: origin(&vertex.name),
                            message: format!(
                                "conversation {name}: node `{}` is never reached in any quest state",
                                vertex.name
                            ),
                        });
                    }
                }
                VertexKind::Response if !seen.offered.contains(&key) => {
                    out.findings.push(Finding {
                        file: file.clone(),
                        message: format!(
                            "conversation {name}: response `{}` (\"{}\") is never offered",
                            vertex.name, vertex.text
                        ),
                    });
                }
                _ => {}
            }
            for (index, action) in graph.actions(id) {
                let armed = seen.armed.contains(&(name.clone(), index));
                if armed {
                    if let Action::CompleteQuest { quest_id } = &action.action {
                        completed.insert(quest_id.clone());
                    }
                } else {
                    out.findings.push(Finding {
                        file: file.clone(),
                        message: format!(
                            "conversation {name}: action {} `{}` on `{}` is never armed",
                            action.action_type.name(),
                            action.payload,
                            vertex.name
                        ),
                    });
                }
            }
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
