//! What a client knows of the world from the content folder the server serves: where each NPC
//! stands, which quests exist and who gives them. Loaded with the server's own loader
//! ([`Content::load`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use banter_dialogue::content::{Content, NpcDef, ObjectiveKind, QuestDef};
use banter_protocol::{Position, QuestStatus};

use crate::error::{Result, SimError};
use crate::facts::ClientFacts;

/// How far from an NPC a client stands to talk: well within every NPC's range.
pub const STAND_OFF: f64 = 4.0;

/// The default content folder: `content/` in the current directory or the nearest ancestor that
/// has one, else the one next to this crate in the source tree.
pub fn default_content_dir() -> PathBuf {
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            let p = dir.join("content");
            if p.join("world.json").is_file() {
                return p;
            }
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../content")
}

/// Loads a content folder; any error diagnostic refuses it.
pub fn load_content(dir: &Path) -> Result<Arc<Content>> {
    let (content, diagnostics) = Content::load(dir);
    if let Some(first) = diagnostics.iter().find(|d| d.is_error()) {
        return Err(SimError::Content(format!(
            "{} has errors; first: {first}",
            dir.display()
        )));
    }
    if content.world.npcs.is_empty() {
        return Err(SimError::Content(format!("{} has no NPCs", dir.display())));
    }
    Ok(Arc::new(content))
}

pub use banter_rules::distance;

/// Where a client stands to talk to `npc`: a few studs in front of it.
pub fn stand_spot(npc: &NpcDef) -> Position {
    let [x, y, z] = npc.position;
    [x, y, z - STAND_OFF.min(npc.range / 2.0)]
}

/// One step of at most `max_step` studs from `from` toward `to`.
pub fn step_toward(from: Position, to: Position, max_step: f64) -> Position {
    let d = distance(from, to);
    if d <= max_step || d == 0.0 {
        return to;
    }
    let t = max_step / d;
    [
        from[0] + (to[0] - from[0]) * t,
        from[1] + (to[1] - from[1]) * t,
        from[2] + (to[2] - from[2]) * t,
    ]
}

/// True if `position` is within `npc`'s talk range (without the server's lag allowance).
pub fn in_reach(npc: &NpcDef, position: Position) -> bool {
    distance(npc.position, position) <= npc.range
}

/// NPCs sorted by distance from `position`.
pub fn nearest(content: &Content, position: Position) -> Vec<&NpcDef> {
    let mut npcs: Vec<&NpcDef> = content.world.npcs.iter().collect();
    npcs.sort_by(|a, b| distance(a.position, position).total_cmp(&distance(b.position, position)));
    npcs
}

/// Quests whose objectives count world progress (catches and finds) that the trusted game
/// server reports, as opposed to talk objectives a conversation advances.
pub fn needs_world_progress(quest: &QuestDef) -> bool {
    quest
        .objectives
        .iter()
        .any(|o| matches!(o.kind, ObjectiveKind::Catch | ObjectiveKind::Find))
}

/// The quests a player can make progress on now: active ones and available ones, in content
/// order. Only those the facts hold or found available are looked at, not the world's.
pub fn open_quests<'c>(content: &'c Content, facts: &ClientFacts) -> Vec<&'c QuestDef> {
    let mut at: Vec<usize> = facts.available.iter().copied().collect();
    at.extend(
        facts
            .sheet
            .quests
            .iter()
            .filter(|(_, s)| **s == QuestStatus::Active)
            .filter_map(|(q, _)| content.quest_index(q)),
    );
    at.sort_unstable();
    at.dedup();
    at.into_iter()
        .filter_map(|i| content.quests.get(i))
        .filter(|q| {
            matches!(
                facts.status(&q.id),
                QuestStatus::Active | QuestStatus::Available
            ) && content.npc(&q.giver).is_some()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_never_overshoot() {
        let from = [0.0, 0.0, 0.0];
        let to = [30.0, 0.0, 40.0];
        let s = step_toward(from, to, 10.0);
        assert!((distance(from, s) - 10.0).abs() < 1e-9);
        assert_eq!(step_toward(from, to, 100.0), to);
    }

    #[test]
    fn the_sample_content_loads_and_every_stand_spot_is_in_reach() {
        let content = load_content(&default_content_dir()).expect("sample content");
        for npc in &content.world.npcs {
            assert!(in_reach(npc, stand_spot(npc)), "{}", npc.id);
        }
    }
}
