// How a shared conversation's group picks a response (docs/PROTOCOL.md section 17.3;
// dialogue/src/ballot.rs is the reference, conformance/ballots.json fixes every rule).
//
// The server decides; a client runs the same pure function to show "who would win" while the
// votes come in (and "who would win if the time ran out now"), and to explain a `chosen`: its
// `seed` and `rolls` replay here exactly. The only randomness is the seed the server drew when
// the ballot opened, and every draw from it is splitmix64, computed with BigInt because seeds
// are unsigned 64-bit integers (sent as decimal strings: they do not fit a JSON number).
//
//   decide({ rule: { Mode: 'Majority', Tie: 'Leader' }, participants: ['ana', 'bo', 'cy'],
//            leader: 'ana', votes: [{ player: 'bo', response: 'Boats_r2' }], expired: true, seed: '7' })
//   // { response: 'Boats_r2', by: 'majority', rolls: [] }

/**
 * @import { DecidedBy, Roll, Vote } from './protocol.generated.js'
 * @import { DialogueGraph } from './graph.js'
 */

/**
 * How the group picks (content key `Mode`): `Leader` (the default), `Majority`, `Roll`, `All`.
 * @typedef {"Leader" | "Majority" | "Roll" | "All"} ChoiceMode
 */
/**
 * How a `Majority` tie at the time limit is broken (content key `Tie`).
 * @typedef {"Leader" | "First" | "Roll"} TieRule
 */
/**
 * `Shared` or a node's `Choice` as content writes it: every key optional.
 * @typedef {{ Mode?: ChoiceMode, TimeLimit?: number, Tie?: TieRule }} ChoiceSpec
 */
/**
 * A ballot's rule with its defaults filled in, in the content's keys (as `ballots.json` writes
 * it): `Mode` always, `TimeLimit` (seconds) when the ballot has one, `Tie` for `Majority`.
 * @typedef {{ Mode: ChoiceMode, TimeLimit?: number, Tie?: TieRule }} ChoiceRule
 */
/**
 * A decided ballot: the winning response, how it was decided (`chosen.by`), and a `Roll`
 * ballot's rolls (every voter's, in join order; empty for every other way).
 * @typedef {{ response: string, by: DecidedBy, rolls: Roll[] }} Decision
 */
/** A seed or a draw: an unsigned 64-bit integer, as a decimal string, a BigInt or a safe integer. @typedef {string | bigint | number} U64 */

/** Every `Mode`, the default first. @type {ReadonlyArray<ChoiceMode>} */
export const CHOICE_MODES = Object.freeze(/** @type {const} */ (['Leader', 'Majority', 'Roll', 'All']));
/** Every `Tie`, the default first. @type {ReadonlyArray<TieRule>} */
export const TIE_RULES = Object.freeze(/** @type {const} */ (['Leader', 'First', 'Roll']));
/** A `Majority` ballot's time limit when the content states none, in seconds. */
export const DEFAULT_MAJORITY_TIME_LIMIT_SECS = 30;
/** The longest `TimeLimit` content may state, in seconds. */
export const MAX_TIME_LIMIT_SECS = 600;
/** The sides of a roll: each voter rolls 1 to this. */
export const ROLL_SIDES = 100;

const MASK = (1n << 64n) - 1n;
/** splitmix64's increment (2^64 / φ). */
const GAMMA = 0x9e3779b97f4a7c15n;

/**
 * A seed as a BigInt, checked to be an unsigned 64-bit integer.
 * @param {U64} value
 * @returns {bigint}
 */
export function toU64(value) {
  let n;
  if (typeof value === 'bigint') n = value;
  else if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new RangeError(`a seed must be a whole number, found ${value} (send large seeds as strings)`);
    n = BigInt(value);
  } else if (typeof value === 'string' && /^[0-9]{1,20}$/.test(value)) n = BigInt(value);
  else throw new RangeError(`a seed is a decimal string of an unsigned 64-bit integer, found ${JSON.stringify(value)}`);
  if (n < 0n || n > MASK) throw new RangeError(`a seed is an unsigned 64-bit integer, found ${n}`);
  return n;
}

/**
 * splitmix64 of `x`, every step wrapping at 64 bits.
 * @param {bigint} x
 * @returns {bigint}
 */
export function splitmix64(x) {
  let z = (x + GAMMA) & MASK;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
  return z ^ (z >> 31n);
}

/**
 * The `k`-th draw (from 0) of a ballot's seed: `splitmix64(seed + k * 0x9E3779B97F4A7C15)`,
 * wrapping.
 * @param {U64} seed
 * @param {number | bigint} k
 * @returns {bigint}
 */
export function draw(seed, k) {
  return splitmix64((toU64(seed) + BigInt(k) * GAMMA) & MASK);
}

/**
 * The roll of voter `k` (0-based, in join order among those who voted): 1 to 100.
 * @param {U64} seed
 * @param {number | bigint} k
 * @returns {number}
 */
export function roll(seed, k) {
  return 1 + Number(draw(seed, k) % BigInt(ROLL_SIDES));
}

/**
 * The rule a `Shared` or `Choice` states, with the defaults (docs/CONTENT.md): `Mode` `Leader`;
 * `TimeLimit` 30 s for `Majority`, none for `Roll` unless stated, never for `Leader` and `All`;
 * `Tie` `Leader`, for `Majority` only.
 * @param {ChoiceSpec} [spec]
 * @returns {ChoiceRule}
 */
export function choiceRule(spec = {}) {
  const mode = spec.Mode ?? 'Leader';
  /** @type {ChoiceRule} */
  const rule = { Mode: mode };
  if (mode === 'Majority') {
    rule.TimeLimit = spec.TimeLimit ?? DEFAULT_MAJORITY_TIME_LIMIT_SECS;
    rule.Tie = spec.Tie ?? 'Leader';
  } else if (mode === 'Roll' && spec.TimeLimit !== undefined) {
    rule.TimeLimit = spec.TimeLimit;
  }
  return rule;
}

/**
 * What a sequence of votes as cast leaves: each player's latest vote, in the order they first
 * voted (a player voting again changes their vote in place).
 * @param {ReadonlyArray<Vote>} cast
 * @returns {Vote[]}
 */
export function latestVotes(cast) {
  /** @type {Vote[]} */
  const votes = [];
  for (const v of cast) {
    const at = votes.findIndex((w) => w.player === v.player);
    if (at >= 0) votes[at] = { player: v.player, response: v.response };
    else votes.push({ player: v.player, response: v.response });
  }
  return votes;
}

/**
 * A response's place in priority order: its 1-based index under its line, from the graph or,
 * without one, from its name (`<line>_r<i>`). Undefined when it is no response.
 * @param {string} response
 * @param {DialogueGraph | undefined} graph
 * @returns {number | undefined}
 */
function priorityOf(response, graph) {
  if (graph) {
    const v = graph.find(response);
    return v && v.kind === 'response' ? v.priority : undefined;
  }
  const m = /_r([1-9][0-9]*)$/.exec(response);
  return m ? Number(m[1]) : undefined;
}

/**
 * @typedef {object} Ballot
 * @property {ChoiceRule | ChoiceSpec} rule  the line's rule (`graph.choiceRule(line)`); missing
 *   keys take the defaults
 * @property {ReadonlyArray<string>} participants  in join order
 * @property {string} leader  the conversation's leader
 * @property {ReadonlyArray<Vote>} votes  each participant's latest vote (of two by one player, the
 *   later counts); votes from anyone not in `participants`, or for no response, do not count
 * @property {boolean} [expired]  the rule's time limit has passed
 * @property {U64} [seed]  the ballot's seed (`chosen.seed`), for `Roll` and a `Tie` of `Roll`
 * @property {DialogueGraph} [graph]  the conversation, to tell responses and their priority;
 *   without it, a response's priority is read from its name (`<line>_r<i>`)
 */

/**
 * Decides a ballot as the server does, or returns null while it waits (for more votes, or for
 * the time limit). A decision always names a response somebody voted for; "first" in a tie is
 * the lowest priority number (the response written first).
 * @param {Ballot} ballot
 * @returns {Decision | null}
 */
export function decide({ rule, participants, leader, votes, expired = false, seed = '0', graph }) {
  const filled = choiceRule(rule);
  // Each participant once, at their first place in the join order.
  /** @type {string[]} */
  const joined = [];
  for (const p of participants) if (!joined.includes(p)) joined.push(p);
  /** The counted votes, one per participant, in join order. @type {{ joined: number, response: string, priority: number }[]} */
  const counted = [];
  joined.forEach((player, at) => {
    let latest;
    for (const v of votes) if (v.player === player) latest = v.response;
    if (latest === undefined) return;
    const priority = priorityOf(latest, graph);
    if (priority !== undefined) counted.push({ joined: at, response: latest, priority });
  });
  const leaderVote = counted.find((c) => joined[c.joined] === leader)?.response;
  /** @param {string} response @param {DecidedBy} by @returns {Decision} */
  const decided = (response, by) => ({ response, by, rolls: [] });

  switch (filled.Mode) {
    case 'Leader':
      return leaderVote === undefined ? null : decided(leaderVote, 'leader');
    case 'All': {
      if (counted.length === 0) return null;
      const first = counted[0].response;
      const unanimous = counted.length === joined.length && counted.every((c) => c.response === first);
      return unanimous ? decided(first, 'unanimous') : null;
    }
    case 'Majority': {
      // How many votes each response got, in priority order (then by name, for votes under
      // different lines, which only a hand-made ballot has).
      /** @type {Map<string, { response: string, priority: number, n: number }>} */
      const byResponse = new Map();
      for (const c of counted) {
        const t = byResponse.get(c.response);
        if (t) t.n++;
        else byResponse.set(c.response, { response: c.response, priority: c.priority, n: 1 });
      }
      const tally = [...byResponse.values()].sort((a, b) => a.priority - b.priority || (a.response < b.response ? -1 : a.response > b.response ? 1 : 0));
      if (tally.length === 0) return null;
      // More than half of the participants (not of the voters): decided at once.
      const over = tally.find((t) => 2 * t.n > joined.length);
      if (over) return decided(over.response, 'majority');
      if (!expired) return null;
      const most = Math.max(...tally.map((t) => t.n));
      const tied = tally.filter((t) => t.n === most).map((t) => t.response);
      if (tied.length === 1) return decided(tied[0], 'majority');
      switch (filled.Tie ?? 'Leader') {
        case 'Leader':
          return leaderVote !== undefined && tied.includes(leaderVote) ? decided(leaderVote, 'tie_leader') : decided(tied[0], 'tie_first');
        case 'First':
          return decided(tied[0], 'tie_first');
        case 'Roll':
          return decided(tied[Number(draw(seed, 0) % BigInt(tied.length))], 'tie_roll');
      }
      return null;
    }
    case 'Roll': {
      // Decided once everyone has voted, or at the time limit once anyone has.
      const everyone = counted.length === joined.length;
      if (counted.length === 0 || !(everyone || expired)) return null;
      const rolls = counted.map((c, k) => ({ player: joined[c.joined], roll: roll(seed, k) }));
      // The highest roll; an equal highest goes to the earlier joiner (the first found).
      let best = 0;
      rolls.forEach((r, k) => {
        if (r.roll > rolls[best].roll) best = k;
      });
      return { response: counted[best].response, by: 'roll', rolls };
    }
  }
  return null;
}
