//! Writer test plans: plain files next to the content (`content/tests/*.plan`) that say, as a
//! writer would, what a player with these facts sees and gets when talking to an NPC, and
//! `test-content`, which runs every plan through the real walk, resolver and quest engine (the
//! session core, as a live session runs it) on a throwaway SQLite database.
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
//! Setup lines come before the first `talk`: `given quest <Quest> active|completed`,
//! `given progress <Quest> <Objective> <n>`, `given tutorial_stage <n>`. Steps: `talk <NPC id or
//! name>`, `choose <response name or "its text">`, `advance`, `close`, `cutscene_done <scene>`
//! (the client reports a scene finished), `send action <Type> <payload>`. Checks: `expect line <node or "text it contains">`, `expect choices <n>`,
//! `expect effect <kind> [quest]`, `expect reward coins <n> [experience <n>]`, `expect refusal
//! <code>` (the step before it was refused with that code), `expect ended`. `#` starts a comment.
//! A file may hold several plans, each from its `plan <name>` line; each plays a fresh player.
//!
//! The runner walks like a client: a `choose` or `advance` sends what the client walk queues
//! (the held response actions, the next line's actions), answers a quest check's jump, and keeps
//! the facts current from the effects. A failure names the plan's file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use banter_dialogue::content::Content;
use banter_dialogue::{ClientWalk, DialogueGraph, Outgoing, Screen, WalkError, build_conversation};
use banter_protocol::{
    ActionType, ClientMessage, Effect, ErrorCode, FactSheet, QuestStatus, ServerMessage,
};

use crate::app::{App, SharedApp};
use crate::config::Config;
use crate::served::{ContentVersion, ServedContent};
use crate::session::SessionCore;
use crate::store::{self, ConnectOptions, ObjectiveAdvance};

/// Where plans live in a content folder.
pub const FOLDER: &str = "tests";

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
    Talk(String),
    Choose(Pick),
    Advance,
    Close,
    CutsceneDone(String),
    Send {
        action: ActionType,
        payload: String,
    },
    ExpectLine(Pick),
    ExpectChoices(usize),
    ExpectEffect {
        kind: String,
        quest: Option<String>,
    },
    ExpectReward {
        coins: i64,
        experience: Option<i64>,
    },
    ExpectRefusal(String),
    ExpectEnded,
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

/// A plan: its name, file and steps with their line numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub name: String,
    pub file: String,
    pub line: usize,
    pub steps: Vec<(usize, Step)>,
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
        if word(0) == Some("plan") {
            let name = line["plan".len()..].trim().to_owned();
            if name.is_empty() {
                return Err(bad("a plan needs a name: `plan <what it shows>`"));
            }
            plans.push(Plan {
                name,
                file: file.to_owned(),
                line: number,
                steps: Vec::new(),
            });
            continue;
        }
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
            (Some("talk"), Some(npc)) => Step::Talk(npc.to_owned()),
            (Some("choose"), Some(_)) => Step::Choose(pick(1)?),
            (Some("advance"), None) => Step::Advance,
            (Some("close"), None) => Step::Close,
            (Some("cutscene_done"), Some(scene)) => Step::CutsceneDone(scene.to_owned()),
            (Some("send"), Some("action")) => Step::Send {
                action: word(2)
                    .and_then(|t| t.parse().ok())
                    .ok_or_else(|| bad("`send action <Type> <payload>` needs an action type"))?,
                payload: word(3).unwrap_or_default().to_owned(),
            },
            (Some("expect"), Some("line")) => Step::ExpectLine(pick(2)?),
            (Some("expect"), Some("choices")) => Step::ExpectChoices(
                usize::try_from(number_at(2, "the number of choices")?)
                    .map_err(|_| bad("a count is 0 or more"))?,
            ),
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
            _ => return Err(bad(&format!("not a plan step: `{line}`"))),
        };
        let Some(plan) = plans.last_mut() else {
            return Err(bad("a step before any `plan <name>` line"));
        };
        plan.steps.push((number, step));
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
    let app = match throwaway_app(content, checked, &plans, scratch, &database.0).await {
        Ok(app) => app,
        Err(why) => {
            failures.push(failure(&content.display().to_string(), 0, why));
            report.failures = failures;
            return report;
        }
    };
    for (n, plan) in plans.iter().enumerate() {
        report.steps += plan.steps.len();
        if let Err(e) = run(&app, plan, n).await {
            failures.push(e);
        }
    }
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

/// A server's shared state on a fresh SQLite file, without a listener. Only the conversations
/// of the NPCs the plans talk to are published: publishing is each conversation's JSON in every
/// locale, and a studio's world has tens of thousands that no plan opens.
async fn throwaway_app(
    content: &Path,
    checked: Option<Content>,
    plans: &[Plan],
    scratch: &Path,
    file: &Path,
) -> Result<SharedApp, String> {
    let checked = match checked {
        Some(checked) => checked,
        None => ContentVersion::check(content).map_err(|e| e.to_string())?,
    };
    let talked_to = talked_to(&checked, plans);
    let library = ContentVersion::from_checked(checked, 1, Some(&talked_to));
    std::fs::create_dir_all(scratch).map_err(|e| format!("scratch folder: {e}"))?;
    let _ = std::fs::remove_file(file);
    let url = format!("sqlite://{}", file.display());
    let store = store::connect(&url, ConnectOptions::default())
        .await
        .map_err(|e| format!("the throwaway database: {e}"))?;
    let config = Config {
        database_url: url,
        content: content.to_owned(),
        ..Config::default()
    };
    Ok(Arc::new(App::new(
        config,
        ServedContent::new(content.to_owned(), library),
        store,
    )))
}

/// The conversations of every NPC a plan's `talk` names, by id or by name (as
/// [`Player::talk`] finds it, and every look-alike of that name).
fn talked_to(content: &Content, plans: &[Plan]) -> BTreeSet<String> {
    let named: BTreeSet<&str> = plans
        .iter()
        .flat_map(|plan| &plan.steps)
        .filter_map(|(_, step)| match step {
            Step::Talk(npc) => Some(npc.as_str()),
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

/// The effects and refusal of the last step, and the conversation as the client walks it.
struct Player {
    core: SessionCore,
    now: Duration,
    next_id: u64,
    open: Option<Open>,
    effects: Vec<Effect>,
    /// How far `expect effect` has read `effects`.
    read: usize,
    refused: Option<String>,
    facts: FactSheet,
}

struct Open {
    graph: DialogueGraph,
    walk: ClientWalk,
}

async fn run(app: &SharedApp, plan: &Plan, n: usize) -> Result<(), PlanFailure> {
    let player_id = format!("plan-{n}");
    let fail = |line: usize, m: String| failure(&plan.file, line, format!("{}: {m}", plan.name));
    // Setup first: the facts a writer gives the player, written as the game would have.
    for (line, step) in &plan.steps {
        let written = match step {
            Step::GivenQuest { quest, completed } => {
                given_quest(app, &player_id, *line, quest, *completed).await
            }
            Step::GivenProgress {
                quest,
                objective,
                amount,
            } => given_progress(app, &player_id, *line, quest, objective, *amount).await,
            Step::GivenTutorialStage(stage) => {
                given_tutorial_stage(app, &player_id, *line, *stage).await
            }
            _ => Ok(()),
        };
        written.map_err(|e| fail(*line, format!("cannot set it up: {e}")))?;
    }
    let record = app
        .store
        .load_player(&player_id)
        .await
        .map_err(|e| fail(plan.line, format!("cannot load the player: {e}")))?;
    let mut p = Player {
        core: SessionCore::new(app.clone(), player_id.clone(), n as u64 + 1, record),
        now: Duration::from_secs(10),
        next_id: 1,
        open: None,
        effects: Vec::new(),
        read: 0,
        refused: None,
        facts: FactSheet::default(),
    };
    for (line, step) in &plan.steps {
        p.step(app, step).await.map_err(|m| fail(*line, m))?;
    }
    Ok(())
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

impl Player {
    async fn step(&mut self, app: &SharedApp, step: &Step) -> Result<(), String> {
        match step {
            Step::GivenQuest { .. } | Step::GivenProgress { .. } | Step::GivenTutorialStage(_) => {
                Ok(())
            }
            Step::Talk(npc) => self.talk(app, npc).await,
            Step::Choose(pick) => {
                let open = self
                    .open
                    .as_mut()
                    .ok_or("no conversation is open: `talk` first")?;
                let choices: Vec<_> = open.walk.choices(&open.graph, &self.facts).collect();
                let chosen = choices.iter().copied().find(|v| {
                    open.graph
                        .vertex(*v)
                        .is_some_and(|x| picks(pick, &x.name, &x.text))
                });
                let Some(response) = chosen else {
                    let shown: Vec<String> = choices
                        .iter()
                        .filter_map(|v| open.graph.vertex(*v))
                        .map(|v| format!("{} \"{}\"", v.name, v.text))
                        .collect();
                    return Err(format!(
                        "no response {pick} on screen; the choices are {shown:?}"
                    ));
                };
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
        }
    }

    async fn talk(&mut self, app: &SharedApp, npc: &str) -> Result<(), String> {
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
        // Walk there: a jump in time long enough for any trip at the speed limit.
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
        let Some((name, entry, content, facts)) = answers.into_iter().find_map(|m| match m {
            ServerMessage::Opened {
                conversation,
                entry,
                content,
                facts,
                ..
            } => Some((conversation, entry, content, facts)),
            _ => None,
        }) else {
            // A cutscene quest's scene: no conversation to walk.
            self.open = None;
            return Ok(());
        };
        let content = content.ok_or("`opened` came without its content")?;
        let (graph, diagnostics) = build_conversation(&name, &content);
        if let Some(d) = diagnostics.iter().find(|d| d.is_error()) {
            return Err(format!("the client cannot build `{name}`: {d}"));
        }
        let entry = graph
            .find(&entry)
            .ok_or_else(|| format!("the entry `{entry}` is not in `{name}`"))?;
        self.facts = facts;
        let mut out = Vec::new();
        let walk = ClientWalk::open(&graph, entry, &self.facts, &mut out)
            .map_err(|e| format!("the client walk cannot open on the entry: {e}"))?;
        self.open = Some(Open { graph, walk });
        self.send_walked(out).await
    }

    /// Sends what the client walk queued, answering a quest check's jump as a client does.
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
                for answer in answers {
                    if let ServerMessage::Jump { node } = answer {
                        let open = self.open.as_mut().ok_or("the conversation closed")?;
                        let target = open.graph.find(&node).ok_or_else(|| {
                            format!("the server jumped to `{node}`, not in the graph")
                        })?;
                        open.walk
                            .jump(&open.graph, target, &self.facts, &mut out)
                            .map_err(|e| format!("the jump to `{node}`: {e}"))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Sends one message; its answers before the ack. A refusal is kept for `expect refusal`.
    async fn send(&mut self, message: ClientMessage) -> Vec<ServerMessage> {
        self.now += Duration::from_millis(50);
        let id = self.next_id;
        self.next_id += 1;
        self.refused = None;
        let now = crate::session::Now {
            mono: self.now,
            unix_ms: crate::clock::unix_millis(),
        };
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
        for answer in &answers {
            if let ServerMessage::Effect { effect, .. } = answer {
                self.learn(effect);
                self.effects.push(effect.clone());
            }
        }
        answers
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
            _ => {}
        }
    }
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

    #[test]
    fn a_plan_parses_with_its_line_numbers_and_a_bad_line_says_where() {
        let text = "# a comment\nplan Pim\ntalk Pim   # walk over\nchoose \"Go on, tell me.\"\nexpect reward coins 30 experience 20\nexpect refusal not_armed\n";
        let plans = parse("pim.plan", text).expect("parses");
        assert_eq!(plans.len(), 1);
        assert_eq!(plans[0].steps[0], (3, Step::Talk("Pim".into())));
        assert_eq!(
            plans[0].steps[1],
            (4, Step::Choose(Pick::Text("Go on, tell me.".into())))
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
}
