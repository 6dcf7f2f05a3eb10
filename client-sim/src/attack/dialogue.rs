//! Cheats on the conversation rules: forged and replayed actions, altered payloads, lines and
//! responses never shown, advancing past a choice, a skipped quest check, and resuming a
//! conversation after walking out of reach.
//!
//! **Resuming after walking away** is judged by the state it leaves: a conversation with an
//! action armed is parked by dropping the TCP connection without a Close frame; a new session
//! walks (honestly) 65 studs away and sends `resume`, then the armed action. Through if the
//! conversation was taken back, the action was accepted, or the player's facts (as the server
//! reports them afterwards) changed.

use std::sync::Arc;

use banter_protocol::{ActionType, ClientMessage, ErrorCode, ServerMessage};
use tokio::time::Instant;

use super::cheater::{
    Cheat, CheatFuture, Cheater, Observed, action_message, advance, choose, outcome,
};
use super::{AttackOptions, FENNICK, Outcome, PIM, PIM_OBJECTIVE, PIM_QUEST};
use crate::error::SimError;
use crate::facts::Snapshot;
use crate::session::device_login;

/// How far from the NPC the walker stands when it resumes, studs.
const WALKED_AWAY: f64 = 65.0;

/// A cheat by a player talking to Pim on the greeting: `setup` honest steps, then `cheat`.
fn at_pim_greeting(
    options: &Arc<AttackOptions>,
    tag: &'static str,
    setup: Vec<ClientMessage>,
    cheat: ClientMessage,
) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let mut p = Cheater::new(&options, tag).await?;
        p.open(PIM).await?;
        for step in setup {
            p.honest(step).await?;
        }
        let before = p.facts.snapshot();
        let got = outcome(&p.send(cheat).await?);
        let after = p.server_facts(PIM).await;
        Ok(Observed { got, before, after })
    })
}

/// The cheats at Pim's greeting, and the skipped quest check.
pub(super) fn cheats(options: &Arc<AttackOptions>) -> Vec<Cheat> {
    use ErrorCode::*;
    let o = options;
    let yes = || choose("PimsTideTale_Greet_r1");
    let accept = || action_message(ActionType::AcceptQuest, PIM_QUEST);
    let mut cheats = vec![
        Cheat {
            name: "forged action: CompleteQuest never shown",
            expected: Outcome::Code(NotArmed),
            run: at_pim_greeting(
                o,
                "forged-complete",
                vec![],
                action_message(ActionType::CompleteQuest, PIM_QUEST),
            ),
        },
        Cheat {
            name: "forged action: AdvanceObjective never shown",
            expected: Outcome::Code(NotArmed),
            run: at_pim_greeting(
                o,
                "forged-objective",
                vec![],
                action_message(ActionType::AdvanceObjective, PIM_OBJECTIVE),
            ),
        },
        Cheat {
            name: "response never shown",
            expected: Outcome::Code(NotReachable),
            run: at_pim_greeting(o, "unshown-response", vec![], choose("Pim_Hello_r1")),
        },
        Cheat {
            name: "line not yet shown",
            expected: Outcome::Code(NotReachable),
            run: at_pim_greeting(o, "unshown-line", vec![], advance("PimsTideTale_Complete")),
        },
        Cheat {
            name: "advancing past a choice",
            expected: Outcome::Code(AwaitsChoice),
            run: at_pim_greeting(o, "skip-choice", vec![], advance("PimsTideTale_Greet")),
        },
        Cheat {
            name: "altered payload: another quest",
            expected: Outcome::Code(PayloadMismatch),
            run: at_pim_greeting(
                o,
                "altered-quest",
                vec![yes()],
                action_message(ActionType::AcceptQuest, "CopperSnappers"),
            ),
        },
        Cheat {
            name: "altered payload: amount 100",
            expected: Outcome::Code(PayloadMismatch),
            run: at_pim_greeting(
                o,
                "altered-amount",
                vec![yes(), advance("PimsTideTale_Tale"), accept()],
                action_message(
                    ActionType::AdvanceObjective,
                    "PimsTideTale|HearTheTale|100|mistral_cay",
                ),
            ),
        },
        Cheat {
            name: "action replayed past its arming",
            expected: Outcome::Code(NotArmed),
            run: at_pim_greeting(
                o,
                "replay",
                vec![yes(), advance("PimsTideTale_Tale"), accept()],
                accept(),
            ),
        },
        Cheat {
            name: "completing a quest twice",
            expected: Outcome::Code(QuestState),
            run: at_pim_greeting(
                o,
                "twice",
                vec![
                    yes(),
                    advance("PimsTideTale_Tale"),
                    accept(),
                    action_message(ActionType::AdvanceObjective, PIM_OBJECTIVE),
                    advance("PimsTideTale_Ending"),
                    action_message(ActionType::CompleteQuest, PIM_QUEST),
                    // Showing the completion line again arms CompleteQuest again.
                    advance("PimsTideTale_Ending"),
                ],
                action_message(ActionType::CompleteQuest, PIM_QUEST),
            ),
        },
    ];
    cheats.push(Cheat {
        name: "skipping the quest check's jump",
        expected: Outcome::Code(NotReachable),
        run: skip_the_check(o),
    });
    cheats
}

/// Accepts Fennick's snappers, comes back, picks the check and advances to the success line
/// instead of waiting for the server's jump.
fn skip_the_check(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let mut p = Cheater::new(&options, "skip-check").await?;
        p.open(FENNICK).await?;
        p.choose("CopperSnappers_Greet_r1").await?;
        p.advance("CopperSnappers_Accepted").await?;
        p.action(ActionType::AcceptQuest, "CopperSnappers").await?;
        p.action(ActionType::TrackQuest, "CopperSnappers").await?;
        p.honest(ClientMessage::Close { id: None }).await?;
        p.open(FENNICK).await?;
        p.choose("CopperSnappers_Check_r1").await?;
        let before = p.facts.snapshot();
        let got = outcome(&p.send(advance("CopperSnappers_Complete")).await?);
        let after = p.server_facts(FENNICK).await;
        Ok(Observed { got, before, after })
    })
}

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

/// A conversation with an action armed, parked by dropping the connection; a new session walks
/// 65 studs away, resumes and sends the armed action.
pub(super) fn resume_walked_away(options: &Arc<AttackOptions>) -> Cheat {
    Cheat {
        name: "resuming after walking 65 studs away",
        expected: Outcome::State {
            held: true,
            seen: "resume too_far; quest untouched".to_owned(),
        },
        run: resume_play(options),
    }
}

fn resume_play(options: &Arc<AttackOptions>) -> CheatFuture {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::ClientFacts;

    #[test]
    fn a_resume_is_through_if_taken_back_or_acted_on_or_the_facts_changed() {
        let before = ClientFacts::default().snapshot();
        let mut paid = before.clone();
        paid.coins += 30;
        assert!(resume_held(false, false, &before, Some(&before)));
        assert!(resume_held(false, false, &before, None));
        assert!(!resume_held(true, false, &before, Some(&before)));
        assert!(!resume_held(false, true, &before, Some(&before)));
        assert!(!resume_held(false, false, &before, Some(&paid)));
    }
}
