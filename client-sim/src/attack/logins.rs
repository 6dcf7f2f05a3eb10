//! Many logins of one player at the same instant, which must leave exactly one live session.
//!
//! Judged by the state it leaves: 16 connections of one player start together; once 15 have
//! ended (or 10 s passed), each one still open is asked a request with an id. Through unless
//! exactly one session answers it. Repeated for 5 players.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use banter_protocol::{ByeReason, ClientMessage, ServerMessage};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::sync::{Barrier, watch};
use tokio::time::Instant;

use super::cheater::{Cheat, CheatFuture, Observed};
use super::{AttackOptions, Outcome};
use crate::connection::Connection;
use crate::error::{Result, SimError};
use crate::facts::{ClientFacts, Snapshot};
use crate::session::device_login;

/// Connections per race, races per cheat, and how long a race may take to settle.
const RACE_CONNECTIONS: usize = 16;
const RACE_ROUNDS: usize = 5;
const RACE_PATIENCE: Duration = Duration::from_secs(10);
/// How long a surviving session has to answer the request that proves it alive.
const PROBE_PATIENCE: Duration = Duration::from_secs(5);

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
    let mut facts = ClientFacts::fresh(&options.content);
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

/// 16 connections of one player started together, five times.
pub(super) fn race(options: &Arc<AttackOptions>) -> Cheat {
    Cheat {
        name: "16 logins of one player at once (x5)",
        expected: Outcome::State {
            held: true,
            seen: format!(
                "1 live, {} replaced, in each of {RACE_ROUNDS} rounds",
                RACE_CONNECTIONS - 1
            ),
        },
        run: race_play(options),
    }
}

fn race_play(options: &Arc<AttackOptions>) -> CheatFuture {
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
            let mut facts = ClientFacts::fresh(&options.content);
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
}
