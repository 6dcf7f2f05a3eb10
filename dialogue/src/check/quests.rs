//! Quests: what they name exists, every objective can advance, no prerequisite cycle.

use std::collections::{HashMap, HashSet};

use banter_protocol::Action;

use super::{Index, name_list, strongly_connected};
use crate::content::{Content, QuestDef, WORLD_FILE};
use crate::diagnostic::{Diagnostic, Problem};

pub(super) fn check_quests(content: &Content, index: &Index<'_>, out: &mut Vec<Diagnostic>) {
    let root = content.root.as_path();
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(content.quests.len());
    for (i, quest) in content.quests.iter().enumerate() {
        // The file and field path are spelled only for a diagnostic, never on the clean path.
        let site = || content.origins.quest(root, i);
        let error = |field: &str, message: String| {
            let (file, at) = site();
            Diagnostic::error(file, Problem::Other(message)).field(format!("{at}{field}"))
        };
        let id = &quest.id;
        if let Some(&first) = seen.get(id.as_str()) {
            let (file, at) = site();
            let (first_file, first_at) = content.origins.quest(root, first);
            out.push(
                Diagnostic::error(file, Problem::Duplicate(id.clone()))
                    .field(format!("{at}.Id"))
                    .also_at(&first_file, &first_at),
            );
        } else {
            seen.insert(id.as_str(), i);
        }
        // A quest "unknown" because quests.json did not load is that file's problem, said once.
        if !content.unloaded.quests {
            for (j, prerequisite) in quest.prerequisites.iter().enumerate() {
                if !index.quests.contains_key(prerequisite.as_str()) {
                    out.push(error(
                        &format!(".Prerequisites[{}]", j + 1),
                        format!("quest `{id}` requires unknown quest `{prerequisite}`"),
                    ));
                }
            }
        }
        let mut objectives = HashSet::new();
        for (j, objective) in quest.objectives.iter().enumerate() {
            let at = |field: &str| format!(".Objectives[{}].{field}", j + 1);
            if !objectives.insert(objective.id.as_str()) {
                let (file, quest_at) = site();
                out.push(
                    Diagnostic::error(file, Problem::Duplicate(objective.id.clone()))
                        .field(format!("{quest_at}{}", at("Id"))),
                );
            }
            if let Some(island) = &objective.island
                && !content.unloaded.world
                && !index.islands.contains(island.as_str())
            {
                out.push(error(
                    &at("Island"),
                    format!(
                        "objective `{}` of quest `{id}` is on unknown island `{island}`",
                        objective.id
                    ),
                ));
            }
        }
        let Some(giver) = index.npcs.get(quest.giver.as_str()) else {
            if !content.unloaded.world {
                out.push(error(
                    ".Giver",
                    format!(
                        "quest `{id}` is given by `{}`, which is not an NPC id in {WORLD_FILE} \
                         or {}/",
                        quest.giver,
                        crate::generate::WORLD_DIR
                    ),
                ));
            }
            continue;
        };
        // An unknown conversation is already reported on the NPC in world.json.
        let Some(conversation) = index.conversation(&giver.conversation) else {
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
                    &format!(".Nodes.{field}"),
                    format!(
                        "quest `{id}` opens on node `{node}`, which is not in conversation `{}` \
                         of its giver `{}`",
                        giver.conversation, giver.id
                    ),
                ));
            }
        }
    }
    check_prerequisite_cycles(content, out);
}

/// Every objective can be advanced by something (issue 6): a `catch` objective by a `fish_caught`
/// event, a `find` objective by an `item_found` event, a `talk` objective by an AdvanceObjective
/// action authored in some conversation (or, in a cutscene quest, by the scene ending). An
/// objective nothing can advance would leave its quest active forever.
///
/// Events carry what they carry: an `item_found` event has no species, so a `find` objective
/// that filters on one never matches; and a target of 0 is refused by the store.
pub(super) fn check_objectives_can_advance(content: &Content, out: &mut Vec<Diagnostic>) {
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
    for (i, quest) in content.quests.iter().enumerate() {
        for (j, objective) in quest.objectives.iter().enumerate() {
            // The file and field path are spelled only for a diagnostic.
            let never = |field: &str, why: String| {
                let (file, at) = content.origins.quest(&content.root, i);
                let at = format!("{at}.Objectives[{}]", j + 1);
                Diagnostic::error(
                    file,
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

/// A quest that (transitively) requires itself can never become available.
/// Each quest's place among `quests` by id (the first, should two share an id), and each
/// quest's prerequisites among them by place (one that is not among them is left out).
pub(super) fn prerequisite_places<'q>(
    quests: &[&'q QuestDef],
) -> (HashMap<&'q str, usize>, Vec<Vec<usize>>) {
    let position: HashMap<&str, usize> = quests
        .iter()
        .enumerate()
        .rev()
        .map(|(i, q)| (q.id.as_str(), i))
        .collect();
    let prerequisites = quests
        .iter()
        .map(|q| {
            q.prerequisites
                .iter()
                .filter_map(|p| position.get(p.as_str()).copied())
                .collect()
        })
        .collect();
    (position, prerequisites)
}

pub(super) fn check_prerequisite_cycles(content: &Content, out: &mut Vec<Diagnostic>) {
    let quests: Vec<&QuestDef> = content.quests.iter().collect();
    let (_, adjacency) = prerequisite_places(&quests);
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
        let (file, at) = content.origins.quest(&content.root, first);
        out.push(
            Diagnostic::error(
                file,
                Problem::Other(format!(
                    "quests {} require each other, so none of them can ever become available",
                    name_list(&names)
                )),
            )
            .field(format!("{at}.Prerequisites")),
        );
    }
}
