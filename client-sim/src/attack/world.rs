//! Cheats on the world rules: talking from too far, too soon after the last talk, without a
//! body, to an NPC on another island or through a far look-alike's instance hint; teleporting;
//! and a burst of small moves.
//!
//! **A burst of small moves** is judged by the state it leaves: 21 moves of 9.8 studs sent back
//! to back (each within the per-message slack), then `talk` to the NPC they lead to. Through if
//! the talk opened a conversation, or if the server accepted more distance than
//! `60 × elapsed + 10` studs, elapsed measured by this client from before the spawn to the answer
//! of the last accepted move (longer than the server's own window, so the budget is generous to
//! the server).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use banter_protocol::{ClientMessage, ErrorCode, Position, ServerMessage};
use tokio::time::Instant;

use super::cheater::{Cheat, CheatFuture, Cheater, Observed, as_player, outcome};
use super::{AttackOptions, FENNICK, Outcome, PIM};
use crate::error::SimError;
use crate::facts::ClientFacts;
use crate::world::{distance, stand_spot};

/// The server's speed limit, studs per second (docs/PROTOCOL.md section 12).
const MAX_SPEED: f64 = 60.0;
/// The distance the server allows on top of the speed limit, studs.
const MOVE_SLACK: f64 = 10.0;
/// How many moves the burst sends, and how far each goes (just under the slack).
const BURST_MOVES: usize = 21;
const BURST_STEP: f64 = 9.8;
/// The skipper the look-alike cheat stands by, and the far one its hint names.
const SKIPPER: &str = "skipper_mistral_cay";
const FAR_SKIPPER: &str = "skipper_gullrock";

/// Reach, cooldown, body, teleport and island cheats, each by a player who talked to Pim (or a
/// skipper) once first.
pub(super) fn cheats(options: &Arc<AttackOptions>) -> Vec<Cheat> {
    use ErrorCode::*;
    vec![
        Cheat {
            name: "talking from 14 studs",
            expected: Outcome::Code(TooFar),
            run: as_player(options, "far", PIM, PIM, |p| {
                Box::pin(async move {
                    let [x, y, z] = p.npc(PIM)?.position;
                    p.walk_to([x, y, z - 14.0]).await?;
                    Ok(outcome(&p.talk(PIM, Some(PIM)).await?))
                })
            }),
        },
        Cheat {
            name: "talking again within 1.5 s",
            expected: Outcome::Code(TalkCooldown),
            run: as_player(options, "cooldown", PIM, PIM, |p| {
                Box::pin(async move {
                    let name = p.npc(PIM)?.name;
                    Ok(outcome(&p.talk_now(&name, None).await?))
                })
            }),
        },
        Cheat {
            name: "talking while bodiless",
            expected: Outcome::Code(NoBody),
            run: bodiless(options),
        },
        Cheat {
            name: "teleporting 5000 studs",
            expected: Outcome::Code(Teleport),
            // The refused move leaves the body where it was: talking from there still works.
            run: as_player(options, "teleport", PIM, PIM, |p| {
                Box::pin(async move {
                    let [x, y, z] = p.position.unwrap_or_default();
                    let reply = p
                        .send(ClientMessage::Move {
                            id: None,
                            position: [x + 5000.0, y, z],
                        })
                        .await?;
                    Ok(outcome(&reply))
                })
            }),
        },
        Cheat {
            name: "talking to an NPC on another island",
            expected: Outcome::Code(TooFar),
            run: as_player(options, "island", PIM, PIM, |p| {
                Box::pin(async move { Ok(outcome(&p.talk(FENNICK, None).await?)) })
            }),
        },
        Cheat {
            name: "instance hint naming a far look-alike",
            expected: Outcome::Code(TooFar),
            run: as_player(options, "hint", SKIPPER, SKIPPER, |p| {
                Box::pin(async move { Ok(outcome(&p.talk(SKIPPER, Some(FAR_SKIPPER)).await?)) })
            }),
        },
    ]
}

/// Talks before the body ever spawned; the facts before are a fresh player's.
fn bodiless(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let mut p = Cheater::new(&options, "bodiless").await?;
        let before = ClientFacts::fresh(&options.content).snapshot();
        let name = p.npc(PIM)?.name;
        let got = outcome(&p.talk_now(&name, None).await?);
        let after = p.server_facts(PIM).await;
        Ok(Observed { got, before, after })
    })
}

/// True if `studs` accepted within `elapsed` is within the speed limit and its slack.
fn within_budget(studs: f64, elapsed: Duration) -> bool {
    studs <= MAX_SPEED * elapsed.as_secs_f64() + MOVE_SLACK + 1e-9
}

/// The burst held if no conversation opened and the accepted distance is within the budget.
fn burst_held(opened: bool, studs: f64, elapsed: Duration) -> bool {
    !opened && within_budget(studs, elapsed)
}

/// 21 moves of 9.8 studs sent back to back, then `talk` to the NPC they lead to.
pub(super) fn speed_burst(options: &Arc<AttackOptions>) -> Cheat {
    Cheat {
        name: "speed burst: 21 moves of 9.8 studs at once",
        expected: Outcome::State {
            held: true,
            seen: "too_far; accepted <= 60 studs/s x t + 10".to_owned(),
        },
        run: burst_play(options),
    }
}

fn burst_play(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let mut p = Cheater::new(&options, "speed-burst").await?;
        let before = p.facts.snapshot();
        let pim = p.npc(PIM)?;
        // The burst ends where an honest talk to Pim starts: the start is out of reach.
        let end = stand_spot(&pim);
        let reach = BURST_STEP * BURST_MOVES as f64;
        let start: Position = [end[0], end[1], end[2] - reach];
        let started = Instant::now();
        p.move_to(start).await?;

        // Every move goes out before any answer is read.
        let connection = p.connection()?;
        let mut sent = Vec::with_capacity(BURST_MOVES);
        for k in 1..=BURST_MOVES {
            let position = [start[0], start[1], start[2] + BURST_STEP * k as f64];
            let id = connection.next_id();
            connection
                .send(&ClientMessage::Move {
                    id: Some(id),
                    position,
                })
                .await?;
            sent.push((id, position));
        }
        // A refused move leaves the body where it was, so the body is at the last accepted one.
        let mut body = start;
        let mut window = Duration::ZERO;
        let mut accepted = 0;
        let mut refusals: Vec<&'static str> = Vec::new();
        let mut ended = None;
        for (id, position) in sent {
            match connection.answer(id, std::time::Instant::now()).await {
                Ok(reply) => match reply.answer {
                    Ok(()) => {
                        accepted += 1;
                        body = position;
                        window = started.elapsed();
                    }
                    Err(refusal) => refusals.push(refusal.code.name()),
                },
                Err(SimError::Bye { reason, .. }) => {
                    ended = Some(Outcome::Bye(reason).to_string());
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        p.position = Some(body);
        p.last_move = Some(Instant::now());

        let (opened, talk) = match ended {
            Some(bye) => (false, bye),
            None => {
                let reply = p.talk_now(&pim.name, Some(PIM)).await?;
                let opened = reply
                    .messages
                    .iter()
                    .any(|m| matches!(m, ServerMessage::Opened { .. }));
                let talk = if opened {
                    "talk opened".to_owned()
                } else {
                    outcome(&reply).to_string()
                };
                (opened, talk)
            }
        };
        let studs = distance(start, body);
        let held = burst_held(opened, studs, window);
        let seen = format!(
            "{talk}; {studs:.1} studs in {:.3} s (budget {:.1}); {accepted}/{BURST_MOVES} moves \
             accepted{}",
            window.as_secs_f64(),
            MAX_SPEED * window.as_secs_f64() + MOVE_SLACK,
            summary(&refusals),
        );
        let after = p.server_facts(PIM).await;
        Ok(Observed {
            got: Outcome::State { held, seen },
            before,
            after,
        })
    })
}

/// `, 20 teleport` for the refusals' codes, counted in order of first appearance.
fn summary(codes: &[&str]) -> String {
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for code in codes {
        match counted.iter_mut().find(|(c, _)| c == code) {
            Some((_, n)) => *n += 1,
            None => counted.push((code, 1)),
        }
    }
    let mut out = String::new();
    for (code, n) in counted {
        let _ = write!(out, ", {n} {code}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_move_budget_is_the_speed_limit_over_time_plus_one_slack() {
        assert!(within_budget(9.8, Duration::ZERO));
        assert!(within_budget(10.0, Duration::ZERO));
        assert!(!within_budget(19.6, Duration::from_millis(2)));
        assert!(within_budget(70.0, Duration::from_secs(1)));
        assert!(!within_budget(205.8, Duration::from_millis(20)));
        // An honest walk at the limit for 3 s.
        assert!(within_budget(180.0, Duration::from_secs(3)));
    }

    #[test]
    fn a_burst_is_through_if_it_opened_a_conversation_or_went_too_far() {
        assert!(burst_held(false, 9.8, Duration::from_millis(5)));
        assert!(!burst_held(true, 9.8, Duration::from_millis(5)));
        assert!(!burst_held(false, 205.8, Duration::from_millis(20)));
    }

    #[test]
    fn refusals_are_summarised_by_code() {
        assert_eq!(summary(&[]), "");
        assert_eq!(
            summary(&["teleport", "teleport", "rate_limited", "teleport"]),
            ", 3 teleport, 1 rate_limited"
        );
    }
}
