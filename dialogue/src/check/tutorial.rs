//! The tutorial: its stages name NPCs and lockout nodes that exist.

use std::collections::HashSet;

use super::Index;
use crate::content::Content;
use crate::diagnostic::{Diagnostic, Problem};

/// The tutorial's stages name NPCs that exist and lockout nodes the lockout layer defines.
pub(super) fn check_tutorial(content: &Content, index: &Index<'_>, out: &mut Vec<Diagnostic>) {
    let Some(tutorial) = &content.tutorial else {
        return;
    };
    let file = content
        .root
        .join(crate::content::TUTORIAL_FILE)
        .display()
        .to_string();
    let mut stages = HashSet::new();
    for (i, stage) in tutorial.stages.iter().enumerate() {
        let at = format!("Stages[{}]", i + 1);
        let error = |field: &str, message: String| {
            Diagnostic::error(file.clone(), Problem::Other(message)).field(format!("{at}.{field}"))
        };
        if stage.stage < 1 {
            out.push(error(
                "Stage",
                format!("tutorial stage {} must be 1 or more", stage.stage),
            ));
        }
        if !stages.insert(stage.stage) {
            out.push(error(
                "Stage",
                format!("tutorial stage {} is defined twice", stage.stage),
            ));
        }
        if !content.unloaded.world && !index.npcs.contains_key(stage.points_at.as_str()) {
            out.push(error(
                "PointsAt",
                format!(
                    "tutorial stage {} points at unknown NPC `{}`",
                    stage.stage, stage.points_at
                ),
            ));
        }
        if !content.lockout_nodes.contains(&stage.lockout) {
            out.push(error(
                "Lockout",
                format!(
                    "tutorial stage {} locks out on `{}`, which is not a node of dialogue/lockout",
                    stage.stage, stage.lockout
                ),
            ));
        }
        // The stage ends through a quest of the NPC it points at: every other NPC is locked
        // out, so a quest anyone else gives could never move the player on.
        if let Some(until) = &stage.until {
            let quest = until.quest();
            match index.quests.get(quest) {
                None if content.unloaded.quests => {}
                None => out.push(error(
                    "Until",
                    format!(
                        "tutorial stage {} ends with unknown quest `{quest}`",
                        stage.stage
                    ),
                )),
                Some(def) if def.giver != stage.points_at => out.push(error(
                    "Until",
                    format!(
                        "tutorial stage {} ends with quest `{quest}`, given by `{}`, but points \
                         at `{}`: every other NPC is locked out, so the stage could never end",
                        stage.stage, def.giver, stage.points_at
                    ),
                )),
                Some(_) => {}
            }
        }
    }
}
