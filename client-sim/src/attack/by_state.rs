//! Cheats judged by the state they leave, not by the answers on the way.
//!
//! Each of these is made of steps that may each be answered `ack` by a correct server (a move
//! within the per-message slack, a login), so no single reply code says whether the cheat
//! worked. What counts is where the server left things:
//!
//! - **A burst of small moves.** 21 moves of 9.8 studs sent back to back, then `talk` to the NPC
//!   they lead to. Through if the talk opened a conversation, or if the server accepted more
//!   distance than `60 × elapsed + 10` studs, elapsed measured by this client from before the
//!   spawn to the answer of the last accepted move (longer than the server's own window, so the
//!   budget is generous to the server).
//! - **Resuming after walking away.** A conversation with an action armed is parked by dropping
//!   the TCP connection without a Close frame; a new session walks (honestly) 65 studs away and
//!   sends `resume`, then the armed action. Through if the conversation was taken back, the action
//!   was accepted, or the player's facts (as the server reports them afterwards) changed.
//! - **Logins at the same instant.** 16 connections of one player start together; once 15 have
//!   ended (or 10 s passed), each one still open is asked a request with an id. Through unless
//!   exactly one session answers it. Repeated for 5 players.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use banter_protocol::{ActionType, ByeReason, ClientMessage, Position, ServerMessage};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::sync::{Barrier, watch};
use tokio::time::Instant;

use super::{
    AttackOptions, Cheat, CheatFuture, Cheater, Observed, Outcome, PIM, PIM_OBJECTIVE, PIM_QUEST,
    action_message, outcome,
};
use crate::connection::Connection;
use crate::error::{Result, SimError};
use crate::facts::{PlayerFacts, Snapshot};
use crate::session::device_login;
use crate::world::{distance, stand_spot};

/// The server's speed limit, studs per second (docs/PROTOCOL.md section 12).
const MAX_SPEED: f64 = 60.0;
/// The distance the server allows on top of the speed limit, studs.
const MOVE_SLACK: f64 = 10.0;

/// How many moves the burst sends, and how far each goes (just under the slack).
const BURST_MOVES: usize = 21;
const BURST_STEP: f64 = 9.8;

/// How far from the NPC the walker stands when it resumes, studs.
const WALKED_AWAY: f64 = 65.0;

/// Connections per race, races per cheat, and how long a race may take to settle.
const RACE_CONNECTIONS: usize = 16;
const RACE_ROUNDS: usize = 5;
const RACE_PATIENCE: Duration = Duration::from_secs(10);
/// How long a surviving session has to answer the request that proves it alive.
const PROBE_PATIENCE: Duration = Duration::from_secs(5);

/// The three cheats, as catalogue rows.
pub(super) fn cheats(options: &Arc<AttackOptions>) -> Vec<Cheat> {
    vec![
        Cheat {
            name: "speed burst: 21 moves of 9.8 studs at once",
            expected: Outcome::State {
                held: true,
                seen: "too_far; accepted <= 60 studs/s x t + 10".to_owned(),
            },
            run: speed_burst(options),
        },
        Cheat {
            name: "resuming after walking 65 studs away",
            expected: Outcome::State {
                held: true,
                seen: "resume too_far; quest untouched".to_owned(),
            },
            run: resume_walked_away(options),
        },
        Cheat {
            name: "16 logins of one player at once (x5)",
            expected: Outcome::State {
                held: true,
                seen: format!(
                    "1 live, {} replaced, in each of {RACE_ROUNDS} rounds",
                    RACE_CONNECTIONS - 1
                ),
            },
            run: login_race(options),
        },
    ]
}

// ---------------------------------------------------------------------------------------------
// A burst of small moves.

/// True if `studs` accepted within `elapsed` is within the speed limit and its slack.
fn within_budget(studs: f64, elapsed: Duration) -> bool {
    studs <= MAX_SPEED * elapsed.as_secs_f64() + MOVE_SLACK + 1e-9
}

/// The burst held if no conversation opened and the accepted distance is within the budget.
fn burst_held(opened: bool, studs: f64, elapsed: Duration) -> bool {
    !opened && within_budget(studs, elapsed)
}

fn speed_burst(options: &Arc<AttackOptions>) -> CheatFuture {
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

// ---------------------------------------------------------------------------------------------
// Resuming after walking away.

/// The resume held if the conversation was not taken back, the action was refused, and the
/// facts the server reports afterwards (if they could be read) are the ones from before.
fn resume_held(
    resumed: bool,
    action_accepted: bool,
    before: &Snapshot,
    after: Option<&Snapshot>,
) -> bool {
    !resumed && !action_accepted && after.is_none_or(|a| a == before)
}

fn resume_walked_away(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let mut p = Cheater::new(&options, "resume-away").await?;
        // Hear Pim's tale honestly, up to the line that arms CompleteQuest.
        p.open(PIM).await?;
        p.choose("PimsTideTale_Greet_r1").await?;
        p.advance("PimsTideTale_Tale").await?;
        p.action(ActionType::AcceptQuest, PIM_QUEST).await?;
        p.action(ActionType::AdvanceObjective, PIM_OBJECTIVE)
            .await?;
        p.advance("PimsTideTale_Ending").await?;
        let before = p.facts.snapshot();
        let token = p.connection()?.welcome.resume_token.clone();
        if token.is_empty() {
            return Err(SimError::Other(
                "the welcome carried no resume_token".to_owned(),
            ));
        }

        // Drop the connection: no Close frame, the socket just goes away, so the server parks
        // the conversation (a clean close might not).
        drop(p.connection.take());

        // Log in again (a fresh token for the same player) and connect.
        let login = device_login(&options.endpoint, &p.device).await?;
        if login.player != p.login.player {
            return Err(SimError::Other(format!(
                "logging in again as {} gave another player ({})",
                p.login.player, login.player
            )));
        }
        p.login = login;
        p.reconnect().await?;
        p.position = p.connection()?.welcome.position;
        p.last_move = Some(Instant::now());

        // Walk away honestly, well under the speed limit, out of Pim's reach.
        let pim = p.npc(PIM)?;
        let [x, y, z] = pim.position;
        p.walk_to([x, y, z - WALKED_AWAY]).await?;

        let resume = p
            .send(ClientMessage::Resume {
                id: None,
                token: token.clone(),
            })
            .await?;
        let resumed = resume.answer.is_ok()
            || resume
                .messages
                .iter()
                .any(|m| matches!(m, ServerMessage::Resumed { .. }));
        let action = p
            .send(action_message(ActionType::CompleteQuest, PIM_QUEST))
            .await?;
        let action_accepted = action.answer.is_ok();

        let after = p.server_facts(PIM).await;
        let held = resume_held(resumed, action_accepted, &before, after.as_ref().ok());
        let state = match &after {
            Ok(a) => format!(
                "quest {}, {} coins",
                a.quests
                    .get(PIM_QUEST)
                    .map_or("available", |status| status.name()),
                a.coins
            ),
            Err(e) => format!("facts unread ({e})"),
        };
        let seen = format!(
            "resume {}, CompleteQuest {}; {state}",
            if resumed {
                "resumed".to_owned()
            } else {
                outcome(&resume).to_string()
            },
            outcome(&action),
        );
        Ok(Observed {
            got: Outcome::State { held, seen },
            before,
            after,
        })
    })
}

// ---------------------------------------------------------------------------------------------
// Logins at the same instant.

/// How one of the racing connections ended up.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ending {
    /// Still open and answering requests.
    Live,
    /// Ended by the server with this reason.
    Bye(ByeReason),
    /// Never got a `welcome`, or the stream ended without a `bye`, or it stopped answering.
    Gone(String),
}

/// What one race left.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct RaceRound {
    /// Connections that got their `welcome`.
    welcomed: usize,
    /// Connections ended with `bye replaced`.
    replaced: usize,
    /// Sessions that answered a request at the end.
    live: usize,
    /// Every other ending, described.
    other: Vec<String>,
}

impl RaceRound {
    fn tally(welcomed: usize, endings: &[Ending]) -> RaceRound {
        let mut round = RaceRound {
            welcomed,
            ..RaceRound::default()
        };
        for ending in endings {
            match ending {
                Ending::Live => round.live += 1,
                Ending::Bye(ByeReason::Replaced) => round.replaced += 1,
                Ending::Bye(reason) => round.other.push(Outcome::Bye(*reason).to_string()),
                Ending::Gone(why) => round.other.push(why.clone()),
            }
        }
        round
    }

    /// Exactly one session per player: one live, never zero, never two.
    fn held(&self) -> bool {
        self.live == 1
    }
}

/// The race cheat held if every round did; what the rounds left, in words.
fn race_outcome(rounds: &[RaceRound]) -> Outcome {
    let held = !rounds.is_empty() && rounds.iter().all(RaceRound::held);
    let clean = rounds
        .iter()
        .all(|r| r.held() && r.replaced == RACE_CONNECTIONS - 1 && r.other.is_empty());
    let seen = if clean && !rounds.is_empty() {
        format!(
            "1 live, {} replaced, in each of {} rounds",
            RACE_CONNECTIONS - 1,
            rounds.len()
        )
    } else {
        let per_round: Vec<String> = rounds
            .iter()
            .map(|r| {
                let mut s = format!("{} live/{} replaced", r.live, r.replaced);
                if r.welcomed != RACE_CONNECTIONS {
                    let _ = write!(s, "/{} welcomed", r.welcomed);
                }
                if let Some(first) = r.other.first() {
                    let _ = write!(s, " ({} other: {first})", r.other.len());
                }
                s
            })
            .collect();
        format!("rounds: {}", per_round.join("; "))
    };
    Outcome::State { held, seen }
}

/// Waits for `connection` to be ended by the server, until `deadline` or until told to stop.
async fn watch_one(
    mut connection: Connection,
    mut stop: watch::Receiver<bool>,
    deadline: Instant,
) -> (Connection, Ending) {
    loop {
        let patience = deadline.saturating_duration_since(Instant::now());
        tokio::select! {
            message = connection.recv(patience) => match message {
                Ok(ServerMessage::Bye { reason, .. }) | Err(SimError::Bye { reason, .. }) => {
                    return (connection, Ending::Bye(reason));
                }
                Ok(_) => continue,
                Err(SimError::Timeout(_)) => return (connection, Ending::Live),
                Err(SimError::Closed) => {
                    return (connection, Ending::Gone("dropped without bye".to_owned()));
                }
                Err(e) => return (connection, Ending::Gone(e.to_string())),
            },
            _ = stop.changed() => return (connection, Ending::Live),
        }
    }
}

/// Asks a session that seems open for an answer to a request with an id: `Live` if it answers.
async fn probe(connection: &mut Connection) -> Ending {
    let request = connection.request(ClientMessage::Move {
        id: None,
        position: [0.0, 0.0, 0.0],
    });
    match tokio::time::timeout(PROBE_PATIENCE, request).await {
        Ok(Ok(_)) => Ending::Live,
        Ok(Err(SimError::Bye { reason, .. })) => Ending::Bye(reason),
        Ok(Err(e)) => {
            // The send fails on a socket the server closed; its `bye` may be waiting unread.
            let bye = connection.drain().into_iter().find_map(|m| match m {
                ServerMessage::Bye { reason, .. } => Some(reason),
                _ => None,
            });
            match bye {
                Some(reason) => Ending::Bye(reason),
                None => Ending::Gone(format!("probe failed: {e}")),
            }
        }
        Err(_) => Ending::Gone("probe unanswered".to_owned()),
    }
}

/// One race: a new player, `RACE_CONNECTIONS` connections started together. Also the player's
/// facts as the first `welcome` reported them.
async fn race_round(options: &Arc<AttackOptions>, round: usize) -> Result<(RaceRound, Snapshot)> {
    let device = format!("sim-attack-{}-login-race-{round}", options.run_id);
    let login = device_login(&options.endpoint, &device).await?;
    let barrier = Arc::new(Barrier::new(RACE_CONNECTIONS));
    let mut connecting = Vec::with_capacity(RACE_CONNECTIONS);
    for _ in 0..RACE_CONNECTIONS {
        let barrier = barrier.clone();
        let endpoint = options.endpoint.clone();
        let token = login.token.clone();
        connecting.push(tokio::spawn(async move {
            barrier.wait().await;
            Connection::connect(&endpoint, &token).await
        }));
    }
    let mut connections = Vec::new();
    let mut endings = Vec::new();
    for task in connecting {
        match task.await {
            Ok(Ok(connection)) => connections.push(connection),
            Ok(Err(e)) => endings.push(Ending::Gone(format!("no welcome: {e}"))),
            Err(e) => endings.push(Ending::Gone(format!("panicked: {e}"))),
        }
    }
    let welcomed = connections.len();
    let mut facts = PlayerFacts::fresh(&options.content);
    if let Some(first) = connections.first() {
        facts.set_profile(&first.welcome.profile);
    }

    // Wait (awaiting the server's messages) until all but one have ended, or the patience is up.
    let (stop, stopped) = watch::channel(false);
    let deadline = Instant::now() + RACE_PATIENCE;
    let mut watching: FuturesUnordered<_> = connections
        .into_iter()
        .map(|c| watch_one(c, stopped.clone(), deadline))
        .collect();
    let mut ended = endings.len();
    let mut open = Vec::new();
    while let Some((connection, ending)) = watching.next().await {
        if ending == Ending::Live {
            open.push(connection);
        } else {
            ended += 1;
            endings.push(ending);
        }
        if ended + 1 >= RACE_CONNECTIONS {
            let _ = stop.send(true);
        }
    }
    // Each one still open must prove it is alive.
    for connection in &mut open {
        endings.push(probe(connection).await);
    }
    for connection in open {
        connection.close().await;
    }
    Ok((RaceRound::tally(welcomed, &endings), facts.snapshot()))
}

fn login_race(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let mut rounds = Vec::with_capacity(RACE_ROUNDS);
        let mut before = None;
        for round in 0..RACE_ROUNDS {
            let (result, facts) = race_round(&options, round).await?;
            rounds.push(result);
            before.get_or_insert(facts);
        }
        let before = before.ok_or_else(|| SimError::Other("the race ran no rounds".to_owned()))?;
        // The first round's player, as a new session's welcome reports it (this replaces the
        // survivor, which was closed anyway).
        let after = async {
            let device = format!("sim-attack-{}-login-race-0", options.run_id);
            let login = device_login(&options.endpoint, &device).await?;
            let connection = Connection::connect(&options.endpoint, &login.token).await?;
            let mut facts = PlayerFacts::fresh(&options.content);
            facts.set_profile(&connection.welcome.profile);
            connection.close().await;
            Ok(facts.snapshot())
        }
        .await;
        Ok(Observed {
            got: race_outcome(&rounds),
            before,
            after,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attack::{Verdict, verdict};

    fn held(outcome: &Outcome) -> bool {
        matches!(outcome, Outcome::State { held: true, .. })
    }

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
    fn a_resume_is_through_if_taken_back_or_acted_on_or_the_facts_changed() {
        let before = PlayerFacts::default().snapshot();
        let mut paid = before.clone();
        paid.coins += 30;
        assert!(resume_held(false, false, &before, Some(&before)));
        assert!(resume_held(false, false, &before, None));
        assert!(!resume_held(true, false, &before, Some(&before)));
        assert!(!resume_held(false, true, &before, Some(&before)));
        assert!(!resume_held(false, false, &before, Some(&paid)));
    }

    fn round(live: usize, replaced: usize) -> RaceRound {
        let mut endings = vec![Ending::Live; live];
        endings.extend(vec![Ending::Bye(ByeReason::Replaced); replaced]);
        endings.extend(vec![
            Ending::Gone("dropped without bye".to_owned());
            RACE_CONNECTIONS - live - replaced
        ]);
        RaceRound::tally(RACE_CONNECTIONS, &endings)
    }

    #[test]
    fn a_race_holds_only_with_exactly_one_live_session() {
        assert!(round(1, 15).held());
        assert!(!round(0, 16).held(), "no session left: a hole");
        assert!(!round(2, 14).held(), "two sessions: a hole");
        let counted = round(1, 13);
        assert_eq!(counted.live, 1);
        assert_eq!(counted.replaced, 13);
        assert_eq!(counted.other.len(), 2);
        assert!(
            counted.held(),
            "one live session holds, the odd endings are reported"
        );
    }

    #[test]
    fn the_race_outcome_holds_only_if_every_round_did() {
        let clean = race_outcome(&vec![round(1, 15); RACE_ROUNDS]);
        assert!(held(&clean));
        assert_eq!(
            clean.to_string(),
            "1 live, 15 replaced, in each of 5 rounds"
        );
        let zero = race_outcome(&[round(1, 15), round(0, 16), round(1, 15)]);
        assert!(!held(&zero));
        assert_eq!(
            zero.to_string(),
            "rounds: 1 live/15 replaced; 0 live/16 replaced; 1 live/15 replaced"
        );
        assert!(!held(&race_outcome(&[round(2, 14)])));
        assert!(!held(&race_outcome(&[])), "no rounds prove nothing");
        let odd = race_outcome(&[round(1, 14)]);
        assert!(held(&odd));
        assert_eq!(
            odd.to_string(),
            "rounds: 1 live/14 replaced (1 other: dropped without bye)"
        );
    }

    #[test]
    fn state_cheats_are_judged_by_state_not_words() {
        let expected = Outcome::State {
            held: true,
            seen: "1 live".to_owned(),
        };
        let got = race_outcome(&[round(1, 15)]);
        assert_eq!(verdict(&expected, &got, Some(true)), Verdict::Blocked);
        assert_eq!(
            verdict(&expected, &race_outcome(&[round(0, 16)]), Some(true)),
            Verdict::PassedThrough
        );
        assert_eq!(
            verdict(&expected, &got, Some(false)),
            Verdict::PassedThrough,
            "changed facts let it through whatever the state says"
        );
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
