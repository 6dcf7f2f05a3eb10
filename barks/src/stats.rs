//! Why a deck and not a die, in numbers (section 4.4), plus the tally the
//! simulator keeps of a session.
//!
//! With a die, "the probability that the first k picks are all distinct is"
//! `P_n(k) = n! / ((n-k)! n^k)`, "and the expected position of the first
//! repeat is 1 + Q(n), where Q(n) = sum_{k=1..n} P_n(k) is Ramanujan's
//! Q-function". For the 6 waiting-for-a-bite lines that is 3.8, and the
//! chance of a repeat within four picks is 0.72; with 9 lost-fish lines 0.54;
//! with 13 idle lines 0.40. "Players read that as a bug, not as bad luck."
//! This module computes those figures exactly, measures them by simulation,
//! and measures the same for the [`Deck`].

use std::collections::BTreeMap;
use std::time::Duration;

use rand_core::Rng;
use serde::{Deserialize, Serialize};

use crate::catalog::BarkCatalog;
use crate::cue::{Cue, CueKind};
use crate::deck::Deck;
use crate::director::{Attempt, Filter, FireOutcome};
use crate::rng::below;

/// `P_n(k)`: the chance that the first `k` independent uniform picks among
/// `n` are all distinct. 0 when `k > n`; 1 when `k == 0`.
pub fn p_distinct(n: u32, k: u32) -> f64 {
    if k > n {
        return 0.0;
    }
    let nf = f64::from(n);
    (0..k).map(|i| (nf - f64::from(i)) / nf).product()
}

/// Ramanujan's `Q(n) = sum_{k=1..n} P_n(k)`.
pub fn ramanujan_q(n: u32) -> f64 {
    // Accumulate the running product instead of recomputing each term.
    let nf = f64::from(n);
    let mut term = 1.0;
    let mut sum = 0.0;
    for k in 1..=n {
        term *= (nf - f64::from(k - 1)) / nf;
        sum += term;
    }
    sum
}

/// Expected position of the first repeat with a die: `1 + Q(n)`.
pub fn die_expected_first_repeat(n: u32) -> f64 {
    1.0 + ramanujan_q(n)
}

/// Chance of at least one repeat within the first `k` die picks:
/// `1 - P_n(k)`.
pub fn die_repeat_within(n: u32, k: u32) -> f64 {
    1.0 - p_distinct(n, k)
}

/// Repeat figures for one way of picking lines from a pool.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RepeatFigures {
    /// Expected (or mean measured) position of the first repeated pick.
    pub expected_first_repeat: f64,
    /// Chance (or measured share of trials) of a repeat within four picks.
    pub repeat_within_four: f64,
    /// Earliest first repeat seen over all trials (exact: 2 for a die).
    pub earliest_first_repeat: u32,
}

/// The exact die figures for a pool of `n`.
pub fn die_exact(n: u32) -> RepeatFigures {
    RepeatFigures {
        expected_first_repeat: die_expected_first_repeat(n),
        repeat_within_four: die_repeat_within(n, 4),
        earliest_first_repeat: 2.min(n + 1),
    }
}

/// Measure the first repeat of a picking process over `trials` trials.
/// `pick` starts a trial when called with `true`.
fn measure(n: u32, trials: u32, mut pick: impl FnMut(bool) -> u32) -> RepeatFigures {
    let mut seen = vec![false; n as usize];
    let mut sum = 0u64;
    let mut within_four = 0u64;
    let mut earliest = u32::MAX;
    for _ in 0..trials {
        seen.iter_mut().for_each(|s| *s = false);
        let mut position = 0u32;
        let mut start = true;
        loop {
            position += 1;
            let card = pick(start) as usize;
            start = false;
            if core::mem::replace(&mut seen[card], true) {
                break;
            }
        }
        sum += u64::from(position);
        if position <= 4 {
            within_four += 1;
        }
        earliest = earliest.min(position);
    }
    let t = f64::from(trials.max(1));
    RepeatFigures {
        expected_first_repeat: sum as f64 / t,
        repeat_within_four: within_four as f64 / t,
        earliest_first_repeat: if trials == 0 { 0 } else { earliest },
    }
}

/// Measure a die over a pool of `n > 0` lines: uniform independent picks.
pub fn simulate_die<R: Rng + ?Sized>(n: u32, trials: u32, rng: &mut R) -> RepeatFigures {
    measure(n.max(1), trials, |_| below(rng, n.max(1)))
}

/// Measure the [`Deck`] over a pool of `n > 0` lines. Each trial is a new
/// session: a new deck, dealt until its first repeat, which therefore comes
/// from the second deck, across the seam.
pub fn simulate_deck<R: Rng + ?Sized>(n: u32, trials: u32, rng: &mut R) -> RepeatFigures {
    let n = n.max(1);
    let cards: Vec<u32> = (0..n).collect();
    let mut deck = Deck::new(cards.clone());
    measure(n, trials, |start| {
        if start {
            deck = Deck::new(cards.clone());
        }
        deck.deal(rng).unwrap_or(0)
    })
}

/// The shortest distance, in deals, between two deals of the same card over
/// one long run of `deals` deals from a deck of `n` (1 would be a back to
/// back repeat, which the seam swap rules out for `n > 1`).
pub fn deck_min_repeat_distance<R: Rng + ?Sized>(n: u32, deals: u32, rng: &mut R) -> u32 {
    let n = n.max(1);
    let mut deck = Deck::new((0..n).collect::<Vec<u32>>());
    let mut last_seen: Vec<Option<u32>> = vec![None; n as usize];
    let mut min = u32::MAX;
    for i in 0..deals {
        let c = deck.deal(rng).unwrap_or(0) as usize;
        if let Some(prev) = last_seen[c] {
            min = min.min(i - prev);
        }
        last_seen[c] = Some(i);
    }
    min
}

/// Exact and measured figures for one pool size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PoolFigures {
    /// Lines in the pool.
    pub n: u32,
    /// Die, computed exactly.
    pub die_exact: RepeatFigures,
    /// Die, measured.
    pub die_measured: RepeatFigures,
    /// Deck, measured: one new deck per trial.
    pub deck_measured: RepeatFigures,
    /// Deck, measured over one long run: the shortest distance in deals
    /// between two deals of the same line (a die's is 1).
    pub deck_min_repeat_distance: u32,
}

/// Exact and simulated die figures beside the deck's, for each pool size.
pub fn pool_figures<R: Rng + ?Sized>(sizes: &[u32], trials: u32, rng: &mut R) -> Vec<PoolFigures> {
    sizes
        .iter()
        .map(|&n| PoolFigures {
            n,
            die_exact: die_exact(n),
            die_measured: simulate_die(n, trials, rng),
            deck_measured: simulate_deck(n, trials, rng),
            deck_min_repeat_distance: deck_min_repeat_distance(n, trials, rng),
        })
        .collect()
}

/// Per-cue counts of a session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CueTally {
    /// Times the cue was fired or raised.
    pub fires: u64,
    /// Attempts that passed every filter before the roll.
    pub reached_roll: u64,
    /// Lines played.
    pub played: u64,
    /// Rejections by filter.
    pub rejected: BTreeMap<Filter, u64>,
}

/// What a session sounded like: every attempt's outcome, when each line
/// played, and how long the player stood still. Fed by the simulator (or a
/// game's debug overlay) with the director's [`Attempt`]s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    /// Counts per cue.
    pub cues: BTreeMap<Cue, CueTally>,
    /// Start times of every play, per line id.
    pub plays: BTreeMap<String, Vec<Duration>>,
    /// Total time with effective state `Idle`.
    pub idle_time: Duration,
    /// Lines played for [`Cue::IdleDwell`].
    pub idle_lines: u64,
    /// Lines cut off by a higher priority line.
    pub cuts: u64,
}

impl Tally {
    /// Record one attempt. `line_id` maps a played line to its catalog id.
    pub fn record(&mut self, attempt: &Attempt, line_id: impl Fn(crate::LineId) -> String) {
        let t = self.cues.entry(attempt.cue).or_default();
        t.fires += 1;
        match &attempt.outcome {
            FireOutcome::Played { line, cut } => {
                t.reached_roll += 1;
                t.played += 1;
                if cut.is_some() {
                    self.cuts += 1;
                }
                if attempt.cue == Cue::IdleDwell {
                    self.idle_lines += 1;
                }
                self.plays
                    .entry(line_id(*line))
                    .or_default()
                    .push(attempt.at);
            }
            FireOutcome::Rejected(reason) => {
                let f = reason.filter();
                if f == Filter::Roll {
                    t.reached_roll += 1;
                }
                *t.rejected.entry(f).or_default() += 1;
            }
        }
    }

    /// Add time spent idle.
    pub fn add_idle(&mut self, dt: Duration) {
        self.idle_time += dt;
    }

    /// Plays over attempts that reached the roll, per cue.
    pub fn measured_probability(&self, cue: Cue) -> Option<f64> {
        let t = self.cues.get(&cue)?;
        (t.reached_roll > 0).then(|| t.played as f64 / t.reached_roll as f64)
    }

    /// Shortest time between two plays of the same line, over all lines.
    pub fn shortest_repeat_gap(&self) -> Option<(String, Duration)> {
        self.plays
            .iter()
            .flat_map(|(id, times)| {
                times
                    .windows(2)
                    .map(move |w| (id, w[1].saturating_sub(w[0])))
            })
            .min_by_key(|(_, gap)| *gap)
            .map(|(id, gap)| (id.clone(), gap))
    }

    /// Idle lines per idle minute; the article's ceiling is
    /// `60 / 25 * 0.35 = 0.84`.
    pub fn idle_lines_per_minute(&self) -> f64 {
        let minutes = self.idle_time.as_secs_f64() / 60.0;
        if minutes > 0.0 {
            self.idle_lines as f64 / minutes
        } else {
            0.0
        }
    }
}

/// One cue's line in a [`SessionReport`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CueReport {
    /// The cue.
    pub cue: Cue,
    /// Derived or instant.
    pub kind: CueKind,
    /// Lines in its pool.
    pub pool: usize,
    /// Times fired or raised.
    pub fires: u64,
    /// Attempts that reached the roll (passed filters 1 to 5).
    pub reached_roll: u64,
    /// Lines played.
    pub played: u64,
    /// `played / reached_roll`.
    pub measured_probability: Option<f64>,
    /// The table's probability.
    pub table_probability: f64,
    /// Rejections by filter.
    pub rejected: BTreeMap<Filter, u64>,
}

/// The shortest gap between two plays of one line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepeatGap {
    /// The line's id.
    pub line: String,
    /// Seconds between the two plays.
    pub seconds: f64,
}

/// What a session sounded like, per cue and overall.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionReport {
    /// Per cue, in table order.
    pub cues: Vec<CueReport>,
    /// Lines played in total.
    pub lines_played: u64,
    /// Distinct lines heard.
    pub distinct_lines_heard: usize,
    /// Catalog lines never heard, by id.
    pub never_heard: Vec<String>,
    /// The shortest gap between repeats of a line.
    pub shortest_repeat_gap: Option<RepeatGap>,
    /// Minutes with effective state `Idle`.
    pub idle_minutes: f64,
    /// Lines played for standing still.
    pub idle_lines: u64,
    /// `idle_lines / idle_minutes`.
    pub idle_lines_per_minute: f64,
    /// The article's ceiling, 0.84.
    pub idle_ceiling_per_minute: f64,
    /// Lines cut off by a higher priority line.
    pub cuts: u64,
}

impl Tally {
    /// Summarise the session against `catalog`.
    pub fn report(&self, catalog: &BarkCatalog) -> SessionReport {
        let cues = Cue::ALL
            .iter()
            .map(|&cue| {
                let t = self.cues.get(&cue).cloned().unwrap_or_default();
                CueReport {
                    cue,
                    kind: cue.kind(),
                    pool: catalog.pool(cue).len(),
                    fires: t.fires,
                    reached_roll: t.reached_roll,
                    played: t.played,
                    measured_probability: self.measured_probability(cue),
                    table_probability: cue.probability(),
                    rejected: t.rejected,
                }
            })
            .collect();
        SessionReport {
            cues,
            lines_played: self.plays.values().map(|v| v.len() as u64).sum(),
            distinct_lines_heard: self.plays.len(),
            never_heard: catalog
                .lines()
                .iter()
                .filter(|l| !self.plays.contains_key(&l.id))
                .map(|l| l.id.clone())
                .collect(),
            shortest_repeat_gap: self.shortest_repeat_gap().map(|(line, gap)| RepeatGap {
                line,
                seconds: gap.as_secs_f64(),
            }),
            idle_minutes: self.idle_time.as_secs_f64() / 60.0,
            idle_lines: self.idle_lines,
            idle_lines_per_minute: self.idle_lines_per_minute(),
            idle_ceiling_per_minute: idle_ceiling_per_minute(),
            cuts: self.cuts,
        }
    }
}

/// The article's ceiling on idle lines per idle minute: one attempt per 25 s
/// window, 0.35 each.
pub fn idle_ceiling_per_minute() -> f64 {
    let window = Cue::IdleDwell
        .dwell_window()
        .map_or(25.0, |w| w.as_secs_f64());
    60.0 / window * Cue::IdleDwell.probability()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    fn round(x: f64, places: i32) -> f64 {
        let m = 10f64.powi(places);
        (x * m).round() / m
    }

    #[test]
    fn article_figures_exact() {
        assert_eq!(round(die_expected_first_repeat(6), 1), 3.8);
        assert_eq!(round(die_repeat_within(6, 4), 2), 0.72);
        assert_eq!(round(die_repeat_within(9, 4), 2), 0.54);
        assert_eq!(round(die_repeat_within(13, 4), 2), 0.40);
        assert!((idle_ceiling_per_minute() - 0.84).abs() < 1e-12);
    }

    #[test]
    fn q_matches_definition() {
        for n in 1..30 {
            let direct: f64 = (1..=n).map(|k| p_distinct(n, k)).sum();
            assert!((ramanujan_q(n) - direct).abs() < 1e-12);
        }
        assert_eq!(p_distinct(3, 4), 0.0);
        assert_eq!(p_distinct(3, 0), 1.0);
    }

    #[test]
    fn die_simulation_converges_and_deck_never_repeats_early() {
        let mut r = SplitMix64::new(11);
        for n in [6u32, 9, 13] {
            let die = simulate_die(n, 200_000, &mut r);
            let exact = die_exact(n);
            assert!((die.repeat_within_four - exact.repeat_within_four).abs() < 0.01);
            assert!((die.expected_first_repeat - exact.expected_first_repeat).abs() < 0.02);
            let deck = simulate_deck(n, 20_000, &mut r);
            assert_eq!(deck.repeat_within_four, 0.0);
            assert_eq!(deck.earliest_first_repeat, n + 1);
            assert_eq!(deck.expected_first_repeat, f64::from(n + 1));
            assert!(deck_min_repeat_distance(n, 100_000, &mut r) >= 2);
        }
    }
}
