//! The bark director: turns moments into lines (sections 4.3 to 4.8).
//!
//! Driven like a protocol state machine: inputs go in ([`BarkDirector::fire`],
//! [`BarkDirector::heartbeat`], [`BarkDirector::player_changed`],
//! [`BarkDirector::line_finished`], the switch and the holds), and commands
//! come out through [`BarkDirector::poll_command`] for whatever shows the
//! subtitle and plays the audio. No callbacks, no threads, no clock and no
//! randomness of its own: time is a [`Duration`] since any epoch the caller
//! likes, and every roll and shuffle uses the generator passed in.
//!
//! The director's own state and its inputs are here. Two parts live beside
//! it: `eligibility.rs`, what the filters ask (the player view, the quiet
//! holds, the filters and why a line or a fire is turned down), and
//! `snapshot.rs`, the director's state by line id for save games and hot
//! reloads.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use banter_player::Effective;
use rand_core::Rng;
use serde::Serialize;

use crate::catalog::{BarkCatalog, LineId, Priority};
use crate::cue::{Cue, Payload};
use crate::deck::Deck;
use crate::rng::unit;

mod eligibility;
mod snapshot;

use eligibility::eligibility;
pub use eligibility::{
    Filter, Ineligible, PlayerView, QuietSet, QuietSource, Reason, dwell_cue, enter_cue,
};
pub use snapshot::{DirectorSnapshot, RestoreError, SpeakingSnapshot};

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
        let outcome = self.fire(now, cue, &Payload::EMPTY, player, rng);
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
        let outcome = self.fire(now, cue, &Payload::EMPTY, player, rng);
        Some(Attempt {
            cue,
            at: now,
            outcome,
        })
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

    /// `Fire(c, π)`: game code reports a moment. Instant cues come in here;
    /// derived cues are raised by the director itself, but firing one by
    /// hand runs the very same path (useful for tools and tests).
    ///
    /// The six filters, in the article's order. Nothing is spent unless the
    /// line plays: the deck is only peeked until the roll has passed.
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
}
