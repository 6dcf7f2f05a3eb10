// The condition language of `Conditions` on nodes and responses (docs/PROTOCOL.md section 10,
// docs/CONTENT.md; dialogue/src/condition.rs is the reference):
//
//   expr     := and ( "||" and )*
//   and      := unary ( "&&" unary )*
//   unary    := "!" unary | atom
//   atom     := "(" expr ")" | "true" | "false"
//             | "has" "(" NAME ")"
//             | "quest" "(" NAME ")" ("==" | "!=") STATUS
//             | value CMP value
//   value    := INTEGER | "-" INTEGER | "progress" "(" NAME "," NAME ")" | COUNTER
//   CMP      := "==" | "!=" | "<" | "<=" | ">" | ">="
//   STATUS   := "unavailable" | "available" | "active" | "completed"
//   COUNTER  := "coins" | "experience" | "tutorial_stage"
//   NAME     := [A-Za-z_][A-Za-z0-9_.]*
//
// Parsing is bounded (1,024 bytes, nesting 32), so no input can exhaust the stack. A condition
// that does not parse is an error (ConditionError), never `false`: the caller decides (the graph
// builder fails closed, as the server's does).
//
// Integers are 64-bit signed on the server; they are BigInts here so that comparisons stay exact
// for every value the server can send.

import { ConditionError } from './errors.js';
import { QUEST_STATUSES } from './protocol.generated.js';

/** @import { EffectMessage, FactSheet, QuestStatus } from './protocol.generated.js' */

/** Longest condition text accepted, in bytes of UTF-8. */
export const MAX_CONDITION_BYTES = 1024;
/** Deepest nesting of parentheses and `!` accepted. */
export const MAX_DEPTH = 32;

const I64_MAX = 2n ** 63n - 1n;

/** @typedef {"coins" | "experience" | "tutorial_stage"} Counter */
const COUNTERS = /** @type {const} */ (['coins', 'experience', 'tutorial_stage']);

/** @typedef {"==" | "!=" | "<" | "<=" | ">" | ">="} Comparison */

/**
 * @typedef {{ kind: "int", value: bigint } | { kind: "counter", counter: Counter }
 *   | { kind: "progress", quest: string, objective: string }} Value
 */

/**
 * A parsed condition: a tree of plain objects, so it can be logged and compared.
 * @typedef {{ kind: "const", value: boolean }
 *   | { kind: "not", inner: Condition }
 *   | { kind: "all", parts: Condition[] }
 *   | { kind: "any", parts: Condition[] }
 *   | { kind: "has", name: string }
 *   | { kind: "quest", quest: string, is: boolean, status: QuestStatus }
 *   | { kind: "compare", left: Value, op: Comparison, right: Value }} Condition
 */

/**
 * What a condition may ask about the player: a `FactSheet` from `opened` answers it
 * (`factsOf(sheet)`); a game may supply its own.
 * @typedef {object} Facts
 * @property {(quest: string) => QuestStatus} questStatus
 * @property {(quest: string, objective: string) => number | bigint} objectiveProgress
 * @property {(name: string) => boolean} has
 * @property {(counter: Counter) => number | bigint} counter
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
  return {
    questStatus: (quest) => (Object.hasOwn(quests, quest) ? quests[quest] : 'available'),
    objectiveProgress: (quest, objective) => {
      const k = `${quest}/${objective}`;
      return Object.hasOwn(progress, k) ? progress[k] : 0;
    },
    has: (name) => has.includes(name),
    counter: (counter) => sheet[counter],
  };
}

/** Either a `Facts` or a fact sheet. @param {Facts | FactSheet} facts @returns {Facts} */
function asFacts(facts) {
  return typeof (/** @type {Facts} */ (facts).questStatus) === 'function' ? /** @type {Facts} */ (facts) : factsOf(/** @type {FactSheet} */ (facts));
}

// ---------------------------------------------------------------------------------------------
// Tokens.

/** @typedef {{ at: number, kind: "name", text: string } | { at: number, kind: "int", value: bigint } | { at: number, kind: "op", text: string }} Token */

// Longest first where one is a prefix of another, as the reference tries them.
const OPERATORS = ['&&', '||', '==', '!=', '<=', '>=', '<', '>', '!', '(', ')', ','];

/** ASCII whitespace as Rust's `u8::is_ascii_whitespace`: space, tab, LF, FF, CR (not VT). */
function isSpace(/** @type {string} */ c) {
  return c === ' ' || c === '\t' || c === '\n' || c === '\f' || c === '\r';
}

/** @param {Token} t */
function show(t) {
  return t.kind === 'int' ? `\`${t.value}\`` : `\`${t.text}\``;
}

/**
 * @param {string} text
 * @returns {Token[]}
 */
function tokenize(text) {
  /** @type {Token[]} */
  const tokens = [];
  let i = 0;
  // Every accepted character is ASCII, so up to the first error a string index is the byte
  // offset the reference reports.
  while (i < text.length) {
    const c = text[i];
    if (isSpace(c)) {
      i++;
    } else if (/[A-Za-z_]/.test(c)) {
      const start = i;
      while (i < text.length && /[A-Za-z0-9_.]/.test(text[i])) i++;
      tokens.push({ at: start, kind: 'name', text: text.slice(start, i) });
    } else if (/[0-9]/.test(c) || c === '-') {
      // An optional `-` directly followed by digits, within the 64-bit signed range.
      const start = i;
      if (c === '-') i++;
      const digits = i;
      while (i < text.length && /[0-9]/.test(text[i])) i++;
      if (i === digits) throw new ConditionError(text, start, 'a `-` must be followed at once by a digit');
      const value = BigInt(text.slice(start, i));
      if (value > I64_MAX || value < -I64_MAX - 1n) {
        throw new ConditionError(text, start, `number out of the 64-bit signed range (${-I64_MAX - 1n} to ${I64_MAX})`);
      }
      tokens.push({ at: start, kind: 'int', value });
    } else {
      const op = OPERATORS.find((o) => text.startsWith(o, i));
      if (op === undefined) {
        const ch = String.fromCodePoint(/** @type {number} */ (text.codePointAt(i)));
        throw new ConditionError(text, i, `unexpected character \`${ch}\``);
      }
      tokens.push({ at: i, kind: 'op', text: op });
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
    const left = this.value();
    /** @type {Comparison[]} */
    const ops = ['==', '!=', '<=', '>=', '<', '>'];
    const op = ops.find((o) => this.eatOp(o));
    if (op === undefined) return this.fail('expected a comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`)');
    const right = this.value();
    return { kind: 'compare', left, op, right };
  }

  /** @returns {Value} */
  value() {
    const t = this.peek();
    if (t && t.kind === 'int') {
      this.at++;
      return { kind: 'int', value: t.value };
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
          `unknown name \`${t.text}\` (counters: coins, experience, tutorial_stage; use has(...) for states and tags)`,
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
 * @param {Value} v
 * @param {Facts} facts
 */
function valueOf(v, facts) {
  switch (v.kind) {
    case 'int':
      return v.value;
    case 'counter':
      return big(facts.counter(v.counter));
    case 'progress':
      return big(facts.objectiveProgress(v.quest, v.objective));
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
      case 'compare': {
        const l = valueOf(c.left, f);
        const r = valueOf(c.right, f);
        switch (c.op) {
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
 * `completed`, `play_cutscene` puts `Story.Cutscene` in `has` (until `cutscene_done`), and every
 * effect's `profile` gives the counters. Returns a new sheet; the given one is not changed.
 * @param {FactSheet} sheet
 * @param {EffectMessage} message
 * @returns {FactSheet}
 */
export function applyEffect(sheet, message) {
  const quests = { ...(sheet.quests ?? {}) };
  const progress = { ...(sheet.progress ?? {}) };
  let has = [...(sheet.has ?? [])];
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
    default:
      break;
  }
  return {
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
