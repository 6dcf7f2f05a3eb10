//! The typewriter (article section 6.2): how many graphemes a line draws, which prefix of its
//! markup shows the first `k` of them, how fast they appear and what they sound like.
//!
//! A game client and the simulator share this module, so both type a line out identically. It is
//! pure: no clock (time is a [`Duration`] since any epoch the caller picks), no random source of
//! its own (a [`rand_core::Rng`] is an argument) and no file reading (the WAV parser and the
//! manifest parser take bytes; the caller reads the file).
//!
//! # What counts as visible
//!
//! A line is rich text. The count is taken on what the label draws, not on the source string:
//! `<font color="#fff">hi</font>` is 28 characters (`str::chars().count()`) and draws 2
//! graphemes. The first typewriter of the article looped over the raw length and kept beeping 26
//! times after the text had finished appearing. The rules, in order:
//!
//! 1. **Tags are invisible.** A tag is `<`, an optional `/`, an ASCII letter, then anything up to
//!    the first `>`, where a value quoted right after `=` (`color="a>b"`) may contain `>`.
//!    `<b>`, `</b>`, `<font color="#fff">`, `<br/>` and `<br />` are tags. A comment
//!    `<!-- ... -->` is invisible too.
//! 2. **A lone `<` or `>` is a visible character.** A `<` is lone when what follows it is not a
//!    tag: no letter after it (`a < b`, `<3`), or another `<` or the end of the line comes
//!    before its `>` (`x<y`), or a quoted value is never closed. A `>` outside a tag is always
//!    lone. Rendering them as written is what a writer who typed `<3` meant.
//! 3. **An entity is one character.** `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`, `&nbsp;` (names
//!    are case-sensitive) and numeric references `&#39;`, `&#x27;` (or `&#X27;`) stand for the
//!    one character they decode to. A numeric reference must name a Unicode scalar value other
//!    than NUL, in at most 7 decimal or 6 hex digits. Anything else beginning with `&` (`&foo;`,
//!    `&amp` without its `;`, `&#xD800;`) is not an entity: its `&` is a visible character and
//!    the rest is ordinary text.
//! 4. **Graphemes are counted on the decoded text**: the text with tags removed and entities
//!    replaced by their character, split into extended grapheme clusters by
//!    `unicode-segmentation`. An emoji (👍), a ZWJ family (👨‍👩‍👧), a flag (🇯🇵) and a letter with a
//!    combining accent (`e` + U+0301) are one grapheme each, even when a tag sits inside the
//!    cluster (`e<b>&#x301;</b>` draws one). A line break is a grapheme; `<br/>` is a tag and
//!    draws none.
//!
//! [`visible_graphemes`] counts; [`visible_units`] lists each visible grapheme with the byte range
//! of the source that draws it; [`prefix`] is what to put in a label to show the first `k`.
//!
//! # The prefix rule
//!
//! `prefix(text, k)` is the source up to the end of the `k`-th visible unit: every tag before it
//! is kept, no tag, entity or grapheme cluster is ever cut, and closing tags that come after the
//! `k`-th grapheme are not included (so `<b>hi</b>` at `k = 1` is `<b>h`). Once `k` reaches the
//! count, the prefix is the whole source, trailing closing tags included, so a finished line is
//! exactly what was authored. Renderers that refuse an unclosed tag use [`balanced_prefix`].
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
//! # Voice clips
//!
//! A line's clip is found by convention at `voice/<Speaker>/<Node>.wav`, relative to the content
//! folder ([`voice_clip_path`]). Its length comes from the WAV header ([`wav_duration`]) or from
//! a manifest, a JSON object mapping each clip path to its length in whole milliseconds
//! ([`VoiceManifest`]). docs/CONTENT.md has the writer's version.
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

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use rand_core::Rng;
use unicode_segmentation::UnicodeSegmentation;

use crate::diagnostic::Diagnostic;
use crate::json::{self, Json};

// ---------------------------------------------------------------------------------------------
// Markup: tags, entities, text.

/// One piece of a line's source.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    /// Invisible markup: a tag or a comment.
    Tag(Range<usize>),
    /// An entity and the one character it stands for.
    Entity { source: Range<usize>, decoded: char },
    /// Ordinary text, drawn as written.
    Text(Range<usize>),
}

/// The named entities a line may use, with what they stand for.
const NAMED_ENTITIES: [(&str, char); 6] = [
    ("amp", '&'),
    ("lt", '<'),
    ("gt", '>'),
    ("quot", '"'),
    ("apos", '\''),
    ("nbsp", '\u{a0}'),
];

/// `&#1114111;` has 7 digits and `&#x10FFFF;` 6; longer runs cannot name a character, and the
/// bound keeps the number from overflowing.
const MAX_DECIMAL_DIGITS: usize = 7;
const MAX_HEX_DIGITS: usize = 6;

/// Splits a line into tags, entities and text, in order, covering every byte.
///
/// Every boundary is at an ASCII byte (`<`, `>`, `&`, `;`), so every range is on a char boundary.
fn pieces(text: &str) -> Vec<Piece> {
    let bytes = text.as_bytes();
    let mut searches = Searches::default();
    let mut pieces = Vec::new();
    let mut text_start = 0;
    let mut at = 0;
    while at < bytes.len() {
        let found = match bytes.get(at) {
            Some(b'<') => tag_end(bytes, at, &mut searches).map(|end| (Piece::Tag(at..end), end)),
            Some(b'&') => entity_at(bytes, at).map(|(end, decoded)| {
                (
                    Piece::Entity {
                        source: at..end,
                        decoded,
                    },
                    end,
                )
            }),
            _ => None,
        };
        match found {
            Some((piece, end)) => {
                if text_start < at {
                    pieces.push(Piece::Text(text_start..at));
                }
                pieces.push(piece);
                at = end;
                text_start = end;
            }
            None => at += 1,
        }
    }
    if text_start < bytes.len() {
        pieces.push(Piece::Text(text_start..bytes.len()));
    }
    pieces
}

/// Remembered forward searches, so a line full of unclosed `<!--` or `="` stays linear: once a
/// needle is known to be absent after some position, it is absent after every later one.
#[derive(Default)]
struct Searches {
    comment_close: Option<Search>,
    double_quote: Option<Search>,
    single_quote: Option<Search>,
}

/// The result of looking for a needle from `from`: its first position at or after `from`.
#[derive(Clone, Copy)]
struct Search {
    from: usize,
    found: Option<usize>,
}

fn find_from(bytes: &[u8], from: usize, needle: &[u8], memo: &mut Option<Search>) -> Option<usize> {
    if let Some(previous) = *memo
        && previous.from <= from
        && previous.found.is_none_or(|found| found >= from)
    {
        return previous.found;
    }
    let found = bytes
        .get(from..)
        .and_then(|rest| rest.windows(needle.len()).position(|w| w == needle))
        .map(|offset| from + offset);
    *memo = Some(Search { from, found });
    found
}

/// If a tag or comment starts at `start` (a `<`), the end of it (one past its `>`).
fn tag_end(bytes: &[u8], start: usize, searches: &mut Searches) -> Option<usize> {
    let after = start + 1;
    if bytes.get(after..)?.starts_with(b"!--") {
        let close = find_from(bytes, after + 3, b"-->", &mut searches.comment_close)?;
        return Some(close + 3);
    }
    let mut at = after;
    if bytes.get(at) == Some(&b'/') {
        at += 1;
    }
    if !bytes.get(at)?.is_ascii_alphabetic() {
        return None;
    }
    // A quote opens a value only right after `=`, so an apostrophe in `<i'm>` is just a byte.
    let mut last_significant = b'<';
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'>' => return Some(at + 1),
            b'<' => return None,
            b'"' | b'\'' if last_significant == b'=' => {
                let memo = if byte == b'"' {
                    &mut searches.double_quote
                } else {
                    &mut searches.single_quote
                };
                let close = find_from(bytes, at + 1, &[byte], memo)?;
                at = close + 1;
                last_significant = byte;
                continue;
            }
            _ => {}
        }
        if !byte.is_ascii_whitespace() {
            last_significant = byte;
        }
        at += 1;
    }
    None
}

/// If an entity starts at `start` (a `&`), the end of it (one past its `;`) and its character.
fn entity_at(bytes: &[u8], start: usize) -> Option<(usize, char)> {
    let body_start = start + 1;
    if bytes.get(body_start) == Some(&b'#') {
        let (radix, digits_start, max_digits) = match bytes.get(body_start + 1) {
            Some(b'x' | b'X') => (16, body_start + 2, MAX_HEX_DIGITS),
            _ => (10, body_start + 1, MAX_DECIMAL_DIGITS),
        };
        let digits = bytes
            .get(digits_start..)?
            .iter()
            .take(max_digits + 1)
            .take_while(|b| char::from(**b).is_digit(radix))
            .count();
        if digits == 0 || digits > max_digits {
            return None;
        }
        let semicolon = digits_start + digits;
        if bytes.get(semicolon) != Some(&b';') {
            return None;
        }
        let digits = std::str::from_utf8(bytes.get(digits_start..semicolon)?).ok()?;
        let value = u32::from_str_radix(digits, radix).ok()?;
        let decoded = char::from_u32(value).filter(|c| *c != '\0')?;
        return Some((semicolon + 1, decoded));
    }
    let rest = bytes.get(body_start..)?;
    NAMED_ENTITIES.iter().find_map(|(name, decoded)| {
        let name = name.as_bytes();
        (rest.starts_with(name) && rest.get(name.len()) == Some(&b';'))
            .then_some((body_start + name.len() + 1, *decoded))
    })
}

// ---------------------------------------------------------------------------------------------
// Visible graphemes.

/// One grapheme the label draws.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VisibleUnit {
    /// The grapheme as drawn: entities decoded (`&amp;` is `"&"`, `&nbsp;` is U+00A0).
    pub grapheme: String,
    /// The bytes of the source that draw it. Starts at its first character or entity and ends
    /// after its last one; a tag inside a cluster is inside the range, tags around it are not.
    /// `source.end` is where [`prefix`] cuts to show up to and including this unit.
    pub source: Range<usize>,
    /// Whether the grapheme makes a blip on an unvoiced line: it contains a letter or a digit.
    pub blips: bool,
}

/// A run of the decoded text and where it came from.
struct DecodedRun {
    decoded_start: usize,
    source: Range<usize>,
    /// An entity maps its whole source to its one character; text maps byte for byte.
    is_entity: bool,
}

/// The decoded text (tags removed, entities replaced) and its runs, in order.
fn decode(text: &str) -> (String, Vec<DecodedRun>) {
    let mut decoded = String::with_capacity(text.len());
    let mut runs = Vec::new();
    for piece in pieces(text) {
        match piece {
            Piece::Tag(_) => {}
            Piece::Text(source) => {
                let written = text.get(source.clone()).unwrap_or_default();
                runs.push(DecodedRun {
                    decoded_start: decoded.len(),
                    source,
                    is_entity: false,
                });
                decoded.push_str(written);
            }
            Piece::Entity {
                source,
                decoded: character,
            } => {
                runs.push(DecodedRun {
                    decoded_start: decoded.len(),
                    source,
                    is_entity: true,
                });
                decoded.push(character);
            }
        }
    }
    (decoded, runs)
}

/// The run holding decoded byte `offset`.
fn run_at(runs: &[DecodedRun], offset: usize) -> Option<&DecodedRun> {
    let after = runs.partition_point(|run| run.decoded_start <= offset);
    runs.get(after.checked_sub(1)?)
}

/// The source offset where the decoded byte `offset` starts.
fn source_start(runs: &[DecodedRun], offset: usize) -> usize {
    run_at(runs, offset).map_or(0, |run| {
        if run.is_entity {
            run.source.start
        } else {
            run.source.start + (offset - run.decoded_start)
        }
    })
}

/// The source offset just past the decoded byte before `end`.
fn source_end(runs: &[DecodedRun], end: usize, source_len: usize) -> usize {
    let Some(last) = end.checked_sub(1) else {
        return 0;
    };
    run_at(runs, last).map_or(source_len, |run| {
        if run.is_entity {
            run.source.end
        } else {
            run.source.start + (end - run.decoded_start)
        }
    })
}

/// The visible graphemes of a line, in order, each with the source range that draws it.
///
/// ```
/// use banter_dialogue::text::visible_units;
/// let units = visible_units("<b>A&amp;</b>B");
/// let drawn: Vec<&str> = units.iter().map(|u| u.grapheme.as_str()).collect();
/// assert_eq!(drawn, ["A", "&", "B"]);
/// assert_eq!(units[1].source, 4..9);
/// ```
pub fn visible_units(text: &str) -> Vec<VisibleUnit> {
    let (decoded, runs) = decode(text);
    decoded
        .grapheme_indices(true)
        .map(|(start, grapheme)| VisibleUnit {
            grapheme: grapheme.to_owned(),
            source: source_start(&runs, start)
                ..source_end(&runs, start + grapheme.len(), text.len()),
            blips: grapheme.chars().any(char::is_alphanumeric),
        })
        .collect()
}

/// How many graphemes a line draws: tags stripped, each entity one character, grapheme
/// clusters counted on what is left. `<font color="#fff">hi</font>` draws 2.
pub fn visible_graphemes(text: &str) -> usize {
    visible_text(text).graphemes(true).count()
}

/// What the label draws, as plain text: tags removed, entities decoded.
pub fn visible_text(text: &str) -> String {
    decode(text).0
}

/// The source to put in a label to show the first `visible` graphemes: every tag before them
/// kept, nothing cut inside a tag, entity or grapheme cluster. Up to the end of the
/// `visible`-th unit; the whole line once `visible` reaches [`visible_graphemes`].
pub fn prefix(text: &str, visible: usize) -> &str {
    prefix_of(text, &visible_units(text), visible)
}

/// [`prefix`] over units already computed for `text`.
fn prefix_of<'t>(text: &'t str, units: &[VisibleUnit], visible: usize) -> &'t str {
    if visible >= units.len() {
        return text;
    }
    let end = visible
        .checked_sub(1)
        .and_then(|last| units.get(last))
        .map_or(0, |unit| unit.source.end);
    text.get(..end).unwrap_or(text)
}

/// Tags that never take a closing tag.
const VOID_TAGS: [&str; 1] = ["br"];

/// [`prefix`] followed by closing tags for every tag it leaves open, innermost first, for
/// renderers that refuse unbalanced markup: `<b>h</b>` for `<b>hi</b>` at 1.
///
/// A closing tag closes the nearest open tag of its name (and any opened after it); one that
/// matches nothing is ignored; `<br>` and self-closing tags (`<x/>`) open nothing.
pub fn balanced_prefix(text: &str, visible: usize) -> String {
    let shown = prefix(text, visible);
    let mut open: Vec<&str> = Vec::new();
    for piece in pieces(shown) {
        let Piece::Tag(range) = piece else { continue };
        let Some(tag) = shown.get(range) else {
            continue;
        };
        let Some(inner) = tag.strip_prefix('<').and_then(|t| t.strip_suffix('>')) else {
            continue;
        };
        if inner.starts_with('!') {
            continue;
        }
        let (closing, inner) = match inner.strip_prefix('/') {
            Some(rest) => (true, rest),
            None => (false, inner),
        };
        let name_len = inner
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':')))
            .unwrap_or(inner.len());
        let name = inner.get(..name_len).unwrap_or_default();
        if closing {
            if let Some(at) = open.iter().rposition(|o| o.eq_ignore_ascii_case(name)) {
                open.truncate(at);
            }
        } else if !inner.trim_end().ends_with('/')
            && !VOID_TAGS.iter().any(|v| v.eq_ignore_ascii_case(name))
        {
            open.push(name);
        }
    }
    let mut balanced = shown.to_owned();
    for name in open.iter().rev() {
        balanced.push_str("</");
        balanced.push_str(name);
        balanced.push('>');
    }
    balanced
}

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
    /// Put `text_prefix` in the label: it draws the first `visible` graphemes (see [`prefix`]).
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

// ---------------------------------------------------------------------------------------------
// Voice clips.

/// Where voice clips live, relative to the content folder.
pub const VOICE_FOLDER: &str = "voice";

/// The file extension of a voice clip.
pub const VOICE_EXTENSION: &str = "wav";

/// Why a voice clip cannot be named.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VoicePathError {
    #[error("the {part} of a voice clip path may not be empty")]
    Empty { part: &'static str },
    #[error(
        "the {part} `{value}` cannot name a voice clip folder or file: it contains `/`, `\\`, \
         `:` or a control character, or is `.` or `..`"
    )]
    Unsafe { part: &'static str, value: String },
}

/// The conventional path of a line's clip, `voice/<speaker>/<node>.wav`, relative to the content
/// folder and always with `/`, as manifest keys are written. `speaker` is the conversation's
/// `Speaker`, `node` the node's name, both as written (case kept, spaces allowed). A name that
/// could step out of the folder (`..`, a separator, a drive colon) is refused.
pub fn voice_clip_path(speaker: &str, node: &str) -> Result<String, VoicePathError> {
    check_path_part("speaker", speaker)?;
    check_path_part("node", node)?;
    Ok(format!("{VOICE_FOLDER}/{speaker}/{node}.{VOICE_EXTENSION}"))
}

fn check_path_part(part: &'static str, value: &str) -> Result<(), VoicePathError> {
    if value.is_empty() {
        return Err(VoicePathError::Empty { part });
    }
    let unsafe_char = value
        .chars()
        .any(|c| matches!(c, '/' | '\\' | ':') || c.is_control());
    if unsafe_char || value == "." || value == ".." {
        return Err(VoicePathError::Unsafe {
            part,
            value: value.to_owned(),
        });
    }
    Ok(())
}

/// Why a WAV header gives no duration. Offsets are bytes from the start of the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WavError {
    #[error("the file is {len} bytes, shorter than the 12-byte RIFF header")]
    TooShort { len: usize },
    #[error("not a RIFF file: bytes 0..4 are \"{}\", expected \"RIFF\"", .found.escape_ascii())]
    NotRiff { found: [u8; 4] },
    #[error("not a WAVE file: bytes 8..12 are \"{}\", expected \"WAVE\"", .found.escape_ascii())]
    NotWave { found: [u8; 4] },
    #[error("the chunk header at byte {offset} is cut off: the file ends at byte {len}")]
    TruncatedChunkHeader { offset: usize, len: usize },
    #[error(
        "the `fmt ` chunk at byte {offset} is cut off: it needs 16 bytes, the file ends at byte \
         {len}"
    )]
    TruncatedFmt { offset: usize, len: usize },
    #[error("the `fmt ` chunk at byte {offset} declares {size} bytes, fewer than the 16 it needs")]
    FmtTooSmall { offset: usize, size: u32 },
    #[error("no `{chunk}` chunk before the end of the file at byte {len}")]
    MissingChunk { chunk: &'static str, len: usize },
    #[error("the `fmt ` chunk at byte {offset} declares a byte rate of zero")]
    ZeroByteRate { offset: usize },
}

const RIFF_HEADER_LEN: usize = 12;
const CHUNK_HEADER_LEN: usize = 8;
/// Format tag, channels, sample rate, byte rate, block align, bits per sample.
const FMT_MIN_LEN: usize = 16;
/// Where the byte rate sits inside the `fmt ` chunk's body.
const FMT_BYTE_RATE_AT: usize = 8;

fn read_u32_le(bytes: &[u8], at: usize) -> Option<u32> {
    let field: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_le_bytes(field))
}

fn read_four_cc(bytes: &[u8], at: usize) -> Option<[u8; 4]> {
    bytes.get(at..at.checked_add(4)?)?.try_into().ok()
}

/// The length of a WAV clip, from its header alone: the `data` chunk's declared size over the
/// `fmt ` chunk's byte rate (bytes per second, whatever the encoding).
///
/// Takes the file's bytes, or just its beginning: the walk over the chunks stops once both
/// chunks are found, so the audio itself is never read and not checked against the declared
/// size. Chunks are found in any order, skipping the ones it does not know (`LIST`, `fact`, ...)
/// with their pad byte; the RIFF size field is not trusted, since many writers leave it wrong.
pub fn wav_duration(bytes: &[u8]) -> Result<Duration, WavError> {
    if bytes.len() < RIFF_HEADER_LEN {
        return Err(WavError::TooShort { len: bytes.len() });
    }
    let riff = read_four_cc(bytes, 0).ok_or(WavError::TooShort { len: bytes.len() })?;
    if &riff != b"RIFF" {
        return Err(WavError::NotRiff { found: riff });
    }
    let wave = read_four_cc(bytes, 8).ok_or(WavError::TooShort { len: bytes.len() })?;
    if &wave != b"WAVE" {
        return Err(WavError::NotWave { found: wave });
    }
    let len = bytes.len();
    let mut byte_rate: Option<u32> = None;
    let mut data_size: Option<u32> = None;
    let mut at = RIFF_HEADER_LEN;
    while byte_rate.is_none() || data_size.is_none() {
        if at >= len {
            let chunk = if byte_rate.is_none() { "fmt " } else { "data" };
            return Err(WavError::MissingChunk { chunk, len });
        }
        let (Some(id), Some(size)) = (read_four_cc(bytes, at), read_u32_le(bytes, at + 4)) else {
            return Err(WavError::TruncatedChunkHeader { offset: at, len });
        };
        let body = at + CHUNK_HEADER_LEN;
        match &id {
            b"fmt " if byte_rate.is_none() => {
                if (size as usize) < FMT_MIN_LEN {
                    return Err(WavError::FmtTooSmall { offset: at, size });
                }
                let rate = read_u32_le(bytes, body + FMT_BYTE_RATE_AT)
                    .filter(|_| body + FMT_MIN_LEN <= len)
                    .ok_or(WavError::TruncatedFmt { offset: at, len })?;
                if rate == 0 {
                    return Err(WavError::ZeroByteRate { offset: at });
                }
                byte_rate = Some(rate);
            }
            b"data" if data_size.is_none() => data_size = Some(size),
            _ => {}
        }
        // Chunks are padded to an even length.
        let padded = u64::from(size) + u64::from(size % 2);
        at = usize::try_from(body as u64 + padded).unwrap_or(usize::MAX);
    }
    let (Some(byte_rate), Some(data_size)) = (byte_rate, data_size) else {
        return Err(WavError::MissingChunk { chunk: "data", len });
    };
    // At most (2^32 - 1) · 10^9 < 2^64: no overflow.
    let nanos = u64::from(data_size) * 1_000_000_000 / u64::from(byte_rate);
    Ok(Duration::from_nanos(nanos))
}

/// Why a voice manifest was refused. Each says which file and, where it applies, which clip.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error("{0}")]
    Json(Box<Diagnostic>),
    #[error("{file}: a voice manifest is an object of clip path to milliseconds, found {found}")]
    NotAnObject { file: String, found: &'static str },
    #[error("{file}: clip `{clip}`: expected a whole number of milliseconds, found {found}")]
    BadLength {
        file: String,
        clip: String,
        found: String,
    },
    #[error("{file}: a clip path may not be empty")]
    EmptyClip { file: String },
}

/// Clip lengths written down ahead of time, for games that would rather not open every clip: a
/// JSON object mapping each clip path ([`voice_clip_path`]) to its length in whole milliseconds.
///
/// ```json
/// { "voice/Mara/Nets_Greet.wav": 2350, "voice/Mara/Nets_Accepted.wav": 1800 }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VoiceManifest {
    lengths: BTreeMap<String, Duration>,
}

impl VoiceManifest {
    /// Parses a manifest. `file` names it in errors. A repeated path, a negative, fractional or
    /// non-numeric length and anything but an object are refused.
    pub fn parse(file: &str, bytes: &[u8]) -> Result<Self, ManifestError> {
        let tree = json::parse_bytes(file, bytes).map_err(ManifestError::Json)?;
        let Json::Object(entries) = tree else {
            return Err(ManifestError::NotAnObject {
                file: file.to_owned(),
                found: tree.kind(),
            });
        };
        let mut lengths = BTreeMap::new();
        for (clip, value) in entries {
            if clip.is_empty() {
                return Err(ManifestError::EmptyClip {
                    file: file.to_owned(),
                });
            }
            let millis = match &value {
                Json::Number(number) => number.as_u64(),
                _ => None,
            };
            let Some(millis) = millis else {
                let found = match &value {
                    Json::Number(number) => number.to_string(),
                    other => other.kind().to_owned(),
                };
                return Err(ManifestError::BadLength {
                    file: file.to_owned(),
                    clip,
                    found,
                });
            };
            lengths.insert(clip, Duration::from_millis(millis));
        }
        Ok(VoiceManifest { lengths })
    }

    /// The length of the clip at `clip_path`, if the manifest lists it.
    pub fn clip_length(&self, clip_path: &str) -> Option<Duration> {
        self.lengths.get(clip_path).copied()
    }

    /// The length of the clip of `node` spoken by `speaker`, by the path convention.
    pub fn line_clip_length(&self, speaker: &str, node: &str) -> Option<Duration> {
        voice_clip_path(speaker, node)
            .ok()
            .and_then(|path| self.clip_length(&path))
    }

    /// How many clips it lists.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }
}
