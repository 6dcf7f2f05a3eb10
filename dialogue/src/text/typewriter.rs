//! The typewriter: how fast a line's graphemes appear, what they sound like, and the state
//! machine that types one line at a time.
//!
//! # Pacing and sound
//!
//! With a recorded voice the line finishes with the clip: the interval per grapheme is
//! `clip length / visible graphemes`, so the `k`-th grapheme appears at `start + clip · k / n`
//! and the last one exactly when the clip ends. A voiced line never blips. Without a voice the
//! NPC's [`BlipVoice`] sets a fixed interval, and each grapheme that contains a letter or a digit
//! (`char::is_alphanumeric`, any script) makes a blip of pitch `p0 + u·δ`, `u` uniform in
//! `[-1, 1]`. Whitespace, punctuation, symbols and emoji are silent: the blip is the NPC's
//! "speech", and nobody says a comma.
//!
//! # The typewriter and its generations
//!
//! [`Typewriter`] is a state machine driven by explicit time, like `quinn-proto`: the caller
//! starts a line, then polls it with the current time and acts on the [`TypewriterEvent`]s it
//! returns. Every [`Typewriter::start`] returns a new [`Generation`] and drops the line before it,
//! so a superseded line cannot write, blip or complete: there is nothing left to produce its
//! events. This is the article's fix for two typing loops fighting over one label, and for an old
//! line re-running its node's actions when it finished. A line's `Completed` event, the moment a
//! client sends the node's actions, is produced exactly once per generation, and never for a line
//! that was superseded or cancelled before it finished.

use std::time::Duration;

use rand_core::Rng;

use super::markup::{VisibleUnit, prefix_of, visible_units};

// ---------------------------------------------------------------------------------------------
// Pacing.

/// An NPC's typing voice when a line has no recording: the article's per-NPC attributes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlipVoice {
    /// How long each grapheme waits before it appears.
    pub interval: Duration,
    /// `p0`, the pitch every blip varies around.
    pub base_pitch: f64,
    /// `δ`, how far a blip's pitch may stray from `p0` either way.
    pub pitch_spread: f64,
}

impl BlipVoice {
    /// The pitch `p0 + u·δ` for a given `u` (meant to be in `[-1, 1]`).
    pub fn pitch(&self, u: f64) -> f64 {
        self.base_pitch + u * self.pitch_spread
    }

    /// A pitch with `u` drawn uniformly from `[-1, 1]`.
    pub fn draw_pitch<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.pitch(uniform_signed_unit(rng))
    }
}

/// A uniform `f64` in the closed interval `[-1, 1]`, from the top 53 bits of one `u64`.
///
/// Dividing by `2^53 - 1` (not `2^53`) makes both ends reachable, as the article's `u ∈ [-1, 1]`
/// says.
pub fn uniform_signed_unit<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    const TOP: f64 = ((1u64 << 53) - 1) as f64;
    let unit = (rng.next_u64() >> 11) as f64 / TOP;
    unit * 2.0 - 1.0
}

/// How a line is paced and voiced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pacing {
    /// A recorded clip: the text finishes when the clip does, and nothing blips.
    Voice { clip: Duration },
    /// No recording: a fixed interval and a blip per letter or digit.
    Blips(BlipVoice),
}

impl Pacing {
    /// The clip's pacing if the line has one, the NPC's blips otherwise.
    pub fn new(clip: Option<Duration>, blips: BlipVoice) -> Self {
        clip.map_or(Pacing::Blips(blips), |clip| Pacing::Voice { clip })
    }

    /// The time from the start of a line of `total` visible graphemes until the `visible`-th
    /// appears (0 for the 0th). With a clip, `clip · visible / total`, computed in one step so
    /// rounding never accumulates and the last grapheme lands exactly on the end of the clip.
    pub fn offset(&self, visible: usize, total: usize) -> Duration {
        let visible = visible.min(total) as u128;
        match self {
            Pacing::Voice { clip } => {
                if total == 0 {
                    return Duration::ZERO;
                }
                let clip = clip.as_nanos();
                let total = total as u128;
                let nanos = clip
                    .checked_mul(visible)
                    .map_or_else(|| (clip / total).saturating_mul(visible), |p| p / total);
                duration_from_nanos(nanos)
            }
            Pacing::Blips(voice) => {
                duration_from_nanos(voice.interval.as_nanos().saturating_mul(visible))
            }
        }
    }

    /// The interval per grapheme: `clip / total` with a clip, the voice's interval without.
    pub fn interval(&self, total: usize) -> Duration {
        match self {
            Pacing::Voice { .. } => self.offset(1, total),
            Pacing::Blips(voice) => voice.interval,
        }
    }
}

/// A duration of `nanos` nanoseconds, saturating at [`Duration::MAX`].
fn duration_from_nanos(nanos: u128) -> Duration {
    const NANOS_PER_SECOND: u128 = 1_000_000_000;
    match u64::try_from(nanos / NANOS_PER_SECOND) {
        Ok(seconds) => Duration::new(seconds, (nanos % NANOS_PER_SECOND) as u32),
        Err(_) => Duration::MAX,
    }
}

// ---------------------------------------------------------------------------------------------
// The typewriter.

/// Which line a [`Typewriter`] event belongs to. Each [`Typewriter::start`] makes a new one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Generation(u64);

impl Generation {
    /// The counter's value: 0 before the first line, then 1, 2, ...
    pub const fn get(self) -> u64 {
        self.0
    }
}

/// What the typewriter asks its caller to do.
#[derive(Clone, Debug, PartialEq)]
pub enum TypewriterEvent {
    /// Put `text_prefix` in the label: it draws the first `visible` graphemes (see
    /// [`prefix`](super::prefix)).
    /// Each line first shows 0 (clearing the previous line), then each count in turn; a skip
    /// jumps straight to the full line.
    Show {
        generation: Generation,
        visible: usize,
        text_prefix: String,
    },
    /// Play one blip: the grapheme just shown is a letter or digit on an unvoiced line.
    Blip { generation: Generation, pitch: f64 },
    /// The line is fully shown. Produced exactly once per generation, never for a line that was
    /// superseded or cancelled first: the moment to send the node's actions.
    Completed { generation: Generation },
}

impl TypewriterEvent {
    /// The line this event belongs to.
    pub fn generation(&self) -> Generation {
        match self {
            TypewriterEvent::Show { generation, .. }
            | TypewriterEvent::Blip { generation, .. }
            | TypewriterEvent::Completed { generation } => *generation,
        }
    }
}

/// The line being typed.
#[derive(Clone, Debug)]
struct TypingLine {
    generation: Generation,
    source: String,
    units: Vec<VisibleUnit>,
    /// Drawn when the line starts, one per blipping unit, so polling needs no random source and
    /// a seed replays a whole line.
    pitches: Vec<Option<f64>>,
    started_at: Duration,
    pacing: Pacing,
    /// The last count put in a `Show`; `None` until the first.
    shown: Option<usize>,
    /// The blip of the grapheme just shown, handed out by the next poll.
    pending_blip: Option<f64>,
    skipped: bool,
    completed: bool,
}

impl TypingLine {
    fn due(&self, visible: usize) -> Duration {
        self.started_at
            .saturating_add(self.pacing.offset(visible, self.units.len()))
    }
}

/// The typewriter: one line at a time, driven by the caller's clock.
///
/// ```
/// use std::time::Duration;
/// use banter_dialogue::text::{Pacing, Typewriter, TypewriterEvent};
///
/// # struct Zero;
/// # impl rand_core::TryRng for Zero {
/// #     type Error = core::convert::Infallible;
/// #     fn try_next_u32(&mut self) -> Result<u32, Self::Error> { Ok(0) }
/// #     fn try_next_u64(&mut self) -> Result<u64, Self::Error> { Ok(0) }
/// #     fn try_fill_bytes(&mut self, d: &mut [u8]) -> Result<(), Self::Error> { d.fill(0); Ok(()) }
/// # }
/// let mut typewriter = Typewriter::new();
/// let clip = Pacing::Voice { clip: Duration::from_millis(1000) };
/// let line = typewriter.start("<b>hi</b>", clip, Duration::ZERO, &mut Zero);
/// let mut events = Vec::new();
/// while let Some(event) = typewriter.poll(Duration::from_millis(1000)) {
///     events.push(event);
/// }
/// assert_eq!(events.last(), Some(&TypewriterEvent::Completed { generation: line }));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Typewriter {
    generation: Generation,
    line: Option<TypingLine>,
}

impl Typewriter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts typing `line` at `now` and returns its generation. The previous line, finished or
    /// not, is dropped: nothing more is ever produced for it. Blip pitches are drawn from `rng`
    /// here, one per blipping grapheme in order; a voiced line draws nothing.
    pub fn start<R: Rng + ?Sized>(
        &mut self,
        line: &str,
        pacing: Pacing,
        now: Duration,
        rng: &mut R,
    ) -> Generation {
        self.generation = Generation(self.generation.0.wrapping_add(1));
        let units = visible_units(line);
        let pitches = match pacing {
            Pacing::Voice { .. } => vec![None; units.len()],
            Pacing::Blips(voice) => units
                .iter()
                .map(|unit| unit.blips.then(|| voice.draw_pitch(rng)))
                .collect(),
        };
        self.line = Some(TypingLine {
            generation: self.generation,
            source: line.to_owned(),
            units,
            pitches,
            started_at: now,
            pacing,
            shown: None,
            pending_blip: None,
            skipped: false,
            completed: false,
        });
        self.generation
    }

    /// The next event due at `now`, if any. Call it until it returns `None`; then call again at
    /// [`Typewriter::next_deadline`]. Each due grapheme gets its own `Show` (then its `Blip`),
    /// so a caller that polls late still hears every letter; it may keep only the last `Show`.
    /// Only the current line's events exist: a superseded line has nothing left to produce.
    pub fn poll(&mut self, now: Duration) -> Option<TypewriterEvent> {
        let line = self.line.as_mut()?;
        if line.completed {
            return None;
        }
        let generation = line.generation;
        if let Some(pitch) = line.pending_blip.take() {
            return Some(TypewriterEvent::Blip { generation, pitch });
        }
        let total = line.units.len();
        if line.shown.is_some_and(|shown| shown >= total) {
            line.completed = true;
            return Some(TypewriterEvent::Completed { generation });
        }
        let next = if line.skipped {
            total
        } else {
            let next = line.shown.map_or(0, |shown| shown + 1);
            if now < line.due(next) {
                return None;
            }
            line.pending_blip = next
                .checked_sub(1)
                .and_then(|index| line.pitches.get(index).copied().flatten());
            next
        };
        line.shown = Some(next);
        Some(TypewriterEvent::Show {
            generation,
            visible: next,
            text_prefix: prefix_of(&line.source, &line.units, next).to_owned(),
        })
    }

    /// When the next event is due: `None` when there is no line or it has completed. A time in
    /// the past means "poll now".
    pub fn next_deadline(&self) -> Option<Duration> {
        let line = self.line.as_ref().filter(|line| !line.completed)?;
        if line.skipped || line.pending_blip.is_some() {
            return Some(line.started_at);
        }
        let next = line
            .shown
            .map_or(0, |shown| (shown + 1).min(line.units.len()));
        Some(line.due(next))
    }

    /// The player clicked through: the line of `generation` shows in full and completes at the
    /// next poll, without the blips of the graphemes it jumps over. Returns false and changes
    /// nothing if that line has been superseded, cancelled or has already completed, so a click
    /// meant for an old line never skips the new one.
    pub fn skip(&mut self, generation: Generation) -> bool {
        match self.line.as_mut() {
            Some(line) if line.generation == generation && !line.completed => {
                line.skipped = true;
                line.pending_blip = None;
                true
            }
            _ => false,
        }
    }

    /// Drops the current line without completing it (the conversation closed under it).
    pub fn cancel(&mut self) {
        self.line = None;
    }

    /// The generation of the last line started (0 before any).
    pub fn generation(&self) -> Generation {
        self.generation
    }

    /// Whether `generation` is the line being typed or just finished, not a superseded one.
    pub fn is_current(&self, generation: Generation) -> bool {
        self.line
            .as_ref()
            .is_some_and(|line| line.generation == generation)
    }

    /// How many graphemes the current line has shown so far (0 with no line).
    pub fn visible(&self) -> usize {
        self.line
            .as_ref()
            .and_then(|line| line.shown)
            .unwrap_or_default()
    }

    /// How many graphemes the current line draws in all (0 with no line).
    pub fn total(&self) -> usize {
        self.line.as_ref().map_or(0, |line| line.units.len())
    }

    /// True while a line is started and has not yet produced `Completed`.
    pub fn is_typing(&self) -> bool {
        self.line.as_ref().is_some_and(|line| !line.completed)
    }
}
