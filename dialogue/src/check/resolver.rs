//! The QuestlineResolver is total: every reachable quest state of every NPC opens somewhere.

use std::collections::{BTreeSet, HashMap, HashSet};

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
pub(super) fn check_resolver_totality(
    content: &Content,
    index: &Index<'_>,
    out: &mut Vec<Diagnostic>,
) {
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
