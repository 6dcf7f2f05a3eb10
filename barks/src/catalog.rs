//! The bark catalog: one row per recorded line (section 4.2).
//!
//! "It is the editorial judgement of 'this line makes sense here', written as
//! a table instead of as ifs scattered across controllers." Each row says
//! which cues it answers, which facts must be true (Require), which must not
//! be (Forbid), what the payload must contain (Match), how long before it can
//! repeat (Cooldown: 300 s by default, "600 to 900 s for rare moments") and
//! its priority: 0 ambient, 1 about the current action, 2 rare moments.
//!
//! Names are parsed into the closed vocabulary at load time, and the catalog
//! is checked: a misspelled name, a contradiction, a line that can never be
//! eligible or a cue with no line at all (a missing moment) is reported with
//! the row's id when the catalog is loaded, not discovered by a player
//! wondering why X never says anything.
//!
//! Why one file over 600 lines: loading, name resolution and the impossibility checks all read the
//! same raw rows, and a third of the file is the typed errors and warnings they report.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use banter_player::{
    Effective, Fact, PlayerStateMachine, RestoreError, Snapshot, State, availability,
};
use serde::{Deserialize, Serialize};

use crate::cue::{Cue, PayloadKey};

/// The default cooldown: "long on purpose: hearing the same joke twice in
/// one session is what makes a bark system feel cheap."
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(300);

/// The cooldown range for rare moments (priority 2).
pub const RARE_COOLDOWN: core::ops::RangeInclusive<Duration> =
    Duration::from_secs(600)..=Duration::from_secs(900);

/// A line's position in its catalog. Lines are sorted by their string id, so
/// ordering `LineId`s orders lines alphabetically, which is the deck's
/// initial order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LineId(pub(crate) u16);

impl LineId {
    /// Index into [`BarkCatalog::lines`].
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for LineId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// How much a line matters: decides who may cut whom off, and whether the
/// 8 s spacing applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Priority {
    /// 0: ambient lines.
    Ambient = 0,
    /// 1: lines about the current action.
    Action = 1,
    /// 2: rare moments. Ignore the 8 s spacing.
    Rare = 2,
}

impl Priority {
    /// From the catalog's number.
    pub const fn from_level(level: u8) -> Option<Priority> {
        match level {
            0 => Some(Priority::Ambient),
            1 => Some(Priority::Action),
            2 => Some(Priority::Rare),
            _ => None,
        }
    }

    /// The catalog's number.
    pub const fn level(self) -> u8 {
        self as u8
    }
}

/// One recorded line and the conditions under which it makes sense.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Stable id, unique in the catalog (e.g. `"wait.any_minute"`).
    pub id: String,
    /// The subtitle text (the audio is keyed by `id`).
    pub text: String,
    /// The cues this line answers; it joins each cue's pool.
    pub cues: Vec<Cue>,
    /// Facts that must all hold.
    pub require: Vec<Fact>,
    /// Facts none of which may hold.
    pub forbid: Vec<Fact>,
    /// Payload values that must all be carried by the cue.
    pub matches: Vec<(PayloadKey, String)>,
    /// Minimum time between two plays of this line.
    pub cooldown: Duration,
    /// Priority.
    pub priority: Priority,
    /// Free-form editorial note (where the line came from, where to move it).
    pub note: Option<String>,
}

/// A recorded line with no honest moment to hang on yet ("the missing one
/// is about rain, and the game has no weather"). Kept in the catalog with a
/// note, never played.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnplacedLine {
    /// Stable id.
    pub id: String,
    /// The subtitle text.
    pub text: String,
    /// Why it has no moment, and which moment it would take.
    #[serde(default)]
    pub note: Option<String>,
}

/// The checked, immutable catalog: lines sorted by id and one pool per cue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BarkCatalog {
    lines: Vec<Line>,
    pools: [Vec<LineId>; Cue::COUNT],
    unplaced: Vec<UnplacedLine>,
}

impl BarkCatalog {
    /// The same catalog with each line's subtitle replaced by `translate(id)` where that gives
    /// one (a locale's string table, keyed `bark:<id>`): the pools, cues and conditions stay.
    pub fn localized(mut self, translate: impl Fn(&str) -> Option<String>) -> BarkCatalog {
        for line in &mut self.lines {
            if let Some(text) = translate(&line.id) {
                line.text = text;
            }
        }
        for line in &mut self.unplaced {
            if let Some(text) = translate(&line.id) {
                line.text = text;
            }
        }
        self
    }

    /// Every line, sorted by id; `lines()[id.index()]`.
    pub fn lines(&self) -> &[Line] {
        &self.lines
    }

    /// The line with this id.
    ///
    /// # Panics
    /// If `id` comes from another catalog and is out of range.
    pub fn line(&self, id: LineId) -> &Line {
        &self.lines[id.index()]
    }

    /// The line with this string id.
    pub fn find(&self, id: &str) -> Option<LineId> {
        self.lines
            .binary_search_by(|l| l.id.as_str().cmp(id))
            .ok()
            .and_then(|i| u16::try_from(i).ok())
            .map(LineId)
    }

    /// The lines that answer `cue`, in id order.
    pub fn pool(&self, cue: Cue) -> &[LineId] {
        &self.pools[cue.index()]
    }

    /// Lines kept without a moment.
    pub fn unplaced(&self) -> &[UnplacedLine] {
        &self.unplaced
    }

    /// Parse and check a catalog from its JSON text. Reading the file is the caller's: the
    /// crate does no I/O (banter-sim's `barks::LoadCatalog` reads one from a path).
    pub fn from_json(text: &str) -> Result<Loaded, LoadError> {
        let raw: RawCatalog = serde_json::from_str(text).map_err(LoadError::Json)?;
        build(raw)
    }
}

/// A catalog that passed its checks, and what it should still be told.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The catalog.
    pub catalog: BarkCatalog,
    /// Findings that do not stop the catalog from working.
    pub warnings: Vec<CatalogWarning>,
}

/// Why a catalog could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The text is not a catalog (bad JSON, a missing or unknown field).
    #[error("bark catalog is not valid: {0}")]
    Json(serde_json::Error),
    /// The rows parsed but failed their checks.
    #[error("bark catalog has {} error(s), first: {}", errors.len(), errors.first().map(ToString::to_string).unwrap_or_default())]
    Invalid {
        /// Every error found.
        errors: Vec<CatalogError>,
        /// Every warning found.
        warnings: Vec<CatalogWarning>,
    },
}

/// Whether a name came from a row's Require or its Forbid list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FactList {
    /// `require`
    Require,
    /// `forbid`
    Forbid,
}

impl fmt::Display for FactList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FactList::Require => "require",
            FactList::Forbid => "forbid",
        })
    }
}

/// Why a line can never answer one of its cues.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Impossible {
    /// Match on a payload key the cue never carries.
    MatchNotCarried {
        /// The key.
        key: PayloadKey,
    },
    /// The line forbids the state the cue is raised in (a derived cue is
    /// only raised while its state is the effective one).
    ForbidsCueState {
        /// The state.
        state: State,
    },
    /// The line requires a state that cannot be held while the cue's state
    /// is the effective one: another state of the same owner, a heavier
    /// owner's state, or any state at all for standing still.
    RequireHidesCueState {
        /// The required state.
        required: State,
        /// What the cue needs the effective state to be.
        cue_state: Effective,
    },
}

impl fmt::Display for Impossible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Impossible::MatchNotCarried { key } => {
                write!(f, "matches on {key}, which the cue never carries")
            }
            Impossible::ForbidsCueState { state } => {
                write!(f, "forbids {state}, the state the cue is raised in")
            }
            Impossible::RequireHidesCueState {
                required,
                cue_state,
            } => write!(
                f,
                "requires {required}, which cannot be held while the effective state is {cue_state}"
            ),
        }
    }
}

/// A finding that stops the catalog from loading. Each names its row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum CatalogError {
    /// A row without an id.
    #[error("row {row}: empty id")]
    EmptyId {
        /// Position of the row in the file.
        row: usize,
    },
    /// Two rows with the same id.
    #[error("{id}: duplicate id")]
    DuplicateId {
        /// The id.
        id: String,
    },
    /// A row without text.
    #[error("{id}: empty text")]
    EmptyText {
        /// The row.
        id: String,
    },
    /// A row that answers no cue.
    #[error("{id}: answers no cue")]
    NoCues {
        /// The row.
        id: String,
    },
    /// A cue name that is not one of the 14.
    #[error("{id}: unknown cue {name:?}")]
    UnknownCue {
        /// The row.
        id: String,
        /// The name.
        name: String,
    },
    /// A Require or Forbid name that is neither a state nor a tag.
    #[error("{id}: unknown state or tag {name:?} in {list}")]
    UnknownFact {
        /// The row.
        id: String,
        /// Which list.
        list: FactList,
        /// The name.
        name: String,
    },
    /// A Match key that is not a payload key.
    #[error("{id}: unknown payload key {key:?} in match")]
    UnknownPayloadKey {
        /// The row.
        id: String,
        /// The key.
        key: String,
    },
    /// A priority other than 0, 1, 2.
    #[error("{id}: priority {priority} is not 0, 1 or 2")]
    BadPriority {
        /// The row.
        id: String,
        /// The number.
        priority: u8,
    },
    /// The same fact both required and forbidden.
    #[error("{id}: {fact} is both required and forbidden")]
    Contradiction {
        /// The row.
        id: String,
        /// The fact.
        fact: Fact,
    },
    /// Two required states of the same owner, which holds at most one.
    #[error("{id}: requires both {first} and {second}, but one owner holds one state at a time")]
    SameOwner {
        /// The row.
        id: String,
        /// One state.
        first: State,
        /// The other.
        second: State,
    },
    /// Requires something under which barks may not play (an interruption,
    /// an open menu, a live microphone).
    #[error("{id}: requires {facts:?}, under which barks may never play")]
    NeverAvailable {
        /// The row.
        id: String,
        /// The required facts.
        facts: Vec<Fact>,
    },
    /// No cue of the row can ever make it eligible.
    #[error("{id}: can never be eligible: {}", display_reasons(reasons))]
    NeverEligible {
        /// The row.
        id: String,
        /// Why, per cue.
        reasons: Vec<(Cue, Impossible)>,
    },
    /// More lines than a [`LineId`] can number.
    #[error("too many lines: {count}")]
    TooManyLines {
        /// How many.
        count: usize,
    },
}

fn display_reasons(reasons: &[(Cue, Impossible)]) -> String {
    reasons
        .iter()
        .map(|(c, r)| format!("for {c}, {r}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A finding worth fixing that does not stop the catalog from working.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum CatalogWarning {
    /// No line answers this cue: a moment X will never comment on.
    #[error("missing moment: no line answers {cue}")]
    MissingMoment {
        /// The cue.
        cue: Cue,
    },
    /// The line answers this cue but can never be eligible for it (it can
    /// for another of its cues).
    #[error("{id}: never eligible for {cue}: {why}")]
    NeverEligibleFor {
        /// The row.
        id: String,
        /// The cue.
        cue: Cue,
        /// Why.
        why: Impossible,
    },
    /// A rare moment whose cooldown is outside 600 to 900 s.
    #[error("{id}: priority 2 line with a {cooldown_s} s cooldown (rare moments use 600 to 900 s)")]
    RareCooldown {
        /// The row.
        id: String,
        /// The cooldown in seconds.
        cooldown_s: u64,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCatalog {
    #[serde(default, rename = "$comment")]
    _comment: Option<serde_json::Value>,
    lines: Vec<RawLine>,
    #[serde(default)]
    unplaced: Vec<UnplacedLine>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLine {
    id: String,
    text: String,
    cues: Vec<String>,
    #[serde(default)]
    require: Vec<String>,
    #[serde(default)]
    forbid: Vec<String>,
    #[serde(default, rename = "match")]
    matches: BTreeMap<String, String>,
    #[serde(default)]
    cooldown_s: Option<u64>,
    #[serde(default)]
    priority: u8,
    #[serde(default)]
    note: Option<String>,
}

/// What the effective state is whenever a derived cue is raised.
pub fn cue_state(cue: Cue) -> Option<Effective> {
    use banter_player::{BoatState, FishingState, FootState};
    match cue {
        Cue::StartWalking | Cue::WalkingDwell => Some(FootState::Walking.into()),
        Cue::TakeHelm | Cue::SailingDwell => Some(BoatState::Driving.into()),
        Cue::Cast | Cue::WaitingForBite => Some(FishingState::Casted.into()),
        Cue::FinishCatch => Some(FishingState::Cooldown.into()),
        Cue::IdleDwell => Some(Effective::Idle),
        _ => None,
    }
}

/// A machine where exactly `states` and the `facts` hold (for checks).
fn machine_with(states: &[State], facts: &[Fact]) -> Result<PlayerStateMachine, RestoreError> {
    let mut held: Vec<State> = states.to_vec();
    held.extend(facts.iter().filter_map(|f| match f {
        Fact::State(s) => Some(*s),
        Fact::Tag(_) => None,
    }));
    held.sort();
    held.dedup();
    let tags: BTreeSet<_> = facts
        .iter()
        .filter_map(|f| match f {
            Fact::Tag(t) => Some(*t),
            Fact::State(_) => None,
        })
        .collect();
    let snap = Snapshot {
        version: Snapshot::VERSION,
        held,
        tags: tags.into_iter().collect(),
        revision: 0,
    };
    PlayerStateMachine::restore(&snap)
}

/// Why `line` can never be eligible for `cue`, if so.
fn impossible_for(line: &Line, cue: Cue) -> Option<Impossible> {
    if let Some((key, _)) = line.matches.iter().find(|(k, _)| !cue.carries(*k)) {
        return Some(Impossible::MatchNotCarried { key: *key });
    }
    let state = cue_state(cue)?;
    if let Effective::State(s) = state
        && line.forbid.contains(&Fact::State(s))
    {
        return Some(Impossible::ForbidsCueState { state: s });
    }
    let base: Vec<State> = state.state().into_iter().collect();
    for f in &line.require {
        if let Fact::State(r) = *f {
            let hides = match machine_with(&base, &[*f]) {
                Ok(m) => m.effective() != state,
                Err(_) => true,
            };
            if hides {
                return Some(Impossible::RequireHidesCueState {
                    required: r,
                    cue_state: state,
                });
            }
        }
    }
    None
}

fn parse_facts(
    id: &str,
    list: FactList,
    names: &[String],
    errors: &mut Vec<CatalogError>,
) -> Vec<Fact> {
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        match name.parse::<Fact>() {
            Ok(f) => {
                if !out.contains(&f) {
                    out.push(f);
                }
            }
            Err(_) => errors.push(CatalogError::UnknownFact {
                id: id.to_owned(),
                list,
                name: name.clone(),
            }),
        }
    }
    out
}

fn build(raw: RawCatalog) -> Result<Loaded, LoadError> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut lines: Vec<Line> = Vec::with_capacity(raw.lines.len());
    let mut seen = BTreeSet::new();

    for (row, r) in raw.lines.into_iter().enumerate() {
        let id = r.id.trim().to_owned();
        if id.is_empty() {
            errors.push(CatalogError::EmptyId { row });
            continue;
        }
        if !seen.insert(id.clone()) {
            errors.push(CatalogError::DuplicateId { id });
            continue;
        }
        let before = errors.len();
        if r.text.trim().is_empty() {
            errors.push(CatalogError::EmptyText { id: id.clone() });
        }
        let mut cues = Vec::new();
        for name in &r.cues {
            match name.parse::<Cue>() {
                Ok(c) if !cues.contains(&c) => cues.push(c),
                Ok(_) => {}
                Err(_) => errors.push(CatalogError::UnknownCue {
                    id: id.clone(),
                    name: name.clone(),
                }),
            }
        }
        if r.cues.is_empty() {
            errors.push(CatalogError::NoCues { id: id.clone() });
        }
        let require = parse_facts(&id, FactList::Require, &r.require, &mut errors);
        let forbid = parse_facts(&id, FactList::Forbid, &r.forbid, &mut errors);
        let mut matches = Vec::new();
        for (k, v) in r.matches {
            match k.parse::<PayloadKey>() {
                Ok(key) => matches.push((key, v)),
                Err(_) => errors.push(CatalogError::UnknownPayloadKey {
                    id: id.clone(),
                    key: k,
                }),
            }
        }
        let priority = Priority::from_level(r.priority).unwrap_or_else(|| {
            errors.push(CatalogError::BadPriority {
                id: id.clone(),
                priority: r.priority,
            });
            Priority::Ambient
        });
        let cooldown = r.cooldown_s.map_or(DEFAULT_COOLDOWN, Duration::from_secs);
        if priority == Priority::Rare && !RARE_COOLDOWN.contains(&cooldown) {
            warnings.push(CatalogWarning::RareCooldown {
                id: id.clone(),
                cooldown_s: cooldown.as_secs(),
            });
        }
        for f in &require {
            if forbid.contains(f) {
                errors.push(CatalogError::Contradiction {
                    id: id.clone(),
                    fact: *f,
                });
            }
        }
        match machine_with(&[], &require) {
            Err(RestoreError::OwnerHeldTwice { first, second, .. }) => {
                errors.push(CatalogError::SameOwner {
                    id: id.clone(),
                    first,
                    second,
                });
            }
            // The snapshot is built with the current version and unique tags.
            Err(_) => {}
            Ok(m) if !availability::barks_may_play(&m) => {
                errors.push(CatalogError::NeverAvailable {
                    id: id.clone(),
                    facts: require.clone(),
                });
            }
            Ok(_) => {}
        }
        let line = Line {
            id,
            text: r.text,
            cues,
            require,
            forbid,
            matches,
            cooldown,
            priority,
            note: r.note,
        };
        if errors.len() == before && !line.cues.is_empty() {
            let reasons: Vec<(Cue, Impossible)> = line
                .cues
                .iter()
                .filter_map(|&c| impossible_for(&line, c).map(|why| (c, why)))
                .collect();
            if reasons.len() == line.cues.len() {
                errors.push(CatalogError::NeverEligible {
                    id: line.id.clone(),
                    reasons,
                });
            } else {
                warnings.extend(reasons.into_iter().map(|(cue, why)| {
                    CatalogWarning::NeverEligibleFor {
                        id: line.id.clone(),
                        cue,
                        why,
                    }
                }));
            }
        }
        lines.push(line);
    }

    if u16::try_from(lines.len()).is_err() {
        errors.push(CatalogError::TooManyLines { count: lines.len() });
    }
    lines.sort_by(|a, b| a.id.cmp(&b.id));
    let mut pools: [Vec<LineId>; Cue::COUNT] = Default::default();
    for (i, line) in lines.iter().enumerate() {
        let Ok(i) = u16::try_from(i) else { break };
        for &c in &line.cues {
            if impossible_for(line, c).is_none() {
                pools[c.index()].push(LineId(i));
            }
        }
    }
    for cue in Cue::ALL {
        if pools[cue.index()].is_empty() {
            warnings.push(CatalogWarning::MissingMoment { cue });
        }
    }
    if !errors.is_empty() {
        return Err(LoadError::Invalid { errors, warnings });
    }
    Ok(Loaded {
        catalog: BarkCatalog {
            lines,
            pools,
            unplaced: raw.unplaced,
        },
        warnings,
    })
}
