//! Rich-text markup: how many graphemes a line draws, and which prefix of its source shows the
//! first `k` of them.
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

use std::ops::Range;

use unicode_segmentation::UnicodeSegmentation;

// ---------------------------------------------------------------------------------------------
// Tags, entities, text.

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

/// The tags of a line, in order, as written (comments left out): what a translation must keep.
pub fn tags(text: &str) -> Vec<&str> {
    pieces(text)
        .into_iter()
        .filter_map(|piece| match piece {
            Piece::Tag(range) if !text[range.clone()].starts_with("<!--") => Some(&text[range]),
            _ => None,
        })
        .collect()
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
pub(super) fn prefix_of<'t>(text: &'t str, units: &[VisibleUnit], visible: usize) -> &'t str {
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
        } else if !inner
            .trim_end_matches(|c: char| c.is_ascii_whitespace())
            .ends_with('/')
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
