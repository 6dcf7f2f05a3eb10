//! The world rules of article section 7.4: reach, movement and the time between conversations.

use std::time::Duration;

use banter_dialogue::content::NpcDef;
use banter_protocol::Position;

/// The numbers the world rules run on. The defaults are the article's and the protocol's
/// (docs/PROTOCOL.md section 12); a server may be configured otherwise, and says so.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldRules {
    /// Added to an NPC's interaction range for network lag (the article's 5 studs).
    pub lag_allowance: f64,
    /// Time between two conversations (the article's 1.5 s).
    pub talk_cooldown: Duration,
    /// Fastest legitimate movement, studs per second (a boat at full speed).
    pub max_speed: f64,
    /// Distance a move may cover beyond the speed limit, shared by a burst (network jitter).
    pub move_slack: f64,
}

impl WorldRules {
    /// The protocol's numbers (docs/PROTOCOL.md section 12): what a client assumes.
    pub const DEFAULT: WorldRules = WorldRules {
        lag_allowance: 5.0,
        talk_cooldown: Duration::from_millis(1500),
        max_speed: 60.0,
        move_slack: 10.0,
    };
}

impl Default for WorldRules {
    fn default() -> Self {
        WorldRules::DEFAULT
    }
}

/// Straight-line (3-D) distance.
pub fn distance(a: Position, b: Position) -> f64 {
    let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
}

/// How far from `npc` a player may stand and still talk: its range plus the lag allowance.
pub fn reach(rules: &WorldRules, npc: &NpcDef) -> f64 {
    npc.range + rules.lag_allowance
}

/// True if `player` is close enough to talk to `npc`.
pub fn within_reach(rules: &WorldRules, npc: &NpcDef, player: Position) -> bool {
    distance(npc.position, player) <= reach(rules, npc)
}

/// How long until a conversation may open again at `now`, if the last one opened at
/// `last_talk`; `None` when a talk is allowed now. Times are on one clock (the server's).
pub fn talk_cooldown_left(
    rules: &WorldRules,
    last_talk: Option<Duration>,
    now: Duration,
) -> Option<Duration> {
    let ready = last_talk? + rules.talk_cooldown;
    (now < ready).then(|| ready - now)
}

/// Why a move was refused. Nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MoveRefused {
    /// A coordinate is NaN or infinite.
    #[error("coordinates must be finite numbers")]
    NotFinite,
    /// Farther than the movement budget allows; the last valid position stays.
    #[error("moved faster than the speed limit; the last valid position stays")]
    Teleport,
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
    ) -> Result<(), MoveRefused> {
        if to.iter().any(|c| !c.is_finite()) {
            return Err(MoveRefused::NotFinite);
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
                    return Err(MoveRefused::Teleport);
                }
                (available - step).clamp(0.0, rules.move_slack)
            }
        };
        self.last = Some((to, now.max(self.last.map_or(now, |(_, at)| at))));
        self.budget = budget;
        Ok(())
    }

    /// Puts the body where a trusted engine says it is, at time `now`: no speed budget applies
    /// (the engine enforced its own), and the budget starts full for a later move. A position
    /// that is not three finite numbers changes nothing.
    pub fn place(&mut self, to: Position, now: Duration) -> Result<(), MoveRefused> {
        if to.iter().any(|c| !c.is_finite()) {
            return Err(MoveRefused::NotFinite);
        }
        self.last = Some((to, now.max(self.last.map_or(now, |(_, at)| at))));
        self.budget = 0.0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npc(x: f64) -> NpcDef {
        NpcDef {
            id: "a".into(),
            name: "A".into(),
            island: "isle".into(),
            position: [x, 0.0, 0.0],
            range: 8.0,
            conversation: "C".into(),
        }
    }

    #[test]
    fn reach_is_range_plus_lag_allowance() {
        let rules = WorldRules::default();
        let n = npc(0.0);
        assert!(within_reach(&rules, &n, [13.0, 0.0, 0.0]));
        assert!(!within_reach(&rules, &n, [13.01, 0.0, 0.0]));
        assert_eq!(reach(&rules, &n), 13.0);
    }

    #[test]
    fn the_cooldown_runs_from_the_last_talk() {
        let rules = WorldRules::default();
        let s = Duration::from_secs;
        assert_eq!(talk_cooldown_left(&rules, None, s(5)), None);
        assert_eq!(
            talk_cooldown_left(&rules, Some(s(5)), s(6)),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            talk_cooldown_left(&rules, Some(s(5)), s(5) + rules.talk_cooldown),
            None
        );
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
            Err(MoveRefused::Teleport)
        );
        assert_eq!(body.position(), Some([60.0, 0.0, 0.0]));
        assert_eq!(
            body.move_to(&rules, [f64::NAN, 0.0, 0.0], Duration::from_secs(3)),
            Err(MoveRefused::NotFinite)
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
