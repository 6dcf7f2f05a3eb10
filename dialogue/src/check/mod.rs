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

mod conversation;
mod quests;
mod resolver;
mod tutorial;
mod world;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use self::conversation::{ConversationCheck, owners};
use self::quests::{check_objectives_can_advance, check_quests};
use self::resolver::check_resolver_totality;
use self::tutorial::check_tutorial;
use self::world::check_world;
use crate::content::{Content, QuestDef};
use crate::diagnostic::{Diagnostic, has_errors};

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
    crate::lines::check_lines(content, &mut out);
    crate::locale::check::check_locales(
        &content.locales,
        &crate::lines::LineIndex::new(content),
        &mut out,
    );
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
pub(super) struct Index<'a> {
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
