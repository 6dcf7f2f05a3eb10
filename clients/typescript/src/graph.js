// The conversation graph, built from `opened.content` (docs/PROTOCOL.md section 8.2;
// dialogue/src/canonical.rs and graph.rs are the reference, and the server walks exactly the
// graph they build).
//
// The content is an object whose keys are node names, plus `FirstNode` and `Speaker`. Each node
// becomes an NPC-line vertex named by its key; response `i` (1-based) of node `N` becomes the
// vertex `N_r<i>`; a `NextNode` list becomes a branch vertex (`N_b<id>`), never shown, whose
// targets are tried in order; a `NextNode` group (`{ Pick, Among, Fallback }`, PROTOCOL.md
// section 10.1) becomes a branch vertex the same way, whose targets are its candidates and which
// picks among them by its rule (`vertex.group`). Vertices are numbered as the server numbers them: the root 0,
// then every node in key order (UTF-8 byte order), then per node its responses and then its
// branches. The numbering matters only for names of branches and for the priority of
// same-named vertices (the first one wins a name), but it costs nothing to match.
//
// Content that breaks a rule is not thrown at the caller: like the server's builder, the graph
// leaves out a node with a problem, skips an edge to a node that does not exist, and makes a
// condition that does not parse never hold (fail closed). Each is listed in `graph.problems`.

import { parseCondition, countTests } from './condition.js';
import { ContentError, PayloadError } from './errors.js';
import { buildPayload, isActionType } from './payload.js';
import { ACTION_SPECS, MAX_AMOUNT } from './actions.generated.js';
import { CHOICE_MODES, TIE_RULES, MAX_TIME_LIMIT_SECS, choiceRule } from './ballot.js';

/**
 * @import { Condition } from './condition.js'
 * @import { Action } from './payload.js'
 * @import { ActionType } from './protocol.generated.js'
 * @import { ChoiceSpec, ChoiceRule } from './ballot.js'
 */

/** @typedef {"root" | "line" | "response" | "branch"} VertexKind */

/**
 * An action as authored on a vertex, with its canonical payload built once.
 * @typedef {object} AuthoredAction
 * @property {number} index  its index in the graph: what the walk's arming counters key on
 * @property {Action} action  the content form (`AdvanceObjective` always states `Amount` when it states `Island`)
 * @property {ActionType} type
 * @property {string} payload  the canonical payload, exactly what the server compares
 * @property {number} vertex  the node or response it is authored on
 */

/**
 * @typedef {object} Vertex
 * @property {number} id
 * @property {VertexKind} kind
 * @property {string} name  `N`, `N_r<i>` or `N_b<id>`; empty for the root
 * @property {string} text  the line or response text as written (rich text)
 * @property {number} priority  a response's 1-based index in its node; 0 for a line
 * @property {boolean} close  a line with `"Close": true`
 * @property {boolean} awaitsJump  carries a `CheckQuest`: its exit is not followed, the server jumps
 * @property {{ clip: string, ms: number } | null} voice  a line's recording in the player's locale
 * @property {string | null} lineId  the stable line id (`LineId`): not structure, for voice and string tables
 * @property {number[]} outputs  in priority order: a line's responses or next line/branch, a response's or branch's targets
 * @property {AuthoredAction[]} actions  in authored order
 * @property {Condition | null} condition
 * @property {string | null} conditionText  the `Conditions` as sent (a list joined with `&&`)
 * @property {ChoiceSpec | null} choice  a line's `Choice` as written: in a shared conversation,
 *   how the group picks among its responses (`graph.choiceRule(line)` fills in the defaults)
 * @property {boolean} once  `"Once": true`: a line shown (a response offered) once per player
 * @property {string | null} disabled  a response's `Disabled`: the reason it is shown greyed out
 *   while its `Conditions` fail (null: hidden then, as any response)
 * @property {string | null} disabledLineId  the stable line id of the `Disabled` text
 * @property {number} tests  how many tests its `Conditions` make (`MostSpecific` groups)
 * @property {GroupRule | null} group  a branch made from a `NextNode` group: how it picks among
 *   its `outputs` (the candidates, in `Among` order); null for a list, which takes the first
 */

/** @typedef {"First" | "MostSpecific" | "LeastRecent" | "Weighted"} Pick */

/**
 * How a group picks its next line (docs/CONTENT.md, "Line groups and storylets").
 * @typedef {object} GroupRule
 * @property {Pick} pick
 * @property {number[]} weights  each candidate's `Weight` (1 unless stated), parallel to the
 *   branch's `outputs`
 * @property {number | null} fallback  the line shown when no candidate holds
 */

/**
 * @typedef {{ kind: "one", target: string } | { kind: "first_of", targets: string[] }
 *   | { kind: "group", pick: Pick, among: { node: string, weight: number }[], fallback: string | null }} Next
 * @typedef {{ lineId: string | null, text: string, actions: Action[], next: Next | null, conditions: string | null,
 *   once: boolean, disabled: string | null, disabledLineId: string | null }} ResponseModel
 * @typedef {{ kind: "end" } | { kind: "close" } | { kind: "next", next: Next } | { kind: "responses", responses: ResponseModel[] }} Exit
 * @typedef {{ lineId: string | null, text: string, voice: { clip: string, ms: number } | null, exit: Exit, actions: Action[],
 *   conditions: string | null, choice: ChoiceSpec | null, once: boolean }} NodeModel
 */

const FIRST_NODE = 'FirstNode';
const SPEAKER = 'Speaker';
const SHARED = 'Shared';
const NODE_FIELDS = ['LineId', 'Text', 'Direction', 'Voice', 'Responses', 'NextNode', 'Close', 'Actions', 'Conditions', 'Patch', 'Choice', 'Once'];
const CHOICE_FIELDS = ['Mode', 'TimeLimit', 'Tie'];
const RESPONSE_FIELDS = ['LineId', 'Text', 'Actions', 'NextNode', 'Conditions', 'Once', 'Disabled', 'DisabledLineId'];
const GROUP_FIELDS = ['Pick', 'Among', 'Fallback'];
/** The ways a group picks. @type {ReadonlyArray<Pick>} */
export const PICKS = Object.freeze(/** @type {const} */ (['First', 'MostSpecific', 'LeastRecent', 'Weighted']));
/** The most candidates a group holds. */
export const MAX_GROUP_CANDIDATES = 64;
/** The largest `Weight` of a `Weighted` candidate. */
export const MAX_WEIGHT = 1000;

/** @param {unknown} v @returns {v is Record<string, unknown>} */
function isObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The JSON kind of a value, for problems. */
function kindOf(/** @type {unknown} */ v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  return `a ${typeof v}`;
}

/**
 * Compares strings in UTF-8 byte order (= code point order), the order of the server's
 * `BTreeMap<String, _>`. Plain `<` compares UTF-16 units, which differs past U+FFFF.
 * @param {string} a
 * @param {string} b
 */
export function compareUtf8(a, b) {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done || y.done) return x.done ? (y.done ? 0 : -1) : 1;
    const cx = /** @type {number} */ (x.value.codePointAt(0));
    const cy = /** @type {number} */ (y.value.codePointAt(0));
    if (cx !== cy) return cx < cy ? -1 : 1;
  }
}

/** Collects the problems of one node; any problem leaves the node out, as on the server. */
class Decoder {
  /** @param {string[]} problems @param {string} node */
  constructor(problems, node) {
    this.problems = problems;
    this.node = node;
    this.count = 0;
  }

  /** @param {string} field @param {string} message */
  problem(field, message) {
    this.count++;
    this.problems.push(`node ${JSON.stringify(this.node)}, ${field}: ${message}`);
  }

  /** A string field; undefined (with a problem) if it is anything else. */
  string(/** @type {string} */ field, /** @type {unknown} */ v) {
    if (typeof v === 'string') return v;
    this.problem(field, `expected a string, found ${kindOf(v)}`);
    return undefined;
  }

  /** A non-empty identifier (quest, node, objective names). */
  ident(/** @type {string} */ field, /** @type {unknown} */ v) {
    const s = this.string(field, v);
    if (s === '') {
      this.problem(field, 'must not be empty');
      return undefined;
    }
    return s;
  }

  /** `Conditions`: one expression, or a list that must all hold. */
  conditions(/** @type {string} */ field, /** @type {unknown} */ v) {
    if (typeof v === 'string') return v;
    if (Array.isArray(v)) {
      const parts = [];
      for (const [i, item] of v.entries()) {
        const s = this.string(`${field}[${i + 1}]`, item);
        if (s === undefined) return undefined;
        parts.push(`(${s})`);
      }
      return parts.length === 0 ? 'true' : parts.join(' && ');
    }
    this.problem(field, `expected a string or an array of strings, found ${kindOf(v)}`);
    return undefined;
  }

  /** A boolean field such as `Once`; false (with a problem) if it is anything else. */
  flag(/** @type {string} */ field, /** @type {unknown} */ v) {
    if (typeof v === 'boolean') return v;
    this.problem(field, `expected a boolean, found ${kindOf(v)}`);
    return false;
  }

  /**
   * A `NextNode` group: `{ Pick, Among, Fallback? }` (docs/CONTENT.md, "Line groups and
   * storylets"). @returns {Next | undefined}
   */
  group(/** @type {string} */ field, /** @type {Record<string, unknown>} */ v) {
    const before = this.count;
    for (const key of Object.keys(v)) {
      if (!GROUP_FIELDS.includes(key)) this.problem(`${field}.${key}`, `unknown field \`${key}\``);
    }
    const pick = /** @type {Pick | undefined} */ (PICKS.find((p) => p === v.Pick));
    if (!('Pick' in v)) this.problem(`${field}.Pick`, 'missing field `Pick`');
    else if (pick === undefined) this.problem(`${field}.Pick`, `expected one of ${PICKS.join(', ')}, found ${JSON.stringify(v.Pick)}`);
    /** @type {{ node: string, weight: number }[]} */
    const among = [];
    if (!('Among' in v)) this.problem(`${field}.Among`, 'missing field `Among`');
    else if (!Array.isArray(v.Among)) this.problem(`${field}.Among`, `expected a list of node names, found ${kindOf(v.Among)}`);
    else if (v.Among.length === 0 || v.Among.length > MAX_GROUP_CANDIDATES) {
      this.problem(`${field}.Among`, `a group holds 1 to ${MAX_GROUP_CANDIDATES} candidates, found ${v.Among.length}`);
    } else {
      for (const [i, item] of v.Among.entries()) {
        const at = `${field}.Among[${i + 1}]`;
        /** @type {string | undefined} */
        let node;
        let weight = 1;
        if (isObject(item)) {
          for (const key of Object.keys(item)) {
            if (key !== 'Node' && key !== 'Weight') this.problem(`${at}.${key}`, `unknown field \`${key}\``);
          }
          if ('Node' in item) node = this.ident(`${at}.Node`, item.Node);
          else this.problem(`${at}.Node`, 'missing field `Node`');
          if ('Weight' in item) {
            const w = item.Weight;
            if (typeof w !== 'number' || !Number.isInteger(w) || w < 1 || w > MAX_WEIGHT) {
              this.problem(`${at}.Weight`, `a Weight is a whole number from 1 to ${MAX_WEIGHT}, found ${JSON.stringify(w)}`);
            } else if (pick !== undefined && pick !== 'Weighted') {
              this.problem(`${at}.Weight`, `a Weight belongs to a Weighted group, not ${pick}`);
            } else weight = w;
          }
        } else node = this.ident(at, item);
        if (node === undefined) continue;
        if (among.some((c) => c.node === node)) this.problem(at, `the candidate ${JSON.stringify(node)} is named twice`);
        among.push({ node, weight });
      }
    }
    const fallback = 'Fallback' in v ? this.ident(`${field}.Fallback`, v.Fallback) : null;
    if (this.count > before || pick === undefined) return undefined;
    return { kind: 'group', pick, among, fallback: fallback ?? null };
  }

  /** `NextNode`: one node name, a non-empty list tried in order, or a group. @returns {Next | undefined} */
  next(/** @type {string} */ field, /** @type {unknown} */ v) {
    if (isObject(v)) return this.group(field, v);
    if (typeof v === 'string') {
      const target = this.ident(field, v);
      return target === undefined ? undefined : { kind: 'one', target };
    }
    if (Array.isArray(v)) {
      if (v.length === 0) {
        this.problem(field, 'a NextNode list must not be empty');
        return undefined;
      }
      const targets = v.map((item, i) => this.ident(`${field}[${i + 1}]`, item));
      return targets.every((t) => t !== undefined) ? { kind: 'first_of', targets: /** @type {string[]} */ (targets) } : undefined;
    }
    this.problem(field, `expected a node name, a list of node names or a group, found ${kindOf(v)}`);
    return undefined;
  }

  /**
   * `Shared` or a node's `Choice`: `{ Mode?, TimeLimit?, Tie? }`, only the keys the content
   * states (docs/CONTENT.md, "Shared conversations").
   * @returns {ChoiceSpec | undefined}
   */
  choice(/** @type {string} */ field, /** @type {unknown} */ v) {
    if (!isObject(v)) {
      this.problem(field, `expected an object with Mode, TimeLimit and Tie, found ${kindOf(v)}`);
      return undefined;
    }
    const before = this.count;
    /** @type {ChoiceSpec} */
    const spec = {};
    for (const key of Object.keys(v)) {
      if (!CHOICE_FIELDS.includes(key)) this.problem(`${field}.${key}`, `unknown field \`${key}\``);
    }
    if ('Mode' in v) {
      const mode = /** @type {any} */ (v.Mode);
      if (CHOICE_MODES.includes(mode)) spec.Mode = mode;
      else this.problem(`${field}.Mode`, `expected one of ${CHOICE_MODES.join(', ')}, found ${JSON.stringify(v.Mode)}`);
    }
    if ('TimeLimit' in v) {
      const limit = v.TimeLimit;
      if (typeof limit === 'number' && Number.isInteger(limit) && limit >= 1 && limit <= MAX_TIME_LIMIT_SECS) spec.TimeLimit = limit;
      else this.problem(`${field}.TimeLimit`, `expected whole seconds from 1 to ${MAX_TIME_LIMIT_SECS}, found ${JSON.stringify(limit)}`);
    }
    if ('Tie' in v) {
      const tie = /** @type {any} */ (v.Tie);
      if (TIE_RULES.includes(tie)) spec.Tie = tie;
      else this.problem(`${field}.Tie`, `expected one of ${TIE_RULES.join(', ')}, found ${JSON.stringify(v.Tie)}`);
    }
    return this.count === before ? spec : undefined;
  }

  /** `Actions`: an array of action objects. @returns {Action[]} */
  actions(/** @type {string} */ field, /** @type {unknown} */ v) {
    if (!Array.isArray(v)) {
      this.problem(field, `expected an array of actions, found ${kindOf(v)}`);
      return [];
    }
    /** @type {Action[]} */
    const out = [];
    for (const [i, item] of v.entries()) {
      const action = this.action(`${field}[${i + 1}]`, item);
      if (action) out.push(action);
    }
    return out;
  }

  /** One action: `Type` and exactly the fields that type takes. @returns {Action | undefined} */
  action(/** @type {string} */ field, /** @type {unknown} */ v) {
    if (!isObject(v)) {
      this.problem(field, `expected an action object, found ${kindOf(v)}`);
      return undefined;
    }
    if (!('Type' in v)) {
      this.problem(field, 'missing field `Type`');
      return undefined;
    }
    const type = this.string(`${field}.Type`, v.Type);
    if (type === undefined) return undefined;
    if (!isActionType(type)) {
      this.problem(`${field}.Type`, `unknown action type \`${type}\``);
      return undefined;
    }
    // The fields come from the action table (src/actions.generated.js).
    const spec = ACTION_SPECS[type];
    const before = this.count;
    for (const key of Object.keys(v)) {
      if (key !== 'Type' && !spec.fields.some((f) => f.keys.includes(key))) this.problem(`${field}.${key}`, `unknown field \`${key}\``);
    }
    const need = (/** @type {string} */ key) => {
      if (!(key in v)) {
        this.problem(`${field}.${key}`, `missing field \`${key}\``);
        return undefined;
      }
      return this.ident(`${field}.${key}`, v[key]);
    };
    const may = (/** @type {string} */ key) => (key in v ? this.ident(`${field}.${key}`, v[key]) : undefined);
    /** @type {Record<string, string | number>} */
    const fields = { Type: type };
    let complete = true;
    for (const declared of spec.fields) {
      const key = declared.keys[0];
      switch (declared.kind) {
        case 'ident': {
          const value = need(key);
          if (value === undefined) complete = false;
          else fields[key] = value;
          break;
        }
        // A missing target is the content check's business (the server reports it there).
        case 'target':
        case 'optional_ident': {
          const value = may(key);
          if (value !== undefined) fields[key] = value;
          break;
        }
        case 'amount': {
          let amount;
          if (key in v) {
            const n = v[key];
            if (typeof n !== 'number') this.problem(`${field}.${key}`, `expected a number, found ${kindOf(n)}`);
            else if (!Number.isInteger(n) || n < 1 || n > MAX_AMOUNT) {
              this.problem(`${field}.${key}`, `${key} must be a whole number from 1 to ${MAX_AMOUNT}, found ${n}`);
            } else amount = n;
          }
          const island = may(declared.keys[1]);
          // Naming an island forces the amount, even when it is 1 (PROTOCOL.md section 9.3).
          if (amount !== undefined || island !== undefined) fields[key] = amount ?? 1;
          if (island !== undefined) fields[declared.keys[1]] = island;
          break;
        }
      }
    }
    const action = complete ? /** @type {Action} */ (/** @type {unknown} */ (fields)) : undefined;
    return this.count === before ? action : undefined;
  }
}

/**
 * @param {string} name
 * @param {unknown} value
 * @param {string[]} problems
 * @returns {NodeModel | undefined}
 */
function decodeNode(name, value, problems) {
  const d = new Decoder(problems, name);
  if (!isObject(value)) {
    d.problem('(node)', `expected a node object, found ${kindOf(value)}`);
    return undefined;
  }
  for (const key of Object.keys(value)) {
    if (!NODE_FIELDS.includes(key)) d.problem(key, `unknown field \`${key}\``);
  }
  if ('Patch' in value) {
    if (value.Patch === true) d.problem('Patch', 'a patch of nothing: a conversation from the server has no layer below it');
    else if (typeof value.Patch !== 'boolean') d.problem('Patch', `expected a boolean, found ${kindOf(value.Patch)}`);
  }
  const lineId = 'LineId' in value ? d.ident('LineId', value.LineId) : undefined;
  const text = 'Text' in value ? d.string('Text', value.Text) : undefined;
  if ('Direction' in value) d.string('Direction', value.Direction);
  const voice = 'Voice' in value ? decodeVoice(d, value.Voice) : undefined;
  const actions = 'Actions' in value ? d.actions('Actions', value.Actions) : [];
  const conditions = 'Conditions' in value ? d.conditions('Conditions', value.Conditions) : undefined;
  const choice = 'Choice' in value ? d.choice('Choice', value.Choice) : undefined;
  const once = 'Once' in value ? d.flag('Once', value.Once) : false;
  const exit = decodeExit(d, value);
  if (d.count > 0 || exit === undefined) return undefined;
  return {
    lineId: lineId ?? null,
    text: text ?? '',
    voice: voice ?? null,
    exit,
    actions,
    conditions: conditions ?? null,
    choice: choice ?? null,
    once,
  };
}

/** `Voice`: `{ "Clip": "voice/ja/line-3f9a0c11d2.wav", "Ms": 2350 }`. */
function decodeVoice(/** @type {Decoder} */ d, /** @type {unknown} */ v) {
  if (!isObject(v)) {
    d.problem('Voice', `expected an object with Clip and Ms, found ${kindOf(v)}`);
    return undefined;
  }
  let clip;
  let ms;
  for (const [key, value] of Object.entries(v)) {
    if (key === 'Clip') {
      if (typeof value === 'string' && value !== '') clip = value;
      else d.problem('Voice.Clip', `expected a clip path, found ${kindOf(value)}`);
    } else if (key === 'Ms') {
      if (typeof value === 'number' && Number.isInteger(value) && value >= 0) ms = value;
      else d.problem('Voice.Ms', `expected whole milliseconds, found ${JSON.stringify(value)}`);
    } else {
      d.problem(`Voice.${key}`, `unknown field \`${key}\``);
    }
  }
  if (clip === undefined || ms === undefined) {
    d.problem('Voice', 'needs both Voice.Clip and Voice.Ms');
    return undefined;
  }
  return { clip, ms };
}

/**
 * The node's exit: at most one of `Responses`, `NextNode` and `Close: true`.
 * @param {Decoder} d
 * @param {Record<string, unknown>} value
 * @returns {Exit | undefined}
 */
function decodeExit(d, value) {
  let close = false;
  if ('Close' in value) {
    if (typeof value.Close === 'boolean') close = value.Close;
    else d.problem('Close', `expected a boolean, found ${kindOf(value.Close)}`);
  }
  const present = [];
  if ('Responses' in value) present.push('Responses');
  if ('NextNode' in value) present.push('NextNode');
  if (close) present.push('Close');
  if (present.length > 1) {
    d.problem(present[1], `a node has at most one exit, found ${present.join(', ')}`);
    return undefined;
  }
  if ('Responses' in value) {
    const list = value.Responses;
    if (!Array.isArray(list)) {
      d.problem('Responses', `expected an array of responses, found ${kindOf(list)}`);
      return undefined;
    }
    /** @type {ResponseModel[]} */
    const responses = [];
    for (const [i, item] of list.entries()) {
      const r = decodeResponse(d, i + 1, item);
      if (r) responses.push(r);
    }
    return { kind: 'responses', responses };
  }
  if ('NextNode' in value) {
    const next = d.next('NextNode', value.NextNode);
    return next === undefined ? undefined : { kind: 'next', next };
  }
  return close ? { kind: 'close' } : { kind: 'end' };
}

/** @returns {ResponseModel | undefined} */
function decodeResponse(/** @type {Decoder} */ d, /** @type {number} */ index, /** @type {unknown} */ v) {
  const at = `Responses[${index}]`;
  if (!isObject(v)) {
    d.problem(at, `expected a response object, found ${kindOf(v)}`);
    return undefined;
  }
  const before = d.count;
  for (const key of Object.keys(v)) {
    if (!RESPONSE_FIELDS.includes(key)) d.problem(`${at}.${key}`, `unknown field \`${key}\``);
  }
  const lineId = 'LineId' in v ? d.ident(`${at}.LineId`, v.LineId) : undefined;
  const text = 'Text' in v ? d.string(`${at}.Text`, v.Text) : undefined;
  const actions = 'Actions' in v ? d.actions(`${at}.Actions`, v.Actions) : [];
  const next = 'NextNode' in v ? d.next(`${at}.NextNode`, v.NextNode) : undefined;
  const conditions = 'Conditions' in v ? d.conditions(`${at}.Conditions`, v.Conditions) : undefined;
  const once = 'Once' in v ? d.flag(`${at}.Once`, v.Once) : false;
  const disabled = 'Disabled' in v ? d.string(`${at}.Disabled`, v.Disabled) : undefined;
  const disabledLineId = 'DisabledLineId' in v ? d.ident(`${at}.DisabledLineId`, v.DisabledLineId) : undefined;
  if (d.count > before) return undefined;
  return {
    lineId: lineId ?? null,
    text: text ?? '',
    actions,
    next: next ?? null,
    conditions: conditions ?? null,
    once,
    disabled: disabled ?? null,
    disabledLineId: disabledLineId ?? null,
  };
}

/** An immutable conversation graph. Build it with `buildGraph`. */
export class DialogueGraph {
  /**
   * @param {string} name
   * @param {string | null} speaker
   * @param {string | null} firstNode
   * @param {Vertex[]} vertices
   * @param {AuthoredAction[]} actions
   * @param {Map<string, number>} byName
   * @param {string[]} problems
   * @param {ChoiceSpec | null} [shared]
   */
  constructor(name, speaker, firstNode, vertices, actions, byName, problems, shared = null) {
    /** The conversation's name (`opened.conversation`). */
    this.name = name;
    /** The conversation's `Speaker`. */
    this.speaker = speaker;
    /** The `FirstNode` as written (it may name no node: see `problems`). */
    this.firstNode = firstNode;
    /** Every vertex, by id; vertex 0 is the root. @type {ReadonlyArray<Vertex>} */
    this.vertices = vertices;
    /** Every authored action, by index. @type {ReadonlyArray<AuthoredAction>} */
    this.actions = actions;
    /** What was wrong with the content; empty for content from a server. @type {ReadonlyArray<string>} */
    this.problems = problems;
    /**
     * The conversation's `Shared` as written (only the keys the content states), or null for a
     * conversation each player walks alone. A party walks a shared one together (PROTOCOL.md
     * section 17); a player with no party walks it as any other.
     */
    this.shared = shared;
    /** @private */
    this.byName = byName;
  }

  /**
   * How the group picks among `line`'s responses in a shared conversation: the line's
   * `Choice`, else the conversation's `Shared`, with the defaults filled in
   * (docs/CONTENT.md, "Shared conversations"). Null when the conversation is not shared or
   * `line` is not an NPC line.
   * @param {number | string} line  a line's id or name
   * @returns {ChoiceRule | null}
   */
  choiceRule(line) {
    if (this.shared === null) return null;
    const v = typeof line === 'string' ? this.find(line) : this.vertex(line);
    if (!v || v.kind !== 'line') return null;
    return choiceRule(v.choice ?? this.shared);
  }

  /**
   * The NPC line a response hangs from (`<line>_r<i>`), or undefined when `response` is not a
   * response.
   * @param {number | string} response  its id or name
   * @returns {Vertex | undefined}
   */
  lineOf(response) {
    const v = typeof response === 'string' ? this.find(response) : this.vertex(response);
    if (!v || v.kind !== 'response') return undefined;
    return this.vertices.find((line) => line.kind === 'line' && line.outputs.includes(v.id));
  }

  /**
   * The responses of a line, in priority order (`<line>_r1` first), whatever their conditions.
   * @param {number | string} line  its id or name
   * @returns {Vertex[]}
   */
  responsesOf(line) {
    const v = typeof line === 'string' ? this.find(line) : this.vertex(line);
    if (!v || v.kind !== 'line') return [];
    return v.outputs.map((id) => /** @type {Vertex} */ (this.vertex(id))).filter((r) => r.kind === 'response');
  }

  /**
   * The vertex of a node or response name (`Greet`, `Greet_r2`), or undefined.
   * @param {string} name
   * @returns {Vertex | undefined}
   */
  find(name) {
    const id = this.byName.get(name);
    return id === undefined ? undefined : this.vertices[id];
  }

  /**
   * A vertex by id.
   * @param {number} id
   * @returns {Vertex | undefined}
   */
  vertex(id) {
    return this.vertices[id];
  }

  /** The NPC lines (one per node), in id order. */
  lines() {
    return this.vertices.filter((v) => v.kind === 'line');
  }
}

/**
 * Builds the graph of a conversation from its canonical JSON (`opened.content` or
 * `conversation.content`), or from that JSON already parsed.
 * @param {string | Record<string, unknown>} content
 * @param {string} [name]  the conversation's name, for messages (`opened.conversation`)
 * @returns {DialogueGraph}
 * @throws {ContentError} when the content is not JSON or not an object (nothing to build)
 */
export function buildGraph(content, name = 'conversation') {
  let root = content;
  if (typeof content === 'string') {
    try {
      root = JSON.parse(content);
    } catch (e) {
      throw new ContentError(name, `the content is not JSON: ${e instanceof Error ? e.message : e}`, { cause: e });
    }
  }
  if (!isObject(root)) throw new ContentError(name, `the content must be an object of named nodes, found ${kindOf(root)}`);

  /** @type {string[]} */
  const problems = [];
  const top = new Decoder(problems, '(conversation)');
  let firstNode = null;
  let speaker = null;
  /** @type {ChoiceSpec | null} */
  let shared = null;
  /** @type {[string, NodeModel][]} */
  const nodes = [];
  for (const [key, value] of Object.entries(root)) {
    if (key === FIRST_NODE) firstNode = top.ident(FIRST_NODE, value) ?? null;
    else if (key === SPEAKER) speaker = top.ident(SPEAKER, value) ?? null;
    // A shared conversation whose `Shared` cannot be read is still shared: the defaults apply.
    else if (key === SHARED) shared = top.choice(SHARED, value) ?? {};
    else {
      const node = decodeNode(key, value, problems);
      if (node) nodes.push([key, node]);
    }
  }
  nodes.sort(([a], [b]) => compareUtf8(a, b));

  /** @type {Vertex[]} */
  const vertices = [];
  /** @type {AuthoredAction[]} */
  const actions = [];
  /** @param {VertexKind} kind @param {string} vname @param {string} text @param {number} priority */
  const push = (kind, vname, text, priority) => {
    /** @type {Vertex} */
    const v = {
      id: vertices.length,
      kind,
      name: vname,
      text,
      priority,
      close: false,
      awaitsJump: false,
      voice: null,
      lineId: null,
      outputs: [],
      actions: [],
      condition: null,
      conditionText: null,
      choice: null,
      once: false,
      disabled: null,
      disabledLineId: null,
      tests: 0,
      group: null,
    };
    vertices.push(v);
    return v;
  };

  // Pass one: the root, a line per node, then each node's responses and branches.
  push('root', '', '', 0);
  /** Exit targets resolve to lines only, as the server looks them up before other vertices exist. @type {Map<string, number>} */
  const lineIds = new Map();
  for (const [nodeName, node] of nodes) {
    const v = push('line', nodeName, node.text, 0);
    v.close = node.exit.kind === 'close';
    v.voice = node.voice;
    v.lineId = node.lineId;
    v.choice = node.choice;
    v.once = node.once;
    lineIds.set(nodeName, v.id);
  }
  /** Per node: its branch vertices in the order pass two wires them, and its responses. @type {Vertex[][]} */
  const madePerNode = [];
  /** @type {Vertex[][]} */
  const responsesPerNode = [];
  for (const [nodeName, node] of nodes) {
    /** @type {Vertex[]} */
    const made = [];
    /** @type {Vertex[]} */
    const responses = [];
    if (node.exit.kind === 'next' && node.exit.next.kind !== 'one') {
      made.push(push('branch', `${nodeName}_b${vertices.length}`, '', 1));
    } else if (node.exit.kind === 'responses') {
      node.exit.responses.forEach((r, i) => {
        const rv = push('response', `${nodeName}_r${i + 1}`, r.text, i + 1);
        rv.lineId = r.lineId;
        rv.once = r.once;
        rv.disabled = r.disabled;
        rv.disabledLineId = r.disabledLineId;
        responses.push(rv);
      });
      for (const r of node.exit.responses) {
        if (r.next && r.next.kind !== 'one') made.push(push('branch', `${nodeName}_b${vertices.length}`, '', 1));
      }
    }
    madePerNode.push(made);
    responsesPerNode.push(responses);
  }
  /** Names to ids: lines first, then made vertices; the first vertex of a name keeps it. */
  const byName = new Map(lineIds);
  for (const v of vertices) {
    if (v.kind === 'line') continue;
    if (v.kind === 'root') continue;
    if (byName.has(v.name)) {
      problems.push(`vertex ${JSON.stringify(v.name)}: the name is taken by an earlier vertex (names must be unique: the wire refers to vertices by name)`);
    } else byName.set(v.name, v.id);
  }

  /** @param {string} target @param {string} from @param {string} field */
  const resolve = (target, from, field) => {
    const id = lineIds.get(target);
    if (id === undefined) problems.push(`node ${JSON.stringify(from)}, ${field}: no node named ${JSON.stringify(target)}`);
    return id;
  };
  /** @param {Vertex} v @param {Action[]} authored */
  const setActions = (v, authored) => {
    for (const action of authored) {
      let payload;
      try {
        payload = buildPayload(action);
      } catch (e) {
        // Decoding already checked every field; this is a bug if it happens.
        throw new ContentError(name, `${v.name}: ${e instanceof PayloadError ? e.message : e}`, { cause: e });
      }
      const a = { index: actions.length, action, type: /** @type {ActionType} */ (action.Type), payload, vertex: v.id };
      actions.push(a);
      v.actions.push(a);
      if (a.type === 'CheckQuest') v.awaitsJump = true;
    }
  };
  /** @param {Vertex} v @param {string | null} text @param {string} node @param {string} field */
  const setCondition = (v, text, node, field) => {
    if (text === null) return;
    v.conditionText = text;
    try {
      v.condition = parseCondition(text);
      v.tests = countTests(v.condition);
    } catch (e) {
      problems.push(`node ${JSON.stringify(node)}, ${field}: ${e instanceof Error ? e.message : e}`);
      // Fail closed: a condition that cannot be read never holds.
      v.condition = { kind: 'const', value: false };
    }
  };

  // Pass two: wire the root, then every node in id order.
  if (firstNode !== null) {
    const first = lineIds.get(firstNode);
    if (first === undefined) problems.push(`FirstNode: no node named ${JSON.stringify(firstNode)}`);
    else vertices[0].outputs.push(first);
  }
  nodes.forEach(([nodeName, node], i) => {
    const v = vertices[i + 1];
    const made = madePerNode[i][Symbol.iterator]();
    /** @param {Next} next @param {string} field @returns {number | undefined} */
    const wire = (next, field) => {
      if (next.kind === 'one') return resolve(next.target, nodeName, field);
      const branch = /** @type {Vertex} */ (made.next().value);
      if (next.kind === 'first_of') {
        next.targets.forEach((t, k) => {
          const id = resolve(t, nodeName, `${field}[${k + 1}]`);
          if (id !== undefined) branch.outputs.push(id);
        });
        return branch.id;
      }
      /** @type {GroupRule} */
      const rule = { pick: next.pick, weights: [], fallback: null };
      next.among.forEach((c, k) => {
        const id = resolve(c.node, nodeName, `${field}.Among[${k + 1}]`);
        if (id === undefined) return;
        branch.outputs.push(id);
        rule.weights.push(c.weight);
      });
      if (next.fallback !== null) rule.fallback = resolve(next.fallback, nodeName, `${field}.Fallback`) ?? null;
      branch.group = rule;
      return branch.id;
    };
    setActions(v, node.actions);
    setCondition(v, node.conditions, nodeName, 'Conditions');
    if (node.exit.kind === 'next') {
      const target = wire(node.exit.next, 'NextNode');
      if (target !== undefined) v.outputs.push(target);
    } else if (node.exit.kind === 'responses') {
      node.exit.responses.forEach((r, k) => {
        const rv = responsesPerNode[i][k];
        v.outputs.push(rv.id);
        setActions(rv, r.actions);
        setCondition(rv, r.conditions, nodeName, `Responses[${k + 1}].Conditions`);
        if (r.next) {
          const target = wire(r.next, `Responses[${k + 1}].NextNode`);
          if (target !== undefined) rv.outputs.push(target);
        }
      });
    }
  });
  return new DialogueGraph(name, speaker, firstNode, vertices, actions, byName, problems, shared);
}
