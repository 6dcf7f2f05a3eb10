//! Named moments: the only contract between the code that knows something
//! happened and the line that comments on it.
//!
//! "A controller calls Fire and forgets about it": whether anything is said,
//! and what, is up to the catalog and the director. There are 8 derived cues,
//! raised by the director itself from the player state machine (state enter
//! cues and its own dwell timers), and 6 instant cues, fired by whoever knows
//! the moment, with an optional payload. "Use the machine for things that last
//! and a loose cue for things that happen."

use core::fmt;
use core::str::FromStr;
use core::time::Duration;

use serde::{Deserialize, Serialize};

/// `Display` as the name and `FromStr` from it, for a closed set of names with `ALL` and
/// `name()`; a name not in the set is `$unknown`.
macro_rules! named {
    ($ty:ident, $unknown:ident) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $ty {
            type Err = $unknown;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $ty::ALL
                    .into_iter()
                    .find(|x| x.name() == s)
                    .ok_or_else(|| $unknown(s.to_owned()))
            }
        }
    };
}

/// Whether the director raises a cue itself or game code fires it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CueKind {
    /// Raised by the director from an effective-state change or a dwell timer.
    Derived,
    /// Fired by game code, possibly with a [`Payload`].
    Instant,
}

/// A moment X may comment on. The set and the probabilities are the
/// article's table (section 4.6); they are fixed in code, not in content,
/// because a cue is a contract with game code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Cue {
    /// Effective state became `Foot.Walking`.
    StartWalking,
    /// 45 s walking.
    WalkingDwell,
    /// Effective state became `Boat.Driving` (also when something heavier,
    /// such as fishing, went away while sailing: the transition nobody writes).
    TakeHelm,
    /// 30 s sailing.
    SailingDwell,
    /// Effective state became `Fishing.Casted`.
    Cast,
    /// 12 s with the line in the water.
    WaitingForBite,
    /// Effective state became `Fishing.Cooldown`: the catch is over, whatever
    /// its outcome.
    FinishCatch,
    /// 25 s standing still (effective state `Idle`).
    IdleDwell,
    /// A fish was landed. Carries `Rarity`, `Species`.
    LandFish,
    /// A fish got away. Carries `Rarity`.
    LoseFish,
    /// The boat hit a burst of speed.
    BoatSpeedBurst,
    /// A legendary fish was caught. Carries `Species`.
    LegendaryFish,
    /// A mutated (glowing) fish was caught. Carries `Species`.
    MutatedFish,
    /// A quest was handed in. Carries `Npc`.
    QuestHandedIn,
}

impl Cue {
    /// Number of cues.
    pub const COUNT: usize = 14;

    /// Every cue, in table order.
    pub const ALL: [Cue; Cue::COUNT] = [
        Cue::StartWalking,
        Cue::WalkingDwell,
        Cue::TakeHelm,
        Cue::SailingDwell,
        Cue::Cast,
        Cue::WaitingForBite,
        Cue::FinishCatch,
        Cue::IdleDwell,
        Cue::LandFish,
        Cue::LoseFish,
        Cue::BoatSpeedBurst,
        Cue::LegendaryFish,
        Cue::MutatedFish,
        Cue::QuestHandedIn,
    ];

    /// Dense index, `0..Cue::COUNT`, in table order.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Derived or instant.
    pub const fn kind(self) -> CueKind {
        match self {
            Cue::StartWalking
            | Cue::WalkingDwell
            | Cue::TakeHelm
            | Cue::SailingDwell
            | Cue::Cast
            | Cue::WaitingForBite
            | Cue::FinishCatch
            | Cue::IdleDwell => CueKind::Derived,
            Cue::LandFish
            | Cue::LoseFish
            | Cue::BoatSpeedBurst
            | Cue::LegendaryFish
            | Cue::MutatedFish
            | Cue::QuestHandedIn => CueKind::Instant,
        }
    }

    /// The chance that a cue which reached the roll produces its line.
    ///
    /// "A flat 50% on moments that happen constantly makes X narrate half of
    /// what you do, and that grates within an hour. The same 50% on moments
    /// that happen once a session throws away half of what was recorded for
    /// them. Common moments stay quiet and rare ones almost always land."
    pub const fn probability(self) -> f64 {
        match self {
            Cue::StartWalking => 0.15,
            Cue::WalkingDwell => 0.25,
            Cue::TakeHelm => 0.40,
            Cue::SailingDwell => 0.30,
            Cue::Cast => 0.25,
            Cue::WaitingForBite => 0.30,
            Cue::FinishCatch => 0.15,
            Cue::IdleDwell => 0.35,
            Cue::LandFish => 0.30,
            Cue::LoseFish => 0.45,
            Cue::BoatSpeedBurst => 0.35,
            Cue::LegendaryFish => 0.90,
            Cue::MutatedFish => 0.90,
            Cue::QuestHandedIn => 1.00,
        }
    }

    /// For a dwell cue, how long the effective state must last before each
    /// attempt: "25 s standing still, 45 s walking, 30 s sailing and 12 s
    /// with the line in the water".
    pub const fn dwell_window(self) -> Option<Duration> {
        match self {
            Cue::IdleDwell => Some(Duration::from_secs(25)),
            Cue::WalkingDwell => Some(Duration::from_secs(45)),
            Cue::SailingDwell => Some(Duration::from_secs(30)),
            Cue::WaitingForBite => Some(Duration::from_secs(12)),
            _ => None,
        }
    }

    /// The payload keys game code may attach when firing this cue. Derived
    /// cues carry none. A catalog row that matches on a key none of its cues
    /// carries can never be eligible, and the catalog check says so.
    pub const fn payload_keys(self) -> &'static [PayloadKey] {
        match self {
            Cue::LandFish => &[PayloadKey::Rarity, PayloadKey::Species],
            Cue::LoseFish => &[PayloadKey::Rarity],
            Cue::LegendaryFish | Cue::MutatedFish => &[PayloadKey::Species],
            Cue::QuestHandedIn => &[PayloadKey::Npc],
            _ => &[],
        }
    }

    /// Whether this cue may carry `key`.
    pub fn carries(self, key: PayloadKey) -> bool {
        self.payload_keys().contains(&key)
    }

    /// The cue's name, as written in the catalog.
    pub const fn name(self) -> &'static str {
        match self {
            Cue::StartWalking => "StartWalking",
            Cue::WalkingDwell => "WalkingDwell",
            Cue::TakeHelm => "TakeHelm",
            Cue::SailingDwell => "SailingDwell",
            Cue::Cast => "Cast",
            Cue::WaitingForBite => "WaitingForBite",
            Cue::FinishCatch => "FinishCatch",
            Cue::IdleDwell => "IdleDwell",
            Cue::LandFish => "LandFish",
            Cue::LoseFish => "LoseFish",
            Cue::BoatSpeedBurst => "BoatSpeedBurst",
            Cue::LegendaryFish => "LegendaryFish",
            Cue::MutatedFish => "MutatedFish",
            Cue::QuestHandedIn => "QuestHandedIn",
        }
    }
}

/// The name is not one of the 14 cues.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown cue {0:?}")]
pub struct UnknownCue(pub String);

named!(Cue, UnknownCue);

/// A key an instant cue's payload may carry. Closed, like every other name
/// in Banter, so a misspelled key is a load error rather than a line that
/// silently never plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PayloadKey {
    /// Rarity of a fish: `Common`, `Uncommon`, `Rare`, ...
    Rarity,
    /// The NPC a quest was handed to.
    Npc,
    /// Species of a fish.
    Species,
}

impl PayloadKey {
    /// Number of keys.
    pub const COUNT: usize = 3;
    /// Every key.
    pub const ALL: [PayloadKey; PayloadKey::COUNT] =
        [PayloadKey::Rarity, PayloadKey::Npc, PayloadKey::Species];

    /// The key's name, as written in the catalog.
    pub const fn name(self) -> &'static str {
        match self {
            PayloadKey::Rarity => "Rarity",
            PayloadKey::Npc => "Npc",
            PayloadKey::Species => "Species",
        }
    }
}

/// The name is not a payload key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown payload key {0:?}")]
pub struct UnknownPayloadKey(pub String);

named!(PayloadKey, UnknownPayloadKey);

/// What an instant cue carries: at most one value per [`PayloadKey`].
///
/// Borrowed and fixed-size, so firing a cue allocates nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Payload<'a> {
    values: [Option<&'a str>; PayloadKey::COUNT],
}

impl<'a> Payload<'a> {
    /// No payload.
    pub const EMPTY: Payload<'static> = Payload {
        values: [None; PayloadKey::COUNT],
    };

    /// An empty payload.
    pub const fn new() -> Self {
        Payload {
            values: [None; PayloadKey::COUNT],
        }
    }

    /// This payload with `key` set to `value`.
    #[must_use]
    pub const fn with(mut self, key: PayloadKey, value: &'a str) -> Self {
        self.values[key as usize] = Some(value);
        self
    }

    /// The value carried for `key`, if any.
    pub const fn get(&self, key: PayloadKey) -> Option<&'a str> {
        self.values[key as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_8_derived_and_6_instant() {
        let derived = Cue::ALL
            .iter()
            .filter(|c| c.kind() == CueKind::Derived)
            .count();
        assert_eq!(derived, 8);
        assert_eq!(Cue::COUNT - derived, 6);
        for (i, c) in Cue::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
            assert_eq!(c.name().parse::<Cue>(), Ok(*c));
        }
    }

    #[test]
    fn only_derived_dwell_cues_have_windows() {
        let dwell: Vec<_> = Cue::ALL
            .iter()
            .filter_map(|c| c.dwell_window().map(|w| (*c, w.as_secs())))
            .collect();
        assert_eq!(
            dwell,
            [
                (Cue::WalkingDwell, 45),
                (Cue::SailingDwell, 30),
                (Cue::WaitingForBite, 12),
                (Cue::IdleDwell, 25)
            ]
        );
        for c in Cue::ALL {
            if c.kind() == CueKind::Derived {
                assert!(c.payload_keys().is_empty());
            }
        }
    }

    #[test]
    fn payload_get_with() {
        let p = Payload::new().with(PayloadKey::Rarity, "Common");
        assert_eq!(p.get(PayloadKey::Rarity), Some("Common"));
        assert_eq!(p.get(PayloadKey::Npc), None);
        assert_eq!("Npc".parse::<PayloadKey>(), Ok(PayloadKey::Npc));
        assert!("npc".parse::<PayloadKey>().is_err());
    }
}
