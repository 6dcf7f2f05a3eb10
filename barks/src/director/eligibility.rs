//! What the filters ask: the player as the director sees it, the cues its
//! state raises, the quiet holds, the six filters and why a line (section
//! 4.3) or a whole fire (section 4.5) is turned down.

use std::fmt;
use std::time::Duration;

use banter_player::{
    BoatState, Effective, Fact, FishingState, FootState, PlayerStateMachine, availability,
};
use serde::{Deserialize, Serialize};

use crate::catalog::{Line, LineId};
use crate::cue::{Cue, Payload, PayloadKey};

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

    pub(super) fn insert(&mut self, s: QuietSource) -> bool {
        let had = self.contains(s);
        self.0 |= s.bit();
        !had
    }

    pub(super) fn remove(&mut self, s: QuietSource) -> bool {
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

/// Whether `line`, last played at `t_l`, is eligible at `now` (section 4.3),
/// or the first reason it is not.
pub(super) fn eligibility<P: PlayerView + ?Sized>(
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
