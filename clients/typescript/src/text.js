// The text of a line as a client draws it (docs/CONTENT.md "Voice clips", conformance text.json;
// dialogue/src/text/markup.rs and typewriter.rs are the reference).
//
// A line is rich text; the count that matters is what the label draws, not the source length:
// `<font color="#fff">hi</font>` is 28 UTF-16 units and draws 2 graphemes (a typewriter looping
// over the raw length keeps beeping after the text has finished appearing). The rules:
//
// 1. Tags are invisible: `<`, an optional `/`, an ASCII letter, then anything up to the first
//    `>`, where a value quoted right after `=` (`color="a>b"`) may contain `>`. A comment
//    `<!-- ... -->` is invisible too.
// 2. A lone `<` or `>` is visible: a `<` not starting a tag (`a < b`, `<3`, `x<y` with another
//    `<` or the end before its `>`, a quoted value never closed), and any `>` outside a tag.
// 3. An entity is one character: `&amp;` `&lt;` `&gt;` `&quot;` `&apos;` `&nbsp;` (case-sensitive)
//    and numeric references (`&#39;`, `&#x27;`, `&#X27;`) naming a Unicode scalar value other
//    than NUL in at most 7 decimal or 6 hex digits. Anything else starting with `&` is text.
// 4. Graphemes are counted on the decoded text (tags removed, entities replaced) as extended
//    grapheme clusters (`Intl.Segmenter`, granularity "grapheme"), so a tag inside a cluster
//    (`e<b>&#x301;</b>`) does not split it.
//
// All offsets here are UTF-16 indexes into the source. Every boundary the rules draw is at an
// ASCII character (`<`, `>`, `&`, `;`), so they are the same cut points as the reference's byte
// offsets, and `text.slice(0, end)` never splits a surrogate pair.

/**
 * One grapheme the label draws.
 * @typedef {object} VisibleUnit
 * @property {string} grapheme  as drawn: entities decoded (`&amp;` is `&`)
 * @property {number} start  where in the source the grapheme's first character or entity starts
 * @property {number} end  one past its last character or entity: `prefix` cuts here
 * @property {boolean} blips  contains a letter or a digit (any script): makes a blip when typed
 */

/** @typedef {{ kind: "tag", start: number, end: number } | { kind: "entity", start: number, end: number, decoded: string } | { kind: "text", start: number, end: number }} Piece */

/** The named entities a line may use. */
const NAMED_ENTITIES = /** @type {const} */ ([
  ['amp', '&'],
  ['lt', '<'],
  ['gt', '>'],
  ['quot', '"'],
  ['apos', "'"],
  ['nbsp', '\u00a0'],
]);

/** `&#1114111;` has 7 digits and `&#x10FFFF;` 6; longer runs cannot name a character. */
const MAX_DECIMAL_DIGITS = 7;
const MAX_HEX_DIGITS = 6;

/** Tags that never take a closing tag. */
const VOID_TAGS = ['br'];

/** ASCII whitespace as Rust's `u8::is_ascii_whitespace` (space, tab, LF, FF, CR). */
function isAsciiSpace(/** @type {string | undefined} */ c) {
  return c === ' ' || c === '\t' || c === '\n' || c === '\f' || c === '\r';
}

function isAsciiAlpha(/** @type {string | undefined} */ c) {
  return c !== undefined && /^[A-Za-z]$/.test(c);
}

/**
 * A remembered forward search, so a line full of unclosed `<!--` or `="` stays linear: once a
 * needle is known to be absent after some position, it is absent after every later one.
 * @typedef {{ from: number, found: number } | undefined} Search
 */

/**
 * @param {string} text
 * @param {number} from
 * @param {string} needle
 * @param {{ memo: Search }} slot
 * @returns {number} the first position at or after `from`, or -1
 */
function findFrom(text, from, needle, slot) {
  const previous = slot.memo;
  if (previous !== undefined && previous.from <= from && (previous.found < 0 || previous.found >= from)) {
    return previous.found;
  }
  const found = text.indexOf(needle, from);
  slot.memo = { from, found };
  return found;
}

/**
 * If a tag or comment starts at `start` (a `<`), the index one past its `>`; -1 otherwise.
 * @param {string} text
 * @param {number} start
 * @param {{ comment: { memo: Search }, double: { memo: Search }, single: { memo: Search } }} searches
 */
function tagEnd(text, start, searches) {
  const after = start + 1;
  if (text.startsWith('!--', after)) {
    const close = findFrom(text, after + 3, '-->', searches.comment);
    return close < 0 ? -1 : close + 3;
  }
  let at = after;
  if (text[at] === '/') at++;
  if (!isAsciiAlpha(text[at])) return -1;
  // A quote opens a value only right after `=`, so an apostrophe in `<i'm>` is just a character.
  let lastSignificant = '<';
  while (at < text.length) {
    const c = text[at];
    if (c === '>') return at + 1;
    if (c === '<') return -1;
    if ((c === '"' || c === "'") && lastSignificant === '=') {
      const close = findFrom(text, at + 1, c, c === '"' ? searches.double : searches.single);
      if (close < 0) return -1;
      at = close + 1;
      lastSignificant = c;
      continue;
    }
    if (!isAsciiSpace(c)) lastSignificant = c;
    at++;
  }
  return -1;
}

/**
 * If an entity starts at `start` (a `&`), its end (one past the `;`) and its character.
 * @param {string} text
 * @param {number} start
 * @returns {{ end: number, decoded: string } | undefined}
 */
function entityAt(text, start) {
  const body = start + 1;
  if (text[body] === '#') {
    const hex = text[body + 1] === 'x' || text[body + 1] === 'X';
    const digitsStart = hex ? body + 2 : body + 1;
    const max = hex ? MAX_HEX_DIGITS : MAX_DECIMAL_DIGITS;
    const digit = hex ? /^[0-9A-Fa-f]$/ : /^[0-9]$/;
    let digits = 0;
    while (digits <= max && digitsStart + digits < text.length && digit.test(text[digitsStart + digits])) digits++;
    if (digits === 0 || digits > max) return undefined;
    const semicolon = digitsStart + digits;
    if (text[semicolon] !== ';') return undefined;
    const value = parseInt(text.slice(digitsStart, semicolon), hex ? 16 : 10);
    // A Unicode scalar value other than NUL: no surrogates, nothing past U+10FFFF.
    if (value === 0 || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return undefined;
    return { end: semicolon + 1, decoded: String.fromCodePoint(value) };
  }
  for (const [name, decoded] of NAMED_ENTITIES) {
    if (text.startsWith(name, body) && text[body + name.length] === ';') {
      return { end: body + name.length + 1, decoded };
    }
  }
  return undefined;
}

/**
 * Splits a line into tags, entities and text, in order, covering every character.
 * @param {string} text
 * @returns {Piece[]}
 */
function pieces(text) {
  const searches = { comment: { memo: undefined }, double: { memo: undefined }, single: { memo: undefined } };
  /** @type {Piece[]} */
  const out = [];
  let textStart = 0;
  let at = 0;
  while (at < text.length) {
    /** @type {Piece | undefined} */
    let found;
    if (text[at] === '<') {
      const end = tagEnd(text, at, searches);
      if (end >= 0) found = { kind: 'tag', start: at, end };
    } else if (text[at] === '&') {
      const entity = entityAt(text, at);
      if (entity) found = { kind: 'entity', start: at, end: entity.end, decoded: entity.decoded };
    }
    if (found) {
      if (textStart < at) out.push({ kind: 'text', start: textStart, end: at });
      out.push(found);
      at = found.end;
      textStart = found.end;
    } else {
      at++;
    }
  }
  if (textStart < text.length) out.push({ kind: 'text', start: textStart, end: text.length });
  return out;
}

/**
 * The tags of a line, in order, as written (comments left out): what a translation must keep.
 * @param {string} text
 * @returns {string[]}
 */
export function tags(text) {
  return pieces(text)
    .filter((p) => p.kind === 'tag' && !text.startsWith('<!--', p.start))
    .map((p) => text.slice(p.start, p.end));
}

/** @typedef {{ decodedStart: number, start: number, end: number, isEntity: boolean }} DecodedRun */

/**
 * The decoded text (tags removed, entities replaced) and where each run of it came from.
 * @param {string} text
 */
function decode(text) {
  let decoded = '';
  /** @type {DecodedRun[]} */
  const runs = [];
  for (const piece of pieces(text)) {
    if (piece.kind === 'tag') continue;
    runs.push({ decodedStart: decoded.length, start: piece.start, end: piece.end, isEntity: piece.kind === 'entity' });
    decoded += piece.kind === 'entity' ? piece.decoded : text.slice(piece.start, piece.end);
  }
  return { decoded, runs };
}

/** The run holding decoded index `offset`. @param {DecodedRun[]} runs @param {number} offset */
function runAt(runs, offset) {
  // The last run starting at or before `offset` (runs are sorted by decodedStart).
  let lo = 0;
  let hi = runs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (runs[mid].decodedStart <= offset) lo = mid + 1;
    else hi = mid;
  }
  return lo === 0 ? undefined : runs[lo - 1];
}

/** Lazily made: `Intl.Segmenter` construction is not free. @type {Intl.Segmenter | undefined} */
let segmenter;

function graphemes() {
  segmenter ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' });
  return segmenter;
}

const ALPHANUMERIC = /[\p{Alphabetic}\p{N}]/u;

/**
 * What the label draws, as plain text: tags removed, entities decoded.
 * @param {string} text
 * @returns {string}
 */
export function visibleText(text) {
  return decode(text).decoded;
}

/**
 * The visible graphemes of a line, in order, each with the source range that draws it.
 * @param {string} text
 * @returns {VisibleUnit[]}
 */
export function visibleUnits(text) {
  const { decoded, runs } = decode(text);
  /** @type {VisibleUnit[]} */
  const units = [];
  for (const { segment, index } of graphemes().segment(decoded)) {
    const first = runAt(runs, index);
    const start = first === undefined ? 0 : first.isEntity ? first.start : first.start + (index - first.decodedStart);
    const endOffset = index + segment.length;
    const last = runAt(runs, endOffset - 1);
    const end = last === undefined ? text.length : last.isEntity ? last.end : last.start + (endOffset - last.decodedStart);
    units.push({ grapheme: segment, start, end, blips: ALPHANUMERIC.test(segment) });
  }
  return units;
}

/**
 * How many graphemes a line draws: tags stripped, each entity one character, grapheme clusters
 * counted on what is left. `<font color="#fff">hi</font>` draws 2.
 * @param {string} text
 * @returns {number}
 */
export function visibleGraphemes(text) {
  let n = 0;
  for (const _ of graphemes().segment(visibleText(text))) n++;
  return n;
}

/**
 * `prefix` over units already computed for `text`.
 * @param {string} text
 * @param {VisibleUnit[]} units
 * @param {number} visible
 */
function prefixOf(text, units, visible) {
  if (visible >= units.length) return text;
  const end = visible <= 0 ? 0 : units[visible - 1].end;
  return text.slice(0, end);
}

/**
 * The source to put in a label to show the first `visible` graphemes: every tag before them
 * kept, nothing cut inside a tag, entity or grapheme cluster, closing tags after them left out
 * (`<b>hi</b>` at 1 is `<b>h`). The whole line, trailing tags included, once `visible` reaches
 * the count.
 * @param {string} text
 * @param {number} visible
 * @returns {string}
 */
export function prefix(text, visible) {
  return prefixOf(text, visibleUnits(text), visible);
}

/**
 * `prefix` followed by closing tags for every tag it leaves open, innermost first, for renderers
 * that refuse unbalanced markup: `<b>h</b>` for `<b>hi</b>` at 1. A closing tag closes the
 * nearest open tag of its name (and any opened after it); one that matches nothing is ignored;
 * `<br>` and self-closing tags (`<x/>`) open nothing.
 * @param {string} text
 * @param {number} visible
 * @returns {string}
 */
export function balancedPrefix(text, visible) {
  return balance(prefix(text, visible));
}

/** Closes the tags `shown` leaves open. @param {string} shown */
function balance(shown) {
  /** @type {string[]} */
  const open = [];
  for (const piece of pieces(shown)) {
    if (piece.kind !== 'tag') continue;
    const tag = shown.slice(piece.start, piece.end);
    if (!tag.startsWith('<') || !tag.endsWith('>')) continue;
    let inner = tag.slice(1, -1);
    if (inner.startsWith('!')) continue;
    const closing = inner.startsWith('/');
    if (closing) inner = inner.slice(1);
    const name = /** @type {RegExpExecArray} */ (/^[A-Za-z0-9\-_:]*/.exec(inner))[0];
    const lower = name.toLowerCase();
    if (closing) {
      const at = open.findLastIndex((o) => o.toLowerCase() === lower);
      if (at >= 0) open.length = at;
    } else if (!inner.replace(/[ \t\n\f\r]+$/, '').endsWith('/') && !VOID_TAGS.includes(lower)) {
      open.push(name);
    }
  }
  return shown + open.reverse().map((name) => `</${name}>`).join('');
}

// ---------------------------------------------------------------------------------------------
// The typewriter.

/**
 * How a line is paced: a recorded clip (the text finishes when the clip does, nothing blips), or
 * a fixed interval per grapheme with a blip per letter or digit.
 * @typedef {{ kind: "voice", clipMs: number } | { kind: "interval", intervalMs: number }} Pacing
 */

/**
 * The pacing for a node: clip-synced when it has `Voice: {Clip, Ms}` in the player's locale
 * (PROTOCOL.md section 8.2), the NPC's own interval otherwise.
 * @param {{ voice?: { clip: string, ms: number } | null } | { Voice?: { Clip: string, Ms: number } } | null | undefined} node
 *   a graph vertex (`voice`) or a content node (`Voice`)
 * @param {number} intervalMs  the NPC's time per grapheme without a recording
 * @returns {Pacing}
 */
export function pacingFor(node, intervalMs) {
  const v = node && ('voice' in node ? node.voice : 'Voice' in node ? node.Voice : undefined);
  if (v && typeof v === 'object') {
    const ms = 'ms' in v ? v.ms : v.Ms;
    if (typeof ms === 'number' && ms >= 0) return { kind: 'voice', clipMs: ms };
  }
  return { kind: 'interval', intervalMs };
}

/**
 * Milliseconds from the start of a line of `total` visible graphemes until the `visible`-th
 * appears (0 for the 0th). With a clip it is `clip * visible / total`, computed in one step so
 * the last grapheme lands exactly on the end of the clip.
 * @param {Pacing} pacing
 * @param {number} visible
 * @param {number} total
 * @returns {number}
 */
export function pacingOffset(pacing, visible, total) {
  const v = Math.max(0, Math.min(visible, total));
  if (pacing.kind === 'voice') return total === 0 ? 0 : (pacing.clipMs * v) / total;
  return pacing.intervalMs * v;
}

/**
 * What the typewriter asks its caller to do. `show`: put `text` in the label (it draws the first
 * `visible` graphemes); each line first shows 0, then each count in turn, a skip jumps to the
 * full line. `blip`: the grapheme just shown is a letter or digit on an unvoiced line.
 * `completed`: the line is fully shown, exactly once per line, never for a superseded one.
 * @typedef {{ kind: "show", generation: number, visible: number, text: string }
 *   | { kind: "blip", generation: number, grapheme: string }
 *   | { kind: "completed", generation: number }} TypewriterEvent
 */

/**
 * Types one line at a time, driven by the caller's clock (milliseconds since any epoch). Every
 * `start` returns a new generation and drops the line before it, so a superseded line can never
 * write, blip or complete: two typing loops cannot fight over one label.
 */
export class Typewriter {
  /** @param {{ balanced?: boolean }} [options]  `balanced`: show `balancedPrefix`es */
  constructor(options = {}) {
    this.balanced = options.balanced ?? false;
    this.generation = 0;
    /** @type {{ source: string, units: VisibleUnit[], startedAt: number, pacing: Pacing, shown: number, skipped: boolean, completed: boolean } | undefined} */
    this.line = undefined;
  }

  /**
   * Starts typing `text` at `now`; returns its generation.
   * @param {string} text
   * @param {Pacing} pacing
   * @param {number} now
   */
  start(text, pacing, now) {
    this.generation++;
    this.line = { source: text, units: visibleUnits(text), startedAt: now, pacing, shown: -1, skipped: false, completed: false };
    return this.generation;
  }

  /** Shows the whole line at the next poll (the player is impatient). */
  skip() {
    if (this.line) this.line.skipped = true;
  }

  /** Drops the current line: it produces nothing more, not even `completed`. */
  cancel() {
    this.line = undefined;
  }

  /** True while a line is still being typed. */
  get busy() {
    return this.line !== undefined && !this.line.completed;
  }

  /**
   * The events due at `now`, in order.
   * @param {number} now
   * @returns {TypewriterEvent[]}
   */
  poll(now) {
    const line = this.line;
    if (!line || line.completed) return [];
    const generation = this.generation;
    const total = line.units.length;
    /** @type {TypewriterEvent[]} */
    const events = [];
    const text = (/** @type {number} */ k) => {
      const p = prefixOf(line.source, line.units, k);
      return this.balanced ? balance(p) : p;
    };
    if (line.skipped) {
      line.shown = total;
      events.push({ kind: 'show', generation, visible: total, text: line.source });
    } else {
      let due = line.shown < 0 ? 0 : line.shown;
      while (due < total && line.startedAt + pacingOffset(line.pacing, due + 1, total) <= now) due++;
      for (let k = Math.max(line.shown, -1) + 1; k <= due; k++) {
        events.push({ kind: 'show', generation, visible: k, text: text(k) });
        const unit = k > 0 ? line.units[k - 1] : undefined;
        if (unit && unit.blips && line.pacing.kind === 'interval') {
          events.push({ kind: 'blip', generation, grapheme: unit.grapheme });
        }
      }
      line.shown = due;
    }
    if (line.shown >= total) {
      line.completed = true;
      events.push({ kind: 'completed', generation });
    }
    return events;
  }
}
