//! Content checks: the problems no single file shows, found on the loaded [`Content`].
//!
//! [`Content::load`] reports what is wrong inside each file (syntax, unknown fields, two exits,
//! dangling names, layer overrides). [`check`] adds what only the whole game shows: a quest,
//! objective, island or node that an action, a condition, an NPC or a quest names and that does
//! not exist; a `NextNode` cycle a player can never leave; a line no entry point reaches; a
//! quest completed before it is accepted; a shared conversation's rules that cannot work
//! (`shared.rs`). `check-content` prints both lists, and the server
//! refuses content with any error, so a writer hears about a broken moment before a player does.
//!
//! Every diagnostic names a file and, where there is one, the node (`conversation.origin` says
//! which layer file a merged node came from) or the world/quest entry and field
//! (`content.origins` says which world or quest file, hand-written or generated, and which
//! index). A required file that did not load is reported by the loader; the checks here skip
//! what would only be its consequence ([`Content::unloaded`]). A world with no NPC or no
//! conversation is an error: there would be nothing to serve.
//!
//! Everything is linear in the size of the content: each lookup across the game (a quest by
//! id, an NPC's quests, a conversation's speakers) is a probe into [`Index`], built once; the
//! cycle search is an iterative Tarjan, so a long chain of generated nodes cannot overflow the
//! stack; the resolver's totality enumerates each NPC's own quests only.

mod conversation;
mod quests;
mod resolver;
mod shared;
mod tutorial;
mod world;
mod writing;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use self::conversation::{ConversationCheck, owners};
use self::quests::{check_objectives_can_advance, check_quests};
use self::resolver::check_resolver_totality;
use self::tutorial::check_tutorial;
use self::world::check_world;
use crate::content::{Content, NpcDef, QuestDef};
use crate::diagnostic::{Diagnostic, Problem, has_errors};
use crate::locale::check::Coverage;
use crate::model::Conversation;
use crate::resolver::offered_by_giver;

/// The node that resolvers open on when an NPC has nothing left to offer (article section 5).
pub const ALL_DONE: &str = crate::resolver::ALL_DONE;

/// Runs every semantic check over loaded content. The result is sorted with [`sort`].
pub fn check(content: &Content) -> Vec<Diagnostic> {
    check_with_coverage(content).0
}

/// [`check`], and each locale's coverage found on the way (`check-content` prints it).
pub fn check_with_coverage(content: &Content) -> (Vec<Diagnostic>, Vec<Coverage>) {
    let mut out = Vec::new();
    let index = Index::new(content);
    check_world(content, &index, &mut out);
    check_quests(content, &index, &mut out);
    check_objectives_can_advance(content, &mut out);
    check_resolver_totality(content, &index, &mut out);
    check_tutorial(content, &index, &mut out);
    // One line index for the line checks and the string tables', holding only the lines a
    // table names: the line checks need every site, the tables' check a table's lines and how
    // many lines there are (the coverage's total, set here). A full index would copy every
    // line of the content. `lines_index_for_checks_agrees_with_the_full_index` holds the two to
    // the same diagnostics and coverage.
    let named: HashSet<&str> = content
        .locales
        .tables
        .values()
        .flat_map(|t| t.entries.keys().map(String::as_str))
        .collect();
    let (lines, total) =
        crate::lines::LineIndex::with_lines_where(content, |id| named.contains(id));
    crate::lines::check_line_index(content, &lines, &mut out);
    let mut coverage = crate::locale::check::check_locales(&content.locales, &lines, &mut out);
    for locale in &mut coverage {
        locale.total = total;
    }
    drop(lines);
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
    (out, coverage)
}

/// Loads a content folder and checks it: the loader's diagnostics and [`check`]'s, sorted.
pub fn load_and_check(root: &Path) -> (Content, Vec<Diagnostic>) {
    let checked = load_and_check_with_coverage(root);
    (checked.content, checked.diagnostics)
}

/// What [`load_and_check_with_coverage`] found.
#[derive(Debug)]
pub struct Checked {
    pub content: Content,
    /// The loader's diagnostics and the checks', sorted.
    pub diagnostics: Vec<Diagnostic>,
    /// Each locale's coverage (translated / total, stale).
    pub coverage: Vec<Coverage>,
}

/// [`load_and_check`], with each locale's coverage.
pub fn load_and_check_with_coverage(root: &Path) -> Checked {
    let (content, mut diagnostics) = Content::load(root);
    let (found, coverage) = check_with_coverage(&content);
    diagnostics.extend(found);
    sort(&mut diagnostics);
    Checked {
        content,
        diagnostics,
        coverage,
    }
}

/// True if content with these diagnostics may be served: warnings are for writers to read,
/// only errors make content unusable.
pub fn is_clean(diagnostics: &[Diagnostic]) -> bool {
    !has_errors(diagnostics)
}

/// Sorts diagnostics the way `check-content` prints them: errors first, a missing required file
/// before everything else (it is the cause of what follows), then by file, node, field,
/// position and message, and drops exact repeats. Deterministic on every machine, so a CI log
/// diff shows only what changed.
pub fn sort(diagnostics: &mut Vec<Diagnostic>) {
    let rank = |d: &Diagnostic| u8::from(!matches!(d.problem, Problem::MissingFile(_)));
    diagnostics.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| rank(a).cmp(&rank(b)))
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
pub(super) struct Index<'a> {
    islands: HashSet<&'a str>,
    npcs: HashMap<&'a str, &'a NpcDef>,
    quests: HashMap<&'a str, &'a QuestDef>,
    /// Each giver's quests as the resolver offers them (story first, then file order).
    offered: HashMap<&'a str, Vec<&'a QuestDef>>,
    /// Each conversation's speakers: the ids of the NPCs that speak it, each once.
    speakers: HashMap<&'a str, Vec<&'a str>>,
    /// The merged conversations by name (a hash probe, not a walk down an ordered map).
    merged: HashMap<&'a str, &'a Conversation>,
}

impl<'a> Index<'a> {
    fn new(content: &'a Content) -> Self {
        // First definition wins; a duplicate id is reported by `check_world`.
        let mut npcs: HashMap<&str, &NpcDef> = HashMap::with_capacity(content.world.npcs.len());
        let mut speakers: HashMap<&str, Vec<&str>> = HashMap::new();
        for npc in &content.world.npcs {
            if let std::collections::hash_map::Entry::Vacant(slot) = npcs.entry(npc.id.as_str()) {
                slot.insert(npc);
                speakers
                    .entry(npc.conversation.as_str())
                    .or_default()
                    .push(npc.id.as_str());
            }
        }
        Index {
            islands: content
                .world
                .islands
                .iter()
                .map(|i| i.id.as_str())
                .collect(),
            npcs,
            quests: content
                .quests
                .iter()
                .rev()
                .map(|q| (q.id.as_str(), q))
                .collect(),
            offered: offered_by_giver(content),
            speakers,
            merged: content
                .merged
                .iter()
                .map(|(name, c)| (name.as_str(), c))
                .collect(),
        }
    }

    /// The merged conversation of this name.
    pub(super) fn conversation(&self, name: &str) -> Option<&'a Conversation> {
        self.merged.get(name).copied()
    }

    /// The quests `npc` gives, in the resolver's order.
    pub(super) fn offered(&self, npc: &str) -> &[&'a QuestDef] {
        self.offered.get(npc).map_or(&[], Vec::as_slice)
    }

    /// The ids of the NPCs that speak `conversation`.
    pub(super) fn speakers(&self, conversation: &str) -> &[&'a str] {
        self.speakers.get(conversation).map_or(&[], Vec::as_slice)
    }
}

/// "`A`, `B` and `C`", at most ten names, so a huge cycle gives one readable line.
pub(super) fn name_list(names: &[&str]) -> String {
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
    let n = adjacency.len();
    let mut search = Tarjan {
        index: vec![Tarjan::UNVISITED; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        calls: Vec::new(),
        next_index: 0,
    };
    let mut components = Vec::new();
    for root in 0..n {
        if search.index[root] != Tarjan::UNVISITED {
            continue;
        }
        search.enter(root);
        while let Some(frame) = search.calls.last_mut() {
            let v = frame.0;
            if let Some(&w) = adjacency[v].get(frame.1) {
                frame.1 += 1;
                if w >= n {
                    continue;
                }
                if search.index[w] == Tarjan::UNVISITED {
                    search.enter(w);
                } else if search.on_stack[w] {
                    search.low[v] = search.low[v].min(search.index[w]);
                }
                continue;
            }
            search.calls.pop();
            if let Some(&(parent, _)) = search.calls.last() {
                search.low[parent] = search.low[parent].min(search.low[v]);
            }
            if search.low[v] == search.index[v] {
                let mut component = Vec::new();
                while let Some(w) = search.stack.pop() {
                    search.on_stack[w] = false;
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

/// The state of [`strongly_connected`]'s search.
struct Tarjan {
    index: Vec<usize>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    /// (vertex, index of the next successor to look at): the frames recursion would keep.
    calls: Vec<(usize, usize)>,
    next_index: usize,
}

impl Tarjan {
    const UNVISITED: usize = usize::MAX;

    /// The first visit of `v`: it gets the next index, goes on the stack, and its successors
    /// are looked at next.
    fn enter(&mut self, v: usize) {
        self.index[v] = self.next_index;
        self.low[v] = self.next_index;
        self.next_index += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        self.calls.push((v, 0));
    }
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
