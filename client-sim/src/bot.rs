//! The honest bot: logs in, spawns by an NPC, walks (never faster than a boat) to whoever has a
//! quest for it, talks after the cooldown, reads each line at typewriter pace, picks the
//! responses that move its quests on, reports its catches and finds through the trusted game
//! server, and when every quest is done keeps chatting with the NPCs around it.
//!
//! Everything it sends is what a client following the rules would send, so the server must
//! accept all of it: the load test counts any refusal as a failure.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use banter_dialogue::content::{Content, NpcDef};
use banter_dialogue::{DialogueGraph, VertexId, tutorial};
use banter_protocol::{Action, Effect, Profile, QuestStatus};
use rand::SeedableRng;
use rand::seq::IndexedRandom;
use tokio::time::Instant;

use crate::channel::ChannelSeat;
use crate::error::{Result, SimError};
use crate::events;
use crate::facts::ClientFacts;
use crate::pace::ReadingPace;
use crate::session::{Driver, Live, Metrics, Pick, Session, SessionOptions, Talked};
use crate::world::{self, distance, stand_spot};

/// Walking speed: below the server's 60 studs/s limit.
pub const WALK_SPEED: f64 = 50.0;
/// Time between two moves while walking.
pub const WALK_TICK: Duration = Duration::from_millis(500);
/// How far a bot looks for someone to chat with once its quests are done.
pub const CHAT_RADIUS: f64 = 150.0;

/// The simulator's one random generator: `rand`'s Xoshiro256++, the same on every platform,
/// always seeded explicitly (bots vary by seed, runs repeat), never a global source. Its
/// uniform picks ([`IndexedRandom::choose`], with `rand`'s `unbiased` feature) have no modulo
/// bias. It is also the [`rand::Rng`] the shared typewriter draws its blip pitches from.
pub type SimRng = rand::rngs::Xoshiro256PlusPlus;

/// A generator from `seed`: the same seed, the same choices.
pub fn sim_rng(seed: u64) -> SimRng {
    SimRng::seed_from_u64(seed)
}

/// How a bot plays.
#[derive(Clone, Debug)]
pub struct BotOptions {
    pub session: SessionOptions,
    pub service_key: String,
    pub pace: ReadingPace,
    pub deadline: Instant,
    pub seed: u64,
    /// Where the content's NPCs stand, shared by every bot of a run.
    pub atlas: Arc<world::Atlas>,
    /// A fresh player's facts, worked out once for every bot of a run.
    pub fresh: ClientFacts,
    /// The game server whose channel carries the bot's player, if one does (its own WebSocket
    /// if not).
    pub channel: Option<ChannelSeat>,
}

/// What a bot did.
#[derive(Debug)]
pub struct BotReport {
    /// The player the bot played (once logged in).
    pub player: Option<String>,
    pub metrics: Option<Metrics>,
    pub events_posted: u64,
    /// Errors outside the session (login failures before a session existed).
    pub start_error: Option<String>,
}

/// How much a response moves the player's quests on: the actions it and what follows it
/// carry (a few steps deep), weighed by whether the server would accept them now. What lies
/// beyond the line the response is picked under again is not the response's: a decline that
/// leads back to the offer is worth nothing, not the offer's every option. A quest check of a
/// quest accepted on the way is no refusal (the quest will be active by then), only no gain.
pub fn response_score(
    content: &Content,
    graph: &DialogueGraph,
    response: VertexId,
    facts: &ClientFacts,
) -> i32 {
    response_score_within(content, graph, response, facts, 6)
}

/// [`response_score`] looking only `max_depth` steps past the response (1: the response and
/// the line it leads to). A party picks by what a response does at once.
pub fn response_score_within(
    content: &Content,
    graph: &DialogueGraph,
    response: VertexId,
    facts: &ClientFacts,
    max_depth: u32,
) -> i32 {
    let origin = graph.line_of(response);
    // Every action within reach of the response, each vertex once, not past its own line.
    let mut reached = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![(response, 0u32)];
    while let Some((v, depth)) = stack.pop() {
        if depth > max_depth || Some(v) == origin || !seen.insert(v) {
            continue;
        }
        reached.extend(graph.actions(v).map(|(_, authored)| &authored.action));
        stack.extend(graph.outputs(v).iter().map(|&o| (o, depth + 1)));
    }
    let accepted_on_the_way: HashSet<&str> = reached
        .iter()
        .filter_map(|action| match action {
            Action::AcceptQuest { quest_id } => Some(quest_id.as_str()),
            _ => None,
        })
        .collect();
    reached
        .iter()
        .map(|action| match action {
            Action::AcceptQuest { quest_id } => {
                if facts.status(quest_id) == QuestStatus::Available {
                    10
                } else {
                    -20
                }
            }
            Action::CheckQuest { quest_id, .. } => {
                let done = content
                    .quest(quest_id)
                    .is_some_and(|q| facts.objectives_done(q));
                if facts.status(quest_id) == QuestStatus::Active && done {
                    10
                } else if accepted_on_the_way.contains(quest_id.as_str()) {
                    0
                } else {
                    -20
                }
            }
            Action::CompleteQuest { .. } => 5,
            Action::AdvanceObjective { .. } => 2,
            _ => 0,
        })
        .sum()
}

/// The bot's hands: reads at its pace, chooses by [`response_score`], and leaves at the
/// deadline.
struct BotDriver<'a> {
    content: &'a Content,
    pace: ReadingPace,
    deadline: Instant,
    rng: &'a mut SimRng,
}

impl BotDriver<'_> {
    async fn spend(&self, time: Duration) {
        if !time.is_zero() {
            tokio::time::sleep_until((Instant::now() + time).min(self.deadline)).await;
        }
    }
}

impl Driver for BotDriver<'_> {
    async fn line(&mut self, graph: &DialogueGraph, line: VertexId) {
        let text = graph.vertex(line).map_or("", |v| &v.text);
        self.spend(self.pace.reading_time(text)).await;
    }

    async fn choose(
        &mut self,
        graph: &DialogueGraph,
        choices: &[VertexId],
        facts: &ClientFacts,
    ) -> Pick {
        if Instant::now() >= self.deadline {
            return Pick::Leave;
        }
        let scored: Vec<(VertexId, i32)> = choices
            .iter()
            .map(|&c| (c, response_score(self.content, graph, c, facts)))
            .collect();
        let best = scored.iter().map(|(_, s)| *s).max().unwrap_or(0);
        let top: Vec<VertexId> = scored
            .iter()
            .filter(|(_, s)| *s == best)
            .map(|(c, _)| *c)
            .collect();
        match top.choose(&mut *self.rng) {
            Some(&c) => Pick::Choose(c),
            None => Pick::Leave,
        }
    }

    async fn advance(&mut self, _: &DialogueGraph, _: VertexId) -> bool {
        Instant::now() < self.deadline
    }

    fn effect(&mut self, _: &Effect, _: &Profile) {}

    async fn cutscene(&mut self, _: &str) {
        self.spend(self.pace.cutscene).await;
    }
}

/// Who to talk to next: the tutorial's NPC during the tutorial; else the nearest giver of a
/// quest the player can move on; else someone nearby other than the last one. Looked up in
/// the `atlas` around the player: a decision costs the neighbourhood, not the world.
pub fn next_npc<'c>(
    content: &'c Content,
    atlas: &world::Atlas,
    facts: &ClientFacts,
    position: [f64; 3],
    last: Option<&str>,
    rng: &mut SimRng,
) -> Option<&'c NpcDef> {
    if let Some(pointed) = tutorial::pointed_npc(content, facts.sheet.tutorial_stage)
        && let Some(npc) = content.npc(pointed)
    {
        return Some(npc);
    }
    let moves_on = |q: &&banter_dialogue::content::QuestDef| match facts.status(&q.id) {
        QuestStatus::Available => true,
        QuestStatus::Active => !world::needs_world_progress(q) || facts.objectives_done(q),
        QuestStatus::Unavailable | QuestStatus::Completed => false,
    };
    let giver = atlas.nearest_where(content, position, |npc| {
        content.quests_of(&npc.id).iter().any(moves_on)
    });
    if giver.is_some() {
        return giver;
    }
    let near: Vec<&NpcDef> = atlas
        .within(content, position, CHAT_RADIUS)
        .into_iter()
        .filter(|n| Some(n.id.as_str()) != last)
        .collect();
    if near.is_empty() {
        atlas.nearest_where(content, position, |n| Some(n.id.as_str()) != last)
    } else {
        near.choose(rng).copied()
    }
}

/// Runs one bot until the deadline.
pub async fn run(options: BotOptions, live: Option<Arc<Live>>) -> BotReport {
    let started = match options.channel.clone() {
        Some(seat) => {
            Session::start_on_channel(
                options.session.clone(),
                seat,
                options.fresh.clone(),
                live.clone(),
            )
            .await
        }
        None => {
            Session::start_with(options.session.clone(), options.fresh.clone(), live.clone()).await
        }
    };
    let mut session = match started {
        Ok(session) => session,
        Err(e) => {
            if let Some(live) = &live {
                Live::add(&live.errors);
            }
            return BotReport {
                player: None,
                metrics: None,
                events_posted: 0,
                start_error: Some(format!("login: {e}")),
            };
        }
    };
    // What the bots send after the deadline (closing the conversation each was reading, all in
    // the same millisecond) is the harness's herd, not the load: measured apart.
    session.measure_until(options.deadline);
    let mut bot = Bot {
        rng: sim_rng(options.seed),
        options,
        last_npc: None,
        events_posted: 0,
    };
    let content = session.content().clone();
    let npcs = &content.world.npcs;
    let spawn = npcs.choose(&mut bot.rng).map(stand_spot);
    if let Some(spawn) = spawn
        && let Err(e) = session.walk_to(spawn, WALK_SPEED, WALK_TICK, None).await
    {
        note(&mut session, &e);
    }
    let mut failures = 0u32;
    while Instant::now() < bot.options.deadline {
        match bot.step(&mut session).await {
            Ok(()) => failures = 0,
            Err(e) => {
                note(&mut session, &e);
                failures += 1;
                if failures > 20 {
                    break;
                }
                let pause = Duration::from_millis(200 * u64::from(failures.min(10)));
                tokio::time::sleep_until((Instant::now() + pause).min(bot.options.deadline)).await;
            }
        }
    }
    let events_posted = bot.events_posted;
    let player = session.player().to_owned();
    let metrics = session.finish().await;
    BotReport {
        player: Some(player),
        metrics: Some(metrics),
        events_posted,
        start_error: None,
    }
}

/// Counts an error the session did not count itself (a refusal is counted as a rejection
/// where it happens).
fn note(session: &mut Session, e: &SimError) {
    if !matches!(e, SimError::Refused { .. }) {
        session.count_error(e.to_string());
    }
}

struct Bot {
    options: BotOptions,
    rng: SimRng,
    last_npc: Option<String>,
    events_posted: u64,
}

impl Bot {
    /// What plays conversations and cutscenes for this bot until its deadline.
    fn driver<'a>(&'a mut self, content: &'a Content) -> BotDriver<'a> {
        BotDriver {
            content,
            pace: self.options.pace,
            deadline: self.options.deadline,
            rng: &mut self.rng,
        }
    }

    async fn step(&mut self, session: &mut Session) -> Result<()> {
        let content = session.content().clone();
        let deadline = self.options.deadline;
        session.poll();
        // A cutscene left unreported by a failed `cutscene_done` keeps the player busy: report it
        // before anything else.
        if session.cutscene_pending() {
            return session.play_cutscenes(&mut self.driver(&content)).await;
        }
        // World progress first: the trusted game server reports the catches and finds.
        let owed = world::active_quests(&content, &session.facts)
            .into_iter()
            .find(|q| world::needs_world_progress(q) && !session.facts.objectives_done(q));
        if let Some(quest) = owed {
            let player = session.player().to_owned();
            let endpoint = session.endpoint().clone();
            let prefix = format!("{player}-{}", self.options.seed);
            let posted = events::complete_world_objectives(
                &endpoint,
                &self.options.service_key,
                &player,
                quest,
                &mut session.facts,
                &prefix,
            )
            .await?;
            self.events_posted += u64::from(posted);
            if posted == 0 {
                return Err(SimError::Other(format!(
                    "no event could advance `{}`",
                    quest.id
                )));
            }
            return Ok(());
        }
        let position = session.position.unwrap_or_default();
        let Some(npc) = next_npc(
            &content,
            &self.options.atlas,
            &session.facts,
            position,
            self.last_npc.as_deref(),
            &mut self.rng,
        ) else {
            return Err(SimError::Content("no NPC to talk to".to_owned()));
        };
        session
            .walk_to(stand_spot(npc), WALK_SPEED, WALK_TICK, Some(deadline))
            .await?;
        if session
            .position
            .is_none_or(|p| distance(p, stand_spot(npc)) > 0.01)
        {
            return Ok(()); // the deadline came on the way
        }
        if session.talk_ready_at().is_some_and(|t| t >= deadline) {
            tokio::time::sleep_until(deadline).await;
            return Ok(());
        }
        let talked = session.talk(npc).await?;
        self.last_npc = Some(npc.id.clone());
        let mut driver = self.driver(&content);
        match talked {
            Talked::Opened(open) => {
                session.converse(&open, &mut driver).await?;
            }
            Talked::Cutscene => session.play_cutscenes(&mut driver).await?,
            Talked::Refused(r) => {
                return Err(SimError::Refused {
                    code: r.code,
                    message: r.message,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decline_that_leads_back_to_the_offer_is_not_worth_the_offer() {
        let content = world::load_content(&world::default_content_dir()).expect("the sample");
        let graph = content.conversation("Wren").expect("Wren's conversation");
        let facts = ClientFacts::fresh(&content);
        let score = |name: &str| {
            let v = graph.find(name).expect("a response");
            (
                response_score(&content, graph, v, &facts),
                response_score_within(&content, graph, v, &facts, 1),
            )
        };
        // The skiff accepts the ferry (its check later is no refusal); "Another day" goes back
        // to Wren's hello and the same offer, and is worth nothing of it.
        let (skiff, skiff_now) = score("Ferry_Greet_r1");
        let (decline, decline_now) = score("Ferry_Greet_r4");
        assert!(skiff > decline, "skiff {skiff}, decline {decline}");
        assert!(skiff_now > decline_now);
    }

    #[test]
    fn the_generator_is_seeded_and_picks_uniformly() {
        let picks = |seed| {
            let mut rng = sim_rng(seed);
            (0..64)
                .map(|_| *[1, 2, 3].choose(&mut rng).expect("not empty"))
                .collect::<Vec<u8>>()
        };
        assert_eq!(picks(7), picks(7), "the same seed, the same choices");
        assert_ne!(picks(7), picks(8));
        let none: [u8; 0] = [];
        assert!(none.choose(&mut sim_rng(1)).is_none());
        // 30,000 picks of three: each within 3 % of a third (3.7 standard deviations).
        let mut rng = sim_rng(42);
        let mut counts = [0u32; 3];
        for _ in 0..30_000 {
            counts[*[0usize, 1, 2].choose(&mut rng).expect("not empty")] += 1;
        }
        assert!(
            counts.iter().all(|c| (9_700..=10_300).contains(c)),
            "{counts:?}"
        );
    }
}
