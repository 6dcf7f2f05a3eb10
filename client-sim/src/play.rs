//! `banter-sim play`: a terminal client a person can use. Walk to an NPC, talk, watch each
//! line type out (the shared typewriter of article section 6.2), pick responses with number
//! keys and Enter, and see quest effects, coins and experience as they land.
//!
//! Input is line-based (a number or a name, then Enter), read on its own thread, so the client
//! keeps answering the server's pings while the player thinks, and a test can drive it with a
//! scripted input.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

use banter_dialogue::content::{Content, NpcDef};
use banter_dialogue::text::{BlipVoice, Pacing, Typewriter, TypewriterEvent, visible_units};
use banter_dialogue::{DialogueGraph, VertexId, tutorial};
use banter_protocol::{Effect, Profile, QuestStatus};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::bot::{SimRng, WALK_SPEED, WALK_TICK, sim_rng};
use crate::error::{Result, SimError};
use crate::events;
use crate::facts::ClientFacts;
use crate::http::Endpoint;
use crate::session::{Driver, Pick, Session, SessionOptions, Talked};
use crate::world::{self, distance, stand_spot};

/// How the interactive client runs.
#[derive(Clone, Debug)]
pub struct PlayOptions {
    pub endpoint: Endpoint,
    /// The player's name; the device id is derived from it, so the same name is the same
    /// player next time.
    pub player: String,
    pub content: Arc<Content>,
    /// The trusted game server's key, for reporting catches and finds (`e`).
    pub service_key: String,
    /// Time per grapheme as a line types out (zero: lines appear at once).
    pub letter_interval: Duration,
    /// The NPC to spawn by (default: the tutorial's, else the first in the world).
    pub spawn: Option<String>,
}

/// The device id for a player name: `sim-player-NAME`.
pub fn device_for(player: &str) -> Result<String> {
    let valid = !player.is_empty()
        && player.len() <= 100
        && player
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !valid {
        return Err(SimError::Other(format!(
            "--player must be 1 to 100 of A-Z a-z 0-9 - _ . (got `{player}`)"
        )));
    }
    Ok(format!("sim-player-{player}"))
}

/// Lines typed by the person, read on a thread of their own.
pub struct Input {
    lines: mpsc::UnboundedReceiver<String>,
}

impl Input {
    /// Reads `reader` line by line on a background thread.
    pub fn spawn(reader: impl BufRead + Send + 'static) -> Input {
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in reader.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Input { lines }
    }

    /// The next line, trimmed; `None` at the end of the input.
    pub async fn line(&mut self) -> Option<String> {
        self.lines.recv().await.map(|l| l.trim().to_owned())
    }
}

/// The terminal side of a conversation.
struct Terminal<'a, W: Write + Send> {
    out: &'a mut W,
    input: &'a mut Input,
    letter_interval: Duration,
    speaker: String,
    rng: SimRng,
    quit: bool,
    /// Effects wait until the line that caused them has typed out.
    pending: Vec<String>,
}

fn say<W: Write>(out: &mut W, text: &str) {
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

/// How an effect reads on screen.
pub fn describe_effect(effect: &Effect, profile: &Profile) -> String {
    let wallet = format!("(coins {} · xp {})", profile.coins, profile.experience);
    match effect {
        Effect::QuestAccepted { quest, .. } => format!("★ Quest accepted: {quest}"),
        Effect::QuestChecked { quest, done } => format!(
            "★ {quest}: {}",
            if *done { "all done!" } else { "not done yet" }
        ),
        Effect::QuestCompleted {
            quest,
            coins,
            experience,
        } => format!("★ Quest completed: {quest} (+{coins} coins, +{experience} xp) {wallet}"),
        Effect::ObjectiveAdvanced {
            quest,
            objective,
            progress,
            target,
        } => format!("★ {quest}: {objective} {progress}/{target}"),
        Effect::QuestTracked { quest } => format!("★ Now tracking {quest}"),
        Effect::OpenShop { shop } => format!("★ The shop {shop} opens (browse it in the game)"),
        Effect::OpenSellMenu {} => "★ The selling menu opens (sell in the game)".to_owned(),
        Effect::PlayCutscene { scene } => format!("★ Cutscene: {scene}"),
        Effect::ChooseRideBoat { quest } => format!("★ Pick a boat for {quest}"),
        Effect::VariableSet { variable, value } => {
            let value = banter_dialogue::condition::value_text(value);
            format!("★ {variable} is now {value}")
        }
    }
}

impl<W: Write + Send> Terminal<'_, W> {
    /// Prints the effects that arrived since the last call.
    fn flush_effects(&mut self) {
        for line in std::mem::take(&mut self.pending) {
            say(self.out, &format!("  {line}"));
        }
    }

    /// Types `text` out at the typewriter's pace: over its recording's length when it has one
    /// (`clip`, in the locale served), else a letter per interval.
    async fn type_out(&mut self, text: &str, clip: Option<Duration>) {
        let units = visible_units(text);
        if self.letter_interval.is_zero() {
            let plain: String = units.iter().map(|u| u.grapheme.as_str()).collect();
            say(self.out, &plain);
            return;
        }
        let mut typewriter = Typewriter::new();
        let voice = BlipVoice {
            interval: self.letter_interval,
            base_pitch: 1.0,
            pitch_spread: 0.1,
        };
        let generation = typewriter.start(
            text,
            Pacing::new(clip, voice),
            Duration::ZERO,
            &mut self.rng,
        );
        let started = Instant::now();
        let mut printed = 0;
        loop {
            while let Some(event) = typewriter.poll(started.elapsed()) {
                if event.generation() != generation {
                    continue;
                }
                match event {
                    TypewriterEvent::Show { visible, .. } => {
                        for unit in units.iter().take(visible).skip(printed) {
                            let _ = write!(self.out, "{}", unit.grapheme);
                        }
                        printed = printed.max(visible);
                        let _ = self.out.flush();
                    }
                    TypewriterEvent::Blip { .. } => {}
                    TypewriterEvent::Completed { .. } => {
                        say(self.out, "");
                        return;
                    }
                }
            }
            match typewriter.next_deadline() {
                Some(due) => tokio::time::sleep_until(started + due).await,
                None => {
                    say(self.out, "");
                    return;
                }
            }
        }
    }

    async fn read(&mut self) -> Option<String> {
        let line = self.input.line().await;
        if line.is_none() {
            self.quit = true;
        }
        line
    }
}

impl<W: Write + Send> Driver for Terminal<'_, W> {
    async fn line(&mut self, graph: &DialogueGraph, line: VertexId) {
        let vertex = graph.vertex(line);
        let text = vertex.map_or("", |v| &v.text).to_owned();
        let clip = vertex
            .and_then(|v| v.voice_millis)
            .map(Duration::from_millis);
        let _ = write!(self.out, "\n{}: ", self.speaker);
        self.type_out(&text, clip).await;
        self.flush_effects();
    }

    async fn choose(
        &mut self,
        graph: &DialogueGraph,
        choices: &[VertexId],
        _: &ClientFacts,
    ) -> Pick {
        self.flush_effects();
        for (i, c) in choices.iter().enumerate() {
            let text = graph.vertex(*c).map_or("", |v| &v.text);
            let plain: String = visible_units(text)
                .into_iter()
                .map(|u| u.grapheme)
                .collect();
            say(self.out, &format!("  {}) {plain}", i + 1));
        }
        loop {
            let _ = write!(self.out, "choose 1-{} (q leaves) > ", choices.len());
            let _ = self.out.flush();
            let Some(line) = self.read().await else {
                return Pick::Leave;
            };
            if line == "q" {
                return Pick::Leave;
            }
            match line.parse::<usize>() {
                Ok(n) if (1..=choices.len()).contains(&n) => return Pick::Choose(choices[n - 1]),
                _ => say(self.out, "  (type the number of a response)"),
            }
        }
    }

    async fn advance(&mut self, _: &DialogueGraph, _: VertexId) -> bool {
        self.flush_effects();
        let _ = write!(self.out, "  [Enter] ");
        let _ = self.out.flush();
        match self.read().await {
            Some(line) => line != "q",
            None => false,
        }
    }

    fn effect(&mut self, effect: &Effect, profile: &Profile) {
        self.pending.push(describe_effect(effect, profile));
    }

    async fn cutscene(&mut self, scene: &str) {
        self.flush_effects();
        say(self.out, &format!("  🎬 The scene “{scene}” plays…"));
        if !self.letter_interval.is_zero() {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        say(self.out, "  …and the world comes back.");
    }
}

/// A marker for what an NPC has for the player: `!` a quest to take, `?` one to hand in.
fn marker(content: &Content, facts: &ClientFacts, npc: &NpcDef) -> String {
    let mut marks = Vec::new();
    for q in content.quests.iter().filter(|q| q.giver == npc.id) {
        match facts.status(&q.id) {
            QuestStatus::Available => marks.push(format!("! {}", q.id)),
            QuestStatus::Active => marks.push(format!("? {}", q.id)),
            _ => {}
        }
    }
    marks.join(", ")
}

fn island_name(content: &Content, id: &str) -> String {
    content
        .world
        .islands
        .iter()
        .find(|i| i.id == id)
        .map_or_else(|| id.to_owned(), |i| i.name.clone())
}

/// The NPC a typed line names: a number from the list, an instance id or a display name.
fn pick_npc<'c>(list: &[&'c NpcDef], line: &str) -> Option<&'c NpcDef> {
    if let Ok(n) = line.parse::<usize>() {
        return list.get(n.checked_sub(1)?).copied();
    }
    let lower = line.to_lowercase();
    list.iter()
        .find(|n| n.id.to_lowercase() == lower)
        .or_else(|| list.iter().find(|n| n.name.to_lowercase() == lower))
        .copied()
}

/// Spawns the body: by the chosen NPC, or (the server remembers a body from a session a moment
/// ago) by whichever NPC the body is near enough to reach without a teleport.
async fn spawn(session: &mut Session, content: &Content, first: &NpcDef) -> Result<()> {
    let mut candidates = vec![first];
    candidates.extend(content.world.npcs.iter().filter(|n| n.id != first.id));
    for npc in candidates {
        let reply = session.move_to(stand_spot(npc)).await?;
        if reply.answer.is_ok() {
            return Ok(());
        }
        session.position = None;
    }
    Err(SimError::Other(
        "the server remembers your body somewhere else; wait a minute and try again".to_owned(),
    ))
}

/// Runs the interactive client until the player quits or the input ends.
pub async fn run<W: Write + Send>(options: PlayOptions, input: Input, out: &mut W) -> Result<()> {
    let mut input = input;
    let content = options.content.clone();
    let session_options = SessionOptions {
        endpoint: options.endpoint.clone(),
        device: device_for(&options.player)?,
        rate_per_sec: 10.0,
        content: content.clone(),
    };
    let mut session = Session::start(session_options, None).await?;
    say(
        out,
        &format!(
            "Welcome, {} (player {}). Coins {} · XP {}",
            options.player,
            session.player(),
            session.facts.profile.coins,
            session.facts.profile.experience
        ),
    );
    let first = options
        .spawn
        .as_deref()
        .or_else(|| tutorial::pointed_npc(&content, session.facts.profile.tutorial_stage))
        .and_then(|id| content.npc(id))
        .or_else(|| content.world.npcs.first())
        .ok_or_else(|| SimError::Content("no NPCs".to_owned()))?;
    spawn(&mut session, &content, first).await?;
    let mut rng = sim_rng(crate::auth::unix_now());
    let mut events_sent = 0u32;
    loop {
        session.poll();
        for (effect, profile) in session.take_effects() {
            say(out, &format!("  {}", describe_effect(&effect, &profile)));
        }
        let position = session.position.unwrap_or_default();
        let list = world::nearest(&content, position);
        let here = list
            .first()
            .map(|n| island_name(&content, &n.island))
            .unwrap_or_default();
        say(
            out,
            &format!(
                "\n-- {here} · ({:.0}, {:.0}, {:.0}) · coins {} · xp {} --",
                position[0],
                position[1],
                position[2],
                session.facts.profile.coins,
                session.facts.profile.experience
            ),
        );
        for (i, npc) in list.iter().enumerate() {
            say(
                out,
                &format!(
                    " {:>2}. {:<20} {:>6.0} studs  {}",
                    i + 1,
                    npc.name,
                    distance(npc.position, position),
                    marker(&content, &session.facts, npc)
                ),
            );
        }
        let _ = write!(
            out,
            "number or name: walk there and talk · e: report catches and finds · q: quit\n> "
        );
        let _ = out.flush();
        let Some(line) = input.line().await else {
            break;
        };
        if line == "q" {
            break;
        }
        if line == "e" {
            report_world_progress(&options, &mut session, out, &mut events_sent).await;
            continue;
        }
        let Some(npc) = pick_npc(&list, &line) else {
            say(out, "  (no such NPC)");
            continue;
        };
        let target = stand_spot(npc);
        let trip = distance(position, target);
        if trip > 0.5 {
            say(
                out,
                &format!(
                    "  Walking to {} ({trip:.0} studs, about {:.0} s)…",
                    npc.name,
                    trip / WALK_SPEED
                ),
            );
            if let Err(e) = session.walk_to(target, WALK_SPEED, WALK_TICK, None).await {
                say(out, &format!("  (you could not get there: {e})"));
                continue;
            }
        }
        let mut terminal = Terminal {
            out,
            input: &mut input,
            letter_interval: options.letter_interval,
            speaker: npc.name.clone(),
            rng: rng.clone(),
            quit: false,
            pending: Vec::new(),
        };
        if session.talk_ready_at().is_some_and(|t| t > Instant::now()) {
            say(terminal.out, "  (catching your breath…)");
        }
        let talked = session.talk(npc).await;
        let result = match talked {
            Ok(Talked::Opened(open)) => {
                terminal.speaker = open.speaker.clone().unwrap_or_else(|| npc.name.clone());
                session.converse(&open, &mut terminal).await.map(|_| ())
            }
            Ok(Talked::Cutscene) => {
                for (effect, profile) in session.take_effects() {
                    terminal.effect(&effect, &profile);
                }
                session.play_cutscenes(&mut terminal).await
            }
            Ok(Talked::Refused(r)) => {
                say(
                    terminal.out,
                    &format!("  ({}: {})", r.code.name(), r.message),
                );
                Ok(())
            }
            Err(e) => Err(e),
        };
        terminal.flush_effects();
        let quit = terminal.quit;
        rng = terminal.rng.clone();
        if let Err(e) = result {
            say(out, &format!("  (the conversation broke off: {e})"));
        }
        if quit {
            break;
        }
    }
    say(
        out,
        &format!(
            "Bye! Coins {} · XP {}",
            session.facts.profile.coins, session.facts.profile.experience
        ),
    );
    session.finish().await;
    Ok(())
}

/// The `e` command: acts as the trusted game server and reports the catches and finds the
/// player's active quests still need (a development convenience: the real game reports them).
async fn report_world_progress<W: Write>(
    options: &PlayOptions,
    session: &mut Session,
    out: &mut W,
    sent: &mut u32,
) {
    let content = options.content.clone();
    let owed: Vec<_> = world::open_quests(&content, &session.facts)
        .into_iter()
        .filter(|q| {
            session.facts.status(&q.id) == QuestStatus::Active
                && world::needs_world_progress(q)
                && !session.facts.objectives_done(q)
        })
        .collect();
    if owed.is_empty() {
        say(out, "  (no active quest needs catches or finds)");
        return;
    }
    for quest in owed {
        *sent += 1;
        let player = session.player().to_owned();
        let prefix = format!("play-{player}-{}-{sent}", crate::auth::unix_now());
        let endpoint = session.endpoint().clone();
        match events::complete_world_objectives(
            &endpoint,
            &options.service_key,
            &player,
            quest,
            &mut session.facts,
            &prefix,
        )
        .await
        {
            Ok(_) => say(
                out,
                &format!(
                    "  The game reports your catches and finds for {}.",
                    quest.id
                ),
            ),
            Err(e) => say(out, &format!("  (reporting failed: {e})")),
        }
    }
    // Give the pushed effects a moment to arrive, then show them.
    tokio::time::sleep(Duration::from_millis(100)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn player_names_make_device_ids() {
        assert_eq!(device_for("ana").expect("valid"), "sim-player-ana");
        assert!(device_for("").is_err());
        assert!(device_for("two words").is_err());
    }

    #[test]
    fn effects_read_like_a_game() {
        let profile = Profile {
            coins: 30,
            experience: 20,
            ..Profile::default()
        };
        let done = describe_effect(
            &Effect::QuestCompleted {
                quest: "PimsTideTale".into(),
                coins: 30,
                experience: 20,
            },
            &profile,
        );
        assert_eq!(
            done,
            "★ Quest completed: PimsTideTale (+30 coins, +20 xp) (coins 30 · xp 20)"
        );
    }
}
