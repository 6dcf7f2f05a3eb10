//! The cheat catalogue: each cheat is run against a live server by its own new player, and
//! checked twice: the server must answer with the expected refusal, and the player's facts
//! (quests, progress, coins, experience, tutorial stage) must be exactly what they were before
//! the cheat, as the server itself reports them when the player talks again.
//!
//! The catalogue plays on the sample content (Pim's tale, Grandpa Fennick's snappers, the
//! skippers); a content folder without those NPCs and quests fails the rows that need them.
//!
//! Three cheats are judged by the state they leave rather than by any answer (see [`by_state`]):
//! a burst of small moves (each within the per-message slack, together far over the speed
//! limit), resuming a conversation after walking away from it, and many logins of one player at
//! the same instant (which must leave exactly one live session).
//!
//! Flooding is sent frame after frame, each answer read before the next frame goes out. A
//! client that writes hundreds of frames at once and then reads usually never sees its `bye
//! flooding`: the server closes the socket with those frames unread, the kernel answers with a
//! TCP reset, and the reset discards the `bye` still in the client's receive buffer.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use banter_dialogue::content::Content;
use banter_protocol::{ActionType, ByeReason, ClientMessage, ErrorCode, Position, ServerMessage};
use serde::Serialize;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use crate::auth;
use crate::connection::{Connection, Reply, upgrade_status};
use crate::error::{Result, SimError};
use crate::facts::{PlayerFacts, Snapshot};
use crate::http::Endpoint;
use crate::report::table;
use crate::session::{Login, TALK_COOLDOWN, device_login};
use crate::world::{distance, stand_spot, step_toward};

mod by_state;

/// How the catalogue reaches the server.
#[derive(Clone, Debug)]
pub struct AttackOptions {
    pub endpoint: Endpoint,
    pub content: Arc<Content>,
    /// The server's signing secret, to mint an expired but otherwise valid token.
    pub auth_secret: String,
    pub service_key: String,
    /// Makes device ids unique to this run.
    pub run_id: String,
}

/// What the server did with a cheat (or what it should do).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Refused with this error code.
    Code(ErrorCode),
    /// An HTTP status (a refused upgrade, an internal endpoint).
    Http(u16),
    /// The session was ended with this reason.
    Bye(ByeReason),
    /// The connection was dropped without a `bye`.
    Dropped,
    /// The server accepted it.
    Accepted,
    /// The cheat could not be run (setup failed).
    Failed(String),
    /// Judged by the state the cheat left, not by any answer: `held` when the state shows the
    /// cheat did not work; `seen` says what the state was (and the answers on the way).
    State { held: bool, seen: String },
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Code(code) => f.write_str(code.name()),
            Outcome::Http(status) => write!(f, "HTTP {status}"),
            Outcome::Bye(reason) => {
                let name = serde_json::to_value(reason)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                write!(f, "bye {name}")
            }
            Outcome::Dropped => f.write_str("dropped"),
            Outcome::Accepted => f.write_str("accepted"),
            Outcome::Failed(why) => write!(f, "failed: {why}"),
            Outcome::State { seen, .. } => f.write_str(seen),
        }
    }
}

/// The verdict on one cheat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Refused as expected, nothing changed.
    Blocked,
    /// Refused and nothing changed, but not with the expected answer.
    WrongAnswer,
    /// Accepted, or the player's facts changed: the cheat got through.
    PassedThrough,
    /// The cheat could not be run.
    Failed,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Blocked => "blocked",
            Verdict::WrongAnswer => "WRONG ANSWER",
            Verdict::PassedThrough => "PASSED THROUGH",
            Verdict::Failed => "FAILED TO RUN",
        }
    }
}

/// Judges one cheat: what was expected, what happened, and whether the facts stayed the same
/// (`None` when they could not be read back). A cheat judged by state is blocked when its state
/// held, whatever the words describing it.
pub fn verdict(expected: &Outcome, got: &Outcome, unchanged: Option<bool>) -> Verdict {
    match got {
        Outcome::Failed(_) => return Verdict::Failed,
        Outcome::Accepted => return Verdict::PassedThrough,
        Outcome::Http(status) if *status < 400 => return Verdict::PassedThrough,
        Outcome::State { held: false, .. } => return Verdict::PassedThrough,
        _ => {}
    }
    if unchanged == Some(false) {
        return Verdict::PassedThrough;
    }
    let as_expected = match (expected, got) {
        (Outcome::State { held: true, .. }, Outcome::State { held: true, .. }) => true,
        _ => got == expected,
    };
    if as_expected {
        Verdict::Blocked
    } else {
        Verdict::WrongAnswer
    }
}

/// One row of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheatRow {
    pub cheat: String,
    pub expected: String,
    pub got: String,
    /// Whether the player's facts were the same afterwards (`null`: could not be read back).
    pub profile_unchanged: Option<bool>,
    pub verdict: Verdict,
}

/// The whole catalogue's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AttackReport {
    pub rows: Vec<CheatRow>,
    pub cheats: usize,
    pub blocked: usize,
    pub passed_through: usize,
    pub wrong_answer: usize,
    pub failed: usize,
}

impl AttackReport {
    pub fn from_rows(rows: Vec<CheatRow>) -> AttackReport {
        let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
        AttackReport {
            cheats: rows.len(),
            blocked: count(Verdict::Blocked),
            passed_through: count(Verdict::PassedThrough),
            wrong_answer: count(Verdict::WrongAnswer),
            failed: count(Verdict::Failed),
            rows,
        }
    }

    /// True when every cheat was blocked with its expected answer.
    pub fn clean(&self) -> bool {
        self.blocked == self.cheats
    }

    pub fn table(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.cheat.clone(),
                    r.expected.clone(),
                    r.got.clone(),
                    match r.profile_unchanged {
                        Some(true) => "same".to_owned(),
                        Some(false) => "CHANGED".to_owned(),
                        None => "?".to_owned(),
                    },
                    r.verdict.name().to_owned(),
                ]
            })
            .collect();
        let mut out = table(&["cheat", "expected", "got", "profile", "verdict"], &rows);
        out.push_str(&format!(
            "\n{} cheats: {} blocked, {} passed through, {} wrong answer, {} failed to run\n",
            self.cheats, self.blocked, self.passed_through, self.wrong_answer, self.failed
        ));
        out
    }
}

// ---------------------------------------------------------------------------------------------
// A cheating player.

/// A player the catalogue controls message by message.
struct Cheater {
    options: Arc<AttackOptions>,
    /// The device id the player logs in with (again, for a fresh token).
    device: String,
    login: Login,
    connection: Option<Connection>,
    facts: PlayerFacts,
    position: Option<Position>,
    last_move: Option<Instant>,
    last_talk: Option<Instant>,
}

fn outcome(reply: &Reply) -> Outcome {
    match &reply.answer {
        Ok(()) => Outcome::Accepted,
        Err(refusal) => Outcome::Code(refusal.code),
    }
}

impl Cheater {
    async fn new(options: &Arc<AttackOptions>, tag: &str) -> Result<Cheater> {
        let device = format!("sim-attack-{}-{tag}", options.run_id);
        let login = device_login(&options.endpoint, &device).await?;
        let mut cheater = Cheater {
            options: options.clone(),
            device,
            login,
            connection: None,
            facts: PlayerFacts::fresh(&options.content),
            position: None,
            last_move: None,
            last_talk: None,
        };
        cheater.reconnect().await?;
        Ok(cheater)
    }

    async fn reconnect(&mut self) -> Result<()> {
        let connection = Connection::connect(&self.options.endpoint, &self.login.token).await?;
        self.facts.set_profile(&connection.welcome.profile);
        self.connection = Some(connection);
        Ok(())
    }

    fn connection(&mut self) -> Result<&mut Connection> {
        self.connection.as_mut().ok_or(SimError::Closed)
    }

    fn npc(&self, id: &str) -> Result<banter_dialogue::content::NpcDef> {
        self.options
            .content
            .npc(id)
            .cloned()
            .ok_or_else(|| SimError::Content(format!("the content has no NPC `{id}`")))
    }

    /// Sends a message with an id; its answer. Effects update the tracked facts.
    async fn send(&mut self, message: ClientMessage) -> Result<Reply> {
        let reply = self.connection()?.request(message).await?;
        for m in &reply.messages {
            if let ServerMessage::Effect {
                effect, profile, ..
            } = m
            {
                self.facts.apply(&self.options.content, effect, profile);
            }
        }
        Ok(reply)
    }

    /// An honest step that must be accepted.
    async fn honest(&mut self, message: ClientMessage) -> Result<Reply> {
        let kind = message.kind();
        let reply = self.send(message).await?;
        match &reply.answer {
            Ok(()) => Ok(reply),
            Err(r) => Err(SimError::Other(format!(
                "honest {kind} refused: {}",
                r.code.name()
            ))),
        }
    }

    async fn choose(&mut self, response: &str) -> Result<Reply> {
        self.honest(ClientMessage::Choose {
            id: None,
            response: response.to_owned(),
        })
        .await
    }

    async fn advance(&mut self, node: &str) -> Result<Reply> {
        self.honest(ClientMessage::Advance {
            id: None,
            node: node.to_owned(),
        })
        .await
    }

    async fn action(&mut self, action: ActionType, payload: &str) -> Result<Reply> {
        self.honest(action_message(action, payload)).await
    }

    /// Moves the body to `to` in one accepted move.
    async fn move_to(&mut self, to: Position) -> Result<()> {
        self.honest(ClientMessage::Move {
            id: None,
            position: to,
        })
        .await?;
        self.position = Some(to);
        self.last_move = Some(Instant::now());
        Ok(())
    }

    /// Walks honestly (short steps, well under the speed limit) to `to`; spawns there if the
    /// body has none yet.
    async fn walk_to(&mut self, to: Position) -> Result<()> {
        loop {
            let Some(from) = self.position else {
                return self.move_to(to).await;
            };
            if distance(from, to) < 0.01 {
                return Ok(());
            }
            if let Some(last) = self.last_move {
                tokio::time::sleep_until(last + Duration::from_millis(300)).await;
            }
            self.move_to(step_toward(from, to, 9.0)).await?;
        }
    }

    /// Talks to `npc_id` by its display name (with a hint if given), after the cooldown.
    async fn talk(&mut self, npc_id: &str, hint: Option<&str>) -> Result<Reply> {
        let npc = self.npc(npc_id)?;
        if let Some(last) = self.last_talk {
            tokio::time::sleep_until(last + TALK_COOLDOWN).await;
        }
        self.talk_now(&npc.name, hint).await
    }

    /// Talks without waiting for the cooldown.
    async fn talk_now(&mut self, name: &str, hint: Option<&str>) -> Result<Reply> {
        let reply = self
            .send(ClientMessage::Talk {
                id: None,
                npc: name.to_owned(),
                instance: hint.map(str::to_owned),
                cached: None,
            })
            .await?;
        if reply.answer.is_ok() {
            self.last_talk = Some(Instant::now());
            for m in &reply.messages {
                if let ServerMessage::Opened { facts, .. } = m {
                    self.facts.opened(facts);
                }
            }
        }
        Ok(reply)
    }

    /// Walks to `npc_id`, opens a conversation (its facts are the baseline) and keeps it open.
    async fn open(&mut self, npc_id: &str) -> Result<()> {
        let npc = self.npc(npc_id)?;
        self.walk_to(stand_spot(&npc)).await?;
        let reply = self.talk(npc_id, Some(npc_id)).await?;
        if reply.answer.is_err() {
            return Err(SimError::Other(format!(
                "honest talk to {npc_id} refused: {}",
                outcome(&reply)
            )));
        }
        Ok(())
    }

    /// Walks to `npc_id` and talks to it once (open and close): the baseline facts.
    async fn arrive(&mut self, npc_id: &str) -> Result<()> {
        self.open(npc_id).await?;
        self.honest(ClientMessage::Close { id: None }).await?;
        Ok(())
    }

    /// What the server says the player's facts are now: close whatever is open, walk back to
    /// `npc_id` and talk to it.
    async fn server_facts(&mut self, npc_id: &str) -> Result<Snapshot> {
        if self.connection.as_ref().is_none_or(Connection::is_ended) {
            self.reconnect().await?;
        }
        let _ = self.send(ClientMessage::Close { id: None }).await?;
        let npc = self.npc(npc_id)?;
        self.walk_to(stand_spot(&npc)).await?;
        let reply = self.talk(npc_id, Some(npc_id)).await?;
        let facts = reply
            .messages
            .iter()
            .find_map(|m| match m {
                ServerMessage::Opened { facts, .. } => Some(Snapshot::from(facts)),
                _ => None,
            })
            .ok_or_else(|| SimError::Other(format!("talking to {npc_id} opened nothing")))?;
        let _ = self.send(ClientMessage::Close { id: None }).await?;
        Ok(facts)
    }

    /// Sends a raw frame and reads its answer: the error's code, `Accepted` for an ack, or
    /// how the session ended.
    async fn raw(&mut self, frame: Message) -> Result<Outcome> {
        let connection = self.connection()?;
        connection.send_frame(frame).await?;
        answer_of_raw(connection).await
    }
}

async fn answer_of_raw(connection: &mut Connection) -> Result<Outcome> {
    loop {
        match connection.recv(Duration::from_secs(10)).await {
            Ok(ServerMessage::Error { code, .. }) => return Ok(Outcome::Code(code)),
            Ok(ServerMessage::Ack { .. }) => return Ok(Outcome::Accepted),
            Ok(ServerMessage::Bye { reason, .. }) => return Ok(Outcome::Bye(reason)),
            Ok(_) => continue,
            Err(SimError::Closed) => return Ok(Outcome::Dropped),
            Err(e) => return Err(e),
        }
    }
}

fn action_message(action: ActionType, payload: &str) -> ClientMessage {
    ClientMessage::Action {
        id: None,
        action,
        payload: payload.to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// The catalogue.

const PIM: &str = "pim";
const FENNICK: &str = "fennick";
const PIM_QUEST: &str = "PimsTideTale";
const PIM_OBJECTIVE: &str = "PimsTideTale|HearTheTale|1|mistral_cay";

/// What a cheat observed: the answer, and the facts before and after.
struct Observed {
    got: Outcome,
    before: Snapshot,
    after: Result<Snapshot>,
}

type CheatFuture = Pin<Box<dyn Future<Output = Result<Observed>> + Send>>;

struct Cheat {
    name: &'static str,
    expected: Outcome,
    run: CheatFuture,
}

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

fn choose(response: &str) -> ClientMessage {
    ClientMessage::Choose {
        id: None,
        response: response.to_owned(),
    }
}

fn advance(node: &str) -> ClientMessage {
    ClientMessage::Advance {
        id: None,
        node: node.to_owned(),
    }
}

/// Every cheat in the catalogue.
fn catalogue(options: &Arc<AttackOptions>) -> Vec<Cheat> {
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
    cheats.extend(world_cheats(o));
    cheats.extend(by_state::cheats(o));
    cheats.extend(token_cheats(o));
    cheats.extend(frame_cheats(o));
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

fn world_cheats(options: &Arc<AttackOptions>) -> Vec<Cheat> {
    use ErrorCode::*;
    let from_14 = {
        let options = options.clone();
        Box::pin(async move {
            let mut p = Cheater::new(&options, "far").await?;
            p.arrive(PIM).await?;
            let before = p.facts.snapshot();
            let pim = p.npc(PIM)?;
            let [x, y, z] = pim.position;
            p.walk_to([x, y, z - 14.0]).await?;
            let got = outcome(&p.talk(PIM, Some(PIM)).await?);
            let after = p.server_facts(PIM).await;
            Ok(Observed { got, before, after })
        }) as CheatFuture
    };
    let cooldown = {
        let options = options.clone();
        Box::pin(async move {
            let mut p = Cheater::new(&options, "cooldown").await?;
            p.arrive(PIM).await?;
            let before = p.facts.snapshot();
            let name = p.npc(PIM)?.name;
            let got = outcome(&p.talk_now(&name, None).await?);
            let after = p.server_facts(PIM).await;
            Ok(Observed { got, before, after })
        }) as CheatFuture
    };
    let bodiless = {
        let options = options.clone();
        Box::pin(async move {
            let mut p = Cheater::new(&options, "bodiless").await?;
            let before = PlayerFacts::fresh(&options.content).snapshot();
            let name = p.npc(PIM)?.name;
            let got = outcome(&p.talk_now(&name, None).await?);
            let after = p.server_facts(PIM).await;
            Ok(Observed { got, before, after })
        }) as CheatFuture
    };
    let teleport = {
        let options = options.clone();
        Box::pin(async move {
            let mut p = Cheater::new(&options, "teleport").await?;
            p.arrive(PIM).await?;
            let before = p.facts.snapshot();
            let [x, y, z] = p.position.unwrap_or_default();
            let got = outcome(
                &p.send(ClientMessage::Move {
                    id: None,
                    position: [x + 5000.0, y, z],
                })
                .await?,
            );
            // The refused move left the body where it was: talking from there still works.
            let after = p.server_facts(PIM).await;
            Ok(Observed { got, before, after })
        }) as CheatFuture
    };
    let other_island = {
        let options = options.clone();
        Box::pin(async move {
            let mut p = Cheater::new(&options, "island").await?;
            p.arrive(PIM).await?;
            let before = p.facts.snapshot();
            let got = outcome(&p.talk(FENNICK, None).await?);
            let after = p.server_facts(PIM).await;
            Ok(Observed { got, before, after })
        }) as CheatFuture
    };
    let far_hint = {
        let options = options.clone();
        Box::pin(async move {
            let mut p = Cheater::new(&options, "hint").await?;
            p.arrive("skipper_mistral_cay").await?;
            let before = p.facts.snapshot();
            let got = outcome(
                &p.talk("skipper_mistral_cay", Some("skipper_gullrock"))
                    .await?,
            );
            let after = p.server_facts("skipper_mistral_cay").await;
            Ok(Observed { got, before, after })
        }) as CheatFuture
    };
    vec![
        Cheat {
            name: "talking from 14 studs",
            expected: Outcome::Code(TooFar),
            run: from_14,
        },
        Cheat {
            name: "talking again within 1.5 s",
            expected: Outcome::Code(TalkCooldown),
            run: cooldown,
        },
        Cheat {
            name: "talking while bodiless",
            expected: Outcome::Code(NoBody),
            run: bodiless,
        },
        Cheat {
            name: "teleporting 5000 studs",
            expected: Outcome::Code(Teleport),
            run: teleport,
        },
        Cheat {
            name: "talking to an NPC on another island",
            expected: Outcome::Code(TooFar),
            run: other_island,
        },
        Cheat {
            name: "instance hint naming a far look-alike",
            expected: Outcome::Code(TooFar),
            run: far_hint,
        },
    ]
}

/// A victim player with a real token, and the profile its `welcome` reports.
async fn victim(options: &Arc<AttackOptions>, tag: &str) -> Result<(Login, Snapshot)> {
    let device = format!("sim-attack-{}-{tag}", options.run_id);
    let login = device_login(&options.endpoint, &device).await?;
    let connection = Connection::connect(&options.endpoint, &login.token).await?;
    let mut facts = PlayerFacts::fresh(&options.content);
    facts.set_profile(&connection.welcome.profile);
    connection.close().await;
    Ok((login, facts.snapshot()))
}

/// The victim's profile as a new session's `welcome` reports it.
async fn victim_after(options: &Arc<AttackOptions>, login: &Login) -> Result<Snapshot> {
    let connection = Connection::connect(&options.endpoint, &login.token).await?;
    let mut facts = PlayerFacts::fresh(&options.content);
    facts.set_profile(&connection.welcome.profile);
    connection.close().await;
    Ok(facts.snapshot())
}

/// A token cheat against a victim: `forge` makes the token from the victim's login.
fn token_cheat(
    options: &Arc<AttackOptions>,
    tag: &'static str,
    forge: fn(&AttackOptions, &Login, &Login) -> String,
) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let (victim_login, before) = victim(&options, tag).await?;
        let attacker = device_login(
            &options.endpoint,
            &format!("sim-attack-{}-{tag}-a", options.run_id),
        )
        .await?;
        let token = forge(&options, &victim_login, &attacker);
        let status = upgrade_status(&options.endpoint, &token).await?;
        let got = if status == 101 {
            Outcome::Accepted
        } else {
            Outcome::Http(status)
        };
        let after = victim_after(&options, &victim_login).await;
        Ok(Observed { got, before, after })
    })
}

fn token_cheats(options: &Arc<AttackOptions>) -> Vec<Cheat> {
    let expired = {
        let options = options.clone();
        Box::pin(async move {
            // Control: a fresh token minted with the same secret must be accepted, or the
            // expired one proves nothing.
            let (victim_login, before) = victim(&options, "expired").await?;
            let now = auth::unix_now();
            let fresh = auth::mint(&options.auth_secret, &victim_login.player, now, now + 600);
            if upgrade_status(&options.endpoint, &fresh).await? != 101 {
                return Err(SimError::Other(
                    "a token minted with --auth-secret is refused: pass the server's secret"
                        .to_owned(),
                ));
            }
            let token = auth::mint(
                &options.auth_secret,
                &victim_login.player,
                now - 7200,
                now - 60,
            );
            let status = upgrade_status(&options.endpoint, &token).await?;
            let got = if status == 101 {
                Outcome::Accepted
            } else {
                Outcome::Http(status)
            };
            let after = victim_after(&options, &victim_login).await;
            Ok(Observed { got, before, after })
        }) as CheatFuture
    };
    let events_with_player_token = {
        let options = options.clone();
        Box::pin(async move {
            let (victim_login, before) = victim(&options, "events-token").await?;
            let body = serde_json::json!({
                "event_id": format!("sim-attack-{}-events", options.run_id),
                "player": victim_login.player,
                "kind": "item_found",
                "item": "Gold",
                "island": "brinehollow",
            })
            .to_string();
            let (status, _) = options
                .endpoint
                .post_json("/internal/events", Some(&victim_login.token), &body)
                .await?;
            let got = if status < 400 {
                Outcome::Accepted
            } else {
                Outcome::Http(status)
            };
            let after = victim_after(&options, &victim_login).await;
            Ok(Observed { got, before, after })
        }) as CheatFuture
    };
    let reload_with_player_token = {
        let options = options.clone();
        Box::pin(async move {
            let (victim_login, before) = victim(&options, "reload-token").await?;
            let (status, _) = options
                .endpoint
                .post_json("/admin/reload", Some(&victim_login.token), "")
                .await?;
            let got = if status < 400 {
                Outcome::Accepted
            } else {
                Outcome::Http(status)
            };
            let after = victim_after(&options, &victim_login).await;
            Ok(Observed { got, before, after })
        }) as CheatFuture
    };
    vec![
        Cheat {
            name: "token for another player (claims swapped)",
            expected: Outcome::Http(401),
            run: token_cheat(options, "swap", |_, victim, attacker| {
                auth::with_subject(&attacker.token, &victim.player, auth::unix_now())
            }),
        },
        Cheat {
            name: "token for another player (wrong secret)",
            expected: Outcome::Http(401),
            run: token_cheat(options, "wrong-secret", |_, victim, _| {
                let now = auth::unix_now();
                auth::mint(
                    "an-attackers-guess-at-the-secret-000000",
                    &victim.player,
                    now,
                    now + 600,
                )
            }),
        },
        Cheat {
            name: "tampered token",
            expected: Outcome::Http(401),
            run: token_cheat(options, "tampered", |_, victim, _| {
                auth::tampered(&victim.token)
            }),
        },
        Cheat {
            name: "unsigned token (alg none)",
            expected: Outcome::Http(401),
            run: token_cheat(options, "alg-none", |_, victim, _| {
                auth::unsigned(&victim.player, auth::unix_now())
            }),
        },
        Cheat {
            name: "expired token",
            expected: Outcome::Http(401),
            run: expired,
        },
        Cheat {
            name: "player token on /internal/events",
            expected: Outcome::Http(403),
            run: events_with_player_token,
        },
        Cheat {
            name: "player token on /admin/reload",
            expected: Outcome::Http(403),
            run: reload_with_player_token,
        },
    ]
}

/// A frame-level cheat by a player standing by Pim: `frame` is sent raw.
fn frame_cheat(options: &Arc<AttackOptions>, tag: &'static str, frame: Message) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let mut p = Cheater::new(&options, tag).await?;
        p.arrive(PIM).await?;
        let before = p.facts.snapshot();
        let got = p.raw(frame).await?;
        let after = p.server_facts(PIM).await;
        Ok(Observed { got, before, after })
    })
}

fn text(s: &str) -> Message {
    Message::Text(s.to_owned().into())
}

fn frame_cheats(options: &Arc<AttackOptions>) -> Vec<Cheat> {
    use ErrorCode::*;
    let padding = "x".repeat(5 * 1024);
    let oversized = format!(
        r#"{{"type":"action","id":1,"action":"CompleteQuest","payload":"{PIM_QUEST}","pad":"{padding}"}}"#
    );
    let huge = format!(
        r#"{{"type":"action","id":1,"action":"CompleteQuest","payload":"{}"}}"#,
        "x".repeat(70 * 1024)
    );
    let flooding = {
        let options = options.clone();
        Box::pin(async move {
            let mut p = Cheater::new(&options, "flood").await?;
            p.arrive(PIM).await?;
            let before = p.facts.snapshot();
            let connection = p.connection()?;
            let forged =
                serde_json::to_string(&action_message(ActionType::CompleteQuest, PIM_QUEST))
                    .map_err(|e| SimError::Other(e.to_string()))?;
            // Frame after frame, each one's answer read before the next is sent: far over the
            // rate (hundreds a second), yet the server has read everything when it says `bye`,
            // so the `bye` is not lost to a reset (see `flooding` in the module docs).
            let mut got = Outcome::Accepted;
            for _ in 0..300 {
                if connection.send_frame(text(&forged)).await.is_err() {
                    break;
                }
                match answer_of_raw(connection).await? {
                    Outcome::Code(RateLimited) => got = Outcome::Code(RateLimited),
                    Outcome::Bye(reason) => {
                        got = Outcome::Bye(reason);
                        break;
                    }
                    Outcome::Dropped => {
                        got = Outcome::Dropped;
                        break;
                    }
                    _ => {}
                }
            }
            let after = p.server_facts(PIM).await;
            Ok(Observed { got, before, after })
        }) as CheatFuture
    };
    vec![
        Cheat {
            name: "oversized frame (5 KiB)",
            expected: Outcome::Code(FrameTooLarge),
            run: frame_cheat(options, "oversized", text(&oversized)),
        },
        Cheat {
            name: "huge frame (70 KiB)",
            expected: Outcome::Dropped,
            run: frame_cheat(options, "huge", text(&huge)),
        },
        Cheat {
            name: "binary frame",
            expected: Outcome::Code(BinaryFrame),
            run: frame_cheat(
                options,
                "binary",
                Message::Binary(br#"{"type":"close","id":1}"#.to_vec().into()),
            ),
        },
        Cheat {
            name: "malformed: not JSON",
            expected: Outcome::Code(Malformed),
            run: frame_cheat(options, "not-json", text(r#"{"type":"talk","id":"#)),
        },
        Cheat {
            name: "malformed: unknown message type",
            expected: Outcome::Code(Malformed),
            run: frame_cheat(
                options,
                "unknown-type",
                text(r#"{"type":"grant_coins","id":1,"amount":1000}"#),
            ),
        },
        Cheat {
            name: "malformed: unknown field",
            expected: Outcome::Code(Malformed),
            run: frame_cheat(
                options,
                "unknown-field",
                text(r#"{"type":"close","id":1,"coins":1000}"#),
            ),
        },
        Cheat {
            name: "malformed: missing field",
            expected: Outcome::Code(Malformed),
            run: frame_cheat(
                options,
                "missing-field",
                text(r#"{"type":"advance","id":1}"#),
            ),
        },
        Cheat {
            name: "malformed: unknown action type",
            expected: Outcome::Code(Malformed),
            run: frame_cheat(
                options,
                "unknown-action",
                text(r#"{"type":"action","id":1,"action":"GrantCoins","payload":"1000"}"#),
            ),
        },
        Cheat {
            name: "malformed: non-finite position",
            expected: Outcome::Code(Malformed),
            run: frame_cheat(
                options,
                "non-finite",
                text(r#"{"type":"move","id":1,"position":[1e999,0,0]}"#),
            ),
        },
        Cheat {
            name: "flooding (frames back to back)",
            expected: Outcome::Bye(ByeReason::Flooding),
            run: flooding,
        },
    ]
}

/// Runs the whole catalogue, every cheat by its own player, all at once.
pub async fn run(options: AttackOptions) -> AttackReport {
    let options = Arc::new(options);
    let mut handles = Vec::new();
    for cheat in catalogue(&options) {
        let handle = tokio::spawn(cheat.run);
        handles.push((cheat.name, cheat.expected, handle));
    }
    let mut rows = Vec::new();
    for (name, expected, handle) in handles {
        let (got, unchanged) = match handle.await {
            Ok(Ok(observed)) => {
                let unchanged = observed.after.as_ref().ok().map(|a| *a == observed.before);
                (observed.got, unchanged)
            }
            Ok(Err(e)) => (Outcome::Failed(e.to_string()), None),
            Err(e) => (Outcome::Failed(format!("panicked: {e}")), None),
        };
        rows.push(CheatRow {
            cheat: name.to_owned(),
            expected: expected.to_string(),
            got: got.to_string(),
            profile_unchanged: unchanged,
            verdict: verdict(&expected, &got, unchanged),
        });
    }
    AttackReport::from_rows(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_needs_the_expected_answer_and_unchanged_facts() {
        let not_armed = Outcome::Code(ErrorCode::NotArmed);
        assert_eq!(
            verdict(&not_armed, &not_armed, Some(true)),
            Verdict::Blocked
        );
        assert_eq!(
            verdict(&not_armed, &not_armed, Some(false)),
            Verdict::PassedThrough,
            "a refusal that changed the facts let the cheat through"
        );
        assert_eq!(
            verdict(&not_armed, &Outcome::Accepted, Some(true)),
            Verdict::PassedThrough
        );
        assert_eq!(
            verdict(
                &not_armed,
                &Outcome::Code(ErrorCode::PayloadMismatch),
                Some(true)
            ),
            Verdict::WrongAnswer
        );
        assert_eq!(
            verdict(&Outcome::Http(401), &Outcome::Http(101), None),
            Verdict::PassedThrough
        );
        assert_eq!(
            verdict(&Outcome::Http(401), &Outcome::Http(401), None),
            Verdict::Blocked,
            "facts that cannot be read back do not fail a refusal"
        );
        assert_eq!(
            verdict(&not_armed, &Outcome::Failed("x".into()), None),
            Verdict::Failed
        );
    }

    #[test]
    fn outcomes_print_as_the_wire_says() {
        assert_eq!(Outcome::Code(ErrorCode::TooFar).to_string(), "too_far");
        assert_eq!(Outcome::Http(401).to_string(), "HTTP 401");
        assert_eq!(
            Outcome::Bye(ByeReason::Flooding).to_string(),
            "bye flooding"
        );
    }

    #[test]
    fn the_report_counts_verdicts() {
        let row = |verdict| CheatRow {
            cheat: "c".into(),
            expected: "e".into(),
            got: "g".into(),
            profile_unchanged: Some(true),
            verdict,
        };
        let report = AttackReport::from_rows(vec![
            row(Verdict::Blocked),
            row(Verdict::PassedThrough),
            row(Verdict::WrongAnswer),
        ]);
        assert_eq!(report.passed_through, 1);
        assert_eq!(report.blocked, 1);
        assert!(!report.clean());
        let json = serde_json::to_value(&report).expect("json");
        assert_eq!(json["passed_through"], 1);
        assert_eq!(json["rows"][1]["verdict"], "passed_through");
        assert!(report.table().contains("PASSED THROUGH"));
    }
}
