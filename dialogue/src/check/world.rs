//! The world file: islands and NPCs that exist, are unique and stand where they may.

use std::collections::HashSet;

use super::Index;
use crate::content::Content;
use crate::diagnostic::{Diagnostic, Problem};

pub(super) fn check_world(content: &Content, index: &Index<'_>, out: &mut Vec<Diagnostic>) {
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
