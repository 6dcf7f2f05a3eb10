//! The bark director: turns moments into lines (sections 4.3 to 4.8).
//!
//! Driven like a protocol state machine: inputs go in ([`BarkDirector::fire`],
//! [`BarkDirector::heartbeat`], [`BarkDirector::player_changed`],
//! [`BarkDirector::line_finished`], the switch and the holds), and commands
//! come out through [`BarkDirector::poll_command`] for whatever shows the
//! subtitle and plays the audio. No callbacks, no threads, no clock and no
//! randomness of its own: time is a [`Duration`] since any epoch the caller
//! likes, and every roll and shuffle uses the generator passed in.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use banter_player::{
    BoatState, Effective, Fact, FishingState, FootState, PlayerStateMachine, availability,
};
use rand_core::Rng;
use serde::{Deserialize, Serialize};

use crate::catalog::{BarkCatalog, Line, LineId, Priority};
use crate::cue::{Cue, Payload, PayloadKey};
use crate::deck::{Deck, DeckState};
use crate::rng::unit;

/// Global spacing between two barks. "Casting, getting a bite and landing
/// the fish are three cues in about 4 seconds. Without spacing X would talk
/// over himself." Priority 2 lines ignore it.
pub const SPACING: Duration = Duration::from_secs(8);

/// How long the speaking lock holds if the line never reports that it
/// finished, "in case the session never resolves (cancelled halfway, UI
/// torn down on respawn)".
pub const SPEAKING_LOCK: Duration = Duration::from_secs(30);

/// How often [`BarkDirector::heartbeat`] is meant to be called. Dwell timers
/// are checked "by a once-per-second heartbeat rather than task.delay,
/// because the timer has to be cancellable by a state change, and a delay
/// that already fired can't be taken back".
pub const HEARTBEAT: Duration = Duration::from_secs(1);

/// What the director needs to know about the player. Implemented for
/// [`PlayerStateMachine`]; tests and tools can implement it on anything.
pub trait PlayerView {
    /// The unified predicate `Has(x)`: a held state or a set tag.
    fn has(&self, fact: Fact) -> bool;
    /// The heaviest held state, or `Idle`.
    fn effective(&self) -> Effective;
    /// PlayerAvailability's answer for barks: no interruption held, no menu
    /// open, no live microphone.
    fn barks_may_play(&self) -> bool;
}

impl PlayerView for PlayerStateMachine {
    fn has(&self, fact: Fact) -> bool {
        PlayerStateMachine::has(self, fact)
    }

    fn effective(&self) -> Effective {
        PlayerStateMachine::effective(self)
    }

    fn barks_may_play(&self) -> bool {
        availability::barks_may_play(self)
    }
}

/// The cue the director raises when the effective state becomes `e`,
/// including when nobody entered it ("I stopped fishing and I'm still
/// sailing" raises [`Cue::TakeHelm`]).
pub fn enter_cue(e: Effective) -> Option<Cue> {
    let Effective::State(s) = e else { return None };
    if s == FootState::Walking.into() {
        Some(Cue::StartWalking)
    } else if s == BoatState::Driving.into() {
        Some(Cue::TakeHelm)
    } else if s == FishingState::Casted.into() {
        Some(Cue::Cast)
    } else if s == FishingState::Cooldown.into() {
        Some(Cue::FinishCatch)
    } else {
        None
    }
}

/// The dwell cue whose timer runs while the effective state is `e`.
pub fn dwell_cue(e: Effective) -> Option<Cue> {
    match e {
        Effective::Idle => Some(Cue::IdleDwell),
        Effective::State(s) if s == FootState::Walking.into() => Some(Cue::WalkingDwell),
        Effective::State(s) if s == BoatState::Driving.into() => Some(Cue::SailingDwell),
        Effective::State(s) if s == FishingState::Casted.into() => Some(Cue::WaitingForBite),
        Effective::State(_) => None,
    }
}

/// A system that holds X quiet for a while, independently of the player's
/// own switch. "If the tutorial wrote the same boolean as the player, it
/// would hand the preference back as 'on' when it finished, whatever the
/// player had chosen."
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum QuietSource {
    /// The combat tutorial: minutes of the combat master talking.
    CombatTutorial,
    /// Any other scripted tutorial.
    Tutorial,
    /// The end credits.
    Credits,
    /// Photo mode.
    PhotoMode,
}

impl QuietSource {
    /// Every source.
    pub const ALL: [QuietSource; 4] = [
        QuietSource::CombatTutorial,
        QuietSource::Tutorial,
        QuietSource::Credits,
        QuietSource::PhotoMode,
    ];

    const fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// The set of quiet holds currently taken. X is held quiet while it is not
/// empty.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct QuietSet(u8);

impl QuietSet {
    /// Whether no hold is taken.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether `s` holds X quiet.
    pub const fn contains(self, s: QuietSource) -> bool {
        self.0 & s.bit() != 0
    }

    /// The holds, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = QuietSource> {
        QuietSource::ALL
            .into_iter()
            .filter(move |s| self.contains(*s))
    }

    fn insert(&mut self, s: QuietSource) -> bool {
        let had = self.contains(s);
        self.0 |= s.bit();
        !had
    }

    fn remove(&mut self, s: QuietSource) -> bool {
        let had = self.contains(s);
        self.0 &= !s.bit();
        had
    }
}

impl Serialize for QuietSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for QuietSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Vec::<QuietSource>::deserialize(d)?;
        let mut set = QuietSet::default();
        for s in v {
            set.insert(s);
        }
        Ok(set)
    }
}

/// The six filters of `Fire(c, π)`, in the order they reject (section 4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Filter {
    /// 1. Not started, the player's switch is off, or a system holds X quiet.
    Quiet,
    /// 2. PlayerAvailability says barks may not play.
    Unavailable,
    /// 3. The draw finds no eligible line.
    Draw,
    /// 4. A bark played less than 8 s ago and the line is not priority 2.
    Spacing,
    /// 5. A bark of equal or higher priority is speaking.
    Speaking,
    /// 6. The cue's probability roll failed.
    Roll,
}

impl Filter {
    /// Every filter, in order.
    pub const ALL: [Filter; 6] = [
        Filter::Quiet,
        Filter::Unavailable,
        Filter::Draw,
        Filter::Spacing,
        Filter::Speaking,
        Filter::Roll,
    ];

    /// The filter's number in the article's list, 1 to 6.
    pub const fn number(self) -> u8 {
        self as u8 + 1
    }
}

/// Why one line is not eligible right now (section 4.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Ineligible {
    /// A Require fact does not hold.
    Missing(Fact),
    /// A Forbid fact holds.
    Forbidden(Fact),
    /// The payload does not carry the value the line matches on.
    PayloadMismatch {
        /// The key.
        key: PayloadKey,
        /// The value the line wants.
        wanted: String,
    },
    /// `t - t_l < κ_l`.
    Cooldown {
        /// Time left.
        remaining: Duration,
    },
    /// The line was the last one heard from this pool, and the deck would
    /// have to start over with it: never the same line twice in a row.
    JustHeard,
}

impl fmt::Display for Ineligible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ineligible::Missing(x) => write!(f, "requires {x}"),
            Ineligible::Forbidden(x) => write!(f, "forbids {x}"),
            Ineligible::PayloadMismatch { key, wanted } => write!(f, "needs {key}={wanted}"),
            Ineligible::Cooldown { remaining } => {
                write!(f, "cooling down, {:.0} s left", remaining.as_secs_f64())
            }
            Ineligible::JustHeard => f.write_str("was the last line heard"),
        }
    }
}

/// Why a fire produced no line: which filter stopped it, and for which
/// candidate line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Reason {
    /// Filter 1: the director has not been started.
    NotStarted,
    /// Filter 1: the player turned barks off.
    SwitchedOff,
    /// Filter 1: some system holds X quiet.
    HeldQuiet {
        /// The holds taken.
        holds: QuietSet,
    },
    /// Filter 2: barks may not play (interruption, menu, microphone).
    Unavailable,
    /// Filter 3: no line answers this cue at all.
    EmptyPool,
    /// Filter 3: no line of the pool is eligible; why, line by line.
    NoEligibleLine {
        /// Each line of the pool and why it is not eligible.
        lines: Vec<(LineId, Ineligible)>,
    },
    /// Filter 4: a bark started less than 8 s ago and `line` is not
    /// priority 2.
    TooSoon {
        /// The line the draw found.
        line: LineId,
        /// Time since the last bark started.
        since_last: Duration,
    },
    /// Filter 5: `speaking` has equal or higher priority than `line`.
    Speaking {
        /// The line the draw found.
        line: LineId,
        /// The line still speaking.
        speaking: LineId,
    },
    /// Filter 6: the roll failed.
    Roll {
        /// The line the draw found.
        line: LineId,
        /// The cue's probability.
        probability: f64,
        /// The roll, in `[0, 1)`; the line plays if it is below the
        /// probability.
        roll: f64,
    },
}

impl Reason {
    /// Which filter rejected.
    pub fn filter(&self) -> Filter {
        match self {
            Reason::NotStarted | Reason::SwitchedOff | Reason::HeldQuiet { .. } => Filter::Quiet,
            Reason::Unavailable => Filter::Unavailable,
            Reason::EmptyPool | Reason::NoEligibleLine { .. } => Filter::Draw,
            Reason::TooSoon { .. } => Filter::Spacing,
            Reason::Speaking { .. } => Filter::Speaking,
            Reason::Roll { .. } => Filter::Roll,
        }
    }

    /// The line the draw found, when the rejection came after the draw.
    pub fn candidate(&self) -> Option<LineId> {
        match self {
            Reason::TooSoon { line, .. }
            | Reason::Speaking { line, .. }
            | Reason::Roll { line, .. } => Some(*line),
            _ => None,
        }
    }
}

/// What one fire (or one raised derived cue) came to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum FireOutcome {
    /// `line` plays; `cut` is the lower-priority line it cut off.
    Played {
        /// The line.
        line: LineId,
        /// The line cut off, if any.
        cut: Option<LineId>,
    },
    /// Nothing plays, and why.
    Rejected(Reason),
}

impl FireOutcome {
    /// The line that plays, if any.
    pub fn played(&self) -> Option<LineId> {
        match self {
            FireOutcome::Played { line, .. } => Some(*line),
            FireOutcome::Rejected(_) => None,
        }
    }

    /// The rejection, if any.
    pub fn reason(&self) -> Option<&Reason> {
        match self {
            FireOutcome::Played { .. } => None,
            FireOutcome::Rejected(r) => Some(r),
        }
    }
}

/// A cue the director raised or was fired with, and what came of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    /// The cue.
    pub cue: Cue,
    /// When.
    pub at: Duration,
    /// The outcome.
    pub outcome: FireOutcome,
}

/// Why X went quiet in the middle of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum QuietCause {
    /// The director was stopped.
    Stopped,
    /// The player turned barks off.
    SwitchedOff,
    /// A system took a hold.
    Held(QuietSource),
    /// Availability turned false (a cutscene, a menu, the microphone...).
    Unavailable,
}

/// Why a line is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StopReason {
    /// A higher-priority line took the screen.
    CutOff {
        /// The new line.
        by: LineId,
    },
    /// X went quiet (section 4.8).
    Quiet(QuietCause),
    /// The line never reported that it finished and its 30 s lock ran out.
    LockExpired,
}

/// What the presenter must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Command {
    /// Show the line's text and play its audio.
    Play {
        /// The line.
        line: LineId,
    },
    /// Remove the line's text and stop its audio, together: "cutting only
    /// the audio would leave the subtitle on screen".
    Stop {
        /// The line.
        line: LineId,
        /// Why.
        reason: StopReason,
    },
}

/// The line holding the speaking lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Speaking {
    /// The line.
    pub line: LineId,
    /// Its priority.
    pub priority: Priority,
    /// When it started.
    pub since: Duration,
    /// When the lock lapses if the line never reports that it finished.
    pub expires: Duration,
}

/// The bark director.
#[derive(Debug, Clone)]
pub struct BarkDirector {
    catalog: Arc<BarkCatalog>,
    started: bool,
    switch_on: bool,
    holds: QuietSet,
    decks: Vec<Deck<LineId>>,
    last_played: Vec<Option<Duration>>,
    last_bark: Option<Duration>,
    speaking: Option<Speaking>,
    effective: Effective,
    dwell_since: Duration,
    commands: VecDeque<Command>,
}

fn eligibility<P: PlayerView + ?Sized>(
    line: &Line,
    t_l: Option<Duration>,
    now: Duration,
    player: &P,
    payload: &Payload<'_>,
) -> Result<(), Ineligible> {
    if let Some(f) = line.require.iter().find(|f| !player.has(**f)) {
        return Err(Ineligible::Missing(*f));
    }
    if let Some(f) = line.forbid.iter().find(|f| player.has(**f)) {
        return Err(Ineligible::Forbidden(*f));
    }
    if let Some((key, wanted)) = line
        .matches
        .iter()
        .find(|(k, v)| payload.get(*k) != Some(v.as_str()))
    {
        return Err(Ineligible::PayloadMismatch {
            key: *key,
            wanted: wanted.clone(),
        });
    }
    if let Some(t) = t_l {
        let since = now.saturating_sub(t);
        if since < line.cooldown {
            return Err(Ineligible::Cooldown {
                remaining: line.cooldown - since,
            });
        }
    }
    Ok(())
}

impl BarkDirector {
    /// A director for `catalog`, not started, the player's switch on, no
    /// holds, every deck spent (the first draw of each pool shuffles it).
    pub fn new(catalog: impl Into<Arc<BarkCatalog>>) -> Self {
        let catalog = catalog.into();
        let decks = Cue::ALL
            .iter()
            .map(|&c| Deck::new(catalog.pool(c).to_vec()))
            .collect();
        let last_played = vec![None; catalog.lines().len()];
        BarkDirector {
            catalog,
            started: false,
            switch_on: true,
            holds: QuietSet::default(),
            decks,
            last_played,
            last_bark: None,
            speaking: None,
            effective: Effective::Idle,
            dwell_since: Duration::ZERO,
            commands: VecDeque::new(),
        }
    }

    /// The catalog.
    pub fn catalog(&self) -> &BarkCatalog {
        &self.catalog
    }

    /// Start: from now on cues may produce lines. Takes the player's current
    /// effective state as known and starts its dwell timer; raises nothing.
    pub fn start<P: PlayerView + ?Sized>(&mut self, now: Duration, player: &P) {
        self.started = true;
        self.effective = player.effective();
        self.dwell_since = now;
    }

    /// Stop: cut whatever is playing and reject every cue until started
    /// again.
    pub fn stop(&mut self) {
        self.started = false;
        self.go_quiet(QuietCause::Stopped);
    }

    /// Whether [`BarkDirector::start`] was called (and not stopped since).
    pub fn is_started(&self) -> bool {
        self.started
    }

    /// The player's own setting (Graphics > Ambient Barks). Turning it off
    /// cuts a line that is playing.
    pub fn set_player_switch(&mut self, on: bool) {
        self.switch_on = on;
        if !on {
            self.go_quiet(QuietCause::SwitchedOff);
        }
    }

    /// The player's setting.
    pub fn player_switch(&self) -> bool {
        self.switch_on
    }

    /// A system holds X quiet until it releases `source`. Cuts a line that
    /// is playing. Returns whether the hold was newly taken.
    pub fn hold(&mut self, source: QuietSource) -> bool {
        let new = self.holds.insert(source);
        self.go_quiet(QuietCause::Held(source));
        new
    }

    /// Release a hold. "Releasing a hold that was never taken does nothing,
    /// so callers can release unconditionally on their way out", and
    /// releasing the last one restores whatever the player chose. Returns
    /// whether the hold was taken.
    pub fn release(&mut self, source: QuietSource) -> bool {
        self.holds.remove(source)
    }

    /// The holds taken.
    pub fn holds(&self) -> QuietSet {
        self.holds
    }

    /// Whether X may start a line as far as the director's own switches go
    /// (started, player's switch on, no hold). Availability is the player's.
    pub fn may_speak(&self) -> bool {
        self.quiet_reason().is_none()
    }

    /// The line holding the speaking lock at `now`, if any.
    pub fn speaking(&self, now: Duration) -> Option<&Speaking> {
        self.speaking.as_ref().filter(|s| now < s.expires)
    }

    /// When the last bark started.
    pub fn last_bark(&self) -> Option<Duration> {
        self.last_bark
    }

    /// When `line` last played (`t_l`).
    pub fn last_played(&self, line: LineId) -> Option<Duration> {
        self.last_played.get(line.index()).copied().flatten()
    }

    /// The deck of `cue`'s pool.
    pub fn deck(&self, cue: Cue) -> &Deck<LineId> {
        &self.decks[cue.index()]
    }

    /// The effective state the director last saw.
    pub fn effective(&self) -> Effective {
        self.effective
    }

    /// When the current dwell window started.
    pub fn dwell_since(&self) -> Duration {
        self.dwell_since
    }

    /// The next command for the presenter.
    pub fn poll_command(&mut self) -> Option<Command> {
        self.commands.pop_front()
    }

    /// The player's state or tags changed (call it on StateChanged and on
    /// TagChanged; hearing the same change twice costs nothing, "because
    /// the second call finds nothing to change").
    ///
    /// Level-triggered: recomputes from the player's current state rather
    /// than trusting the event. If barks may no longer play, a line that is
    /// playing is cut (text and audio together). If the effective state
    /// moved, the dwell timer restarts and the new state's enter cue is
    /// raised, including for transitions nobody wrote.
    pub fn player_changed<P, R>(
        &mut self,
        now: Duration,
        player: &P,
        rng: &mut R,
    ) -> Option<Attempt>
    where
        P: PlayerView + ?Sized,
        R: Rng + ?Sized,
    {
        if !player.barks_may_play() {
            self.go_quiet(QuietCause::Unavailable);
        }
        let e = player.effective();
        if e == self.effective {
            return None;
        }
        self.effective = e;
        self.dwell_since = now;
        let cue = enter_cue(e)?;
        let outcome = self.attempt(now, cue, &Payload::EMPTY, player, rng);
        Some(Attempt {
            cue,
            at: now,
            outcome,
        })
    }

    /// The once-per-second heartbeat: releases a speaking lock that ran
    /// out, catches any state change that was not reported, and checks the
    /// dwell timer. When a window has elapsed the dwell cue is raised and
    /// the timer re-armed, "whether or not anything was said", so there is
    /// never more than one attempt per window.
    pub fn heartbeat<P, R>(&mut self, now: Duration, player: &P, rng: &mut R) -> Option<Attempt>
    where
        P: PlayerView + ?Sized,
        R: Rng + ?Sized,
    {
        self.expire_lock(now);
        if let Some(a) = self.player_changed(now, player, rng) {
            return Some(a);
        }
        let cue = dwell_cue(self.effective)?;
        let window = cue.dwell_window()?;
        if now.saturating_sub(self.dwell_since) < window {
            return None;
        }
        self.dwell_since = now;
        let outcome = self.attempt(now, cue, &Payload::EMPTY, player, rng);
        Some(Attempt {
            cue,
            at: now,
            outcome,
        })
    }

    /// `Fire(c, π)`: game code reports a moment. Instant cues come in here;
    /// derived cues are raised by the director itself, but firing one by
    /// hand runs the very same path (useful for tools and tests).
    pub fn fire<P, R>(
        &mut self,
        now: Duration,
        cue: Cue,
        payload: &Payload<'_>,
        player: &P,
        rng: &mut R,
    ) -> FireOutcome
    where
        P: PlayerView + ?Sized,
        R: Rng + ?Sized,
    {
        self.attempt(now, cue, payload, player, rng)
    }

    /// The presenter finished showing `line`: release the speaking lock if
    /// it holds it. Returns whether it did.
    pub fn line_finished(&mut self, line: LineId) -> bool {
        if self.speaking.is_some_and(|s| s.line == line) {
            self.speaking = None;
            true
        } else {
            false
        }
    }

    /// For each line of `cue`'s pool, why it is not eligible now (`None`:
    /// eligible). Read-only: spends nothing.
    pub fn explain<P: PlayerView + ?Sized>(
        &self,
        now: Duration,
        cue: Cue,
        payload: &Payload<'_>,
        player: &P,
    ) -> Vec<(LineId, Option<Ineligible>)> {
        self.catalog
            .pool(cue)
            .iter()
            .map(|&id| {
                let e = eligibility(
                    self.catalog.line(id),
                    self.last_played[id.index()],
                    now,
                    player,
                    payload,
                );
                (id, e.err())
            })
            .collect()
    }

    fn quiet_reason(&self) -> Option<Reason> {
        if !self.started {
            Some(Reason::NotStarted)
        } else if !self.switch_on {
            Some(Reason::SwitchedOff)
        } else if !self.holds.is_empty() {
            Some(Reason::HeldQuiet { holds: self.holds })
        } else {
            None
        }
    }

    fn go_quiet(&mut self, cause: QuietCause) {
        if let Some(s) = self.speaking.take() {
            self.commands.push_back(Command::Stop {
                line: s.line,
                reason: StopReason::Quiet(cause),
            });
        }
    }

    fn expire_lock(&mut self, now: Duration) {
        if let Some(s) = self.speaking
            && now >= s.expires
        {
            self.speaking = None;
            self.commands.push_back(Command::Stop {
                line: s.line,
                reason: StopReason::LockExpired,
            });
        }
    }

    /// The six filters, in the article's order. Nothing is spent unless the
    /// line plays: the deck is only peeked until the roll has passed.
    fn attempt<P, R>(
        &mut self,
        now: Duration,
        cue: Cue,
        payload: &Payload<'_>,
        player: &P,
        rng: &mut R,
    ) -> FireOutcome
    where
        P: PlayerView + ?Sized,
        R: Rng + ?Sized,
    {
        // 1. "The cheap rejections come before draw, because draw spends a
        //    card from the deck."
        if let Some(r) = self.quiet_reason() {
            return FireOutcome::Rejected(r);
        }
        // 2.
        if !player.barks_may_play() {
            return FireOutcome::Rejected(Reason::Unavailable);
        }
        self.expire_lock(now);
        // 3. Draw (peek only).
        let catalog = &*self.catalog;
        let last_played = &self.last_played;
        let deck = &mut self.decks[cue.index()];
        if deck.is_empty() {
            return FireOutcome::Rejected(Reason::EmptyPool);
        }
        let peek = deck.peek(rng, |id| {
            eligibility(
                catalog.line(id),
                last_played[id.index()],
                now,
                player,
                payload,
            )
            .is_ok()
        });
        let Some(peek) = peek else {
            let last = deck.last();
            let lines = catalog
                .pool(cue)
                .iter()
                .map(|&id| {
                    let why = eligibility(
                        catalog.line(id),
                        last_played[id.index()],
                        now,
                        player,
                        payload,
                    )
                    .err()
                    .unwrap_or(Ineligible::JustHeard);
                    (id, why)
                })
                .filter(|(id, why)| *why != Ineligible::JustHeard || Some(*id) == last)
                .collect();
            return FireOutcome::Rejected(Reason::NoEligibleLine { lines });
        };
        let line = peek.card;
        let priority = catalog.line(line).priority;
        // 4. Global spacing.
        if let Some(last) = self.last_bark {
            let since_last = now.saturating_sub(last);
            if since_last < SPACING && priority != Priority::Rare {
                return FireOutcome::Rejected(Reason::TooSoon { line, since_last });
            }
        }
        // 5. Speaking lock; a higher priority cuts the old line off.
        let mut cut = None;
        if let Some(s) = self.speaking(now) {
            if s.priority >= priority {
                return FireOutcome::Rejected(Reason::Speaking {
                    line,
                    speaking: s.line,
                });
            }
            cut = Some(s.line);
        }
        // 6. The roll comes last: "rolling first and then finding nothing
        //    eligible would silently make every probability in the catalog
        //    lower than it reads."
        let probability = cue.probability();
        let roll = unit(rng);
        if roll >= probability {
            return FireOutcome::Rejected(Reason::Roll {
                line,
                probability,
                roll,
            });
        }
        // Play: only now is the card spent.
        self.decks[cue.index()].commit(peek);
        self.last_played[line.index()] = Some(now);
        self.last_bark = Some(now);
        if let Some(old) = cut {
            self.commands.push_back(Command::Stop {
                line: old,
                reason: StopReason::CutOff { by: line },
            });
        }
        self.speaking = Some(Speaking {
            line,
            priority,
            since: now,
            expires: now + SPEAKING_LOCK,
        });
        self.commands.push_back(Command::Play { line });
        FireOutcome::Played { line, cut }
    }

    /// The director's state by line id, for save games and hot reloads.
    /// Pending commands are not part of it: poll them first.
    pub fn snapshot(&self) -> DirectorSnapshot {
        let id = |l: LineId| self.catalog.line(l).id.clone();
        DirectorSnapshot {
            version: DirectorSnapshot::VERSION,
            started: self.started,
            player_switch: self.switch_on,
            holds: self.holds,
            effective: self.effective,
            dwell_since: self.dwell_since,
            last_bark: self.last_bark,
            speaking: self.speaking.map(|s| SpeakingSnapshot {
                line: id(s.line),
                since: s.since,
                expires: s.expires,
            }),
            last_played: self
                .last_played
                .iter()
                .enumerate()
                .filter_map(|(i, t)| Some((self.catalog.lines()[i].id.clone(), (*t)?)))
                .collect(),
            decks: Cue::ALL
                .iter()
                .filter(|c| !self.decks[c.index()].is_empty())
                .map(|&c| {
                    let s = self.decks[c.index()].state();
                    (
                        c,
                        DeckState {
                            order: s.order.into_iter().map(id).collect(),
                            pos: s.pos,
                            last: s.last.map(id),
                            shuffles: s.shuffles,
                        },
                    )
                })
                .collect(),
        }
    }

    /// Rebuild a director from a snapshot, against `catalog`.
    ///
    /// Lines are matched by id, so a catalog edited since the snapshot still
    /// restores: stamps of removed lines are dropped, and a pool whose lines
    /// changed starts a fresh deck (remembering its last line if it is still
    /// there, so the seam still holds).
    pub fn restore(
        catalog: impl Into<Arc<BarkCatalog>>,
        snapshot: &DirectorSnapshot,
    ) -> Result<Self, RestoreError> {
        if snapshot.version != DirectorSnapshot::VERSION {
            return Err(RestoreError::UnsupportedVersion(snapshot.version));
        }
        let mut d = BarkDirector::new(catalog);
        let cat = Arc::clone(&d.catalog);
        d.started = snapshot.started;
        d.switch_on = snapshot.player_switch;
        d.holds = snapshot.holds;
        d.effective = snapshot.effective;
        d.dwell_since = snapshot.dwell_since;
        d.last_bark = snapshot.last_bark;
        d.speaking = snapshot.speaking.as_ref().and_then(|s| {
            let line = cat.find(&s.line)?;
            Some(Speaking {
                line,
                priority: cat.line(line).priority,
                since: s.since,
                expires: s.expires,
            })
        });
        for (id, t) in &snapshot.last_played {
            if let Some(l) = cat.find(id) {
                d.last_played[l.index()] = Some(*t);
            }
        }
        for (cue, s) in &snapshot.decks {
            let pool = cat.pool(*cue);
            let order: Option<Vec<LineId>> = s.order.iter().map(|id| cat.find(id)).collect();
            let last = s.last.as_ref().and_then(|id| cat.find(id));
            let restored = order.and_then(|order| {
                Deck::from_state(
                    pool,
                    DeckState {
                        order,
                        pos: s.pos,
                        last,
                        shuffles: s.shuffles,
                    },
                )
            });
            d.decks[cue.index()] = restored.unwrap_or_else(|| {
                let mut fresh = Deck::new(pool.to_vec());
                if let Some(l) = last.filter(|l| pool.contains(l)) {
                    fresh = Deck::from_state(
                        pool,
                        DeckState {
                            last: Some(l),
                            ..fresh.state()
                        },
                    )
                    .unwrap_or(fresh);
                }
                fresh
            });
        }
        Ok(d)
    }
}

/// A line holding the speaking lock, in a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpeakingSnapshot {
    /// The line's id.
    pub line: String,
    /// When it started.
    pub since: Duration,
    /// When its lock lapses.
    pub expires: Duration,
}

/// The director's state, by line id (see [`BarkDirector::snapshot`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectorSnapshot {
    /// Format version.
    pub version: u32,
    /// Started.
    pub started: bool,
    /// The player's switch.
    pub player_switch: bool,
    /// Quiet holds taken.
    pub holds: QuietSet,
    /// The effective state last seen.
    pub effective: Effective,
    /// Start of the current dwell window.
    pub dwell_since: Duration,
    /// When the last bark started.
    pub last_bark: Option<Duration>,
    /// The line holding the speaking lock.
    pub speaking: Option<SpeakingSnapshot>,
    /// `t_l` per line id.
    pub last_played: BTreeMap<String, Duration>,
    /// Each pool's deck, by line id.
    pub decks: BTreeMap<Cue, DeckState<String>>,
}

impl DirectorSnapshot {
    /// The format this crate writes and reads.
    pub const VERSION: u32 = 1;
}

/// A snapshot that cannot be restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// Written by an incompatible version.
    #[error("unsupported bark director snapshot version {0}")]
    UnsupportedVersion(u32),
}
