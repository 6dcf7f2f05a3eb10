//! The world as the server sees it (article section 7.4): the NPC registry and player bodies.
//!
//! NPC names are not unique (four boat managers share one, one per island). A client names the
//! NPC and may add an instance hint; the hint is used only if the registry has that instance
//! under that name, so it is a hint that gets verified, never something trusted. Without a valid
//! hint the nearest NPC of that name is taken.

use std::collections::HashMap;
use std::time::Duration;

use banter_dialogue::content::{Content, NpcDef};
use banter_protocol::{NpcRef, Position};

pub use banter_rules::world::{Body, distance, within_reach};
use banter_rules::{MoveRefused, WorldRules};

/// Every NPC instance from content, indexed by display name.
#[derive(Clone, Debug, Default)]
pub struct NpcRegistry {
    npcs: Vec<NpcDef>,
    by_name: HashMap<String, Vec<usize>>,
    by_id: HashMap<String, usize>,
}

impl NpcRegistry {
    pub fn from_content(content: &Content) -> NpcRegistry {
        let npcs = content.world.npcs.clone();
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        let mut by_id = HashMap::with_capacity(npcs.len());
        for (i, npc) in npcs.iter().enumerate() {
            by_name.entry(npc.name.clone()).or_default().push(i);
            by_id.insert(npc.id.clone(), i);
        }
        NpcRegistry {
            npcs,
            by_name,
            by_id,
        }
    }

    pub fn len(&self) -> usize {
        self.npcs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.npcs.is_empty()
    }

    /// The NPC instance with this id (checked on every move of a player in conversation).
    pub fn by_id(&self, id: &str) -> Option<&NpcDef> {
        self.by_id.get(id).map(|&i| &self.npcs[i])
    }

    /// The NPC a player at `from` means by `name` and an optional instance `hint`.
    pub fn resolve(&self, name: &str, hint: Option<&str>, from: Position) -> Option<&NpcDef> {
        let candidates = self.by_name.get(name)?;
        let candidates = candidates.iter().map(|&i| &self.npcs[i]);
        if let Some(hint) = hint
            && let Some(npc) = candidates.clone().find(|n| n.id == hint)
        {
            return Some(npc);
        }
        candidates.min_by(|a, b| distance(a.position, from).total_cmp(&distance(b.position, from)))
    }
}

/// The wire form of an NPC.
pub fn npc_ref(npc: &NpcDef) -> NpcRef {
    NpcRef {
        id: npc.id.clone(),
        name: npc.name.clone(),
        island: npc.island.clone(),
    }
}

/// Why the world refuses a move, a talk, a resume or an action at this moment. One enum, so the
/// session maps each to its wire code in one place (`session::refusal`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WorldError {
    /// A coordinate is NaN or infinite.
    #[error("coordinates must be finite numbers")]
    NotFinite,
    /// Farther than the movement budget allows; the last valid position stays.
    #[error("moved faster than the speed limit; the last valid position stays")]
    Teleport,
    /// The player has not placed a body yet, so no distance can be checked.
    #[error("the player has no body in the world yet")]
    NoBody,
    /// The player is out of the NPC's reach (its range plus the lag allowance).
    #[error("`{npc}` is {distance:.1} studs away; the reach is {reach}")]
    TooFar {
        npc: String,
        distance: f64,
        reach: f64,
    },
    /// The player is busy (a cutscene) and cannot start or act on anything.
    #[error("{0}")]
    Busy(&'static str),
    /// No NPC of that display name.
    #[error("no NPC named `{0}`")]
    UnknownNpc(String),
    /// Too soon after the last conversation opened.
    #[error("{} ms must pass between conversations", .0.as_millis())]
    TalkCooldown(Duration),
}

impl From<MoveRefused> for WorldError {
    fn from(e: MoveRefused) -> WorldError {
        match e {
            MoveRefused::NotFinite => WorldError::NotFinite,
            MoveRefused::Teleport => WorldError::Teleport,
        }
    }
}

/// Checks that a player with `body` can interact with `npc` now: a body, within reach.
pub fn check_reach(rules: &WorldRules, npc: &NpcDef, body: &Body) -> Result<(), WorldError> {
    let position = body.position().ok_or(WorldError::NoBody)?;
    if within_reach(rules, npc, position) {
        Ok(())
    } else {
        Err(WorldError::TooFar {
            npc: npc.id.clone(),
            distance: distance(npc.position, position),
            reach: banter_rules::reach(rules, npc),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npc(id: &str, name: &str, x: f64) -> NpcDef {
        NpcDef {
            id: id.into(),
            name: name.into(),
            island: "isle".into(),
            position: [x, 0.0, 0.0],
            range: 8.0,
            conversation: "C".into(),
        }
    }

    fn registry() -> NpcRegistry {
        let mut content = Content::default();
        content.world.npcs = vec![
            npc("reyes-north", "Dockmaster Reyes", 0.0),
            npc("reyes-south", "Dockmaster Reyes", 1000.0),
            npc("mara", "Mara", 50.0),
        ];
        NpcRegistry::from_content(&content)
    }

    #[test]
    fn a_valid_hint_picks_that_instance_and_an_invalid_one_is_ignored() {
        let r = registry();
        let near_south = [990.0, 0.0, 0.0];
        let hinted = r.resolve("Dockmaster Reyes", Some("reyes-north"), near_south);
        assert_eq!(hinted.map(|n| n.id.as_str()), Some("reyes-north"));
        let bogus = r.resolve("Dockmaster Reyes", Some("mara"), near_south);
        assert_eq!(
            bogus.map(|n| n.id.as_str()),
            Some("reyes-south"),
            "nearest by name"
        );
        assert!(r.resolve("Nobody", None, near_south).is_none());
    }
}
