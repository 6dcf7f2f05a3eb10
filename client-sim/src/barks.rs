//! Simulated play for the bark director.
//!
//! A seeded script walks, sails, fishes (cast, wait, bite, catch or lose,
//! now and then a legendary or a mutated fish), talks to NPCs, hands in
//! quests, sits through cutscenes, gets stolen from and stands around, on a
//! fake clock with the director's 1 s heartbeat. Every write goes through the
//! owners' handles and is reported to the director, which raises its derived
//! cues itself; instant cues are fired the way game code would. A fake
//! presenter plays each line for a time that grows with its text and reports
//! when it finished. Everything is reproducible from the seed.
//!
//! The lines can be heard in a player's locale ([`localize_catalog`]): each subtitle from the
//! content's string tables (`bark:<id>`, as `strings export` writes them), along the locale's
//! fallback chain, the pseudo-locale's made from the source, as the server serves dialogue.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};

use banter_barks::rng::{below, unit};
use banter_barks::stats::{PoolFigures, SessionReport, Tally, pool_figures};
use banter_barks::{
    Attempt, BarkCatalog, BarkDirector, Command, Cue, LineId, Loaded, Payload, PayloadKey,
    SplitMix64,
};
use banter_dialogue::lines::BARK_PREFIX;
use banter_dialogue::locale::{self, Locale, Locales};
use banter_player::{
    BoatState, DialogueState, Effective, FishingState, FootState, OwnerHandles, PlayerStateMachine,
    StealState, StoryState,
};
use serde::Serialize;

/// Pool sizes the article quotes die figures for: waiting for a bite (6),
/// lost fish (9), standing still (13).
pub const ARTICLE_POOLS: [u32; 3] = [6, 9, 13];

/// NPCs quests are handed to in the simulation: the sample world's NPC ids
/// (`content/world.json`); the catalog matches on some of them.
pub const NPCS: [&str; 5] = ["fennick", "marisol", "skipper_brinehollow", "ines", "pim"];

/// Reads a bark catalog file. `banter-barks` is pure and parses a catalog from its text
/// ([`BarkCatalog::from_json`]); reading the file is the caller's, here.
pub trait LoadCatalog {
    /// Read, parse and check a catalog file.
    fn load(path: impl AsRef<Path>) -> anyhow::Result<Loaded>;
}

impl LoadCatalog for BarkCatalog {
    fn load(path: impl AsRef<Path>) -> anyhow::Result<Loaded> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read bark catalog {}", path.display()))?;
        Ok(BarkCatalog::from_json(&text)?)
    }
}

/// Reads the string tables of a content folder (`<content>/locales/`). A table that cannot be
/// read is an error, as it is for the server.
pub fn load_locales(content: &Path) -> anyhow::Result<Locales> {
    let mut diagnostics = Vec::new();
    let locales =
        banter_dialogue::content::load_locales(&content.join(locale::FOLDER), &mut diagnostics);
    if let Some(error) = diagnostics.iter().find(|d| d.is_error()) {
        bail!("cannot read the string tables: {error}");
    }
    Ok(locales)
}

/// The catalog as a player in `locale` hears it: each line's subtitle from the first table of
/// the locale's fallback chain that translates it (keyed `bark:<id>`), the pseudo-locale's made
/// from the source; a line none translates keeps its source text. Pools, cues and conditions
/// stay. Returns the catalog and how many of its lines were translated.
pub fn localize_catalog(
    catalog: BarkCatalog,
    locales: &Locales,
    locale: &Locale,
) -> (BarkCatalog, usize) {
    let translations: std::collections::HashMap<String, String> = catalog
        .lines()
        .iter()
        .map(|l| (&l.id, &l.text))
        .chain(catalog.unplaced().iter().map(|l| (&l.id, &l.text)))
        .filter_map(|(id, source)| {
            let text = locales.text(locale, &format!("{BARK_PREFIX}{id}"), source)?;
            Some((id.clone(), text.into_owned()))
        })
        .collect();
    let translated = translations.len();
    (
        catalog.localized(|id| translations.get(id).cloned()),
        translated,
    )
}

/// How many lines [`SimReport::first_heard`] keeps.
pub const FIRST_HEARD: usize = 8;

/// A line as the player heard it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Heard {
    /// Simulated seconds since the session started.
    pub at_seconds: f64,
    /// The catalog id.
    pub line: String,
    /// The subtitle, in the catalog's (or the player's) language.
    pub text: String,
}

/// How to run.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// Simulated hours of play.
    pub hours: f64,
    /// Seed for the script, the director and the die/deck trials.
    pub seed: u64,
    /// Trials per pool for the die and deck figures.
    pub trials: u32,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            hours: 10.0,
            seed: 1,
            trials: 1_000_000,
        }
    }
}

/// Everything `banter-sim barks` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimReport {
    /// Simulated hours.
    pub hours: f64,
    /// The seed.
    pub seed: u64,
    /// Lines in the catalog.
    pub catalog_lines: usize,
    /// The session: per cue fires, plays, measured probability, never
    /// heard, shortest repeat gap, idle rate.
    pub session: SessionReport,
    /// Trials per pool for `pools`.
    pub trials: u32,
    /// Die (exact and measured) beside the deck (measured), for 6, 9, 13.
    pub pools: Vec<PoolFigures>,
    /// The locale the lines were heard in; `None`: the catalog's own text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
    /// The first lines played, in order, as the player read them.
    pub first_heard: Vec<Heard>,
}

/// How long the fake presenter shows a line: a beat plus reading time.
fn line_duration(text: &str) -> Duration {
    Duration::from_millis(1200 + 60 * text.chars().count() as u64)
}

struct Sim {
    now: Duration,
    end: Duration,
    next_beat: Duration,
    m: PlayerStateMachine,
    h: OwnerHandles,
    d: BarkDirector,
    catalog: Arc<BarkCatalog>,
    script: SplitMix64,
    dice: SplitMix64,
    playing: Option<(LineId, Duration)>,
    tally: Tally,
    revealed: bool,
    heard: Vec<Heard>,
}

impl Sim {
    fn new(catalog: Arc<BarkCatalog>, cfg: &SimConfig) -> Self {
        let (m, h) = PlayerStateMachine::new();
        let mut d = BarkDirector::new(Arc::clone(&catalog));
        let now = Duration::from_secs(1);
        d.start(now, &m);
        let hours = if cfg.hours.is_finite() && cfg.hours > 0.0 {
            cfg.hours
        } else {
            0.0
        };
        Sim {
            now,
            end: now + Duration::from_secs_f64(hours * 3600.0),
            next_beat: now + Duration::from_secs(1),
            m,
            h,
            d,
            catalog,
            script: SplitMix64::new(cfg.seed),
            dice: SplitMix64::new(cfg.seed ^ 0x5EED_BA4C_D1CE_0001),
            playing: None,
            tally: Tally::default(),
            revealed: false,
            heard: Vec::new(),
        }
    }

    fn done(&self) -> bool {
        self.now >= self.end
    }

    fn record(&mut self, a: Option<Attempt>) {
        if let Some(a) = a {
            let cat = &self.catalog;
            self.tally.record(&a, |l| cat.line(l).id.clone());
        }
        self.present();
    }

    /// The fake presenter: shows lines, cuts them.
    fn present(&mut self) {
        while let Some(c) = self.d.poll_command() {
            match c {
                Command::Play { line } => {
                    let played = self.catalog.line(line);
                    if self.heard.len() < FIRST_HEARD {
                        self.heard.push(Heard {
                            at_seconds: self.now.as_secs_f64(),
                            line: played.id.clone(),
                            text: played.text.clone(),
                        });
                    }
                    let dur = line_duration(&played.text);
                    self.playing = Some((line, self.now + dur));
                }
                Command::Stop { line, .. } => {
                    if self.playing.is_some_and(|(l, _)| l == line) {
                        self.playing = None;
                    }
                }
            }
        }
    }

    /// Report a write to the director, as StateChanged/TagChanged would.
    fn changed(&mut self) {
        let a = self.d.player_changed(self.now, &self.m, &mut self.dice);
        self.record(a);
    }

    fn fire(&mut self, cue: Cue, payload: &Payload<'_>) {
        let outcome = self.d.fire(self.now, cue, payload, &self.m, &mut self.dice);
        let a = Attempt {
            cue,
            at: self.now,
            outcome,
        };
        self.record(Some(a));
    }

    /// Let `dt` pass: lines finish, heartbeats beat, idle time accrues.
    fn wait(&mut self, dt: Duration) {
        let until = (self.now + dt).min(self.end);
        loop {
            let line_end = self.playing.map(|(_, e)| e);
            let next = [Some(self.next_beat), line_end]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(until);
            if next > until {
                break;
            }
            self.advance_to(next);
            if let Some((l, e)) = self.playing
                && e <= self.now
            {
                self.d.line_finished(l);
                self.playing = None;
            }
            if self.next_beat <= self.now {
                self.next_beat += Duration::from_secs(1);
                let a = self.d.heartbeat(self.now, &self.m, &mut self.dice);
                self.record(a);
            }
        }
        self.advance_to(until);
    }

    fn advance_to(&mut self, t: Duration) {
        if t > self.now {
            if self.m.effective() == Effective::Idle {
                self.tally.add_idle(t - self.now);
            }
            self.now = t;
        }
    }

    /// Reports the state change just made, then plays on in it for `lo..=hi` seconds (drawn
    /// from the script); returns how long.
    fn changed_then_wait(&mut self, lo: u32, hi: u32) -> Duration {
        self.changed();
        let dt = self.secs(lo, hi);
        self.wait(dt);
        dt
    }

    fn secs(&mut self, lo: u32, hi: u32) -> Duration {
        let span = hi.saturating_sub(lo) * 1000;
        Duration::from_millis(u64::from(lo) * 1000 + u64::from(below(&mut self.script, span + 1)))
    }

    fn chance(&mut self, p: f64) -> bool {
        unit(&mut self.script) < p
    }

    /// The world clock: night for 8 of every 24 minutes; the reveal
    /// halfway through the session.
    fn world_tags(&mut self) {
        let night = (self.now.as_secs() % 1440) >= 960;
        self.h.tags.night.set(&mut self.m, night);
        let half = self.end.saturating_sub(self.end / 2);
        if !self.revealed && self.now >= half {
            self.revealed = true;
            self.h.tags.post_reveal.set(&mut self.m, true);
        }
        self.changed();
    }

    fn idle(&mut self) {
        let total = self.secs(10, 150);
        if self.chance(0.15) {
            let before = self.secs(2, 40);
            self.wait(before);
            let mic = self.chance(0.25);
            if mic {
                self.h.tags.using_microphone.set(&mut self.m, true);
            } else {
                self.h.tags.menu_open.set(&mut self.m, true);
            }
            let dt = self.changed_then_wait(4, 25);
            self.h.tags.using_microphone.set(&mut self.m, false);
            self.h.tags.menu_open.set(&mut self.m, false);
            self.changed();
            self.wait(total.saturating_sub(before + dt));
        } else {
            self.wait(total);
        }
    }

    fn walk(&mut self) {
        let objective = self.chance(0.5);
        self.h.tags.has_objective.set(&mut self.m, objective);
        let mut left = self.secs(15, 180);
        let mut first = true;
        while !left.is_zero() && !self.done() {
            let leg = self.secs(5, 40).min(left);
            let sprint = self.chance(0.25);
            self.h.tags.sprinting.set(&mut self.m, sprint);
            if first {
                // Set off (sprinting or not): StartWalking sees the tag.
                self.h.foot.enter(&mut self.m, FootState::Walking);
                first = false;
            }
            self.changed();
            self.wait(leg);
            left = left.saturating_sub(leg);
        }
        self.h.tags.sprinting.set(&mut self.m, false);
        self.h.foot.clear(&mut self.m);
        self.changed();
    }

    fn sail(&mut self) {
        self.h.boat.enter(&mut self.m, BoatState::Driving);
        self.changed();
        let mut left = self.secs(60, 420);
        while !left.is_zero() && !self.done() {
            let leg = self.secs(10, 30).min(left);
            self.wait(leg);
            left = left.saturating_sub(leg);
            if self.chance(0.12) {
                self.fire(Cue::BoatSpeedBurst, &Payload::EMPTY);
            }
            if self.chance(0.06) {
                // Fish from the boat: Boat.Driving stays active underneath.
                self.fishing_session();
            }
        }
        self.h.boat.clear(&mut self.m);
        self.changed();
    }

    fn fishing_session(&mut self) {
        self.h.tags.fish_equipped.set(&mut self.m, true);
        let bait = self.chance(0.5);
        self.h.tags.using_bait.set(&mut self.m, bait);
        self.changed();
        let casts = 2 + below(&mut self.script, 5);
        for _ in 0..casts {
            if self.done() {
                break;
            }
            self.cast_once();
        }
        self.h.fishing.clear(&mut self.m);
        self.h.tags.using_bait.set(&mut self.m, false);
        self.h.tags.fish_equipped.set(&mut self.m, false);
        self.changed();
    }

    fn cast_once(&mut self) {
        self.h.fishing.enter(&mut self.m, FishingState::Charging);
        self.changed_then_wait(1, 2);
        self.h.fishing.enter(&mut self.m, FishingState::Casted);
        self.changed();
        // Bites come fast or slow; long waits give the 12 s dwell its turn.
        let bite = if self.chance(0.5) {
            self.secs(3, 12)
        } else {
            self.secs(12, 60)
        };
        self.wait(bite);
        self.h.fishing.enter(&mut self.m, FishingState::Minigame);
        self.changed_then_wait(4, 12);
        let roll = unit(&mut self.script);
        let rarity = if roll < 0.55 {
            "Common"
        } else if roll < 0.85 {
            "Uncommon"
        } else if roll < 0.98 {
            "Rare"
        } else {
            "Legendary"
        };
        if self.chance(0.65) {
            let p = Payload::new()
                .with(PayloadKey::Rarity, rarity)
                .with(PayloadKey::Species, "snapper");
            self.fire(Cue::LandFish, &p);
            if rarity == "Legendary" {
                self.fire(
                    Cue::LegendaryFish,
                    &Payload::new().with(PayloadKey::Species, "old_whiskers"),
                );
            } else if self.chance(0.015) {
                self.fire(
                    Cue::MutatedFish,
                    &Payload::new().with(PayloadKey::Species, "glowfin"),
                );
            }
        } else {
            self.fire(
                Cue::LoseFish,
                &Payload::new().with(PayloadKey::Rarity, rarity),
            );
        }
        self.h.fishing.enter(&mut self.m, FishingState::Cooldown);
        self.changed_then_wait(1, 3);
    }

    fn talk(&mut self) {
        self.h.dialogue.enter(&mut self.m, DialogueState::Talking);
        self.changed_then_wait(15, 75);
        self.h.dialogue.clear(&mut self.m);
        self.changed();
        if self.chance(0.5) {
            let npc = NPCS[below(&mut self.script, NPCS.len() as u32) as usize];
            // Fired after the conversation closes: during it, barks may not play.
            self.fire(
                Cue::QuestHandedIn,
                &Payload::new().with(PayloadKey::Npc, npc),
            );
        }
    }

    fn interruption(&mut self) {
        if self.chance(0.6) {
            self.h.story.enter(&mut self.m, StoryState::Cutscene);
            self.changed_then_wait(20, 90);
            self.h.story.clear(&mut self.m);
        } else {
            self.h.steal.enter(&mut self.m, StealState::Victim);
            self.changed_then_wait(5, 20);
            self.h.steal.clear(&mut self.m);
        }
        self.changed();
    }

    fn run(&mut self) {
        while !self.done() {
            self.world_tags();
            let pick = below(&mut self.script, 100);
            match pick {
                0..=21 => self.idle(),
                22..=46 => self.walk(),
                47..=66 => self.sail(),
                67..=89 => self.fishing_session(),
                90..=96 => self.talk(),
                _ => self.interruption(),
            }
        }
    }
}

/// Run a simulated session and compute every figure.
pub fn simulate(catalog: impl Into<Arc<BarkCatalog>>, cfg: &SimConfig) -> SimReport {
    let catalog = catalog.into();
    let mut sim = Sim::new(Arc::clone(&catalog), cfg);
    sim.run();
    let mut trials_rng = SplitMix64::new(cfg.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1E);
    SimReport {
        hours: cfg.hours,
        seed: cfg.seed,
        catalog_lines: catalog.lines().len(),
        session: sim.tally.report(&catalog),
        trials: cfg.trials,
        pools: pool_figures(&ARTICLE_POOLS, cfg.trials, &mut trials_rng),
        locale: None,
        first_heard: sim.heard,
    }
}
