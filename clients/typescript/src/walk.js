// The walk (docs/PROTOCOL.md sections 8.3 and 9; dialogue/src/walk.rs and client.rs are the
// reference).
//
// `Walk` is the server's bookkeeping, rule for rule: the reachable set R of vertices the player
// has been shown, and the arming counters of authored actions. A client keeps the same one so
// that what it offers is what the server accepts.
//
// `ClientWalk` adds what only a client has: the screen, and the order in which messages go out.
//
// - Showing a line sends its node actions at once, in order.
// - A response's actions are held until the player's next accepted step (advancing, or picking a
//   response), or go out at once when nothing follows it.
// - A response or line carrying `CheckQuest` does not follow its `NextNode`: the client sends the
//   action and waits for the server's `jump`; until it comes, every step is refused
//   (`awaits_jump`), on the server too.
// - Advancing past a final line (`Close`, or no exit) still sends the `advance` and the held
//   actions; only then has the conversation ended, and the step's last message is `close`.
// - One answer per input: every step is answered by the server's walk, so the client refuses
//   exactly what the server would, with the same code, and accepts what it would accept (a line
//   or response shown earlier may be advanced or picked again: R only grows).
//
// A shared conversation (PROTOCOL.md section 17; `opened` with `shared`) is walked by the party:
// the player's own steps do not move the walk. Picking a response is a vote (`choose` is sent,
// nothing is shown), and only the conversation's leader advances (`advance` is sent, nothing is
// shown). The walk moves when the server says the group did: `chosen` (`followChosen`),
// `advanced` (`followAdvanced`) and `jump`. Following sends what moving sends alone: the held
// actions first (the group moved past the reply on screen), then the next line's node actions;
// the chosen response's actions only if it was shown to this player and still holds for them.
//
// Writing power (PROTOCOL.md section 10.1): the walk keeps the visit counts it adds (a shown
// line, as soon as it is shown: its responses see this showing; a picked response), the order it showed lines in and
// the number of `Weighted` draws it made, and reads conditions with the sheet's counts plus its
// own. A once line already counted is passed over as a next line or group candidate; a once
// response already picked is hidden (not added to R, not a choice, `condition_failed`). A
// response with `Disabled` whose conditions fail joins R greyed: listed with its reason, not a
// choice (`response_disabled`), no obstacle to advancing.

import { asFacts, evaluate } from './condition.js';
import { draw } from './ballot.js';
import { WalkRefusal } from './errors.js';

/**
 * @import { Facts } from './condition.js'
 * @import { DialogueGraph, Vertex, GroupRule } from './graph.js'
 * @import { FactSheet, ActionType } from './protocol.generated.js'
 * @import { WalkMessage } from './protocol.js'
 */

/** The most runs one arming can stockpile (PROTOCOL.md section 9.2). */
export const ARM_CAP = 2;

/** Branches hold only lines by construction; the bound keeps a hand-made graph from looping. */
const MAX_TRANSPARENT_DEPTH = 8;

/**
 * What a step puts on screen: a line, the wait for a jump (a `CheckQuest` response was picked),
 * or the end (nothing follows).
 * @typedef {{ kind: "line", line: number } | { kind: "await_jump" } | { kind: "end" }} Shown
 */

/** True if the vertex's `Conditions` hold (or it has none). @param {Vertex} v @param {Facts | FactSheet} facts */
function conditionHolds(v, facts) {
  return v.condition === null || evaluate(v.condition, facts);
}

/**
 * What a walk remembers beyond R and the armings (PROTOCOL.md section 10.1).
 * @typedef {object} WalkMemory
 * @property {Map<number, number>} visits  the visit counts this walk added, by vertex
 * @property {Map<number, number>} shown  when each line was last shown in this walk (a sequence
 *   number: larger is more recent, and more recent than any `facts.last_seen`)
 * @property {number} sequence  the last sequence number given
 * @property {number} draws  the `Weighted` picks made so far: the next draw's `k`
 */

/** @returns {WalkMemory} */
function newMemory() {
  return { visits: new Map(), shown: new Map(), sequence: 0, draws: 0 };
}

/**
 * The facts a walk's conditions read: the sheet's (or the given `Facts`), with the visits this
 * walk added on top of `visits(...)`.
 * @param {DialogueGraph} graph
 * @param {Facts | FactSheet} facts
 * @param {WalkMemory} memory
 * @returns {Facts}
 */
function withWalk(graph, facts, memory) {
  const base = asFacts(facts);
  return {
    questStatus: (quest) => base.questStatus(quest),
    objectiveProgress: (quest, objective) => base.objectiveProgress(quest, objective),
    has: (name) => base.has(name),
    counter: (counter) => base.counter(counter),
    variable: (name) => base.variable?.(name),
    visits: (vertex) => {
      const id = graph.find(vertex)?.id;
      return Number(base.visits?.(vertex) ?? 0) + (id === undefined ? 0 : (memory.visits.get(id) ?? 0));
    },
    opens: () => base.opens?.() ?? 0,
    lastSeen: (line) => base.lastSeen?.(line),
    seed: () => base.seed?.(),
  };
}

/** How often `v` was shown or picked, the sheet's count and the walk's. @param {Vertex} v @param {Facts} facts */
function visitsOf(v, facts) {
  return Number(facts.visits?.(v.name) ?? 0);
}

/** A once line or response already counted: passed over, hidden. @param {Vertex} v @param {Facts} facts */
function spent(v, facts) {
  return v.once && visitsOf(v, facts) > 0;
}

/**
 * A line may be shown as a next line or group candidate: its `Conditions` hold and it is not a
 * once line already shown. @param {Vertex} v @param {Facts} facts
 */
function lineHolds(v, facts) {
  return conditionHolds(v, facts) && !spent(v, facts);
}

/**
 * A response the player may pick now: its `Conditions` hold and it is not a once response
 * already picked. @param {Vertex} v @param {Facts} facts
 */
function responseHolds(v, facts) {
  return conditionHolds(v, facts) && !spent(v, facts);
}

/**
 * The NPC line that follows `from` (a line or a response): the first output by priority whose
 * conditions hold, passing through branches and picking through groups; undefined when none
 * does. Without `memory` (a walk's own), no visit of this conversation and no draw yet.
 * @param {DialogueGraph} graph
 * @param {number} from
 * @param {Facts | FactSheet} facts
 * @param {WalkMemory} [memory]  a `Weighted` pick counts its draw in it
 * @returns {number | undefined}
 */
export function nextLine(graph, from, facts, memory = newMemory()) {
  return firstLine(graph, graph.vertex(from)?.outputs ?? [], withWalk(graph, facts, memory), memory, 0);
}

/**
 * @param {DialogueGraph} graph
 * @param {ReadonlyArray<number>} outputs
 * @param {Facts} facts
 * @param {WalkMemory} memory
 * @param {number} depth
 * @returns {number | undefined}
 */
function firstLine(graph, outputs, facts, memory, depth) {
  for (const out of outputs) {
    const v = graph.vertex(out);
    if (!v) continue;
    if (v.kind === 'line') {
      if (lineHolds(v, facts)) return out;
    } else if (v.kind === 'branch' && v.group !== null) {
      // A group's pick is final: its fallback, or nothing (the conversation ends there).
      return pick(graph, v, v.group, facts, memory);
    } else if (v.kind === 'branch' && depth < MAX_TRANSPARENT_DEPTH && conditionHolds(v, facts)) {
      const line = firstLine(graph, v.outputs, facts, memory, depth + 1);
      if (line !== undefined) return line;
    }
  }
  return undefined;
}

/**
 * A group's next line (PROTOCOL.md section 10.1): among the candidates that hold, by the rule;
 * the fallback when none holds (its conditions and `Once` not tested).
 * @param {DialogueGraph} graph
 * @param {Vertex} branch
 * @param {GroupRule} rule
 * @param {Facts} facts
 * @param {WalkMemory} memory
 * @returns {number | undefined}
 */
function pick(graph, branch, rule, facts, memory) {
  /** @type {{ v: Vertex, weight: number }[]} */
  const holding = [];
  branch.outputs.forEach((id, i) => {
    const v = graph.vertex(id);
    if (v && v.kind === 'line' && lineHolds(v, facts)) holding.push({ v, weight: rule.weights[i] ?? 1 });
  });
  if (holding.length === 0) return rule.fallback ?? undefined;
  switch (rule.pick) {
    case 'First':
      return holding[0].v.id;
    case 'MostSpecific': {
      let best = holding[0];
      for (const c of holding) if (c.v.tests > best.v.tests) best = c;
      return best.v.id;
    }
    case 'LeastRecent': {
      // Never shown first; else the oldest last showing (this walk's are the most recent).
      /** @param {Vertex} v @returns {[number, bigint]} */
      const recency = (v) => {
        const here = memory.shown.get(v.id);
        if (here !== undefined) return [2, BigInt(here)];
        const seen = facts.lastSeen?.(v.name);
        if (seen !== undefined) return [1, BigInt(seen)];
        // Seen before with no time kept: as if at time 0 (the reference's rule).
        return Number(facts.visits?.(v.name) ?? 0) > 0 ? [1, 0n] : [0, 0n];
      };
      let best = holding[0];
      let bestAt = recency(best.v);
      for (const c of holding) {
        const at = recency(c.v);
        if (at[0] < bestAt[0] || (at[0] === bestAt[0] && at[1] < bestAt[1])) {
          best = c;
          bestAt = at;
        }
      }
      return best.v.id;
    }
    case 'Weighted': {
      const total = holding.reduce((n, c) => n + c.weight, 0);
      const r = draw(facts.seed?.() ?? '0', memory.draws) % BigInt(total);
      memory.draws++;
      let running = 0n;
      for (const c of holding) {
        running += BigInt(c.weight);
        if (running > r) return c.v.id;
      }
      return holding[holding.length - 1].v.id;
    }
  }
}

/**
 * The server's walk state for one open conversation: R and the armings. Every refusal is a
 * `WalkRefusal` with the wire code and leaves the walk exactly as it was.
 */
export class Walk {
  /** @param {DialogueGraph} graph */
  constructor(graph) {
    this.graph = graph;
    /** R: the vertices the player has been shown. @type {Set<number>} */
    this.reachable = new Set();
    /** Runs left per authored action index. @type {Map<number, number>} */
    this.armed = new Map();
    /** A quest check was chosen or shown and its jump has not come yet. */
    this.awaitingJump = false;
    this.closed = false;
    /** Visits, showing order and draws of this walk (PROTOCOL.md section 10.1). @type {WalkMemory} */
    this.memory = newMemory();
  }

  /**
   * The facts conditions read in this walk: `facts` with this walk's visits added.
   * @param {Facts | FactSheet} facts
   * @returns {Facts}
   */
  factsFor(facts) {
    return withWalk(this.graph, facts, this.memory);
  }

  /**
   * The visit counts this walk added, by vertex name: each line shown, each response picked.
   * @returns {Record<string, number>}
   */
  counted() {
    /** @type {Record<string, number>} */
    const out = {};
    for (const [id, n] of [...this.memory.visits].sort(([a], [b]) => a - b)) out[/** @type {Vertex} */ (this.graph.vertex(id)).name] = n;
    return out;
  }

  /** One more visit of `v` in this walk. @param {number} v */
  count(v) {
    this.memory.visits.set(v, (this.memory.visits.get(v) ?? 0) + 1);
  }

  /**
   * Opens a walk on `entry` (the server's choice, `opened.entry`) and shows it, whatever its
   * conditions.
   * @param {DialogueGraph} graph
   * @param {number} entry
   * @param {Facts | FactSheet} facts
   * @returns {{ walk: Walk, shown: Shown }}
   */
  static open(graph, entry, facts) {
    const walk = new Walk(graph);
    const shown = walk.jumpTo(entry, facts);
    return { walk, shown };
  }

  /** @param {number} v */
  isReachable(v) {
    return this.reachable.has(v);
  }

  /**
   * The responses the player may pick under `line` now, in priority order: those in R whose
   * `Conditions` hold against `facts`. None while a quest check awaits its jump.
   * @param {number} line
   * @param {Facts | FactSheet} facts
   * @returns {number[]}
   */
  choices(line, facts) {
    if (this.awaitingJump) return [];
    const f = this.factsFor(facts);
    return this.shownResponses(line).filter((r) => responseHolds(/** @type {Vertex} */ (this.graph.vertex(r)), f));
  }

  /**
   * The responses under `line` shown greyed out now, in priority order: in R, with `Disabled`,
   * not a once response already picked, and whose `Conditions` fail against `facts`. None while
   * a quest check awaits its jump.
   * @param {number} line
   * @param {Facts | FactSheet} facts
   * @returns {number[]}
   */
  greyed(line, facts) {
    if (this.awaitingJump) return [];
    const f = this.factsFor(facts);
    return this.shownResponses(line).filter((r) => {
      const v = /** @type {Vertex} */ (this.graph.vertex(r));
      return v.disabled !== null && !spent(v, f) && !conditionHolds(v, f);
    });
  }

  /**
   * Every response under `line` the player has been shown (in R), whatever its conditions say now.
   * @param {number} line
   * @returns {number[]}
   */
  shownResponses(line) {
    return (this.graph.vertex(line)?.outputs ?? []).filter((r) => this.graph.vertex(r)?.kind === 'response' && this.reachable.has(r));
  }

  /** How many more times the authored action may run. @param {number} index */
  armings(index) {
    return this.armed.get(index) ?? 0;
  }

  /**
   * The player advances past the NPC line `line`.
   * @param {number} line
   * @param {Facts | FactSheet} facts
   * @returns {Shown}
   */
  advance(line, facts) {
    this.checkAdvance(line, facts);
    return this.follow(line, facts);
  }

  /**
   * The player picks the response `response`. Its conditions are checked again: the facts may
   * have changed since it was shown.
   * @param {number} response
   * @param {Facts | FactSheet} facts
   * @returns {Shown}
   */
  choose(response, facts) {
    const v = this.checkChoose(response, facts);
    this.arm(v);
    this.count(response);
    if (v.awaitsJump) {
      this.awaitingJump = true;
      return { kind: 'await_jump' };
    }
    return this.follow(response, facts);
  }

  /**
   * The checks of a `choose`, in the server's order, without taking the step.
   * @param {number} response
   * @param {Facts | FactSheet} facts
   * @returns {Vertex} the response
   */
  checkChoose(response, facts) {
    const v = this.vertexFor(response);
    if (!this.reachable.has(response)) throw new WalkRefusal('not_reachable', 'the player has not been shown this', v.name);
    if (v.kind !== 'response') throw new WalkRefusal('not_a_response', 'not a response', v.name);
    if (this.awaitingJump) throw new WalkRefusal('awaits_jump', "waiting for the server's jump after a quest check", v.name);
    const f = this.factsFor(facts);
    if (spent(v, f)) throw new WalkRefusal('condition_failed', 'a once response already picked', v.name);
    if (!conditionHolds(v, f)) {
      if (v.disabled !== null) throw new WalkRefusal('response_disabled', `the response is greyed out: ${v.disabled}`, v.name);
      throw new WalkRefusal('condition_failed', "the response's conditions do not hold", v.name);
    }
    return v;
  }

  /**
   * The checks of an `advance`, in the server's order, without taking the step.
   * @param {number} line
   * @param {Facts | FactSheet} facts
   * @returns {Vertex} the line
   */
  checkAdvance(line, facts) {
    const v = this.vertexFor(line);
    if (!this.reachable.has(line)) throw new WalkRefusal('not_reachable', 'the player has not been shown this', v.name);
    if (v.kind !== 'line') throw new WalkRefusal('not_a_line', 'not an NPC line', v.name);
    if (v.awaitsJump || this.awaitingJump) throw new WalkRefusal('awaits_jump', "this line waits for the server's jump", v.name);
    if (this.choices(line, facts).length > 0) throw new WalkRefusal('awaits_choice', 'this line waits for the player to pick a response', v.name);
    return v;
  }

  /**
   * True if the player was shown `response` (it is in R) and its `Conditions` hold for `facts`
   * now: what a group's decision needs to arm it on this walk.
   * @param {number} response
   * @param {Facts | FactSheet} facts
   */
  shownAndHolds(response, facts) {
    const v = this.graph.vertex(response);
    return v !== undefined && this.reachable.has(response) && responseHolds(v, this.factsFor(facts));
  }

  /**
   * The server's walk of a shared conversation's leader applies the group's decision:
   * `response` won the ballot on its line (it need not be in R: others may have voted it in,
   * but its line must be). Its actions are armed only if it was shown and holds for `facts`;
   * then, unless it carries a `CheckQuest`, its next line is shown with `facts` (the leader's).
   * @param {number} response
   * @param {Facts | FactSheet} facts
   * @returns {Shown}
   */
  groupChoose(response, facts) {
    const v = this.decided(response);
    if (this.shownAndHolds(response, facts)) this.arm(v);
    if (this.reachable.has(response)) this.count(response);
    if (v.awaitsJump) {
      this.awaitingJump = true;
      return { kind: 'await_jump' };
    }
    return this.follow(response, facts);
  }

  /**
   * A participant's walk follows the group's decision (`chosen`): `response` won, and `node` is
   * the line shown next (undefined: a quest check's jump is awaited, or the conversation ends
   * there). The response's actions are armed only if it was shown to this participant and holds
   * for their `facts`; `node` is shown as a `jump` shows it. Refused, changing nothing, when the
   * walk is closed, `response` is no response whose line was shown, a quest check awaits its
   * jump, or `node` is not an NPC line.
   * @param {number} response
   * @param {number | undefined} node
   * @param {Facts | FactSheet} facts
   * @returns {Shown}
   */
  followChosen(response, node, facts) {
    const v = this.decided(response);
    if (node !== undefined) this.checkLine(node);
    if (this.shownAndHolds(response, facts)) this.arm(v);
    // A decision counts as a pick for the participants who were shown the response.
    if (this.reachable.has(response)) this.count(response);
    if (node !== undefined) {
      this.show(/** @type {Vertex} */ (this.graph.vertex(node)), facts);
      return { kind: 'line', line: node };
    }
    if (v.awaitsJump) {
      this.awaitingJump = true;
      return { kind: 'await_jump' };
    }
    return { kind: 'end' };
  }

  /**
   * A participant's walk follows the leader's advance (`advanced`): `node` is shown as a `jump`
   * shows it; undefined: the conversation ends there. Refused, changing nothing, when the walk
   * is closed, a quest check awaits its jump, or `node` is not an NPC line.
   * @param {number | undefined} node
   * @param {Facts | FactSheet} facts
   * @returns {Shown}
   */
  followAdvanced(node, facts) {
    this.checkOpen();
    if (this.awaitingJump) throw new WalkRefusal('awaits_jump', "waiting for the server's jump after a quest check");
    if (node === undefined) return { kind: 'end' };
    this.checkLine(node);
    this.show(/** @type {Vertex} */ (this.graph.vertex(node)), facts);
    return { kind: 'line', line: node };
  }

  /**
   * The checks of a group's decision, in order: the walk is open, `response` is a response whose
   * line the player was shown, and no quest check awaits its jump.
   * @param {number} response
   * @returns {Vertex}
   */
  decided(response) {
    const v = this.vertexFor(response);
    if (v.kind !== 'response') throw new WalkRefusal('not_a_response', 'not a response', v.name);
    const line = this.graph.lineOf(response);
    if (!line || !this.reachable.has(line.id)) throw new WalkRefusal('not_reachable', "the player has not been shown this response's line", v.name);
    if (this.awaitingJump) throw new WalkRefusal('awaits_jump', "waiting for the server's jump after a quest check", v.name);
    return v;
  }

  /** A line the server may show: a vertex of the graph that is an NPC line. @param {number} node */
  checkLine(node) {
    const v = this.graph.vertex(node);
    if (!v) throw new WalkRefusal('unknown_vertex', `no vertex ${node} in this conversation`);
    if (v.kind !== 'line') throw new WalkRefusal('internal', 'the server can only show an NPC line', v.name);
  }

  /**
   * The server's decision (a quest check's `jump`, or the entry): show `target`.
   * @param {number} target
   * @param {Facts | FactSheet} facts
   * @returns {Shown}
   */
  jumpTo(target, facts) {
    const v = this.vertexFor(target);
    if (v.kind !== 'line') throw new WalkRefusal('internal', 'a jump must target an NPC line', v.name);
    this.awaitingJump = false;
    this.show(v, facts);
    return { kind: 'line', line: target };
  }

  /**
   * The armed action a type and payload name, without spending it.
   * @param {ActionType} type
   * @param {string} payload
   * @returns {number} the authored action's index
   */
  checkAction(type, payload) {
    this.checkOpen();
    let typeArmed = false;
    for (const [index, remaining] of [...this.armed].sort(([a], [b]) => a - b)) {
      if (remaining === 0) continue;
      const authored = this.graph.actions[index];
      if (!authored || authored.type !== type) continue;
      if (authored.payload === payload) return index;
      typeArmed = true;
    }
    throw typeArmed
      ? new WalkRefusal('payload_mismatch', `an action of type ${type} is armed, but with a different payload`)
      : new WalkRefusal('not_armed', `no armed action of type ${type}`);
  }

  /**
   * Runs one armed action: finds it and spends one arming.
   * @param {ActionType} type
   * @param {string} payload
   * @returns {number} the authored action's index
   */
  takeAction(type, payload) {
    const index = this.checkAction(type, payload);
    this.spend(index);
    return index;
  }

  /** Spends one arming; false (and nothing changes) if none is left. @param {number} index */
  spend(index) {
    const left = this.armed.get(index) ?? 0;
    if (left === 0) return false;
    this.armed.set(index, left - 1);
    return true;
  }

  /** Ends the conversation: every later step is refused. */
  close() {
    this.closed = true;
  }

  checkOpen() {
    if (this.closed) throw new WalkRefusal('no_conversation', 'the conversation is closed');
  }

  /** @param {number} id */
  vertexFor(id) {
    this.checkOpen();
    const v = this.graph.vertex(id);
    if (!v) throw new WalkRefusal('unknown_vertex', `no vertex ${id} in this conversation`);
    return v;
  }

  /** Shows the line after `from`, if any. @param {number} from @param {Facts | FactSheet} facts @returns {Shown} */
  follow(from, facts) {
    const line = nextLine(this.graph, from, facts, this.memory);
    if (line === undefined) return { kind: 'end' };
    this.show(/** @type {Vertex} */ (this.graph.vertex(line)), facts);
    return { kind: 'line', line };
  }

  /**
   * The line counts one visit; then it and its visible responses join R (those that hold, and
   * those with `Disabled` that do not: greyed; never a once response already picked); its
   * actions are armed. Its responses see the count with this showing, when shown and when
   * picked alike. @param {Vertex} line @param {Facts | FactSheet} facts
   */
  show(line, facts) {
    this.count(line.id);
    this.memory.shown.set(line.id, ++this.memory.sequence);
    const f = this.factsFor(facts);
    this.reachable.add(line.id);
    this.arm(line);
    if (line.awaitsJump) this.awaitingJump = true;
    for (const r of line.outputs) {
      const v = this.graph.vertex(r);
      if (!v || v.kind !== 'response' || spent(v, f)) continue;
      if (v.disabled !== null || conditionHolds(v, f)) this.reachable.add(r);
    }
  }

  /** One more arming for every action on `v`, capped. @param {Vertex} v */
  arm(v) {
    for (const a of v.actions) this.armed.set(a.index, Math.min((this.armed.get(a.index) ?? 0) + 1, ARM_CAP));
  }
}

/**
 * A response shown greyed out (`Disabled`): the player sees it and its reason, and cannot pick
 * it while its `Conditions` fail (`response_disabled`).
 * @typedef {object} Greyed
 * @property {Vertex} response  the response (its `name`, its `text`)
 * @property {string} reason  the `Disabled` text, in the player's locale (rich text)
 * @property {string | null} reasonLineId  the reason's stable line id (`DisabledLineId`)
 */

/**
 * What the client has on screen: a line with its choices (to pick) and its greyed-out
 * responses (to show, not to pick), both in the line's response order.
 * @typedef {{ kind: "line", line: Vertex, choices: Vertex[], greyed: Greyed[], canAdvance: boolean }
 *   | { kind: "waiting_for_jump" } | { kind: "ended" }} Screen
 */

/**
 * An action this player's walk has armed, as `shared_walks.json` records it: its type and
 * canonical payload, the line or response it is authored on, and how many runs it has left on
 * the server's side (at most 2; the client walk never spends one, the server does for each
 * action it accepts).
 * @typedef {{ type: ActionType, payload: string, on: string, count: number }} ArmedAction
 */

/**
 * How a walk is opened.
 * @typedef {object} OpenOptions
 * @property {boolean} [shared]  a shared conversation walked by a party (`opened.shared` is
 *   present): the player's steps are votes and proposals, and the walk moves with the group's
 * @property {boolean} [leads]  this player leads the shared conversation (`opened.shared.leader`)
 */

/**
 * A client's conversation: the server's walk plus the screen and the order of messages.
 *
 * Every step returns the messages to send for it, in order, as JSON without an id (the caller's
 * connection adds ids): send exactly these, each after the previous one's answer or pipelined.
 * A step the rules refuse throws a `WalkRefusal` with the code the server would answer, queues
 * nothing and changes nothing.
 *
 * ```js
 * const graph = buildGraph(opened.content, opened.conversation);
 * const { walk, sends } = ClientWalk.open(graph, opened.entry, opened.facts);
 * for (const m of sends) await connection.request(m);
 * // later: walk.choose('PimsTideTale_Greet_r1'), walk.advance(), walk.jump(jump.node)
 * ```
 *
 * A shared conversation (`opened.shared`: open it with `{ shared: true, leads }`) is walked by
 * the party: `choose` is a vote and `advance` the leader's proposal, neither moves the walk; the
 * server's `chosen`, `advanced` and `jump` do (`followChosen`, `followAdvanced`, `jump`), and
 * each returns what this player's client sends because of it.
 */
export class ClientWalk {
  /**
   * @param {DialogueGraph} graph
   * @param {Walk} walk
   * @param {Facts | FactSheet} facts
   * @param {OpenOptions} [options]
   */
  constructor(graph, walk, facts, options = {}) {
    this.graph = graph;
    /** The walk this client mirrors of the server's. */
    this.walk = walk;
    /**
     * The facts conditions are evaluated against. Keep them current from the conversation's
     * effects (`applyEffect`), as the server's are.
     */
    this.facts = facts;
    /** @type {"line" | "waiting_for_jump" | "ended"} */
    this.state = 'ended';
    /** The line on screen while `state` is `line`. */
    this.lineId = 0;
    /** Response actions waiting for the player to move past the reply. @type {number[]} */
    this.held = [];
    /** @private */
    this.isShared = options.shared === true;
    /** @private */
    this.isLeader = this.isShared && options.leads === true;
  }

  /**
   * Opens on the entry the server named (`opened.entry`), whatever its conditions. For a shared
   * conversation (`opened.shared`), pass `{ shared: true, leads: opened.shared.leader === me }`:
   * a participant who joins where the group is opens the same way, on the group's line.
   * @param {DialogueGraph} graph
   * @param {string} entry
   * @param {Facts | FactSheet} facts  usually `opened.facts`
   * @param {OpenOptions} [options]
   * @returns {{ walk: ClientWalk, sends: WalkMessage[] }}
   */
  static open(graph, entry, facts, options = {}) {
    const v = graph.find(entry);
    if (!v) throw new WalkRefusal('unknown_vertex', 'no node of that name in this conversation', entry);
    const { walk, shown } = Walk.open(graph, v.id, facts);
    const client = new ClientWalk(graph, walk, facts, options);
    /** @type {WalkMessage[]} */
    const sends = [];
    client.onShown(shown, sends);
    return { walk: client, sends };
  }

  /**
   * Opens a shared conversation: `ClientWalk.open` with `{ shared: true, leads }`.
   * @param {DialogueGraph} graph
   * @param {string} entry
   * @param {Facts | FactSheet} facts
   * @param {boolean} leads  this player is the conversation's leader (`opened.shared.leader`)
   */
  static openShared(graph, entry, facts, leads) {
    return ClientWalk.open(graph, entry, facts, { shared: true, leads });
  }

  /** True for a shared conversation: the player's steps are votes and proposals. */
  get shared() {
    return this.isShared;
  }

  /** True when this player leads the shared conversation (and so may advance it). */
  get leads() {
    return this.isLeader;
  }

  /**
   * The conversation's leader changed (`participants.leader`): whether it is this player.
   * Nothing for a conversation walked alone.
   * @param {boolean} leads
   */
  setLeader(leads) {
    if (this.isShared) this.isLeader = leads;
  }

  /** The screen: a line with its choices, the wait for a jump, or the end. @returns {Screen} */
  get screen() {
    if (this.state === 'line') {
      const line = /** @type {Vertex} */ (this.graph.vertex(this.lineId));
      return { kind: 'line', line, choices: this.choiceVertices(), greyed: this.greyedResponses(), canAdvance: this.canAdvance };
    }
    return this.state === 'waiting_for_jump' ? { kind: 'waiting_for_jump' } : { kind: 'ended' };
  }

  /** The line on screen, if any. */
  get line() {
    return this.state === 'line' ? this.graph.vertex(this.lineId) : undefined;
  }

  /**
   * The responses the player may pick under the current line, in priority order: those shown
   * with it whose conditions hold against the current `facts`. In a shared conversation, the
   * ones this player may vote for. @returns {Vertex[]}
   */
  choiceVertices() {
    if (this.state !== 'line') return [];
    return this.walk.choices(this.lineId, this.facts).map((r) => /** @type {Vertex} */ (this.graph.vertex(r)));
  }

  /** The names of the responses under the current line (`<node>_r<i>`). */
  get choices() {
    return this.choiceVertices().map((v) => v.name);
  }

  /**
   * The responses under the current line shown greyed out, with their reasons, in priority
   * order: shown, not picked (`response_disabled`), and no obstacle to advancing. One becomes a
   * choice once its `Conditions` hold. @returns {Greyed[]}
   */
  greyedResponses() {
    if (this.state !== 'line') return [];
    return this.walk.greyed(this.lineId, this.facts).map((r) => {
      const v = /** @type {Vertex} */ (this.graph.vertex(r));
      return { response: v, reason: /** @type {string} */ (v.disabled), reasonLineId: v.disabledLineId };
    });
  }

  /** The greyed-out responses under the current line: `{ response: name, reason }`, in order. */
  get greyed() {
    return this.greyedResponses().map((g) => ({ response: g.response.name, reason: g.reason }));
  }

  /**
   * The visit counts this conversation added so far, by vertex name: each line shown, each
   * response picked (PROTOCOL.md section 10.1).
   * @returns {Record<string, number>}
   */
  get counted() {
    return this.walk.counted();
  }

  /**
   * True when the current line waits for the player to advance past it. In a shared
   * conversation, only for its leader: the others wait for the leader's `advanced`.
   */
  get canAdvance() {
    if (this.state !== 'line') return false;
    if (this.isShared && !this.isLeader) return false;
    const line = this.graph.vertex(this.lineId);
    return !this.walk.awaitingJump && this.choiceVertices().length === 0 && line !== undefined && !line.awaitsJump;
  }

  /**
   * True when the line on screen waits for somebody to advance past it: the player (alone, or
   * as the leader), or the leader of a shared conversation (`canAdvance` false for the others:
   * show "waiting for the leader").
   */
  get awaitsAdvance() {
    if (this.state !== 'line') return false;
    const line = this.graph.vertex(this.lineId);
    return !this.walk.awaitingJump && this.choiceVertices().length === 0 && line !== undefined && !line.awaitsJump;
  }

  /** True after a `CheckQuest` (a response picked, or a line carrying one shown), until `jump`. */
  get waitingForJump() {
    return this.walk.awaitingJump;
  }

  /** True once nothing follows: the last step's messages ended with `close`. */
  get ended() {
    return this.state === 'ended';
  }

  /**
   * The player advances past `node` (by default the line on screen). Answered by the server's
   * walk: any line shown before may be advanced again, and every refusal has the server's code
   * (`awaits_jump` while a quest check waits, `no_conversation` once ended).
   *
   * In a shared conversation this is the leader's proposal (`proposeAdvance`): it sends the
   * `advance` and moves nothing; the server's `advanced` does.
   * @param {string} [node]
   * @returns {WalkMessage[]} `advance`, the held response actions, then the next line's actions
   *   (and `close` if nothing follows)
   */
  advance(node) {
    if (this.isShared) return this.proposeAdvance(node);
    const line = this.lineToAdvance(node);
    const shown = this.walk.advance(line, this.facts);
    /** @type {WalkMessage[]} */
    const sends = [{ type: 'advance', node: /** @type {Vertex} */ (this.graph.vertex(line)).name }];
    this.sendHeld(sends);
    this.onShown(shown, sends);
    return sends;
  }

  /**
   * The player picks a response: normally one of `choices`, but any response the server's walk
   * accepts (one shown earlier may be picked again).
   *
   * In a shared conversation this is a vote (`vote`): it sends the `choose` and moves nothing;
   * the group's decision comes as `chosen`.
   * @param {string} response  its name, `<node>_r<i>`
   * @returns {WalkMessage[]} `choose`, the held actions, then this response's actions if nothing
   *   follows it or it carries a `CheckQuest`, then the next line's actions (and `close` if
   *   nothing follows)
   */
  choose(response) {
    if (this.isShared) return this.vote(response);
    const v = this.graph.find(response);
    if (this.walk.closed) throw new WalkRefusal('no_conversation', 'the conversation is closed', response);
    if (!v) throw new WalkRefusal('unknown_vertex', 'no node or response of that name in this conversation', response);
    const shown = this.walk.choose(v.id, this.facts);
    /** @type {WalkMessage[]} */
    const sends = [{ type: 'choose', response: v.name }];
    // Picking a response is moving past the reply on screen.
    this.sendHeld(sends);
    if (shown.kind === 'line') this.held.push(...v.actions.map((a) => a.index));
    else for (const a of v.actions) sends.push(actionMessage(a.type, a.payload));
    this.onShown(shown, sends);
    return sends;
  }

  /**
   * A vote in a shared conversation: the player picks `response` under the line on screen.
   * Checked as the server checks it: as a `choose` (`no_conversation`, `unknown_vertex`,
   * `not_reachable` when this player was never shown it, `not_a_response`, `awaits_jump`,
   * `condition_failed`), then `not_current` when it is not a response of the line on screen.
   * The walk does not move; a player may vote again, for another response or the same.
   * @param {string} response
   * @returns {WalkMessage[]} the `choose`
   */
  vote(response) {
    const v = this.graph.find(response);
    if (this.walk.closed) throw new WalkRefusal('no_conversation', 'the conversation is closed', response);
    if (!v) throw new WalkRefusal('unknown_vertex', 'no node or response of that name in this conversation', response);
    this.walk.checkChoose(v.id, this.facts);
    if (this.state !== 'line' || this.graph.lineOf(v.id)?.id !== this.lineId) {
      throw new WalkRefusal('not_current', "only the responses of the line on screen can be voted for", response);
    }
    return [{ type: 'choose', response: v.name }];
  }

  /**
   * The leader advances past `node` (by default the line on screen) in a shared conversation.
   * After `no_conversation`, any other participant gets `not_leader` (whatever `node` names, as
   * the server answers); the leader's is checked as an `advance`. Sends the `advance`; the walk
   * moves when the server's `advanced` comes back (`followAdvanced`).
   * @param {string} [node]
   * @returns {WalkMessage[]} the `advance`
   */
  proposeAdvance(node) {
    if (this.walk.closed) throw new WalkRefusal('no_conversation', 'the conversation is closed', node);
    if (this.isShared && !this.isLeader) throw new WalkRefusal('not_leader', "only the conversation's leader advances", node);
    const line = this.lineToAdvance(node);
    this.walk.checkAdvance(line, this.facts);
    return [{ type: 'advance', node: /** @type {Vertex} */ (this.graph.vertex(line)).name }];
  }

  /**
   * The group's decision (`chosen`): `response` won, and `node` is the line shown next
   * (undefined: a quest check's jump is awaited, or the conversation ends there). The held
   * actions go out (the group moved past the reply on screen); the response's actions are
   * armed and sent only if it was shown to this player and holds for their facts: held while a
   * line follows, at once otherwise; then `node` is shown as a `jump` shows it (its node actions
   * sent), or the check's jump is awaited, or the conversation ends (`close`).
   * @param {string} response  `chosen.response`
   * @param {string} [node]  `chosen.node`
   * @returns {WalkMessage[]}
   */
  followChosen(response, node) {
    const r = this.graph.find(response);
    if (!r) throw new WalkRefusal('unknown_vertex', 'the decision names no response of this conversation', response);
    const n = node === undefined ? undefined : this.graph.find(node);
    if (node !== undefined && !n) throw new WalkRefusal('unknown_vertex', 'the decision names no line of this conversation', node);
    const mine = this.walk.shownAndHolds(r.id, this.facts);
    const shown = this.walk.followChosen(r.id, n?.id, this.facts);
    /** @type {WalkMessage[]} */
    const sends = [];
    this.sendHeld(sends);
    if (mine) {
      if (shown.kind === 'line') this.held.push(...r.actions.map((a) => a.index));
      else for (const a of r.actions) sends.push(actionMessage(a.type, a.payload));
    }
    this.onShown(shown, sends);
    return sends;
  }

  /**
   * The leader advanced (`advanced`): the held actions go out, then `node` is shown as a `jump`
   * shows it, or (undefined) the conversation ends (`close`).
   * @param {string} [node]  `advanced.node`
   * @returns {WalkMessage[]}
   */
  followAdvanced(node) {
    const n = node === undefined ? undefined : this.graph.find(node);
    if (node !== undefined && !n) throw new WalkRefusal('unknown_vertex', 'the advance names no line of this conversation', node);
    const shown = this.walk.followAdvanced(n?.id, this.facts);
    /** @type {WalkMessage[]} */
    const sends = [];
    this.sendHeld(sends);
    this.onShown(shown, sends);
    return sends;
  }

  /**
   * The server decided where the conversation goes (`jump`): show that line, whatever its
   * conditions.
   * @param {string} node
   * @returns {WalkMessage[]} the line's node actions
   */
  jump(node) {
    const v = this.graph.find(node);
    if (!v) throw new WalkRefusal('unknown_vertex', 'the jump names no node of this conversation', node);
    const shown = this.walk.jumpTo(v.id, this.facts);
    /** @type {WalkMessage[]} */
    const sends = [];
    this.onShown(shown, sends);
    return sends;
  }

  /**
   * The player closes the conversation before its end (in a shared conversation: leaves it,
   * and the others go on). Nothing held is sent: the player did not move past the reply on
   * screen. Every later step is `no_conversation`.
   * @returns {WalkMessage[]} `close`, or nothing when the conversation has ended already
   */
  close() {
    if (this.state === 'ended') return [];
    this.held = [];
    this.walk.close();
    this.state = 'ended';
    return [{ type: 'close' }];
  }

  /**
   * Every action this player's walk has armed, in authored order, with its runs left.
   * @returns {ArmedAction[]}
   */
  armed() {
    return this.graph.actions
      .filter((a) => this.walk.armings(a.index) > 0)
      .map((a) => ({ type: a.type, payload: a.payload, on: /** @type {Vertex} */ (this.graph.vertex(a.vertex)).name, count: this.walk.armings(a.index) }));
  }

  /**
   * The line an `advance` names: `node`, or the line on screen.
   * @private
   * @param {string | undefined} node
   * @returns {number}
   */
  lineToAdvance(node) {
    if (node !== undefined) {
      const named = this.graph.find(node);
      if (this.walk.closed) throw new WalkRefusal('no_conversation', 'the conversation is closed', node);
      if (!named) throw new WalkRefusal('unknown_vertex', 'no node or response of that name in this conversation', node);
      return named.id;
    }
    if (this.state === 'line') return this.lineId;
    if (this.state === 'ended') throw new WalkRefusal('no_conversation', 'the conversation is closed');
    throw new WalkRefusal('awaits_jump', "waiting for the server's jump after a quest check");
  }

  /** @param {WalkMessage[]} sends */
  sendHeld(sends) {
    for (const index of this.held) {
      const a = this.graph.actions[index];
      sends.push(actionMessage(a.type, a.payload));
    }
    this.held = [];
  }

  /** @param {Shown} shown @param {WalkMessage[]} sends */
  onShown(shown, sends) {
    if (shown.kind === 'line') {
      for (const a of /** @type {Vertex} */ (this.graph.vertex(shown.line)).actions) sends.push(actionMessage(a.type, a.payload));
      this.state = 'line';
      this.lineId = shown.line;
    } else if (shown.kind === 'await_jump') {
      this.state = 'waiting_for_jump';
    } else {
      this.sendHeld(sends);
      sends.push({ type: 'close' });
      this.walk.close();
      this.state = 'ended';
    }
  }
}

/** @param {ActionType} action @param {string} payload @returns {WalkMessage} */
function actionMessage(action, payload) {
  return { type: 'action', action, payload };
}
