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

pub fn distance(a: Position, b: Position) -> f64 {
    let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
}

/// True if `player` is close enough to talk to `npc`: its range plus the lag allowance.
pub fn within_reach(rules: &WorldRules, npc: &NpcDef, player: Position) -> bool {
    distance(npc.position, player) <= npc.range + rules.lag_allowance
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

/// Checks that a player with `body` can interact with `npc` now: a body, within reach.
pub fn check_reach(rules: &WorldRules, npc: &NpcDef, body: &Body) -> Result<(), WorldError> {
    let position = body.position().ok_or(WorldError::NoBody)?;
    if within_reach(rules, npc, position) {
        Ok(())
    } else {
        Err(WorldError::TooFar {
            npc: npc.id.clone(),
            distance: distance(npc.position, position),
            reach: npc.range + rules.lag_allowance,
        })
    }
}

/// Float noise allowed on a move's distance against the budget (a millionth of a stud).
const BUDGET_EPSILON: f64 = 1e-6;

/// A player's body: its last valid position, when it was accepted there, and the distance it may
/// still cover at once. `None` until spawned.
///
/// Movement is budgeted over time, not per message: the budget refills at `max_speed` per second
/// of server time, each accepted move spends its straight-line distance, and what is left is
/// capped at `move_slack`. So between any two accepted moves the distance accepted is at most
/// `max_speed * elapsed + move_slack`, however the moves are split, sized or bunched, while an
/// honest walker at the speed limit is refused only if network jitter exceeds
/// `move_slack / max_speed` (about 167 ms with the defaults).
#[derive(Clone, Copy, Debug, Default)]
pub struct Body {
    last: Option<(Position, Duration)>,
    /// Distance left at the time of `last`, before refilling.
    budget: f64,
}

impl Body {
    pub fn position(&self) -> Option<Position> {
        self.last.map(|(p, _)| p)
    }

    /// Moves the body to `to` at time `now` (server time, which must not go backwards). The
    /// first move spawns it anywhere with a full budget; a refused move changes nothing.
    pub fn move_to(
        &mut self,
        rules: &WorldRules,
        to: Position,
        now: Duration,
    ) -> Result<(), WorldError> {
        if to.iter().any(|c| !c.is_finite()) {
            return Err(WorldError::NotFinite);
        }
        let budget = match self.last {
            None => rules.move_slack,
            Some((from, at)) => {
                let dt = now.saturating_sub(at).as_secs_f64();
                // Refill and spend together, then cap what is left: a lone move may use all the
                // time since the last one (60 studs after a second), a burst shares one slack.
                let available = self.budget + rules.max_speed * dt;
                let step = distance(from, to);
                if step > available + BUDGET_EPSILON {
                    return Err(WorldError::Teleport);
                }
                (available - step).clamp(0.0, rules.move_slack)
            }
        };
        self.last = Some((to, now.max(self.last.map_or(now, |(_, at)| at))));
        self.budget = budget;
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
            Err(WorldError::Teleport)
        );
        assert_eq!(body.position(), Some([60.0, 0.0, 0.0]));
        assert_eq!(
            body.move_to(&rules, [f64::NAN, 0.0, 0.0], Duration::from_secs(3)),
            Err(WorldError::NotFinite)
        );
    }
    mod movement_budget {
        use proptest::prelude::*;

        use super::*;

        /// A move as the server sees it: when it arrived and where it says the body is.
        #[derive(Clone, Debug)]
        struct Arrival {
            at: Duration,
            to: Position,
        }

        /// Any schedule: bursts at one instant, long pauses, tiny and huge moves.
        fn schedule() -> impl Strategy<Value = Vec<Arrival>> {
            prop::collection::vec(
                (
                    prop_oneof![Just(0u64), 0u64..50, 0u64..2_000],
                    -200.0f64..200.0,
                    -20.0f64..20.0,
                ),
                1..80,
            )
            .prop_map(|steps| {
                let mut at = Duration::ZERO;
                let mut x = 0.0;
                let mut z = 0.0;
                steps
                    .into_iter()
                    .map(|(gap_ms, dx, dz)| {
                        at += Duration::from_millis(gap_ms);
                        x += dx;
                        z += dz;
                        Arrival {
                            at,
                            to: [x, 0.0, z],
                        }
                    })
                    .collect()
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2_000))]

            /// Between any two accepted moves (each move's distance counted over the time since
            /// the one before it), the distance accepted is at most `max_speed × elapsed + slack`.
            #[test]
            fn accepted_distance_never_outruns_the_speed_limit_plus_one_slack(
                moves in schedule()
            ) {
                let rules = WorldRules::default();
                let mut body = Body::default();
                let mut accepted: Vec<(Duration, f64)> = Vec::new();
                let mut last: Option<Position> = None;
                for m in &moves {
                    if body.move_to(&rules, m.to, m.at).is_ok() {
                        let d = last.map_or(0.0, |from| distance(from, m.to));
                        accepted.push((m.at, d));
                        last = Some(m.to);
                    } else {
                        prop_assert_eq!(body.position(), last, "a refusal keeps the last position");
                    }
                }
                for k in 0..accepted.len() {
                    let mut total = 0.0;
                    for l in k + 1..accepted.len() {
                        total += accepted[l].1;
                        let elapsed = (accepted[l].0 - accepted[k].0).as_secs_f64();
                        prop_assert!(
                            total <= rules.max_speed * elapsed + rules.move_slack + 1e-3,
                            "{} studs accepted in {} s", total, elapsed
                        );
                    }
                }
            }

            /// A walker who never exceeds the speed limit, whose sends are jittered and bunched
            /// by the network (each arrives up to 160 ms late, never before an earlier one), is
            /// never refused.
            #[test]
            fn an_honest_walker_with_network_jitter_is_never_refused(
                legs in prop::collection::vec((1u64..400, 0.0f64..std::f64::consts::TAU, 0.5f64..=1.0), 1..120),
                delays in prop::collection::vec(0u64..=160, 120),
            ) {
                let rules = WorldRules::default();
                let mut body = Body::default();
                let mut sent = Duration::ZERO;
                let mut arrived = Duration::ZERO;
                let mut at: Position = [0.0; 3];
                body.move_to(&rules, at, Duration::ZERO).expect("spawn");
                for (i, (gap_ms, heading, pace)) in legs.into_iter().enumerate() {
                    let gap = Duration::from_millis(gap_ms);
                    sent += gap;
                    let step = rules.max_speed * pace * gap.as_secs_f64();
                    at = [at[0] + step * heading.cos(), 0.0, at[2] + step * heading.sin()];
                    // TCP keeps order: a late packet holds back the ones behind it (bunching).
                    arrived = arrived.max(sent + Duration::from_millis(delays[i]));
                    prop_assert_eq!(body.move_to(&rules, at, arrived), Ok(()), "move {} refused", i);
                }
            }
        }
    }
}
