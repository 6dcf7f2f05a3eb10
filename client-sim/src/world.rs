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

/// Where the NPCs stand, in square cells of the ground plane: "the nearest NPC that ..." looks
/// at the cells around a point, ring by ring, and stops once no unseen cell can hold a nearer
/// one. A bot asks it at every decision, so that a decision costs the neighbourhood, not the
/// world (a sort of 10,000 NPCs per step made the load test measure its own bots).
#[derive(Clone, Debug, Default)]
pub struct Atlas {
    /// Each cell's NPCs, as indexes into the content's NPC list, in content order.
    cells: std::collections::HashMap<(i64, i64), Vec<usize>>,
    /// The cells' range on each axis: (least x, least z, most x, most z).
    bounds: Option<(i64, i64, i64, i64)>,
}

/// An [`Atlas`] cell's side, in studs: a few NPCs a cell in a dense town, few cells to cross
/// between islands.
const CELL: f64 = 100.0;

impl Atlas {
    pub fn new(content: &Content) -> Atlas {
        let mut atlas = Atlas::default();
        for (at, npc) in content.world.npcs.iter().enumerate() {
            let (x, z) = cell_of(npc.position);
            atlas.cells.entry((x, z)).or_default().push(at);
            atlas.bounds = Some(match atlas.bounds {
                None => (x, z, x, z),
                Some((x0, z0, x1, z1)) => (x0.min(x), z0.min(z), x1.max(x), z1.max(z)),
            });
        }
        atlas
    }

    /// The NPC nearest `from` for which `wanted` holds (of two as near, the first in content
    /// order): the same answer as a sort of every NPC by distance.
    pub fn nearest_where<'c>(
        &self,
        content: &'c Content,
        from: Position,
        mut wanted: impl FnMut(&NpcDef) -> bool,
    ) -> Option<&'c NpcDef> {
        let mut best: Option<(f64, usize)> = None;
        self.rings(from, |ring, cells| {
            for &at in cells.iter().flat_map(|c| c.iter()) {
                let Some(npc) = content.world.npcs.get(at) else {
                    continue;
                };
                let d = distance(npc.position, from);
                let nearer = best.is_none_or(|(bd, bi)| d < bd || (d == bd && at < bi));
                if nearer && wanted(npc) {
                    best = Some((d, at));
                }
            }
            // Every cell of a later ring is at least `ring * CELL` away on the ground.
            best.is_some_and(|(d, _)| d <= ring as f64 * CELL)
        });
        best.and_then(|(_, at)| content.world.npcs.get(at))
    }

    /// The NPCs within `radius` of `from`, nearest first (of two as near, the first in content
    /// order).
    pub fn within<'c>(&self, content: &'c Content, from: Position, radius: f64) -> Vec<&'c NpcDef> {
        let mut found: Vec<(f64, usize)> = Vec::new();
        self.rings(from, |ring, cells| {
            for &at in cells.iter().flat_map(|c| c.iter()) {
                if let Some(npc) = content.world.npcs.get(at) {
                    let d = distance(npc.position, from);
                    if d <= radius {
                        found.push((d, at));
                    }
                }
            }
            // Every cell of a later ring is more than `ring * CELL` away on the ground.
            ring as f64 * CELL >= radius
        });
        found.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        found
            .into_iter()
            .filter_map(|(_, at)| content.world.npcs.get(at))
            .collect()
    }

    /// Calls `visit` with each ring of cells around `from`'s cell (ring 0 is that cell, ring r
    /// the cells r steps away), until it answers true or no cell is left.
    fn rings(&self, from: Position, mut visit: impl FnMut(i64, &[&Vec<usize>]) -> bool) {
        let Some((x0, z0, x1, z1)) = self.bounds else {
            return;
        };
        let (cx, cz) = cell_of(from);
        // Rings nearer than the cells' box are empty, and only the box's part of a ring is
        // looked at: far from every NPC, the walk costs the box, not the distance.
        let gap = |c: i64, lo: i64, hi: i64| (lo - c).max(c - hi).max(0);
        let first = gap(cx, x0, x1).max(gap(cz, z0, z1));
        let last = (cx - x0)
            .abs()
            .max((x1 - cx).abs())
            .max((cz - z0).abs())
            .max((z1 - cz).abs());
        let mut cells = Vec::new();
        for ring in first..=last {
            cells.clear();
            for x in (cx - ring).max(x0)..=(cx + ring).min(x1) {
                // The ring's two columns whole; between them, its top and bottom cells (no
                // allocation: a bot asks at every decision).
                let column = x == cx - ring || x == cx + ring;
                let whole = ((cz - ring).max(z0)..=(cz + ring).min(z1)).take_while(|_| column);
                let ends = [cz - ring, cz + ring]
                    .into_iter()
                    .filter(|z| !column && (z0..=z1).contains(z));
                for z in whole.chain(ends) {
                    if let Some(cell) = self.cells.get(&(x, z)) {
                        cells.push(cell);
                    }
                }
            }
            if visit(ring, &cells) {
                return;
            }
        }
    }
}

fn cell_of(position: Position) -> (i64, i64) {
    // Clamped (and `as` saturates, NaN to 0): a position far outside any world still lands in
    // a cell, and ring arithmetic cannot overflow.
    const FAR: f64 = (1u64 << 40) as f64;
    let axis = |v: f64| (v / CELL).floor().clamp(-FAR, FAR) as i64;
    (axis(position[0]), axis(position[2]))
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

/// The player's active quests whose giver stands in the world, in content order: the sheet's
/// (the size of what the player holds), never a walk over the world's quests.
pub fn active_quests<'c>(content: &'c Content, facts: &ClientFacts) -> Vec<&'c QuestDef> {
    let mut at: Vec<usize> = active_indexes(content, facts).collect();
    at.sort_unstable();
    at.into_iter()
        .filter_map(|i| content.quests.get(i))
        .filter(|q| content.npc(&q.giver).is_some())
        .collect()
}

/// Where the sheet's active quests sit in the content's quest list (unordered).
fn active_indexes<'a>(
    content: &'a Content,
    facts: &'a ClientFacts,
) -> impl Iterator<Item = usize> + 'a {
    (facts.sheet.quests.iter())
        .filter(|(_, s)| **s == QuestStatus::Active)
        .filter_map(|(q, _)| content.quest_index(q))
}

/// The quests a player can make progress on now: active ones and available ones, in content
/// order. Only those the facts hold or found available are looked at, not the world's.
pub fn open_quests<'c>(content: &'c Content, facts: &ClientFacts) -> Vec<&'c QuestDef> {
    let mut at: Vec<usize> = facts.available().collect();
    at.extend(active_indexes(content, facts));
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
    fn the_atlas_finds_what_a_sort_of_every_npc_finds() {
        use rand::RngExt;
        let mut content = load_content(&default_content_dir())
            .expect("sample content")
            .as_ref()
            .clone();
        // A town beside the sample's islands, denser than a cell, with NPCs on cell edges and
        // two at the same spot.
        let template = content.world.npcs[0].clone();
        for i in 0..400 {
            let mut npc = template.clone();
            npc.id = format!("town{i}");
            npc.position = [
                f64::from(i % 20) * 25.0,
                0.0,
                4000.0 + f64::from(i / 20) * 25.0,
            ];
            content.world.npcs.push(npc);
        }
        let mut twin = template.clone();
        twin.id = "twin".into();
        twin.position = content.world.npcs[10].position;
        content.world.npcs.push(twin);
        let atlas = Atlas::new(&content);
        let mut rng = crate::bot::sim_rng(5);
        for round in 0..500 {
            let from = [
                rng.random_range(-3000.0..6000.0),
                rng.random_range(-5.0..5.0),
                rng.random_range(-3000.0..6000.0),
            ];
            let odd = |n: &NpcDef| n.id.len() % 2 == round % 2;
            let sorted = nearest(&content, from);
            let expected = sorted.iter().copied().find(|n| odd(n));
            let found = atlas.nearest_where(&content, from, odd);
            assert_eq!(
                found.map(|n| &n.id),
                expected.map(|n| &n.id),
                "from {from:?}"
            );
            let near: Vec<&str> = sorted
                .iter()
                .filter(|n| distance(n.position, from) <= 150.0)
                .map(|n| n.id.as_str())
                .collect();
            let within: Vec<&str> = atlas
                .within(&content, from, 150.0)
                .iter()
                .map(|n| n.id.as_str())
                .collect();
            assert_eq!(within, near, "from {from:?}");
        }
        // Far outside every cell, and with nothing wanted.
        let far = [1e300, 0.0, -1e300];
        assert_eq!(
            atlas.nearest_where(&content, far, |_| true).map(|n| &n.id),
            nearest(&content, far).first().map(|n| &n.id)
        );
        assert!(atlas.nearest_where(&content, [0.0; 3], |_| false).is_none());
        assert!(
            Atlas::new(&Content::default())
                .nearest_where(&content, [0.0; 3], |_| true)
                .is_none()
        );
    }

    #[test]
    fn the_sample_content_loads_and_every_stand_spot_is_in_reach() {
        let content = load_content(&default_content_dir()).expect("sample content");
        for npc in &content.world.npcs {
            assert!(in_reach(npc, stand_spot(npc)), "{}", npc.id);
        }
    }
}
