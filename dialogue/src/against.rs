//! What a new version of the content would do to players in the middle of the old one
//! (`check-content --against OLD_DIR`): quests and objectives they may hold that are gone,
//! conversation nodes they may stand on that are gone or renamed. Renames of nodes are found by
//! line id: the same `LineId` under another node name is the same line moved.
//!
//! These are warnings for the writer, not errors: the server itself refuses a push that would
//! strand a stored player unless `content/migrations.json` says what happens (PROTOCOL.md
//! section 14), and an open conversation finishes on the version it opened with. What this adds
//! is the list before the push, for every player the old version could have put there.

use std::collections::{BTreeMap, BTreeSet};

use crate::content::Content;
use crate::model::Exit;

/// One change that touches players of the old version.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Change {
    pub message: String,
}

/// Compares `new` against `old`.
pub fn compare(old: &Content, new: &Content) -> Vec<Change> {
    let mut out = Vec::new();
    let mut say = |message: String| out.push(Change { message });
    let new_quests: BTreeMap<&str, _> = new.quests.iter().map(|q| (q.id.as_str(), q)).collect();
    for quest in &old.quests {
        match new_quests.get(quest.id.as_str()) {
            None => say(format!(
                "quest `{}` is removed: players who have it active or completed keep a quest the content no longer has (say in migrations.json whether to abandon or complete it)",
                quest.id
            )),
            Some(now) => {
                let kept: BTreeSet<&str> = now.objectives.iter().map(|o| o.id.as_str()).collect();
                for objective in &quest.objectives {
                    if !kept.contains(objective.id.as_str()) {
                        say(format!(
                            "objective `{}` of quest `{}` is removed: progress players made on it is stranded",
                            objective.id, quest.id
                        ));
                    }
                }
            }
        }
    }
    for (name, conversation) in &old.merged {
        let Some(now) = new.merged.get(name) else {
            say(format!(
                "conversation `{name}` is removed: a player in it finishes on the old version; a parked one cannot resume"
            ));
            continue;
        };
        // Where each line id lives now, to tell a rename from a removal.
        let by_line: BTreeMap<&str, &str> = now
            .nodes
            .iter()
            .filter_map(|(n, node)| node.line.as_deref().map(|l| (l, n.as_str())))
            .collect();
        for (node_name, node) in &conversation.nodes {
            if now.nodes.contains_key(node_name) {
                continue;
            }
            let moved = node.line.as_deref().and_then(|l| by_line.get(l));
            match moved {
                Some(new_name) => say(format!(
                    "conversation `{name}`: node `{node_name}` is renamed `{new_name}` (same line id): a parked conversation on it cannot resume; content and quests naming it must follow"
                )),
                None => say(format!(
                    "conversation `{name}`: node `{node_name}` is removed: a player who stands on it finishes on the old version; a parked one cannot resume"
                )),
            }
        }
        for (node_name, node) in &conversation.nodes {
            let (Some(after), Exit::Responses(before)) = (now.nodes.get(node_name), &node.exit)
            else {
                continue;
            };
            let Exit::Responses(responses) = &after.exit else {
                continue;
            };
            if responses.len() < before.len() {
                say(format!(
                    "conversation `{name}`: node `{node_name}` has {} response(s), had {}: a parked player's offered `{node_name}_r<i>` may name another one now",
                    responses.len(),
                    before.len()
                ));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}
