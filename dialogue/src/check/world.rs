//! The world: islands and NPCs that exist, are unique and stand where they may, and a world
//! with something in it to serve.

use std::collections::HashMap;

use super::Index;
use crate::content::{Content, WORLD_FILE};
use crate::diagnostic::{Diagnostic, Problem};

/// Records that entry `i` has `id`, the first time; an id seen before is an error at entry `i`
/// that also names the first. `origin` spells an entry's (file, field path).
fn note_id<'a>(
    seen: &mut HashMap<&'a str, usize>,
    id: &'a str,
    i: usize,
    origin: impl Fn(usize) -> (String, String),
    out: &mut Vec<Diagnostic>,
) {
    if let Some(&first) = seen.get(id) {
        let (file, at) = origin(i);
        let (first_file, first_at) = origin(first);
        out.push(
            Diagnostic::error(file, Problem::Duplicate(id.to_owned()))
                .field(format!("{at}.Id"))
                .also_at(&first_file, &first_at),
        );
    } else {
        seen.insert(id, i);
    }
}

pub(super) fn check_world(content: &Content, index: &Index<'_>, out: &mut Vec<Diagnostic>) {
    check_not_empty(content, out);
    let origins = &content.origins;
    let root = content.root.as_path();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, island) in content.world.islands.iter().enumerate() {
        note_id(&mut seen, &island.id, i, |i| origins.island(root, i), out);
    }
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(content.world.npcs.len());
    for (i, npc) in content.world.npcs.iter().enumerate() {
        // The file and field are spelled only for a diagnostic, never on the clean path.
        let error = |field: &str, message: String| {
            let (file, at) = origins.npc(root, i);
            Diagnostic::error(file, Problem::Other(message)).field(format!("{at}.{field}"))
        };
        // Ids are what the client's hint names; two NPCs with one id make the hint ambiguous
        // again, which is the whole bug ids exist to fix (article section 7.4).
        note_id(&mut seen, &npc.id, i, |i| origins.npc(root, i), out);
        // Islands are declared in world.json: if it did not load, every island is "unknown",
        // and the loader has said why already.
        if !content.unloaded.world && !index.islands.contains(npc.island.as_str()) {
            out.push(error(
                "Island",
                format!(
                    "NPC `{}` stands on unknown island `{}` (islands are declared in {WORLD_FILE})",
                    npc.id, npc.island
                ),
            ));
        }
        if index.conversation(&npc.conversation).is_none() {
            out.push(error(
                "Conversation",
                format!(
                    "NPC `{}` speaks conversation `{}`, but no base conversation of that name \
                     was loaded (dialogue/base/{}.json is missing or has errors)",
                    npc.id, npc.conversation, npc.conversation
                ),
            ));
        }
    }
}

/// Content with no NPC, or no conversation, loads and checks clean and serves nothing: a
/// wrong folder, or one the generator has not written yet. Both are errors, so `check-content`,
/// a server start and a reload refuse it.
fn check_not_empty(content: &Content, out: &mut Vec<Diagnostic>) {
    // A world.json that did not load is reported by the loader; "no NPCs" would only repeat it
    // when it is the only place NPCs were to come from.
    if content.world.npcs.is_empty() && !content.unloaded.world {
        out.push(
            Diagnostic::error(
                content.root.join(WORLD_FILE).display().to_string(),
                Problem::Other(format!(
                    "the world has no NPCs: list them in {WORLD_FILE} or generate them \
                     (`banter-server gen-content`); content with nobody to talk to is refused"
                )),
            )
            .field("Npcs"),
        );
    }
    if content.conversations.is_empty() {
        let base = content
            .root
            .join("dialogue")
            .join(crate::layers::Layer::Base.folder());
        out.push(Diagnostic::error(
            base.display().to_string(),
            Problem::Other(
                "no conversation was loaded: dialogue/base/ holds no base conversation \
                 (<Name>.json) that parses; content with nothing to say is refused"
                    .to_owned(),
            ),
        ));
    }
}
