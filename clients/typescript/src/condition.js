// The condition language of `Conditions` on nodes and responses (docs/PROTOCOL.md section 10,
// docs/CONTENT.md; dialogue/src/condition.rs is the reference):
//
//   expr     := and ( "||" and )*
//   and      := unary ( "&&" unary )*
//   unary    := "!" unary | atom
//   atom     := "(" expr ")" | "true" | "false"
//             | "has" "(" NAME ")"
//             | "quest" "(" NAME ")" ("==" | "!=") STATUS
//             | "$" VAR                                   a bool variable
//             | "visited" "(" NAME ")"                    visits(NAME) > 0
//             | value CMP value
//   value    := INTEGER | "progress" "(" NAME "," NAME ")" | COUNTER
//             | "$" VAR | STRING | "visits" "(" NAME ")" | "opens"
//   CMP      := "==" | "!=" | "<" | "<=" | ">" | ">="
//   STATUS   := "unavailable" | "available" | "active" | "completed"
//   COUNTER  := "coins" | "experience" | "tutorial_stage"
//   NAME     := [A-Za-z_][A-Za-z0-9_.]*
//   VAR      := [A-Za-z_][A-Za-z0-9_]*                   no space after the "$"
//   STRING   := '"' (no '"', '\', LF or CR)* '"'        at most 64 bytes, no escapes
//
// The writing-power atoms and values (docs/CONTENT.md "Writing power", PROTOCOL.md 10.1) read
// story variables (`facts.vars`), visit counts (`facts.visits` plus the walk's own) and `opens`.
// Types (a bool variable is a condition, never a value; both sides of a comparison integers or
// both strings; strings only with `==` and `!=`) need the declarations: check-content checks
// them, not the parser (as the reference's `Condition::parse`). Evaluated anyway, a string
// against an integer never holds, a string with `<` never holds, and a variable the sheet
// leaves out (or a bool read as a value) is 0 beside an integer and `""` beside a string.
//
// Parsing is bounded (1,024 bytes, nesting 32), so no input can exhaust the stack. A condition
// that does not parse is an error (ConditionError), never `false`: the caller decides (the graph
// builder fails closed, as the server's does).
//
// Integers are 64-bit signed on the server; they are BigInts here so that comparisons stay exact
// for every value the server can send.

import { ConditionError } from './errors.js';
import { QUEST_STATUSES } from './protocol.generated.js';

/** @import { EffectMessage, FactSheet, QuestStatus, VarValue } from './protocol.generated.js' */

/** Longest condition text accepted, in bytes of UTF-8. */
export const MAX_CONDITION_BYTES = 1024;
/** Deepest nesting of parentheses and `!` accepted. */
export const MAX_DEPTH = 32;

const I64_MAX = 2n ** 63n - 1n;

/** @typedef {"coins" | "experience" | "tutorial_stage"} Counter */
const COUNTERS = /** @type {const} */ (['coins', 'experience', 'tutorial_stage']);

/** @typedef {"==" | "!=" | "<" | "<=" | ">" | ">="} Comparison */
/** Longest first, as the tokenizer reads them. @type {ReadonlyArray<Comparison>} */
const COMPARISONS = ['==', '!=', '<=', '>=', '<', '>'];

/** Longest string literal accepted, in bytes of UTF-8 between the quotes. */
export const MAX_STRING_BYTES = 64;

/**
 * A value a comparison reads: an integer, a counter, an objective's progress, a story variable
 * (an integer or a string, as its value says), a string literal, a vertex's visit count or
 * `opens`.
 * @typedef {{ kind: "int", value: bigint } | { kind: "counter", counter: Counter }
 *   | { kind: "progress", quest: string, objective: string }
 *   | { kind: "var", name: string } | { kind: "string", value: string }
 *   | { kind: "visits", name: string } | { kind: "opens" }} Value
 */

/**
 * A parsed condition: a tree of plain objects, so it can be logged and compared.
 * @typedef {{ kind: "const", value: boolean }
 *   | { kind: "not", inner: Condition }
 *   | { kind: "all", parts: Condition[] }
 *   | { kind: "any", parts: Condition[] }
 *   | { kind: "has", name: string }
 *   | { kind: "quest", quest: string, is: boolean, status: QuestStatus }
 *   | { kind: "compare", left: Value, op: Comparison, right: Value }
 *   | { kind: "var", name: string }
 *   | { kind: "visited", name: string }} Condition
 */

/**
 * What a condition may ask about the player: a `FactSheet` from `opened` answers it
 * (`factsOf(sheet)`); a game may supply its own.
 * @typedef {object} Facts
 * @property {(quest: string) => QuestStatus} questStatus
 * @property {(quest: string, objective: string) => number | bigint} objectiveProgress
 * @property {(name: string) => boolean} has
 * @property {(counter: Counter) => number | bigint} counter
 * @property {(name: string) => VarValue | bigint | undefined} [variable]  a story variable's value
 *   (`facts.vars`); undefined when the sheet leaves it out (it reads as `false`, 0 or `""`)
 * @property {(vertex: string) => number | bigint} [visits]  how often the line was shown or
 *   the response picked (`facts.visits`, plus the walk's own counts inside a walk); absent: 0
 * @property {() => number | bigint} [opens]  `facts.opens`; absent: 0
 * @property {(line: string) => number | bigint | undefined} [lastSeen]  `facts.last_seen`: when
 *   a `LeastRecent` candidate was last shown before this conversation (larger: more recent)
 * @property {() => string | undefined} [seed]  `facts.seed`: the conversation's seed for
 *   `Weighted` groups, a decimal unsigned 64-bit integer
 */

/**
 * The facts of a fact sheet, read as the server does: a quest absent from `quests` is
 * `available`, absent progress is 0, `has` holds the names listed.
 * @param {FactSheet} sheet
 * @returns {Facts}
 */
export function factsOf(sheet) {
  const quests = sheet.quests ?? {};
  const progress = sheet.progress ?? {};
  const has = sheet.has ?? [];
  const vars = sheet.vars ?? {};
  const visits = sheet.visits ?? {};
  const lastSeen = sheet.last_seen ?? {};
  return {
    questStatus: (quest) => (Object.hasOwn(quests, quest) ? quests[quest] : 'available'),
    objectiveProgress: (quest, objective) => {
      const k = `${quest}/${objective}`;
      return Object.hasOwn(progress, k) ? progress[k] : 0;
    },
    has: (name) => has.includes(name),
    counter: (counter) => sheet[counter],
    variable: (name) => (Object.hasOwn(vars, name) ? vars[name] : undefined),
    visits: (vertex) => (Object.hasOwn(visits, vertex) ? visits[vertex] : 0),
    opens: () => sheet.opens ?? 0,
    lastSeen: (line) => (Object.hasOwn(lastSeen, line) ? lastSeen[line] : undefined),
    seed: () => sheet.seed ?? undefined,
  };
}

/** Either a `Facts` or a fact sheet. @param {Facts | FactSheet} facts @returns {Facts} */
export function asFacts(facts) {
  return typeof (/** @type {Facts} */ (facts).questStatus) === 'function' ? /** @type {Facts} */ (facts) : factsOf(/** @type {FactSheet} */ (facts));
}

// ---------------------------------------------------------------------------------------------
// Tokens.

/**
 * A token; `at` is its byte offset in the UTF-8 text.
 * @typedef {{ at: number, kind: "name", text: string } | { at: number, kind: "int", value: bigint }
 *   | { at: number, kind: "op", text: string } | { at: number, kind: "var", text: string }
 *   | { at: number, kind: "string", text: string }} Token
 */

// Longest first where one is a prefix of another, as the reference tries them.
const OPERATORS = ['&&', '||', '==', '!=', '<=', '>=', '<', '>', '!', '(', ')', ','];

/** ASCII whitespace as Rust's `u8::is_ascii_whitespace`: space, tab, LF, FF, CR (not VT). */
function isSpace(/** @type {string} */ c) {
  return c === ' ' || c === '\t' || c === '\n' || c === '\f' || c === '\r';
}

/** @param {Token} t */
function show(t) {
  if (t.kind === 'int') return `\`${t.value}\``;
  if (t.kind === 'var') return `\`$${t.text}\``;
  if (t.kind === 'string') return `\`${JSON.stringify(t.text)}\``;
  return `\`${t.text}\``;
}

/**
 * @param {string} text
 * @returns {Token[]}
 */
function tokenize(text) {
  /** @type {Token[]} */
  const tokens = [];
  let i = 0;
  // Outside string literals every accepted character is ASCII; `at` turns a string index into
  // the byte offset the reference reports.
  const at = (/** @type {number} */ index) => utf8Length(text.slice(0, index));
  while (i < text.length) {
    const c = text[i];
    if (isSpace(c)) {
      i++;
    } else if (/[A-Za-z_]/.test(c)) {
      const start = i;
      while (i < text.length && /[A-Za-z0-9_.]/.test(text[i])) i++;
      tokens.push({ at: at(start), kind: 'name', text: text.slice(start, i) });
    } else if (c === '$') {
      // `$VAR`: the name follows at once, without dots.
      const start = i;
      i++;
      const name = i;
      if (i < text.length && /[A-Za-z_]/.test(text[i])) {
        while (i < text.length && /[A-Za-z0-9_]/.test(text[i])) i++;
      }
      if (i === name) throw new ConditionError(text, at(start), 'a `$` must be followed at once by a variable name');
      tokens.push({ at: at(start), kind: 'var', text: text.slice(name, i) });
    } else if (c === '"') {
      // A string literal: no escapes, no `"`, `\\` or line break inside, at most 64 bytes.
      const start = i;
      i++;
      while (i < text.length && text[i] !== '"' && text[i] !== '\\' && text[i] !== '\n' && text[i] !== '\r') i++;
      if (i >= text.length || text[i] !== '"') {
        throw new ConditionError(text, at(start), 'a string must end with `"` on its line, with no `\\` inside');
      }
      const value = text.slice(start + 1, i);
      i++;
      if (utf8Length(value) > MAX_STRING_BYTES) {
        throw new ConditionError(text, at(start), `a string is longer than ${MAX_STRING_BYTES} bytes`);
      }
      tokens.push({ at: at(start), kind: 'string', text: value });
    } else if (/[0-9]/.test(c) || c === '-') {
      // An optional `-` directly followed by digits, within the 64-bit signed range.
      const start = i;
      if (c === '-') i++;
      const digits = i;
      while (i < text.length && /[0-9]/.test(text[i])) i++;
      if (i === digits) throw new ConditionError(text, at(start), 'a `-` must be followed at once by a digit');
      const value = BigInt(text.slice(start, i));
      if (value > I64_MAX || value < -I64_MAX - 1n) {
        throw new ConditionError(text, at(start), `number out of the 64-bit signed range (${-I64_MAX - 1n} to ${I64_MAX})`);
      }
      tokens.push({ at: at(start), kind: 'int', value });
    } else {
      const op = OPERATORS.find((o) => text.startsWith(o, i));
      if (op === undefined) {
        const ch = String.fromCodePoint(/** @type {number} */ (text.codePointAt(i)));
        throw new ConditionError(text, at(i), `unexpected character \`${ch}\``);
      }
      tokens.push({ at: at(i), kind: 'op', text: op });
      i += op.length;
    }
  }
  return tokens;
}

// ---------------------------------------------------------------------------------------------
// Parser.

class Parser {
  /** @param {string} text @param {Token[]} tokens */
  constructor(text, tokens) {
    this.text = text;
    this.tokens = tokens;
    this.at = 0;
    this.depth = 0;
  }

  peek() {
    return this.tokens[this.at];
  }

  /** Where the next token starts, or the end of the text. */
  position() {
    return this.peek()?.at ?? utf8Length(this.text);
  }

  /** @param {string} message @returns {never} */
  fail(message) {
    throw new ConditionError(this.text, this.position(), message);
  }

  /** @param {string} op */
  eatOp(op) {
    const t = this.peek();
    if (t && t.kind === 'op' && t.text === op) {
      this.at++;
      return true;
    }
    return false;
  }

  /** @param {string} op */
  expectOp(op) {
    if (!this.eatOp(op)) {
      const t = this.peek();
      this.fail(`expected \`${op}\`, found ${t ? show(t) : 'the end'}`);
    }
  }

  /** @param {string} what */
  name(what) {
    const t = this.peek();
    if (t && t.kind === 'name') {
      this.at++;
      return t.text;
    }
    return this.fail(`expected ${what}`);
  }

  enter() {
    this.depth++;
    if (this.depth > MAX_DEPTH) this.fail(`nested deeper than ${MAX_DEPTH}`);
  }

  /** @returns {Condition} */
  or() {
    const parts = [this.and()];
    while (this.eatOp('||')) parts.push(this.and());
    return parts.length === 1 ? parts[0] : { kind: 'any', parts };
  }

  /** @returns {Condition} */
  and() {
    const parts = [this.unary()];
    while (this.eatOp('&&')) parts.push(this.unary());
    return parts.length === 1 ? parts[0] : { kind: 'all', parts };
  }

  /** @returns {Condition} */
  unary() {
    if (this.eatOp('!')) {
      this.enter();
      const inner = this.unary();
      this.depth--;
      return { kind: 'not', inner };
    }
    return this.atom();
  }

  /** @returns {Condition} */
  atom() {
    if (this.eatOp('(')) {
      this.enter();
      const inner = this.or();
      this.expectOp(')');
      this.depth--;
      return inner;
    }
    const t = this.peek();
    if (t && t.kind === 'name' && (t.text === 'true' || t.text === 'false')) {
      this.at++;
      return { kind: 'const', value: t.text === 'true' };
    }
    if (t && t.kind === 'name' && t.text === 'has') {
      this.at++;
      this.expectOp('(');
      const name = this.name('a state or tag name');
      this.expectOp(')');
      return { kind: 'has', name };
    }
    if (t && t.kind === 'name' && t.text === 'quest') {
      this.at++;
      this.expectOp('(');
      const quest = this.name('a quest id');
      this.expectOp(')');
      let is;
      if (this.eatOp('==')) is = true;
      else if (this.eatOp('!=')) is = false;
      else return this.fail('expected `==` or `!=` after quest(...)');
      const position = this.position();
      const word = this.name('a quest status');
      const status = QUEST_STATUSES.find((s) => s === word);
      if (status === undefined) {
        throw new ConditionError(this.text, position, `unknown quest status \`${word}\` (unavailable, available, active, completed)`);
      }
      return { kind: 'quest', quest, is, status };
    }
    if (t && t.kind === 'name' && t.text === 'visited') {
      this.at++;
      return { kind: 'visited', name: this.parenthesizedName('a line or response name') };
    }
    // `$VAR` is a bool variable unless a comparison follows: then it is a value.
    if (t && t.kind === 'var' && !this.comparisonAt(this.at + 1)) {
      this.at++;
      return { kind: 'var', name: t.text };
    }
    const left = this.value();
    const op = this.comparison();
    if (op === undefined) return this.fail('expected a comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`)');
    const right = this.value();
    return { kind: 'compare', left, op, right };
  }

  /** The comparison operator at token `index`, if any. @param {number} index */
  comparisonAt(index) {
    const t = this.tokens[index];
    return t !== undefined && t.kind === 'op' && COMPARISONS.some((o) => o === t.text);
  }

  /** Eats a comparison operator. @returns {Comparison | undefined} */
  comparison() {
    return COMPARISONS.find((o) => this.eatOp(o));
  }

  /** `( NAME )`, as after `visits` and `visited`. @param {string} what */
  parenthesizedName(what) {
    this.expectOp('(');
    const name = this.name(what);
    this.expectOp(')');
    return name;
  }


  /** @returns {Value} */
  value() {
    const t = this.peek();
    if (t && t.kind === 'int') {
      this.at++;
      return { kind: 'int', value: t.value };
    }
    if (t && t.kind === 'var') {
      this.at++;
      return { kind: 'var', name: t.text };
    }
    if (t && t.kind === 'string') {
      this.at++;
      return { kind: 'string', value: t.text };
    }
    if (t && t.kind === 'name' && t.text === 'visits') {
      this.at++;
      return { kind: 'visits', name: this.parenthesizedName('a line or response name') };
    }
    if (t && t.kind === 'name' && t.text === 'opens') {
      this.at++;
      return { kind: 'opens' };
    }
    if (t && t.kind === 'name' && t.text === 'progress') {
      this.at++;
      this.expectOp('(');
      const quest = this.name('a quest id');
      this.expectOp(',');
      const objective = this.name('an objective id');
      this.expectOp(')');
      return { kind: 'progress', quest, objective };
    }
    if (t && t.kind === 'name') {
      const counter = COUNTERS.find((c) => c === t.text);
      if (counter === undefined) {
        throw new ConditionError(
          this.text,
          t.at,
          `unknown name \`${t.text}\` (counters: coins, experience, tutorial_stage, opens; use has(...) for states and tags, $NAME for variables)`,
        );
      }
      this.at++;
      return { kind: 'counter', counter };
    }
    return this.fail('expected a value');
  }
}

/** Bytes of UTF-8 in a string. */
function utf8Length(/** @type {string} */ s) {
  let n = 0;
  for (const ch of s) {
    const cp = /** @type {number} */ (ch.codePointAt(0));
    n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
  return n;
}

/**
 * Parses a condition expression.
 * @param {string} text
 * @returns {Condition}
 * @throws {ConditionError} with the byte position and what was expected
 */
export function parseCondition(text) {
  if (typeof text !== 'string') {
    throw new ConditionError(String(text), 0, `a condition must be a string, got ${typeof text}`);
  }
  // Cheap bound first (a UTF-16 unit is at least one byte), then the exact one.
  if (text.length > MAX_CONDITION_BYTES || utf8Length(text) > MAX_CONDITION_BYTES) {
    throw new ConditionError(text, MAX_CONDITION_BYTES, `longer than ${MAX_CONDITION_BYTES} bytes`);
  }
  const parser = new Parser(text, tokenize(text));
  const condition = parser.or();
  const rest = parser.peek();
  if (rest !== undefined) {
    throw new ConditionError(text, rest.at, `unexpected ${show(rest)} after the end of the condition`);
  }
  return condition;
}

/** @param {number | bigint} n */
function big(n) {
  return typeof n === 'bigint' ? n : BigInt(Math.trunc(n));
}

/**
 * A value as read from the facts: an integer (BigInt), a string, or `undefined` for a variable
 * the sheet leaves out or holds as a boolean (no value: 0 or `""`, as the other side reads).
 * @param {Value} v
 * @param {Facts} facts
 * @returns {bigint | string | undefined}
 */
function valueOf(v, facts) {
  switch (v.kind) {
    case 'int':
      return v.value;
    case 'counter':
      return big(facts.counter(v.counter));
    case 'progress':
      return big(facts.objectiveProgress(v.quest, v.objective));
    case 'string':
      return v.value;
    case 'visits':
      return big(facts.visits?.(v.name) ?? 0);
    case 'opens':
      return big(facts.opens?.() ?? 0);
    case 'var': {
      const value = facts.variable?.(v.name);
      if (value === undefined) return undefined;
      if (typeof value === 'string') return value;
      if (typeof value === 'number' || typeof value === 'bigint') return big(value);
      return undefined;
    }
  }
}

/**
 * A comparison: both sides integers or both strings; a missing value reads as the other side's
 * kind of nothing (0 or `""`, 0 when both are missing). Sides of different types never hold,
 * nor strings compared with `<`, `<=`, `>` or `>=` (content that does either does not load).
 * @param {bigint | string | undefined} left
 * @param {Comparison} op
 * @param {bigint | string | undefined} right
 */
function compare(left, op, right) {
  /** @param {bigint | string | undefined} v @param {bigint | string | undefined} other @returns {bigint | string} */
  const orNothing = (v, other) => v ?? (typeof other === 'string' ? '' : 0n);
  const l = orNothing(left, right);
  const r = orNothing(right, left);
  if (typeof l !== typeof r) return false;
  if (typeof l === 'string' && op !== '==' && op !== '!=') return false;
  switch (op) {
    case '==':
      return l === r;
    case '!=':
      return l !== r;
    case '<':
      return l < r;
    case '<=':
      return l <= r;
    case '>':
      return l > r;
    case '>=':
      return l >= r;
  }
}

/**
 * How many tests a condition makes, for a `MostSpecific` group (docs/CONTENT.md, "Line groups
 * and storylets"): each `has(...)`, `quest(...)`, comparison, `$VAR` and `visited(...)`;
 * `true` and `false` make none.
 * @param {Condition | null} condition  null: no `Conditions`, no test
 * @returns {number}
 */
export function countTests(condition) {
  if (condition === null) return 0;
  switch (condition.kind) {
    case 'const':
      return 0;
    case 'not':
      return countTests(condition.inner);
    case 'all':
    case 'any':
      return condition.parts.reduce((n, p) => n + countTests(p), 0);
    default:
      return 1;
  }
}

/**
 * Evaluates a parsed condition.
 * @param {Condition} condition
 * @param {Facts | FactSheet} facts  a `Facts`, or the fact sheet of `opened`
 * @returns {boolean}
 */
export function evaluate(condition, facts) {
  const f = asFacts(facts);
  /** @param {Condition} c @returns {boolean} */
  const go = (c) => {
    switch (c.kind) {
      case 'const':
        return c.value;
      case 'not':
        return !go(c.inner);
      case 'all':
        return c.parts.every(go);
      case 'any':
        return c.parts.some(go);
      case 'has':
        return f.has(c.name);
      case 'quest':
        return (f.questStatus(c.quest) === c.status) === c.is;
      case 'compare':
        return compare(valueOf(c.left, f), c.op, valueOf(c.right, f));
      case 'var':
        return f.variable?.(c.name) === true;
      case 'visited':
        return big(f.visits?.(c.name) ?? 0) > 0n;
    }
  };
  return go(condition);
}

/**
 * Parses and evaluates in one step.
 * @param {string} text
 * @param {Facts | FactSheet} facts
 * @returns {boolean}
 * @throws {ConditionError} if `text` does not parse
 */
export function holds(text, facts) {
  return evaluate(parseCondition(text), facts);
}

// ---------------------------------------------------------------------------------------------
// Keeping a fact sheet current (docs/PROTOCOL.md section 10): the server evaluates against its
// live state, so a client that keeps evaluating against the sheet of `opened` after an effect
// would show responses the server refuses.


/**
 * The sheet after an `effect`: `quest_accepted` makes the quest `active` with progress 0 on each
 * objective it names, `objective_advanced` sets the progress, `quest_completed` makes the quest
 * `completed`, `play_cutscene` puts `Story.Cutscene` in `has` (until `cutscene_done`),
 * `variable_set` sets `vars[variable]` (PROTOCOL.md section 10.1), and every effect's `profile`
 * gives the counters. The other fields (`visits`, `last_seen`, `opens`, `seed`) are kept: they
 * do not change during a conversation (the walk keeps its own visit counts). Returns a new
 * sheet; the given one is not changed.
 * @param {FactSheet} sheet
 * @param {EffectMessage} message
 * @returns {FactSheet}
 */
export function applyEffect(sheet, message) {
  const quests = { ...(sheet.quests ?? {}) };
  const progress = { ...(sheet.progress ?? {}) };
  let has = [...(sheet.has ?? [])];
  let vars = sheet.vars;
  const effect = message.effect;
  switch (effect.kind) {
    case 'quest_accepted':
      quests[effect.quest] = 'active';
      for (const objective of effect.objectives) progress[`${effect.quest}/${objective}`] = 0;
      break;
    case 'objective_advanced':
      progress[`${effect.quest}/${effect.objective}`] = effect.progress;
      break;
    case 'quest_completed':
      quests[effect.quest] = 'completed';
      break;
    case 'play_cutscene':
      if (!has.includes(CUTSCENE)) has = withState(has, CUTSCENE);
      break;
    case 'variable_set':
      vars = { ...(vars ?? {}), [effect.variable]: effect.value };
      break;
    default:
      break;
  }
  return {
    ...sheet,
    ...(vars === undefined ? {} : { vars }),
    quests,
    progress,
    coins: message.profile.coins,
    experience: message.profile.experience,
    tutorial_stage: message.profile.tutorial_stage,
    has,
  };
}

/** The state a playing cutscene holds. */
const CUTSCENE = 'Story.Cutscene';
/** The states the server knows; tags (`Afk`) come after them in `has`. */
const STATES = ['Dialogue.Talking', CUTSCENE];

/** `has` with a state added before the tags, as the server orders them. */
function withState(/** @type {string[]} */ has, /** @type {string} */ state) {
  const firstTag = has.findIndex((h) => !STATES.includes(h));
  return firstTag < 0 ? [...has, state] : [...has.slice(0, firstTag), state, ...has.slice(firstTag)];
}

/**
 * The sheet after the client sent `cutscene_done`: `Story.Cutscene` no longer holds.
 * @param {FactSheet} sheet
 * @returns {FactSheet}
 */
export function cutsceneDone(sheet) {
  return { ...sheet, has: (sheet.has ?? []).filter((h) => h !== CUTSCENE) };
}

/**
 * The sheet after `set_afk`: `Afk` holds or not.
 * @param {FactSheet} sheet
 * @param {boolean} afk
 * @returns {FactSheet}
 */
export function withAfk(sheet, afk) {
  const has = (sheet.has ?? []).filter((h) => h !== 'Afk');
  return { ...sheet, has: afk ? [...has, 'Afk'] : has };
}
