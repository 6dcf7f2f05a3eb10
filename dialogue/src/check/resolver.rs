//! The QuestlineResolver is total: every reachable quest state of every NPC opens somewhere.

use std::collections::{BTreeSet, HashSet};

use super::Index;
use crate::content::{Content, QuestDef};
use crate::diagnostic::{Diagnostic, Problem};

/// NPCs with more quests than this are not enumerated (4^n combinations); a warning says so.
pub(super) const MAX_ENUMERATED_QUESTS: usize = 8;

/// The resolver is total (issue 6): for every NPC that gives quests and every reachable
/// combination of its quests' states (and every tracked quest it could be offering), the
/// QuestlineResolver yields exactly one node, and that node exists in the NPC's conversation.
///
/// A combination is reachable when each quest's status agrees with its prerequisites among this
/// NPC's quests: a quest is available, active or completed only if those are all completed, and
/// unavailable only if one of them is not, or if it has prerequisites given by other NPCs (whose
/// states are free).
///
/// Each NPC's combinations are its own quests' (from the index, never a scan of every quest), so
/// the work grows with the number of NPCs, not with its square.
pub(super) fn check_resolver_totality(
    content: &Content,
    index: &Index<'_>,
    out: &mut Vec<Diagnostic>,
) {
    use crate::condition::QuestStatus;
    use crate::resolver;
    let mut seen_npcs = HashSet::new();
    for (npc_index, npc) in content.world.npcs.iter().enumerate() {
        if !seen_npcs.insert(npc.id.as_str()) {
            continue;
        }
        let offered = index.offered(&npc.id);
        if offered.is_empty() {
            continue;
        }
        // Spelled only for a diagnostic, never on the clean path.
        let site = || content.origins.npc(&content.root, npc_index);
        // An unknown conversation is reported on the NPC already.
        let Some(conversation) = index.conversation(&npc.conversation) else {
            continue;
        };
        if offered.len() > MAX_ENUMERATED_QUESTS {
            let (npc_file, npc_at) = site();
            out.push(
                Diagnostic::warning(
                    npc_file,
                    Problem::Other(format!(
                        "NPC `{}` gives {} quests; the resolver's totality is checked for at \
                         most {}",
                        npc.id,
                        offered.len(),
                        MAX_ENUMERATED_QUESTS
                    )),
                )
                .field(npc_at),
            );
            continue;
        }
        let n = offered.len();
        // Each quest's prerequisites among this NPC's quests (by place), and whether it has one
        // another NPC gives (whose state is free): worked out once, not per combination.
        let (position, inside) = super::quests::prerequisite_places(offered);
        let outside: Vec<bool> = offered
            .iter()
            .map(|q| {
                q.prerequisites
                    .iter()
                    .any(|p| !position.contains_key(p.as_str()))
            })
            .collect();
        // The resolver only ever opens on the first node, a quest's check or greeting, or
        // AllDone: each looked up in the conversation once, not once per combination.
        let candidates: Vec<(&str, bool)> = offered
            .iter()
            .flat_map(|q| [q.nodes.check.as_str(), q.nodes.greeting.as_str()])
            .chain(conversation.first_node.as_deref())
            .chain([resolver::ALL_DONE])
            .map(|node| (node, conversation.nodes.contains_key(node)))
            .collect();
        let exists = |node: &str| {
            candidates
                .iter()
                .find(|(name, _)| *name == node)
                .map_or_else(
                    || conversation.nodes.contains_key(node),
                    |&(_, found)| found,
                )
        };
        let mut reported = BTreeSet::new();
        let mut statuses = vec![QuestStatus::Unavailable; n];
        for combination in 0..4usize.pow(n as u32) {
            let mut code = combination;
            for status in statuses.iter_mut() {
                *status = QuestStatus::ALL[code % 4];
                code /= 4;
            }
            let reachable = (0..n).all(|i| {
                let inside_done = inside[i]
                    .iter()
                    .all(|&j| statuses[j] == QuestStatus::Completed);
                match statuses[i] {
                    QuestStatus::Unavailable => !inside_done || outside[i],
                    _ => inside_done,
                }
            });
            if !reachable {
                continue;
            }
            // The resolver asks about the quests it was given: found by address among at most
            // eight, no hashing.
            let status_of = |q: &QuestDef| {
                offered
                    .iter()
                    .position(|o| std::ptr::eq(*o, q))
                    .map_or(QuestStatus::Unavailable, |i| statuses[i])
            };
            let tracked = std::iter::once(None).chain(
                offered
                    .iter()
                    .filter(|q| status_of(q) == QuestStatus::Available)
                    .map(|q| Some(q.id.as_str())),
            );
            for tracked in tracked {
                let first = conversation.first_node.as_deref();
                let entry = resolver::resolve_among(offered, first, tracked, status_of);
                let missing = match entry {
                    None => Some("no node".to_owned()),
                    Some(node) if !exists(node) => Some(format!(
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
                let (npc_file, npc_at) = site();
                out.push(
                    Diagnostic::error(
                        npc_file,
                        Problem::Other(format!(
                            "the entry resolver of NPC `{}` yields {missing} when {}{tracked}",
                            npc.id,
                            states.join(", ")
                        )),
                    )
                    .field(npc_at),
                );
            }
        }
    }
}
