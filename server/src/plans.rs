//! Writer test plans: plain files next to the content (`content/tests/*.plan`) that say, as a
//! writer would, what players with these facts see and get when talking to an NPC, alone or as
//! a party, and `test-content`, which runs every plan through the real walk, resolver and quest
//! engine (the session core, as a live session runs it) on a throwaway SQLite database.
//!
//! ```text
//! plan Pim tells the tale to a newcomer
//! talk Pim
//! expect line PimsTideTale_Greet
//! choose "Go on, tell me."
//! expect effect quest_accepted PimsTideTale
//! advance
//! expect line PimsTideTale_Ending
//! ...
//! expect reward coins 30 experience 20
//! send action CompleteQuest PimsTideTale
//! expect refusal not_armed
//! ```
//!
//! A line is one of these (`#` starts a comment; a `"quoted text"` is one word):
//!
//! ```text
//! plan <name>                               a plan; a file may hold several
//! players <Name>...                         the plan's players (else it has one, unnamed)
//! party <Leader> <Name>...                  a stored party, its first name leading
//! seed <n>                                  every ballot's seed (default 0)
//! [<Name>:] <step>                          a step or check of that player (else the first)
//! ```
//!
//! `players`, `party` and `seed` come before the plan's first step; a name `party` gives that
//! `players` did not is added to the players. Names are 1 to 32 letters, digits, `-` and `_`.
//!
//! Setup steps, written before the sessions start whatever their place: `given quest <Quest>
//! active|completed`, `given progress <Quest> <Objective> <n>`, `given tutorial_stage <n>`,
//! `given coins <n>`, `given var <Variable> <value>` (as `SetVariable` writes it), `given visits
//! <Conversation> <node or response> <n>`, `given opens <Conversation> <n>`. Steps: `walk <NPC id or name>` (within its reach, without talking), `talk
//! <NPC>`, `choose <response name or "its text">` (a vote in a shared conversation), `vote
//! <response>` (a `choose` that must be a vote), `advance`, `close`, `cutscene_done <scene>`
//! (the client reports a scene finished), `send action <Type> <payload>`, `wait ballot` (the
//! time limit of the player's shared conversation's open ballot passes). Checks: `expect line
//! <node or "text it contains">`, `expect choices <n>`, `expect effect <kind> [quest]`, `expect
//! no effect`, `expect reward coins <n> [experience <n>]`, `expect refusal <code>` (the
//! player's last message was refused with that code), `expect ended`, `expect chosen
//! <response> [by <how>]` (the group's latest decision the player heard, `how` as `chosen.by`
//! says it: `leader`, `majority`, `tie_leader`, `tie_first`, `tie_roll`, `roll`, `unanimous`),
//! `expect participants <n>`, `expect greyed <response or "its reason">` (shown greyed out
//! under the line on screen), `expect var <Variable> <value>` (its stored value, the default if
//! never set). `seed` also seeds every conversation with a `Weighted` group. Each plan plays
//! fresh players. `given coins` sets the coins in
//! the throwaway database's profile row: no game step gives coins but a quest's reward.
//!
//! The runner walks like a client: a `choose` or `advance` sends what the client walk queues
//! (the held response actions, the next line's actions), answers a quest check's jump, and keeps
//! the facts current from the effects. A step a client walk refuses is not sent (its code is the
//! player's refusal), but for a vote or an advance in a shared conversation, which is sent
//! anyway and must be refused by the server with the same code.
//!
//! **Several players** each have a session of their own on the one app, registered with the
//! hub as a socket's is. After every step the runner hands each session what the hub queued for
//! it (another player's vote, the room's decision, a follower's step) as the socket task does
//! (`SessionCore::on_shared`), the player's client hears what that caused (an unrequested
//! `opened`, `chosen`, `advanced`, `jump`, `participants`) and sends what its walk then queues,
//! until every queue is quiet. The plan has one clock, which starts a day into the server's
//! uptime, so the real ballot timers the sessions start never fire while plans run: a ballot's
//! time limit passes only at `wait ballot`, through the timer's own path (`Rooms::expire`, then
//! `session::deliver`). Rolls use the plan's `seed` ([`crate::rooms::Rooms::fix_seed`]).
//!
//! A failure names the plan's file and line, the plan and, with several players, the player.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use banter_dialogue::content::{Content, NpcDef};
use banter_dialogue::{
    ClientWalk, DialogueGraph, Outgoing, Screen, VertexId, VertexKind, WalkError,
    build_conversation,
};
use banter_protocol::{
    ActionType, ClientMessage, DecidedBy, Effect, ErrorCode, FactSheet, QuestStatus, Roll,
    ServerMessage,
};
use strum::VariantArray;

use crate::app::{App, SharedApp};
use crate::config::Config;
use crate::hub::{Control, ControlQueue};
use crate::served::{ContentVersion, ServedContent};
use crate::session::{Now, SessionCore};
use crate::store::{self, ConnectOptions, ObjectiveAdvance, SqliteStore};

/// Where plans live in a content folder.
pub const FOLDER: &str = "tests";

/// How far a plan's clock starts into the server's uptime: past any real ballot timer a
/// session starts while plans run (`session::deliver` sleeps until the deadline, in server
/// time), so only `wait ballot` passes a time limit.
const PLAN_EPOCH: Duration = Duration::from_secs(24 * 60 * 60);

/// The most rounds of hub deliveries one step may cause before the runner gives up.
const MAX_ROUNDS: usize = 1000;

/// One line of a plan, parsed.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    GivenQuest {
        quest: String,
        completed: bool,
    },
    GivenProgress {
        quest: String,
        objective: String,
        amount: u32,
    },
    GivenTutorialStage(i64),
    GivenCoins(i64),
    /// A story variable's stored value (its text, as `SetVariable` writes it).
    GivenVar {
        name: String,
        value: String,
    },
    /// How often the player was shown a line (or picked a response) of a conversation before.
    GivenVisits {
        conversation: String,
        node: String,
        count: u32,
    },
    /// How many times the player opened a conversation before.
    GivenOpens {
        conversation: String,
        count: u32,
    },
    Walk(String),
    Talk(String),
    Choose(Pick),
    /// A `choose` that must be a vote (the conversation is shared).
    Vote(Pick),
    Advance,
    Close,
    CutsceneDone(String),
    Send {
        action: ActionType,
        payload: String,
    },
    /// The time limit of the open ballot of the player's shared conversation passes.
    WaitBallot,
    ExpectLine(Pick),
    ExpectChoices(usize),
    /// A response of the line on screen is shown greyed out (by name, or its reason's text).
    ExpectGreyed(Pick),
    /// A story variable's value now (as `SetVariable` writes it), the default if never set.
    ExpectVar {
        name: String,
        value: String,
    },
    ExpectEffect {
        kind: String,
        quest: Option<String>,
    },
    ExpectNoEffect,
    ExpectReward {
        coins: i64,
        experience: Option<i64>,
    },
    ExpectRefusal(String),
    ExpectEnded,
    ExpectChosen {
        response: Pick,
        by: Option<DecidedBy>,
    },
    ExpectParticipants(usize),
}

/// A node or response, by name or by (a part of) its text.
#[derive(Clone, Debug, PartialEq)]
pub enum Pick {
    Name(String),
    Text(String),
}

/// As the plan wrote it: a name bare, a text in quotes.
impl std::fmt::Display for Pick {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pick::Name(name) => f.write_str(name),
            Pick::Text(text) => write!(f, "{text:?}"),
        }
    }
}

/// A plan: its name, file, players, parties, seed and steps with their line numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub name: String,
    pub file: String,
    pub line: usize,
    /// The players by name, in the order first named (`players`, `party`); none: the plan has
    /// one player, unnamed.
    pub players: Vec<String>,
    /// The parties formed before the first step, each with its line, its leader first.
    pub parties: Vec<(usize, Vec<String>)>,
    /// The seed every ballot's roll takes.
    pub seed: u64,
    pub steps: Vec<PlanStep>,
}

/// One step of a plan: its line, whose it is (an index into `players`; 0 when unnamed) and
/// what it does.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanStep {
    pub line: usize,
    pub player: usize,
    pub step: Step,
}

/// A plan that does not parse, or one that failed: where, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct PlanFailure {
    pub file: String,
    pub line: usize,
    pub message: String,
}

fn failure(file: &str, line: usize, message: impl Into<String>) -> PlanFailure {
    PlanFailure {
        file: file.to_owned(),
        line,
        message: message.into(),
    }
}

/// Splits a line into words, a `"quoted text"` being one.
fn words(line: &str) -> Result<Vec<(String, bool)>, String> {
    let mut out = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted
                .find('"')
                .ok_or_else(|| "a quote is never closed".to_owned())?;
            out.push((quoted[..end].to_owned(), true));
            rest = quoted[end + 1..].trim_start();
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            out.push((rest[..end].to_owned(), false));
            rest = rest[end..].trim_start();
        }
    }
    Ok(out)
}

/// A player's name: 1 to 32 letters, digits, `-` and `_`.
fn is_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// `Name: rest`: the player a step is for, and the step.
fn split_player(line: &str) -> Option<(&str, &str)> {
    let (name, rest) = line.split_once(':')?;
    let name = name.trim_end();
    is_name(name).then(|| (name, rest.trim()))
}

/// The `chosen.by` names, for a plan's `expect chosen ... by <how>`.
fn decided_by_names() -> Vec<&'static str> {
    DecidedBy::VARIANTS.iter().map(|b| b.into()).collect()
}

/// Parses a plan file.
pub fn parse(file: &str, text: &str) -> Result<Vec<Plan>, PlanFailure> {
    let mut plans: Vec<Plan> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        let line = match raw.find(" #") {
            Some(at) if !raw[..at].contains('"') || raw[..at].matches('"').count() % 2 == 0 => {
                &raw[..at]
            }
            _ => raw,
        };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |m: &str| failure(file, number, m);
        let (who, line) = match split_player(line) {
            Some((name, rest)) => (Some(name), rest),
            None => (None, line),
        };
        let w = words(line).map_err(|m| bad(&m))?;
        let word = |k: usize| w.get(k).map(|(s, _)| s.as_str());
        let pick = |k: usize| -> Result<Pick, PlanFailure> {
            match w.get(k) {
                Some((s, true)) => Ok(Pick::Text(s.clone())),
                Some((s, false)) => Ok(Pick::Name(s.clone())),
                None => Err(bad("name a node or response, or give its text in quotes")),
            }
        };
        let number_at = |k: usize, what: &str| -> Result<i64, PlanFailure> {
            word(k)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| bad(&format!("expected {what} as a whole number")))
        };
        let count_at = |k: usize, what: &str| -> Result<usize, PlanFailure> {
            usize::try_from(number_at(k, what)?).map_err(|_| bad("a count is 0 or more"))
        };
        if word(0) == Some("plan") {
            if who.is_some() {
                return Err(bad("a `plan` line is no player's"));
            }
            let name = line["plan".len()..].trim().to_owned();
            if name.is_empty() {
                return Err(bad("a plan needs a name: `plan <what it shows>`"));
            }
            plans.push(Plan {
                name,
                file: file.to_owned(),
                line: number,
                players: Vec::new(),
                parties: Vec::new(),
                seed: 0,
                steps: Vec::new(),
            });
            continue;
        }
        let Some(plan) = plans.last_mut() else {
            return Err(bad("a step before any `plan <name>` line"));
        };
        if let Some(head @ ("players" | "party" | "seed")) = word(0) {
            if who.is_some() {
                return Err(bad(&format!("a `{head}` line is no player's")));
            }
            if !plan.steps.is_empty() {
                return Err(bad(&format!("`{head}` comes before the plan's first step")));
            }
            let names: Vec<&str> = w[1..].iter().map(|(s, _)| s.as_str()).collect();
            if head != "seed" {
                if names.is_empty() {
                    return Err(bad(&format!("`{head} <Name> ...` names its players")));
                }
                if let Some(odd) = w[1..].iter().find(|(s, quoted)| *quoted || !is_name(s)) {
                    return Err(bad(&format!(
                        "`{}` is not a player's name (1 to 32 letters, digits, `-` and `_`)",
                        odd.0
                    )));
                }
            }
            match head {
                "players" => {
                    for name in names {
                        if plan.players.iter().any(|p| p == name) {
                            return Err(bad(&format!("`{name}` is named twice")));
                        }
                        plan.players.push(name.to_owned());
                    }
                }
                "party" => {
                    let mut members: Vec<String> = Vec::new();
                    for name in names {
                        let taken = members.iter().any(|m| m == name)
                            || plan
                                .parties
                                .iter()
                                .any(|(_, p)| p.iter().any(|m| m == name));
                        if taken {
                            return Err(bad(&format!("`{name}` is in a party already")));
                        }
                        if !plan.players.iter().any(|p| p == name) {
                            plan.players.push(name.to_owned());
                        }
                        members.push(name.to_owned());
                    }
                    plan.parties.push((number, members));
                }
                _ => {
                    plan.seed = word(1)
                        .filter(|_| w.len() == 2)
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(|| bad("`seed <n>`: a whole number from 0"))?;
                }
            }
            continue;
        }
        let player = match who {
            None => 0,
            Some(name) => plan.players.iter().position(|p| p == name).ok_or_else(|| {
                bad(&format!(
                    "no player `{name}` in this plan; name them first: `players {name} ...`"
                ))
            })?,
        };
        let step = match (word(0), word(1)) {
            (Some("given"), Some("quest")) => Step::GivenQuest {
                quest: word(2).ok_or_else(|| bad("name the quest"))?.to_owned(),
                completed: match word(3) {
                    Some("active") => false,
                    Some("completed") => true,
                    _ => return Err(bad("a given quest is `active` or `completed`")),
                },
            },
            (Some("given"), Some("progress")) => Step::GivenProgress {
                quest: word(2).ok_or_else(|| bad("name the quest"))?.to_owned(),
                objective: word(3).ok_or_else(|| bad("name the objective"))?.to_owned(),
                amount: u32::try_from(number_at(4, "the progress")?)
                    .map_err(|_| bad("progress is 0 or more"))?,
            },
            (Some("given"), Some("tutorial_stage")) => {
                Step::GivenTutorialStage(number_at(2, "the stage")?)
            }
            (Some("given"), Some("coins")) => {
                let coins = number_at(2, "the coins")?;
                if coins < 0 {
                    return Err(bad("coins are 0 or more"));
                }
                Step::GivenCoins(coins)
            }
            (Some("given"), Some("var")) if w.len() == 4 => Step::GivenVar {
                name: w[2].0.clone(),
                value: w[3].0.clone(),
            },
            (Some("given"), Some("visits")) if w.len() == 5 => Step::GivenVisits {
                conversation: w[2].0.clone(),
                node: w[3].0.clone(),
                count: u32::try_from(count_at(4, "the number of visits")?)
                    .map_err(|_| bad("too many visits"))?,
            },
            (Some("given"), Some("opens")) if w.len() == 4 => Step::GivenOpens {
                conversation: w[2].0.clone(),
                count: u32::try_from(count_at(3, "the number of opens")?)
                    .map_err(|_| bad("too many opens"))?,
            },
            (Some("expect"), Some("var")) if w.len() == 4 => Step::ExpectVar {
                name: w[2].0.clone(),
                value: w[3].0.clone(),
            },
            (Some("expect"), Some("greyed")) => Step::ExpectGreyed(pick(2)?),
            (Some("walk"), Some(npc)) => Step::Walk(npc.to_owned()),
            (Some("talk"), Some(npc)) => Step::Talk(npc.to_owned()),
            (Some("choose"), Some(_)) => Step::Choose(pick(1)?),
            (Some("vote"), Some(_)) => Step::Vote(pick(1)?),
            (Some("advance"), None) => Step::Advance,
            (Some("close"), None) => Step::Close,
            (Some("cutscene_done"), Some(scene)) => Step::CutsceneDone(scene.to_owned()),
            (Some("send"), Some("action")) => Step::Send {
                action: word(2)
                    .and_then(|t| t.parse().ok())
                    .ok_or_else(|| bad("`send action <Type> <payload>` needs an action type"))?,
                payload: word(3).unwrap_or_default().to_owned(),
            },
            (Some("wait"), Some("ballot")) if w.len() == 2 => Step::WaitBallot,
            (Some("expect"), Some("line")) => Step::ExpectLine(pick(2)?),
            (Some("expect"), Some("choices")) => {
                Step::ExpectChoices(count_at(2, "the number of choices")?)
            }
            (Some("expect"), Some("no")) if word(2) == Some("effect") && w.len() == 3 => {
                Step::ExpectNoEffect
            }
            (Some("expect"), Some("effect")) => Step::ExpectEffect {
                kind: word(2).ok_or_else(|| bad("name the effect"))?.to_owned(),
                quest: word(3).map(str::to_owned),
            },
            (Some("expect"), Some("reward")) => {
                if word(2) != Some("coins") {
                    return Err(bad("`expect reward coins <n> [experience <n>]`"));
                }
                Step::ExpectReward {
                    coins: number_at(3, "the coins")?,
                    experience: match word(4) {
                        Some("experience") => Some(number_at(5, "the experience")?),
                        None => None,
                        Some(_) => return Err(bad("`expect reward coins <n> [experience <n>]`")),
                    },
                }
            }
            (Some("expect"), Some("refusal")) => Step::ExpectRefusal(
                word(2)
                    .ok_or_else(|| bad("name the error code"))?
                    .to_owned(),
            ),
            (Some("expect"), Some("ended")) => Step::ExpectEnded,
            (Some("expect"), Some("chosen")) => Step::ExpectChosen {
                response: pick(2)?,
                by: match (word(3), word(4), w.len()) {
                    (None, _, _) => None,
                    (Some("by"), Some(how), 5) => Some(
                        DecidedBy::VARIANTS
                            .iter()
                            .copied()
                            .find(|b| <&str>::from(b) == how)
                            .ok_or_else(|| {
                                bad(&format!(
                                    "`{how}` is not how a group decides: one of {}",
                                    decided_by_names().join(", ")
                                ))
                            })?,
                    ),
                    _ => return Err(bad("`expect chosen <response> [by <how>]`")),
                },
            },
            (Some("expect"), Some("participants")) => {
                Step::ExpectParticipants(count_at(2, "the number of participants")?)
            }
            _ => return Err(bad(&format!("not a plan step: `{line}`"))),
        };
        plan.steps.push(PlanStep {
            line: number,
            player,
            step,
        });
    }
    Ok(plans)
}

/// What a run found.
#[derive(Debug, Default)]
pub struct Report {
    pub plans: usize,
    pub steps: usize,
    pub failures: Vec<PlanFailure>,
}

/// Reads every `*.plan` under `content/tests`, sorted; a file that cannot be read or parsed is a
/// failure of its own.
pub fn load(content: &Path) -> (Vec<Plan>, Vec<PlanFailure>) {
    let folder = content.join(FOLDER);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "plan"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut plans = Vec::new();
    let mut failures = Vec::new();
    for path in files {
        let file = path.display().to_string();
        match std::fs::read_to_string(&path) {
            Ok(text) => match parse(&file, &text) {
                Ok(found) => plans.extend(found),
                Err(e) => failures.push(e),
            },
            Err(e) => failures.push(failure(&file, 0, format!("cannot read it: {e}"))),
        }
    }
    (plans, failures)
}

/// Runs every plan of `content` on a throwaway SQLite database in `scratch`. `checked` is the
/// folder's content if the caller has loaded and checked it already without errors
/// (`check-content`), so it is not loaded again; else the folder is loaded here.
pub async fn run_all(content: &Path, checked: Option<Content>, scratch: &Path) -> Report {
    let (plans, mut failures) = load(content);
    let mut report = Report {
        plans: plans.len(),
        ..Report::default()
    };
    if plans.is_empty() {
        report.failures = failures;
        return report;
    }
    // Removed with its journal files however the run ends: check-content runs in CI loops.
    let database = ThrowawayDatabase(scratch.join(format!("plans-{}.db", std::process::id())));
    let (app, pool) = match throwaway_app(content, checked, &plans, scratch, &database.0).await {
        Ok(app) => app,
        Err(why) => {
            failures.push(failure(&content.display().to_string(), 0, why));
            report.failures = failures;
            return report;
        }
    };
    for (n, plan) in plans.iter().enumerate() {
        report.steps += plan.steps.len();
        if let Err(e) = run(&app, &pool, plan, n).await {
            failures.push(e);
        }
    }
    // The ballot timers and host refreshes the shared conversations started end here.
    app.shutdown.cancel();
    app.store.close().await;
    report.failures = failures;
    report
}

/// The plans' SQLite file, deleted with its WAL and shared-memory files when dropped.
struct ThrowawayDatabase(std::path::PathBuf);

impl Drop for ThrowawayDatabase {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut path = self.0.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A server's shared state on a fresh SQLite file, without a listener, and the file's pool
/// (for the givens no game step writes: `given coins`). Only the conversations of the NPCs the
/// plans walk or talk to are published: publishing is each conversation's JSON in every locale,
/// and a studio's world has tens of thousands that no plan opens.
async fn throwaway_app(
    content: &Path,
    checked: Option<Content>,
    plans: &[Plan],
    scratch: &Path,
    file: &Path,
) -> Result<(SharedApp, sqlx::SqlitePool), String> {
    let checked = match checked {
        Some(checked) => checked,
        None => ContentVersion::check(content).map_err(|e| e.to_string())?,
    };
    let talked_to = talked_to(&checked, plans);
    let library = ContentVersion::from_checked(checked, 1, Some(&talked_to));
    std::fs::create_dir_all(scratch).map_err(|e| format!("scratch folder: {e}"))?;
    let _ = std::fs::remove_file(file);
    let url = format!("sqlite://{}", file.display());
    let store = SqliteStore::connect(&url, ConnectOptions::default())
        .await
        .map_err(|e| format!("the throwaway database: {e}"))?;
    let pool = store.pool().clone();
    let config = Config {
        database_url: url,
        content: content.to_owned(),
        ..Config::default()
    };
    let app = Arc::new(App::new(
        config,
        ServedContent::new(content.to_owned(), library),
        Arc::new(store),
    ));
    Ok((app, pool))
}

/// The conversations of every NPC a plan's `talk` or `walk` names, by id or by name (as
/// [`Player::talk`] finds it, and every look-alike of that name).
fn talked_to(content: &Content, plans: &[Plan]) -> BTreeSet<String> {
    let named: BTreeSet<&str> = plans
        .iter()
        .flat_map(|plan| &plan.steps)
        .filter_map(|s| match &s.step {
            Step::Talk(npc) | Step::Walk(npc) => Some(npc.as_str()),
            _ => None,
        })
        .collect();
    content
        .world
        .npcs
        .iter()
        .filter(|n| named.contains(n.id.as_str()) || named.contains(n.name.as_str()))
        .map(|n| n.conversation.clone())
        .collect()
}

/// One player of a plan: the session, the conversation as the player's client walks it, and
/// what the client heard.
struct Player {
    /// The player's id in the store.
    id: String,
    /// What the plan's player ids start with before the names the plan gives them.
    prefix: String,
    core: SessionCore,
    now: Duration,
    next_id: u64,
    open: Option<Open>,
    effects: Vec<Effect>,
    /// How far `expect effect` has read `effects`.
    read: usize,
    refused: Option<String>,
    facts: FactSheet,
    /// The participants of the player's shared conversation, as last told.
    roster: Option<Vec<String>>,
    /// The group's decisions the player heard (`chosen`), in order.
    decisions: Vec<Decision>,
    /// How many of them `expect chosen` has read.
    decisions_read: usize,
}

struct Open {
    graph: DialogueGraph,
    walk: ClientWalk,
    /// The party, for a shared conversation.
    party: Option<String>,
}

/// A `chosen` as the client heard it.
struct Decision {
    response: String,
    text: String,
    by: DecidedBy,
    seed: Option<String>,
    rolls: Vec<Roll>,
}

/// A player of a plan with the hub's queue of their session.
struct Seat {
    player: Player,
    session: u64,
    control: Arc<ControlQueue>,
}

/// A plan's players on the one app, and the plan's clock.
struct Table {
    seats: Vec<Seat>,
    now: Duration,
}

async fn run(
    app: &SharedApp,
    pool: &sqlx::SqlitePool,
    plan: &Plan,
    n: usize,
) -> Result<(), PlanFailure> {
    let names: Vec<Option<&str>> = if plan.players.is_empty() {
        vec![None]
    } else {
        plan.players.iter().map(|p| Some(p.as_str())).collect()
    };
    let ids: Vec<String> = names
        .iter()
        .map(|name| match name {
            Some(name) => format!("plan-{n}-{name}"),
            None => format!("plan-{n}"),
        })
        .collect();
    let fail = |line: usize, who: usize, m: String| {
        let message = match names.get(who).copied().flatten() {
            Some(name) => format!("{}: {name}: {m}", plan.name),
            None => format!("{}: {m}", plan.name),
        };
        failure(&plan.file, line, message)
    };
    // Setup first: the facts a writer gives each player, written as the game would have.
    for s in &plan.steps {
        let player = &ids[s.player];
        let line = s.line;
        let written = match &s.step {
            Step::GivenQuest { quest, completed } => {
                given_quest(app, player, line, quest, *completed).await
            }
            Step::GivenProgress {
                quest,
                objective,
                amount,
            } => given_progress(app, player, line, quest, objective, *amount).await,
            Step::GivenTutorialStage(stage) => {
                given_tutorial_stage(app, player, line, *stage).await
            }
            Step::GivenCoins(coins) => given_coins(app, pool, player, line, *coins).await,
            Step::GivenVar { name, value } => {
                let key = format!("given/{line}/var");
                let change = store::Change::SetVariable { name, value };
                given(app, player, &key, change, None).await.map(|_| ())
            }
            Step::GivenVisits {
                conversation,
                node,
                count,
            } => {
                let delta = store::VisitDelta {
                    node: node.clone(),
                    added: *count,
                    last: line as u64,
                };
                app.store
                    .record_visits(player, conversation, 0, std::slice::from_ref(&delta))
                    .await
                    .map_err(|e| e.to_string())
            }
            Step::GivenOpens {
                conversation,
                count,
            } => app
                .store
                .record_visits(player, conversation, *count, &[])
                .await
                .map_err(|e| e.to_string()),
            _ => Ok(()),
        };
        written.map_err(|e| fail(line, s.player, format!("cannot set it up: {e}")))?;
    }
    for (k, (line, members)) in plan.parties.iter().enumerate() {
        let members: Vec<&str> = members
            .iter()
            .filter_map(|m| plan.players.iter().position(|p| p == m))
            .map(|at| ids[at].as_str())
            .collect();
        form_party(app, &format!("plan-{n}-party-{k}"), &members)
            .await
            .map_err(|e| {
                failure(
                    &plan.file,
                    *line,
                    format!("{}: cannot form the party: {e}", plan.name),
                )
            })?;
    }
    app.rooms.fix_seed(Some(plan.seed));
    let mut table = Table {
        seats: Vec::new(),
        now: PLAN_EPOCH,
    };
    let mut result = Ok(());
    for (who, id) in ids.iter().enumerate() {
        match seat(app, id, &format!("plan-{n}-")).await {
            Ok(seat) => table.seats.push(seat),
            Err(e) => {
                result = Err(fail(plan.line, who, e));
                break;
            }
        }
    }
    if result.is_ok() {
        for s in &plan.steps {
            if let Err((who, m)) = table.step(app, s).await {
                result = Err(fail(s.line, who, m));
                break;
            }
        }
    }
    table.leave(app);
    result
}

/// A session for the player, known to the hub as a socket's is, with its party read as for the
/// `welcome`.
async fn seat(app: &SharedApp, id: &str, prefix: &str) -> Result<Seat, String> {
    let record = app
        .store
        .load_player(id)
        .await
        .map_err(|e| format!("cannot load the player: {e}"))?;
    let session = app.next_session_id();
    let mut core = SessionCore::new(app.clone(), id.to_owned(), session, record);
    core.load_party(crate::clock::unix_millis())
        .await
        .map_err(|e| format!("cannot read the player's party: {e}"))?;
    let control = Arc::new(ControlQueue::default());
    app.hub.register(id, session, control.clone());
    Ok(Seat {
        player: Player {
            id: id.to_owned(),
            prefix: prefix.to_owned(),
            core,
            now: PLAN_EPOCH,
            next_id: 1,
            open: None,
            effects: Vec::new(),
            read: 0,
            refused: None,
            facts: FactSheet::default(),
            roster: None,
            decisions: Vec::new(),
            decisions_read: 0,
        },
        session,
        control,
    })
}

/// Forms the party `party` in the store: its first member forms it, and each other member is
/// invited and accepts.
async fn form_party(app: &SharedApp, party: &str, members: &[&str]) -> Result<(), String> {
    let now_ms = crate::clock::unix_millis();
    let Some((leader, others)) = members.split_first() else {
        return Err("a party has a member".to_owned());
    };
    app.store
        .form_party(party, leader, now_ms)
        .await
        .map_err(|e| e.to_string())?;
    for member in others {
        app.store
            .invite_to_party(leader, member, now_ms)
            .await
            .map_err(|e| e.to_string())?;
        app.store
            .accept_invite(member, party, now_ms)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

impl Table {
    /// One step of one player, then everything it caused for the others. A failure says
    /// whose it is.
    async fn step(&mut self, app: &SharedApp, s: &PlanStep) -> Result<(), (usize, String)> {
        let who = s.player;
        match &s.step {
            Step::WaitBallot => self.wait_ballot(app, who).map_err(|m| (who, m))?,
            step => {
                let seat = &mut self.seats[who];
                seat.player.now = seat.player.now.max(self.now);
                let stepped = seat.player.step(app, step).await;
                self.now = self.now.max(seat.player.now);
                stepped.map_err(|m| (who, m))?;
            }
        }
        self.pump().await
    }

    /// The time limit of the open ballot of the player's shared conversation passes: the plan's
    /// clock jumps to it, and the room hears it as from the session's timer.
    fn wait_ballot(&mut self, app: &SharedApp, who: usize) -> Result<(), String> {
        let party = self.seats[who]
            .player
            .open
            .as_ref()
            .and_then(|open| open.party.clone())
            .ok_or("`wait ballot`: the player is in no shared conversation")?;
        let deadline = app.rooms.deadline(&party).ok_or(
            "`wait ballot`: no ballot with a time limit is open (none is, or its rule has none)",
        )?;
        self.now = self.now.max(deadline.at);
        let out = app.rooms.expire(&deadline.party, deadline.ballot);
        crate::session::deliver(app, &deadline.party, out);
        Ok(())
    }

    /// Hands each session what the hub queued for it, as the socket task does, and lets its
    /// client hear the result and send what its walk queues; until every queue is quiet.
    async fn pump(&mut self) -> Result<(), (usize, String)> {
        for _ in 0..MAX_ROUNDS {
            let mut heard = false;
            for who in 0..self.seats.len() {
                while let Some(control) = self.seats[who].control.try_recv() {
                    heard = true;
                    let seat = &mut self.seats[who];
                    seat.player.now = seat.player.now.max(self.now);
                    let now = seat.player.tick();
                    let messages = match control {
                        Control::Shared(event) => seat.player.core.on_shared(*event, now).await,
                        Control::Progress(effects) => seat.player.core.on_progress(effects).await,
                        Control::Replaced => {
                            return Err((who, "the player's session was replaced".to_owned()));
                        }
                    };
                    let pushed = seat.player.pushed(messages).await;
                    self.now = self.now.max(seat.player.now);
                    pushed.map_err(|m| (who, m))?;
                }
            }
            if !heard {
                return Ok(());
            }
        }
        Err((
            0,
            format!("the sessions were still telling each other things after {MAX_ROUNDS} rounds"),
        ))
    }

    /// The end of the plan: every session ends (leaving its shared conversation, as a dropped
    /// connection's does) and the hub forgets it.
    fn leave(&mut self, app: &SharedApp) {
        for seat in self.seats.drain(..) {
            let Seat {
                player, session, ..
            } = seat;
            let id = player.id.clone();
            drop(player);
            app.hub.unregister(&id, session);
        }
    }
}

/// Writes one of a plan's givens as an audited store step, keyed by its line (the same given is
/// never written twice).
async fn given(
    app: &SharedApp,
    player: &str,
    key: &str,
    change: store::Change<'_>,
    tutorial: Option<store::TutorialMove>,
) -> Result<store::PlayerRecord, String> {
    let step = store::Step {
        player,
        key,
        conversation: None,
        message: "plan_given",
        detail: None,
        recorded_us: crate::clock::stamp(),
        change,
        tutorial,
    };
    app.store
        .apply_step(&step)
        .await
        .map(|stepped| stepped.record)
        .map_err(|e| e.to_string())
}

async fn given_quest(
    app: &SharedApp,
    player: &str,
    line: usize,
    quest: &str,
    completed: bool,
) -> Result<(), String> {
    let library = app.content.current();
    let def = library
        .content
        .quest(quest)
        .ok_or_else(|| format!("no quest `{quest}` in the content"))?;
    let objectives: Vec<String> = def.objectives.iter().map(|o| o.id.clone()).collect();
    let accept = store::Change::Accept {
        quest,
        objectives: &objectives,
    };
    given(app, player, &format!("given/{line}/accept"), accept, None).await?;
    if completed {
        let complete = store::Change::Complete {
            quest,
            coins: 0,
            experience: 0,
            advances: &[],
        };
        given(
            app,
            player,
            &format!("given/{line}/complete"),
            complete,
            None,
        )
        .await?;
    }
    Ok(())
}

async fn given_progress(
    app: &SharedApp,
    player: &str,
    line: usize,
    quest: &str,
    objective: &str,
    amount: u32,
) -> Result<(), String> {
    if amount == 0 {
        return Ok(());
    }
    let library = app.content.current();
    let target = library
        .content
        .quest(quest)
        .and_then(|q| q.objectives.iter().find(|o| o.id == objective))
        .map(|o| o.target)
        .ok_or_else(|| format!("no objective `{objective}` in quest `{quest}`"))?;
    let advance = ObjectiveAdvance {
        quest: quest.to_owned(),
        objective: objective.to_owned(),
        amount,
        target,
    };
    let change = store::Change::Advance {
        event_id: None,
        advances: std::slice::from_ref(&advance),
    };
    given(app, player, &format!("given/{line}/progress"), change, None)
        .await
        .map(|_| ())
}

async fn given_tutorial_stage(
    app: &SharedApp,
    player: &str,
    line: usize,
    stage: i64,
) -> Result<(), String> {
    let from = app
        .store
        .load_player(player)
        .await
        .map_err(|e| e.to_string())?
        .profile
        .tutorial_stage;
    let tutorial = Some(store::TutorialMove { from, to: stage });
    let key = format!("given/{line}/tutorial_stage");
    given(app, player, &key, store::Change::Profile, tutorial)
        .await
        .map(|_| ())
}

/// The player holds `coins`. No game step gives coins but a quest's reward, so this one is
/// written straight into the throwaway database's profile (made first, as a given's step would).
async fn given_coins(
    app: &SharedApp,
    pool: &sqlx::SqlitePool,
    player: &str,
    line: usize,
    coins: i64,
) -> Result<(), String> {
    let key = format!("given/{line}/coins");
    given(app, player, &key, store::Change::Profile, None).await?;
    sqlx::query("UPDATE profiles SET coins = ? WHERE player_id = ?")
        .bind(coins)
        .bind(player)
        .execute(pool)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

impl Player {
    async fn step(&mut self, app: &SharedApp, step: &Step) -> Result<(), String> {
        match step {
            Step::GivenQuest { .. }
            | Step::GivenProgress { .. }
            | Step::GivenTutorialStage(_)
            | Step::GivenCoins(_)
            | Step::GivenVar { .. }
            | Step::GivenVisits { .. }
            | Step::GivenOpens { .. }
            | Step::WaitBallot => Ok(()),
            Step::Walk(npc) => self.walk_to(app, npc).await.map(|_| ()),
            Step::Talk(npc) => self.talk(app, npc).await,
            Step::Choose(pick) | Step::Vote(pick) => {
                let open = self
                    .open
                    .as_ref()
                    .ok_or("no conversation is open: `talk` first")?;
                let shared = open.walk.is_shared();
                if matches!(step, Step::Vote(_)) && !shared {
                    return Err(
                        "`vote` is for a shared conversation; this one is the player's own (`choose`)"
                            .to_owned(),
                    );
                }
                let response = find_response(open, pick, &self.facts)?;
                if shared {
                    return self.vote(response).await;
                }
                let open = self.open.as_mut().ok_or("the conversation closed")?;
                let mut out = Vec::new();
                let walked = open
                    .walk
                    .choose(&open.graph, response, &self.facts, &mut out);
                self.after_walk(walked, out).await
            }
            Step::Advance => {
                let open = self
                    .open
                    .as_mut()
                    .ok_or("no conversation is open: `talk` first")?;
                if open.walk.is_shared() {
                    return self.propose_advance().await;
                }
                let mut out = Vec::new();
                let walked = open
                    .walk
                    .advance_current(&open.graph, &self.facts, &mut out);
                self.after_walk(walked, out).await
            }
            Step::Close => {
                // A walk that reached its end has sent its `close` already.
                let ended = self
                    .open
                    .take()
                    .is_some_and(|open| matches!(open.walk.screen(), Screen::Ended));
                if !ended {
                    self.send(ClientMessage::Close { id: None }).await;
                }
                self.roster = None;
                Ok(())
            }
            Step::CutsceneDone(scene) => {
                self.send(ClientMessage::CutsceneDone {
                    id: None,
                    scene: scene.clone(),
                })
                .await;
                Ok(())
            }
            Step::Send { action, payload } => {
                self.send(ClientMessage::Action {
                    id: None,
                    action: *action,
                    payload: payload.clone(),
                })
                .await;
                Ok(())
            }
            Step::ExpectLine(pick) => {
                let open = self.open.as_ref().ok_or("no conversation is open")?;
                match open.walk.screen() {
                    Screen::Line(v) => {
                        let line = open.graph.vertex(v).ok_or("the line is not in its graph")?;
                        if picks(pick, &line.name, &line.text) {
                            Ok(())
                        } else {
                            Err(format!(
                                "expected the line {pick}, the player sees {} \"{}\"",
                                line.name, line.text
                            ))
                        }
                    }
                    Screen::Waiting => Err(format!(
                        "expected the line {pick}, the player waits for a quest check"
                    )),
                    Screen::Ended => Err(format!(
                        "expected the line {pick}, the conversation has ended"
                    )),
                }
            }
            Step::ExpectGreyed(pick) => {
                let open = self.open.as_ref().ok_or("no conversation is open")?;
                let greyed: Vec<(String, String)> = open
                    .walk
                    .greyed(&open.graph, &self.facts)
                    .map(|(r, reason)| (vertex_name(&open.graph, r), reason.to_owned()))
                    .collect();
                if greyed
                    .iter()
                    .any(|(name, reason)| picks(pick, name, reason))
                {
                    Ok(())
                } else {
                    Err(format!(
                        "expected {pick} greyed out, the player sees {greyed:?}"
                    ))
                }
            }
            Step::ExpectVar { name, value } => {
                let stored = app
                    .store
                    .load_player(&self.id)
                    .await
                    .map_err(|e| e.to_string())?;
                let content = app.content.current();
                let default = content
                    .content
                    .variables
                    .declared
                    .get(name)
                    .map(|d| banter_dialogue::condition::value_text(&d.default))
                    .ok_or_else(|| format!("no story variable `{name}`"))?;
                let now = stored.variables.get(name).cloned().unwrap_or(default);
                if now == *value {
                    Ok(())
                } else {
                    Err(format!("expected {name} = {value}, it is {now}"))
                }
            }
            Step::ExpectChoices(n) => {
                let open = self.open.as_ref().ok_or("no conversation is open")?;
                let shown = open.walk.choices(&open.graph, &self.facts).count();
                if shown == *n {
                    Ok(())
                } else {
                    Err(format!("expected {n} choices, the player sees {shown}"))
                }
            }
            Step::ExpectEffect { kind, quest } => self.read_effect(
                |e| {
                    effect_kind(e) == *kind
                        && quest
                            .as_ref()
                            .is_none_or(|q| effect_quest(e) == Some(q.as_str()))
                },
                || {
                    let quest = quest.as_ref().map(|q| format!(" {q}")).unwrap_or_default();
                    format!("the effect {kind}{quest}")
                },
            ),
            Step::ExpectNoEffect => {
                let unread = &self.effects[self.read..];
                if unread.is_empty() {
                    Ok(())
                } else {
                    Err(format!(
                        "expected no effect, got {:?}",
                        unread.iter().map(describe).collect::<Vec<_>>()
                    ))
                }
            }
            Step::ExpectReward { coins, experience } => self.read_effect(
                |e| {
                    matches!(e, Effect::QuestCompleted { coins: c, experience: x, .. }
                        if c == coins && experience.is_none_or(|want| *x == want))
                },
                || {
                    let experience = experience
                        .map(|x| format!(" and {x} experience"))
                        .unwrap_or_default();
                    format!("a reward of {coins} coins{experience}")
                },
            ),
            Step::ExpectRefusal(code) => match self.refused.take() {
                Some(got) if got == *code => Ok(()),
                Some(got) => Err(format!("expected the refusal {code}, got {got}")),
                None => Err(format!(
                    "expected the refusal {code}, the step was accepted"
                )),
            },
            Step::ExpectEnded => match &self.open {
                Some(open) if !matches!(open.walk.screen(), Screen::Ended) => {
                    Err("expected the conversation to have ended; it goes on".to_owned())
                }
                _ => Ok(()),
            },
            Step::ExpectChosen { response, by } => self.read_decision(response, *by),
            Step::ExpectParticipants(n) => {
                let roster = self
                    .roster
                    .as_ref()
                    .ok_or("the player is in no shared conversation")?;
                if roster.len() == *n {
                    Ok(())
                } else {
                    let names: Vec<&str> = roster.iter().map(|p| self.label(p)).collect();
                    Err(format!(
                        "expected {n} participants, the player sees {} ({})",
                        roster.len(),
                        names.join(", ")
                    ))
                }
            }
        }
    }

    /// Walks within the NPC's reach (a jump in time long enough for any trip at the speed
    /// limit). Its definition, for a `talk`.
    async fn walk_to(&mut self, app: &SharedApp, npc: &str) -> Result<NpcDef, String> {
        let library = app.content.current();
        let def = library
            .content
            .world
            .npcs
            .iter()
            .find(|n| n.id == npc)
            .or_else(|| library.content.world.npcs.iter().find(|n| n.name == npc))
            .ok_or_else(|| format!("no NPC `{npc}` (an id or a name) in the world"))?
            .clone();
        self.now += Duration::from_secs(120);
        let at = [def.position[0] + 2.0, def.position[1], def.position[2]];
        self.send(ClientMessage::Move {
            id: None,
            position: at,
        })
        .await;
        if let Some(code) = self.refused.take() {
            return Err(format!("could not walk to {}: {code}", def.id));
        }
        Ok(def)
    }

    async fn talk(&mut self, app: &SharedApp, npc: &str) -> Result<(), String> {
        let def = self.walk_to(app, npc).await?;
        self.now += Duration::from_secs(2);
        let answers = self
            .send(ClientMessage::Talk {
                id: None,
                npc: def.name.clone(),
                instance: Some(def.id.clone()),
                cached: None,
            })
            .await;
        if self.refused.is_some() {
            return Ok(());
        }
        if !answers
            .iter()
            .any(|m| matches!(m, ServerMessage::Opened { .. }))
        {
            // A cutscene quest's scene: no conversation to walk.
            self.open = None;
            return Ok(());
        }
        let mut out = Vec::new();
        self.hear(&answers, &mut out)?;
        self.send_walked(out).await
    }

    /// A vote in a shared conversation, as the client walk checks it; one it refuses is sent
    /// anyway, and the server must refuse it with the same code.
    async fn vote(&mut self, response: VertexId) -> Result<(), String> {
        let open = self.open.as_ref().ok_or("no conversation is open")?;
        let name = vertex_name(&open.graph, response);
        let mut out = Vec::new();
        match open.walk.vote(&open.graph, response, &self.facts, &mut out) {
            Ok(()) => self.send_walked(out).await,
            Err(e) => {
                self.send(ClientMessage::Choose {
                    id: None,
                    response: name.clone(),
                })
                .await;
                self.agree(e.code().name(), &format!("vote for `{name}`"))
            }
        }
    }

    /// An `advance` in a shared conversation: the leader's proposal, checked as the client walk
    /// checks it; one it refuses is sent anyway, and the server must refuse it with the same
    /// code. The walk moves when the `advanced` comes back.
    async fn propose_advance(&mut self) -> Result<(), String> {
        let open = self.open.as_ref().ok_or("no conversation is open")?;
        let line = match open.walk.screen() {
            Screen::Line(line) => line,
            Screen::Waiting => {
                self.refused = Some(crate::session::walk_code(&WalkError::AwaitsJump).to_owned());
                return Ok(());
            }
            Screen::Ended => {
                self.refused = Some(crate::session::walk_code(&WalkError::Closed).to_owned());
                return Ok(());
            }
        };
        let name = vertex_name(&open.graph, line);
        let mut out = Vec::new();
        match open
            .walk
            .propose_advance(&open.graph, line, &self.facts, &mut out)
        {
            Ok(()) => self.send_walked(out).await,
            Err(e) => {
                self.send(ClientMessage::Advance {
                    id: None,
                    node: name.clone(),
                })
                .await;
                self.agree(e.code().name(), &format!("advance past `{name}`"))
            }
        }
    }

    /// The server's answer to a step the client walk refused with `client`: the same refusal,
    /// kept as the player's.
    fn agree(&mut self, client: &str, what: &str) -> Result<(), String> {
        match self.refused.as_deref() {
            Some(server) if server == client => Ok(()),
            Some(server) => Err(format!(
                "the client walk refuses the {what} with {client}, the server with {server}"
            )),
            None => Err(format!(
                "the client walk refuses the {what} with {client}, the server accepted it"
            )),
        }
    }

    /// Reads on to the next effect `wanted` accepts; none: what was `expected` (said lazily),
    /// and the effects that came instead.
    fn read_effect(
        &mut self,
        wanted: impl Fn(&Effect) -> bool,
        expected: impl FnOnce() -> String,
    ) -> Result<(), String> {
        let unread = &self.effects[self.read..];
        match unread.iter().position(wanted) {
            Some(at) => {
                self.read += at + 1;
                Ok(())
            }
            None => Err(format!(
                "expected {}, got {:?}",
                expected(),
                unread.iter().map(describe).collect::<Vec<_>>()
            )),
        }
    }

    /// The group's latest decision the player heard since the last `expect chosen`.
    fn read_decision(&mut self, response: &Pick, by: Option<DecidedBy>) -> Result<(), String> {
        let how = by
            .map(|b| format!(" by {}", <&str>::from(b)))
            .unwrap_or_default();
        let unread = self.decisions.len() > self.decisions_read;
        self.decisions_read = self.decisions.len();
        let last = self.decisions.last().filter(|_| unread).ok_or_else(|| {
            format!("expected the group to choose {response}{how}; it has decided nothing since")
        })?;
        if picks(response, &last.response, &last.text) && by.is_none_or(|b| b == last.by) {
            return Ok(());
        }
        let rolls = if last.rolls.is_empty() {
            String::new()
        } else {
            let rolls: Vec<String> = last
                .rolls
                .iter()
                .map(|r| format!("{} {}", self.label(&r.player), r.roll))
                .collect();
            format!(
                " (seed {}, rolls {})",
                last.seed.as_deref().unwrap_or("-"),
                rolls.join(", ")
            )
        };
        Err(format!(
            "expected the group to choose {response}{how}, it chose {} \"{}\" by {}{rolls}",
            last.response,
            last.text,
            <&str>::from(last.by)
        ))
    }

    /// What a choose or advance of the walk did: its steps sent to the server, or its refusal
    /// kept as the player's, under the code a client's own walk refuses with.
    async fn after_walk(
        &mut self,
        walked: Result<(), WalkError>,
        out: Vec<Outgoing>,
    ) -> Result<(), String> {
        match walked {
            Ok(()) => self.send_walked(out).await,
            Err(e) => {
                self.refused = Some(crate::session::walk_code(&e).to_owned());
                Ok(())
            }
        }
    }

    /// Sends what the client walk queued, hearing each answer as a client does (a quest
    /// check's jump, a shared conversation's `advanced`), which may queue more.
    async fn send_walked(&mut self, mut out: Vec<Outgoing>) -> Result<(), String> {
        while !out.is_empty() {
            let queued = std::mem::take(&mut out);
            for step in queued {
                let message = {
                    let open = self.open.as_ref().ok_or("the conversation closed")?;
                    step.message(&open.graph)
                        .ok_or("a queued step is not in the graph")?
                };
                let answers = self.send(message).await;
                if self.refused.is_some() {
                    return Ok(());
                }
                self.hear(&answers, &mut out)?;
            }
        }
        Ok(())
    }

    /// What the player's session pushed (the room's news, another player's step followed):
    /// heard as a client hears it, and what the walk then queues sent.
    async fn pushed(&mut self, messages: Vec<ServerMessage>) -> Result<(), String> {
        self.take_effects(&messages);
        let mut out = Vec::new();
        self.hear(&messages, &mut out)?;
        self.send_walked(out).await
    }

    /// The client's walk follows what the server said; what it queues goes to `out`.
    fn hear(&mut self, messages: &[ServerMessage], out: &mut Vec<Outgoing>) -> Result<(), String> {
        for message in messages {
            match message {
                ServerMessage::Opened {
                    conversation,
                    entry,
                    content,
                    facts,
                    shared,
                    ..
                } => {
                    let content = content
                        .as_deref()
                        .ok_or("`opened` came without its content")?;
                    let (graph, diagnostics) = build_conversation(conversation, content);
                    if let Some(d) = diagnostics.iter().find(|d| d.is_error()) {
                        return Err(format!("the client cannot build `{conversation}`: {d}"));
                    }
                    let entry = graph
                        .find(entry)
                        .ok_or_else(|| format!("the entry `{entry}` is not in `{conversation}`"))?;
                    self.facts = facts.clone();
                    let walk = match shared {
                        Some(shared) => ClientWalk::open_shared(
                            &graph,
                            entry,
                            &self.facts,
                            shared.leader == self.id,
                            out,
                        ),
                        None => ClientWalk::open(&graph, entry, &self.facts, out),
                    }
                    .map_err(|e| format!("the client walk cannot open on the entry: {e}"))?;
                    self.roster = shared.as_ref().map(|s| s.participants.clone());
                    self.open = Some(Open {
                        graph,
                        walk,
                        party: shared.as_ref().map(|s| s.party.clone()),
                    });
                }
                ServerMessage::Participants {
                    leader,
                    participants,
                    ..
                } => {
                    if let Some(open) = self.open.as_mut() {
                        open.walk.set_leader(*leader == self.id);
                    }
                    self.roster = Some(participants.clone());
                }
                ServerMessage::Chosen {
                    response,
                    node,
                    by,
                    seed,
                    rolls,
                    ..
                } => {
                    let open = self
                        .open
                        .as_mut()
                        .ok_or("the group's choice came with no conversation open")?;
                    let chosen = find_vertex(&open.graph, response)?;
                    let next = node
                        .as_deref()
                        .map(|n| find_vertex(&open.graph, n))
                        .transpose()?;
                    self.decisions.push(Decision {
                        response: response.clone(),
                        text: vertex_text(&open.graph, chosen),
                        by: *by,
                        seed: seed.clone(),
                        rolls: rolls.clone(),
                    });
                    open.walk
                        .follow_chosen(&open.graph, chosen, next, &self.facts, out)
                        .map_err(|e| {
                            format!("the client walk cannot follow the group's `{response}`: {e}")
                        })?;
                }
                ServerMessage::Advanced { line, node } => {
                    let open = self
                        .open
                        .as_mut()
                        .ok_or("the leader's advance came with no conversation open")?;
                    let next = node
                        .as_deref()
                        .map(|n| find_vertex(&open.graph, n))
                        .transpose()?;
                    open.walk
                        .follow_advanced(&open.graph, next, &self.facts, out)
                        .map_err(|e| {
                            format!("the client walk cannot follow the advance past `{line}`: {e}")
                        })?;
                }
                ServerMessage::Jump { node } => {
                    let open = self.open.as_mut().ok_or("the conversation closed")?;
                    let target = open.graph.find(node).ok_or_else(|| {
                        format!("the server jumped to `{node}`, not in the graph")
                    })?;
                    open.walk
                        .jump(&open.graph, target, &self.facts, out)
                        .map_err(|e| format!("the jump to `{node}`: {e}"))?;
                }
                ServerMessage::Closed { .. } => {
                    // Closed by the server (walked away), not the `close` of a walk that ended.
                    if self
                        .open
                        .as_ref()
                        .is_some_and(|open| !matches!(open.walk.screen(), Screen::Ended))
                    {
                        self.open = None;
                    }
                    self.roster = None;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A player as the plan names them.
    fn label<'a>(&self, id: &'a str) -> &'a str {
        id.strip_prefix(self.prefix.as_str())
            .filter(|name| !name.is_empty())
            .unwrap_or(id)
    }

    /// The plan's clock a little on, as the session handling a message reads it.
    fn tick(&mut self) -> Now {
        self.now += Duration::from_millis(50);
        Now::at(self.now, crate::clock::unix_micros())
    }

    /// Sends one message; its answers before the ack. A refusal is kept for `expect refusal`.
    async fn send(&mut self, message: ClientMessage) -> Vec<ServerMessage> {
        let id = self.next_id;
        self.next_id += 1;
        self.refused = None;
        let now = self.tick();
        let mut answers = self.core.handle(message.with_id(id), now).await;
        if let Some(ServerMessage::Error { code, .. }) = answers.last() {
            self.refused = Some(code.name().to_owned());
        }
        if matches!(
            answers.last(),
            Some(ServerMessage::Ack { .. } | ServerMessage::Error { .. })
        ) {
            answers.pop();
        }
        self.take_effects(&answers);
        answers
    }

    /// Keeps the effects among `messages` for `expect effect`, and the facts current.
    fn take_effects(&mut self, messages: &[ServerMessage]) {
        for message in messages {
            if let ServerMessage::Effect { effect, .. } = message {
                self.learn(effect);
                self.effects.push(effect.clone());
            }
        }
    }

    /// Keeps the facts current, as a client does from each effect.
    fn learn(&mut self, effect: &Effect) {
        let facts = &mut self.facts;
        match effect {
            Effect::QuestAccepted { quest, objectives } => {
                facts.quests.insert(quest.clone(), QuestStatus::Active);
                for o in objectives {
                    facts.progress.entry(format!("{quest}/{o}")).or_insert(0);
                }
            }
            Effect::QuestCompleted {
                quest,
                coins,
                experience,
            } => {
                facts.quests.insert(quest.clone(), QuestStatus::Completed);
                facts.coins += coins;
                facts.experience += experience;
            }
            Effect::ObjectiveAdvanced {
                quest,
                objective,
                progress,
                ..
            } => {
                facts
                    .progress
                    .insert(format!("{quest}/{objective}"), *progress);
            }
            Effect::VariableSet { variable, value } => {
                facts.vars.insert(variable.clone(), value.clone());
            }
            _ => {}
        }
    }
}

/// The response a `choose` names: one of the choices on screen, else (to see it refused) any
/// response under the line on screen, else, for a vote, any response of the conversation (a
/// solo walk would take one shown earlier: a plan picks it on screen).
fn find_response(open: &Open, pick: &Pick, facts: &FactSheet) -> Result<VertexId, String> {
    let choices: Vec<VertexId> = open.walk.choices(&open.graph, facts).collect();
    let response = |v: &VertexId| {
        open.graph
            .vertex(*v)
            .is_some_and(|x| x.kind == VertexKind::Response && picks(pick, &x.name, &x.text))
    };
    let on_screen = match open.walk.screen() {
        Screen::Line(line) => open.graph.outputs(line),
        Screen::Waiting | Screen::Ended => &[],
    };
    let found = choices
        .iter()
        .chain(on_screen)
        .copied()
        .find(response)
        .or_else(|| {
            let vote = open.walk.is_shared();
            open.graph
                .vertices()
                .map(|(v, _)| v)
                .find(|v| vote && response(v))
        });
    found.ok_or_else(|| {
        let shown: Vec<String> = choices
            .iter()
            .filter_map(|v| open.graph.vertex(*v))
            .map(|v| format!("{} \"{}\"", v.name, v.text))
            .collect();
        format!("no response {pick} on screen; the choices are {shown:?}")
    })
}

fn find_vertex(graph: &DialogueGraph, name: &str) -> Result<VertexId, String> {
    graph
        .find(name)
        .ok_or_else(|| format!("the server named `{name}`, not in the graph"))
}

fn vertex_name(graph: &DialogueGraph, v: VertexId) -> String {
    graph
        .vertex(v)
        .map(|v| v.name.to_string())
        .unwrap_or_default()
}

fn vertex_text(graph: &DialogueGraph, v: VertexId) -> String {
    graph
        .vertex(v)
        .map(|v| v.text.to_string())
        .unwrap_or_default()
}

fn picks(pick: &Pick, name: &str, text: &str) -> bool {
    match pick {
        Pick::Name(n) => n == name,
        Pick::Text(t) => text.contains(t.as_str()),
    }
}

/// An effect's `kind` on the wire.
fn effect_kind(effect: &Effect) -> String {
    serde_json::to_value(effect)
        .ok()
        .and_then(|v| v["kind"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn effect_quest(effect: &Effect) -> Option<&str> {
    match effect {
        Effect::QuestAccepted { quest, .. }
        | Effect::QuestChecked { quest, .. }
        | Effect::QuestCompleted { quest, .. }
        | Effect::ObjectiveAdvanced { quest, .. }
        | Effect::QuestTracked { quest }
        | Effect::ChooseRideBoat { quest } => Some(quest),
        _ => None,
    }
}

fn describe(effect: &Effect) -> String {
    serde_json::to_string(effect).unwrap_or_default()
}

/// The error codes a plan may expect, for checking a plan's `expect refusal` before running it.
pub fn known_code(code: &str) -> bool {
    ErrorCode::ALL.iter().any(|c| c.name() == code)
}

/// Counts per plan file, for the summary.
pub fn by_file(plans: &[Plan]) -> BTreeMap<&str, usize> {
    let mut out = BTreeMap::new();
    for plan in plans {
        *out.entry(plan.file.as_str()).or_insert(0) += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(line: usize, player: usize, step: Step) -> PlanStep {
        PlanStep { line, player, step }
    }

    #[test]
    fn a_plan_parses_with_its_line_numbers_and_a_bad_line_says_where() {
        let text = "# a comment\nplan Pim\ntalk Pim   # walk over\nchoose \"Go on, tell me.\"\nexpect reward coins 30 experience 20\nexpect refusal not_armed\n";
        let plans = parse("pim.plan", text).expect("parses");
        assert_eq!(plans.len(), 1);
        assert!(plans[0].players.is_empty(), "one unnamed player");
        assert_eq!(plans[0].steps[0], step(3, 0, Step::Talk("Pim".into())));
        assert_eq!(
            plans[0].steps[1],
            step(4, 0, Step::Choose(Pick::Text("Go on, tell me.".into())))
        );
        for (bad, line) in [
            ("talk Pim\n", 1),
            ("plan x\nchoose \"open\n", 2),
            ("plan x\nexpect reward 30\n", 2),
            ("plan x\ngiven quest Q done\n", 2),
            ("plan x\nsend action Nope x\n", 2),
            ("plan x\ndance\n", 2),
            ("plan\n", 1),
        ] {
            let err = parse("bad.plan", bad).expect_err(bad);
            assert_eq!(
                (err.file.as_str(), err.line),
                ("bad.plan", line),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn a_party_plan_names_its_players_and_each_step_is_one_players() {
        let text = "plan two\nplayers Ada Bo Cy\nparty Ada Bo\nseed 7\nAda: given coins 150\n\
                    Bo: walk wren\ntalk wren\nBo: vote \"old barge\"   # a vote\nwait ballot\n\
                    Cy : expect chosen Ferry_Greet_r2 by tie_leader\nAda: expect participants 2\n\
                    expect line \"a: b\"\nexpect no effect\n";
        let plans = parse("wren.plan", text).expect("parses");
        let plan = &plans[0];
        assert_eq!(plan.players, ["Ada", "Bo", "Cy"]);
        assert_eq!(
            plan.parties,
            vec![(3, vec!["Ada".to_owned(), "Bo".to_owned()])]
        );
        assert_eq!(plan.seed, 7);
        assert_eq!(
            plan.steps,
            vec![
                step(5, 0, Step::GivenCoins(150)),
                step(6, 1, Step::Walk("wren".into())),
                step(7, 0, Step::Talk("wren".into())),
                step(8, 1, Step::Vote(Pick::Text("old barge".into()))),
                step(9, 0, Step::WaitBallot),
                step(
                    10,
                    2,
                    Step::ExpectChosen {
                        response: Pick::Name("Ferry_Greet_r2".into()),
                        by: Some(DecidedBy::TieLeader),
                    }
                ),
                step(11, 0, Step::ExpectParticipants(2)),
                step(12, 0, Step::ExpectLine(Pick::Text("a: b".into()))),
                step(13, 0, Step::ExpectNoEffect),
            ]
        );
        // `party` names players `players` did not.
        let plans = parse("p.plan", "plan p\nparty Ada Bo\n").expect("parses");
        assert_eq!(plans[0].players, ["Ada", "Bo"]);
        for (bad, line) in [
            ("plan x\nAda: talk wren\n", 2),
            ("plan x\nplayers Ada\nBo: talk wren\n", 3),
            ("plan x\ntalk wren\nplayers Ada Bo\n", 3),
            ("plan x\nparty Ada Bo\nparty Bo Cy\n", 3),
            ("plan x\nplayers Ada Ada\n", 2),
            ("plan x\nplayers \"Ada Lovelace\"\n", 2),
            ("plan x\nplayers\n", 2),
            ("Ada: plan x\n", 1),
            ("plan x\nplayers Ada\nAda: party Ada\n", 3),
            ("plan x\nseed -1\n", 2),
            ("plan x\ngiven coins -5\n", 2),
            ("plan x\nexpect chosen r1 by vote\n", 2),
            ("plan x\nexpect chosen r1 majority\n", 2),
            ("plan x\nwait ballot now\n", 2),
        ] {
            let err = parse("bad.plan", bad).expect_err(bad);
            assert_eq!(
                (err.file.as_str(), err.line),
                ("bad.plan", line),
                "{bad}: {err}"
            );
        }
    }

    /// A failing step of a party plan names the file, the line, the plan and the player, on
    /// the sample content's shared conversation.
    #[tokio::test]
    async fn a_failing_party_step_names_its_file_line_and_player() {
        let text = "plan two at the ferry\nparty Ada Bo\nBo: walk wren\nAda: talk wren\n\
                    Bo: expect participants 2\nBo: expect line Wren_Bye\n";
        let plans = parse("wren.plan", text).expect("parses");
        let scratch = std::env::temp_dir().join(format!("banter-plans-{}", std::process::id()));
        let database = ThrowawayDatabase(scratch.join("party-failure.db"));
        let (app, pool) = throwaway_app(
            &crate::testing::sample_content(),
            None,
            &plans,
            &scratch,
            &database.0,
        )
        .await
        .expect("the sample content serves");
        let err = run(&app, &pool, &plans[0], 0)
            .await
            .expect_err("Bo sees Wren's greeting");
        assert_eq!((err.file.as_str(), err.line), ("wren.plan", 6), "{err}");
        assert!(
            err.message.starts_with(
                "two at the ferry: Bo: expected the line Wren_Bye, the player sees Ferry_Greet"
            ),
            "{err}"
        );
        app.shutdown.cancel();
        app.store.close().await;
    }
}
