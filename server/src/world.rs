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

use crate::config::WorldRules;

/// Every NPC instance from content, indexed by display name.
#[derive(Clone, Debug, Default)]
pub struct NpcRegistry {
    npcs: Vec<NpcDef>,
    by_name: HashMap<String, Vec<usize>>,
}

impl NpcRegistry {
    pub fn from_content(content: &Content) -> NpcRegistry {
        let npcs = content.world.npcs.clone();
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, npc) in npcs.iter().enumerate() {
            by_name.entry(npc.name.clone()).or_default().push(i);
        }
        NpcRegistry { npcs, by_name }
    }

    pub fn len(&self) -> usize {
        self.npcs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.npcs.is_empty()
    }

    pub fn by_id(&self, id: &str) -> Option<&NpcDef> {
        self.npcs.iter().find(|n| n.id == id)
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

pub fn distance(a: Position, b: Position) -> f64 {
    let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
}

/// True if `player` is close enough to talk to `npc`: its range plus the lag allowance.
pub fn within_reach(rules: &WorldRules, npc: &NpcDef, player: Position) -> bool {
    distance(npc.position, player) <= npc.range + rules.lag_allowance
}

/// Why a move was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveError {
    /// A coordinate is NaN or infinite.
    NotFinite,
    /// Farther than the speed limit allows in the time since the last valid position.
    Teleport,
}

/// A player's body: its last valid position and when it was there. `None` until spawned.
#[derive(Clone, Copy, Debug, Default)]
pub struct Body {
    last: Option<(Position, Duration)>,
}

impl Body {
    pub fn position(&self) -> Option<Position> {
        self.last.map(|(p, _)| p)
    }

    /// Moves the body to `to` at time `now` (time since the session started). The first move
    /// spawns it anywhere; later ones may cover at most `max_speed * dt + slack`.
    pub fn move_to(
        &mut self,
        rules: &WorldRules,
        to: Position,
        now: Duration,
    ) -> Result<(), MoveError> {
        if to.iter().any(|c| !c.is_finite()) {
            return Err(MoveError::NotFinite);
        }
        if let Some((from, at)) = self.last {
            let dt = now.saturating_sub(at).as_secs_f64();
            if distance(from, to) > rules.max_speed * dt + rules.move_slack {
                return Err(MoveError::Teleport);
            }
        }
        self.last = Some((to, now));
        Ok(())
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

    #[test]
    fn reach_is_range_plus_lag_allowance() {
        let rules = WorldRules::default();
        let n = npc("a", "A", 0.0);
        assert!(within_reach(&rules, &n, [13.0, 0.0, 0.0]));
        assert!(!within_reach(&rules, &n, [13.01, 0.0, 0.0]));
    }

    #[test]
    fn a_move_faster_than_the_limit_is_a_teleport_and_keeps_the_last_position() {
        let rules = WorldRules::default();
        let mut body = Body::default();
        assert_eq!(body.position(), None);
        body.move_to(&rules, [0.0; 3], Duration::ZERO)
            .expect("spawn");
        assert!(
            body.move_to(&rules, [60.0, 0.0, 0.0], Duration::from_secs(1))
                .is_ok()
        );
        assert_eq!(
            body.move_to(&rules, [5000.0, 0.0, 0.0], Duration::from_secs(2)),
            Err(MoveError::Teleport)
        );
        assert_eq!(body.position(), Some([60.0, 0.0, 0.0]));
        assert_eq!(
            body.move_to(&rules, [f64::NAN, 0.0, 0.0], Duration::from_secs(3)),
            Err(MoveError::NotFinite)
        );
    }
}
