// Runs every vector of the language-neutral conformance files (conformance/README.md) against
// this client: payloads, text, conditions, client walks, ballots, shared walks and writing
// power (variables, visits, once, groups, greyed-out responses). The server
// verdicts need a server and are replayed by e2e.test.js.
//
// A missing file fails (it is how the Rust side regenerates them:
// `BANTER_BLESS=1 cargo test -p banter-dialogue --test conformance`), and every mismatch is
// listed, not just the first, each named by its file and vector.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { CONFORMANCE_DIR } from './paths.js';
import {
  buildPayload,
  parsePayload,
  PayloadError,
  visibleGraphemes,
  prefix,
  balancedPrefix,
  parseCondition,
  evaluate,
  ConditionError,
  buildGraph,
  ClientWalk,
  WalkRefusal,
  decide,
  draw,
  roll,
  latestVotes,
} from '../src/index.js';

/** Reads one vector file, failing with what to do when it is missing. */
function load(file) {
  const path = join(CONFORMANCE_DIR, file);
  if (!existsSync(path)) {
    assert.fail(`${path} is missing: the Rust side writes it (BANTER_BLESS=1 cargo test -p banter-dialogue --test conformance)`);
  }
  return JSON.parse(readFileSync(path, 'utf8'));
}

/** Deep equality as a boolean, for collecting every mismatch. */
function same(a, b) {
  try {
    assert.deepStrictEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

/** Fails with every mismatch, or reports the count. */
function report(t, file, count, failures, detail = '') {
  t.diagnostic(`${file}: ${count} vectors${detail ? ` (${detail})` : ''}`);
  counts.set(file, count);
  if (failures.length > 0) {
    assert.fail(`${file}: ${failures.length} mismatches over ${count} vectors:\n${failures.slice(0, 40).join('\n')}${failures.length > 40 ? '\n…' : ''}`);
  }
}

const counts = new Map();

test('payloads.json: every build and parse vector', (t) => {
  const vectors = load('payloads.json');
  const failures = [];
  vectors.build.forEach((v, i) => {
    let got;
    try {
      got = buildPayload(v.action);
    } catch (e) {
      got = `threw ${e}`;
    }
    if (got !== v.payload) failures.push(`build[${i}] ${JSON.stringify(v.action)}: expected ${JSON.stringify(v.payload)}, got ${JSON.stringify(got)}`);
    // Every built payload parses back to its action.
    try {
      const back = parsePayload(v.action.Type, v.payload);
      if (!same(back, v.action)) failures.push(`build[${i}] does not parse back: ${JSON.stringify(back)}`);
    } catch (e) {
      failures.push(`build[${i}] does not parse back: ${e}`);
    }
  });
  vectors.parse.forEach((v, i) => {
    const name = `parse[${i}] ${v.type} ${JSON.stringify(v.payload)}`;
    try {
      const action = parsePayload(v.type, v.payload);
      if ('error' in v) failures.push(`${name}: expected ${v.error}, parsed ${JSON.stringify(action)}`);
      else if (!same(action, v.action)) failures.push(`${name}: expected ${JSON.stringify(v.action)}, got ${JSON.stringify(action)}`);
    } catch (e) {
      if (!(e instanceof PayloadError)) failures.push(`${name}: threw a non-PayloadError ${e}`);
      else if (e.code !== v.error) failures.push(`${name}: expected ${v.error ?? JSON.stringify(v.action)}, got error ${e.code} (${e.message})`);
    }
  });
  report(t, 'payloads.json', vectors.build.length + vectors.parse.length, failures, `${vectors.build.length} build, ${vectors.parse.length} parse`);
});

test('text.json: visible counts, prefixes and balanced prefixes', (t) => {
  const vectors = load('text.json');
  const failures = [];
  let checks = 0;
  vectors.forEach((v, i) => {
    const name = `text[${i}] ${JSON.stringify(v.text)}`;
    checks += 1 + v.prefixes.length + v.balanced_prefixes.length;
    const n = visibleGraphemes(v.text);
    if (n !== v.visible) failures.push(`${name}: visible ${v.visible}, got ${n}`);
    v.prefixes.forEach((p, k) => {
      const got = prefix(v.text, k);
      if (got !== p) failures.push(`${name}: prefix(${k}) ${JSON.stringify(p)}, got ${JSON.stringify(got)}`);
    });
    v.balanced_prefixes.forEach((p, k) => {
      const got = balancedPrefix(v.text, k);
      if (got !== p) failures.push(`${name}: balancedPrefix(${k}) ${JSON.stringify(p)}, got ${JSON.stringify(got)}`);
    });
  });
  report(t, 'text.json', vectors.length, failures, `${checks} checks: counts, prefixes, balanced prefixes`);
});

test('conditions.json: every case against the one fact sheet', (t) => {
  const vectors = load('conditions.json');
  const failures = [];
  vectors.cases.forEach((c, i) => {
    const name = `cases[${i}] ${JSON.stringify(c.condition)}`;
    try {
      const holds = evaluate(parseCondition(c.condition), vectors.facts);
      if (c.error) failures.push(`${name}: expected a parse error, evaluated to ${holds}`);
      else if (holds !== c.holds) failures.push(`${name}: expected ${c.holds}, got ${holds}`);
    } catch (e) {
      if (!(e instanceof ConditionError)) failures.push(`${name}: threw a non-ConditionError ${e}`);
      else if (!c.error) failures.push(`${name}: expected ${c.holds}, got error ${e.message}`);
    }
  });
  report(t, 'conditions.json', vectors.cases.length, failures);
});

/**
 * The screen as the vectors write it; `greyed` (writing_power.json) adds the greyed-out
 * responses with their reasons.
 */
function screenJson(walk, { greyed = false } = {}) {
  const s = walk.screen;
  if (s.kind === 'line') {
    const screen = { line: s.line.name, text: s.line.text, choices: s.choices.map((c) => c.name), can_advance: s.canAdvance };
    if (greyed) screen.greyed = s.greyed.map((g) => ({ response: g.response.name, text: g.reason }));
    return screen;
  }
  return s.kind === 'waiting_for_jump' ? { waiting_for_jump: true } : { ended: true };
}

test('client_walk.json: every scenario, step by step', (t) => {
  replayWalks(t, 'client_walk.json', load('client_walk.json'));
});

/**
 * Replays the client-walk scenarios of `file` (`client_walk.json`, or the scenarios of
 * `writing_power.json` with `greyed` screens and the `counted` visits at the end).
 */
function replayWalks(t, file, vectors, { writingPower = false } = {}) {
  // `{ conversations: { name: canonical JSON }, scenarios }`; each scenario names its conversation.
  const { conversations, scenarios } = vectors;
  assert.ok(Array.isArray(scenarios) && conversations && typeof conversations === 'object', `${file}: expected { conversations, scenarios }`);
  const screenOf = (walk) => screenJson(walk, { greyed: writingPower });
  const failures = [];
  let steps = 0;
  /** The codes the steps are refused with, and how often. @type {Map<string, number>} */
  const refusals = new Map();
  for (const sc of scenarios) {
    const content = conversations[sc.conversation];
    if (typeof content !== 'string') {
      failures.push(`${sc.name}: no conversation ${JSON.stringify(sc.conversation)} in conversations`);
      continue;
    }
    const graph = buildGraph(content, sc.conversation);
    if (graph.problems.length > 0) failures.push(`${sc.name}: the graph has problems: ${graph.problems.join('; ')}`);
    let walk;
    try {
      const opened = ClientWalk.open(graph, sc.entry, sc.facts);
      walk = opened.walk;
      if (!same(opened.sends, sc.open.sends)) failures.push(`${sc.name}: open sends ${JSON.stringify(sc.open.sends)}, got ${JSON.stringify(opened.sends)}`);
      if (!same(screenOf(walk), sc.open.screen)) failures.push(`${sc.name}: open screen ${JSON.stringify(sc.open.screen)}, got ${JSON.stringify(screenOf(walk))}`);
    } catch (e) {
      failures.push(`${sc.name}: open threw ${e}`);
      continue;
    }
    for (const [i, step] of sc.steps.entries()) {
      steps++;
      const name = `${sc.name}, step ${i} ${JSON.stringify(step.input)}`;
      let sends = [];
      let refused;
      // The player's facts changed before this input (an effect from elsewhere): from now on.
      if ('facts' in step) walk.facts = step.facts;
      try {
        if ('advance' in step.input) sends = walk.advance(step.input.advance);
        else if ('choose' in step.input) sends = walk.choose(step.input.choose);
        else if ('jump' in step.input) sends = walk.jump(step.input.jump);
        else throw new Error(`unknown input ${JSON.stringify(step.input)}`);
      } catch (e) {
        if (!(e instanceof WalkRefusal)) {
          failures.push(`${name}: threw ${e}`);
          break;
        }
        refused = e.code;
      }
      if (!same(sends, step.sends)) failures.push(`${name}: sends ${JSON.stringify(step.sends)}, got ${JSON.stringify(sends)}`);
      if ('refused' in step) {
        refusals.set(step.refused, (refusals.get(step.refused) ?? 0) + 1);
        if (refused !== step.refused) failures.push(`${name}: expected refused ${step.refused}, got ${refused ?? 'accepted'}`);
      } else if (refused !== undefined) {
        failures.push(`${name}: refused ${refused}, expected screen ${JSON.stringify(step.screen)}`);
      } else if (!same(screenOf(walk), step.screen)) {
        failures.push(`${name}: screen ${JSON.stringify(step.screen)}, got ${JSON.stringify(screenOf(walk))}`);
      }
    }
    if (writingPower && !same(walk.counted, sc.counted)) {
      failures.push(`${sc.name}: counted ${JSON.stringify(sc.counted)}, got ${JSON.stringify(walk.counted)}`);
    }
  }
  report(t, file, scenarios.length, failures, `scenarios over ${Object.keys(conversations).length} conversations, ${steps} steps; refused: ${[...refusals].map(([c, n]) => `${c} ${n}`).join(', ')}`);
}

test('writing_power.json: every condition and every scenario, step by step', (t) => {
  const vectors = load('writing_power.json');
  const failures = [];
  vectors.conditions.forEach((c, i) => {
    const name = `conditions[${i}] ${c.why}: ${JSON.stringify(c.condition)}`;
    try {
      const holds = evaluate(parseCondition(c.condition), c.facts ?? vectors.facts);
      if (c.error) failures.push(`${name}: expected a parse error, evaluated to ${holds}`);
      else if (holds !== c.holds) failures.push(`${name}: expected ${c.holds}, got ${holds}`);
    } catch (e) {
      if (!(e instanceof ConditionError)) failures.push(`${name}: threw a non-ConditionError ${e}`);
      else if (!c.error) failures.push(`${name}: expected ${c.holds}, got error ${e.message}`);
    }
  });
  report(t, 'writing_power.json conditions', vectors.conditions.length, failures);
  replayWalks(t, 'writing_power.json scenarios', vectors, { writingPower: true });
});

test('ballots.json: every draw and every ballot decided', (t) => {
  const vectors = load('ballots.json');
  const { conversation, line, draws, cases } = vectors;
  const graph = buildGraph(conversation, 'ballots');
  const failures = [];
  if (graph.problems.length > 0) failures.push(`the graph has problems: ${graph.problems.join('; ')}`);
  // The cases decide among the responses of `line`.
  const responses = graph.responsesOf(line).map((r) => r.name);
  if (responses.length === 0) failures.push(`no responses under ${JSON.stringify(line)}`);
  for (const [i, d] of draws.entries()) {
    const got = draw(d.seed, d.k).toString();
    if (got !== d.draw) failures.push(`draws[${i}] seed ${d.seed} k ${d.k}: draw ${d.draw}, got ${got}`);
    const r = roll(d.seed, d.k);
    if (r !== d.roll) failures.push(`draws[${i}] seed ${d.seed} k ${d.k}: roll ${d.roll}, got ${r}`);
  }
  /** How often each `by` (or undecided) comes out. @type {Map<string, number>} */
  const outcomes = new Map();
  for (const [i, c] of cases.entries()) {
    const name = `cases[${i}] ${c.why}`;
    for (const v of c.votes) {
      if (!responses.includes(v.response) && graph.find(v.response)?.kind === 'response') failures.push(`${name}: a vote for ${v.response}, not under ${line}`);
    }
    if (c.cast && !same(latestVotes(c.cast), c.votes)) failures.push(`${name}: cast ${JSON.stringify(c.cast)} leaves ${JSON.stringify(c.votes)}, got ${JSON.stringify(latestVotes(c.cast))}`);
    let got;
    try {
      got = decide({ graph, rule: c.rule, participants: c.participants, leader: c.leader, votes: c.votes, expired: c.expired, seed: c.seed });
    } catch (e) {
      failures.push(`${name}: threw ${e}`);
      continue;
    }
    outcomes.set(c.decision?.by ?? 'undecided', (outcomes.get(c.decision?.by ?? 'undecided') ?? 0) + 1);
    if (!same(got, c.decision)) failures.push(`${name}: decision ${JSON.stringify(c.decision)}, got ${JSON.stringify(got)}`);
    // Without the graph, priorities come from the names: the same decision.
    const byName = decide({ rule: c.rule, participants: c.participants, leader: c.leader, votes: c.votes, expired: c.expired, seed: c.seed });
    if (!same(byName, c.decision)) failures.push(`${name}: decided by name ${JSON.stringify(byName)}, expected ${JSON.stringify(c.decision)}`);
  }
  report(t, 'ballots.json', draws.length + cases.length, failures, `${draws.length} draws, ${cases.length} ballots: ${[...outcomes].map(([b, n]) => `${b} ${n}`).join(', ')}`);
});

/** A participant's client record as `shared_walks.json` writes it. */
function recordJson(walk, sends) {
  return { sends, screen: screenJson(walk), armed: walk.armed() };
}

/** Compares one record, collecting each part that differs. */
function compareRecord(failures, name, expected, got) {
  for (const key of ['sends', 'screen', 'armed']) {
    if (!same(got[key], expected[key])) failures.push(`${name}: ${key} ${JSON.stringify(expected[key])}, got ${JSON.stringify(got[key])}`);
  }
}

/** A group's message applied to one participant's client; returns what it sends. */
function applyGroupMessage(walk, player, message) {
  switch (message.type) {
    case 'chosen':
      return walk.followChosen(message.response, message.node);
    case 'advanced':
      return walk.followAdvanced(message.node);
    case 'jump':
      return walk.jump(message.node);
    case 'participants':
      walk.setLeader(message.leader === player);
      return [];
    default:
      throw new Error(`no rule for a ${message.type} message`);
  }
}

test('shared_walks.json: every participant of every scenario, step by step', (t) => {
  const vectors = load('shared_walks.json');
  const { conversations, scenarios } = vectors;
  assert.ok(Array.isArray(scenarios) && conversations && typeof conversations === 'object', 'shared_walks.json: expected { conversations, scenarios }');
  const failures = [];
  let steps = 0;
  /** Step kinds and refusal codes, and how often. @type {Map<string, number>} */
  const kinds = new Map();
  const count = (k) => kinds.set(k, (kinds.get(k) ?? 0) + 1);
  for (const sc of scenarios) {
    const content = conversations[sc.conversation];
    if (typeof content !== 'string') {
      failures.push(`${sc.name}: no conversation ${JSON.stringify(sc.conversation)} in conversations`);
      continue;
    }
    const graph = buildGraph(content, sc.conversation);
    if (graph.problems.length > 0) failures.push(`${sc.name}: the graph has problems: ${graph.problems.join('; ')}`);
    if (graph.shared === null) failures.push(`${sc.name}: the conversation is not shared`);
    /** Each participant's client, while they take part. @type {Map<string, ClientWalk>} */
    const walks = new Map();
    try {
      for (const { player, facts } of sc.participants) {
        const opened = ClientWalk.open(graph, sc.entry, facts, { shared: true, leads: player === sc.leader });
        walks.set(player, opened.walk);
        compareRecord(failures, `${sc.name}: ${player} at open`, sc.open[player], recordJson(opened.walk, opened.sends));
      }
    } catch (e) {
      failures.push(`${sc.name}: open threw ${e}`);
      continue;
    }
    for (const [i, step] of sc.steps.entries()) {
      steps++;
      const name = `${sc.name}, step ${i}`;
      try {
        if ('vote' in step || 'advance' in step) {
          const { player } = step.vote ?? step.advance;
          const walk = walks.get(player);
          if (!walk) {
            failures.push(`${name}: ${player} takes no part`);
            continue;
          }
          let sends = [];
          let refused;
          try {
            sends = 'vote' in step ? walk.vote(step.vote.response) : walk.proposeAdvance(step.advance.node);
          } catch (e) {
            if (!(e instanceof WalkRefusal)) throw e;
            refused = e.code;
          }
          count(`${'vote' in step ? 'vote' : 'advance'}${refused ? ` refused ${refused}` : ''}`);
          if (!same(sends, step.sends)) failures.push(`${name} ${JSON.stringify(step.vote ?? step.advance)}: sends ${JSON.stringify(step.sends)}, got ${JSON.stringify(sends)}`);
          if (refused !== step.refused) failures.push(`${name} ${JSON.stringify(step.vote ?? step.advance)}: ${step.refused ? `refused ${step.refused}` : 'accepted'}, got ${refused ? `refused ${refused}` : 'accepted'}`);
        } else if ('close' in step) {
          count('close');
          const walk = walks.get(step.close);
          if (!walk) {
            failures.push(`${name}: ${step.close} takes no part`);
            continue;
          }
          const sends = walk.close();
          walks.delete(step.close);
          if (!same(sends, step.sends)) failures.push(`${name} close ${step.close}: sends ${JSON.stringify(step.sends)}, got ${JSON.stringify(sends)}`);
        } else if ('join' in step) {
          count('join');
          const { player, entry, facts } = step.join;
          const opened = ClientWalk.open(graph, entry, facts, { shared: true, leads: false });
          walks.set(player, opened.walk);
          compareRecord(failures, `${name}: ${player} joins on ${entry}`, step, recordJson(opened.walk, opened.sends));
        } else if ('expire' in step) {
          count('expire');
        } else if ('message' in step) {
          count(step.message.type);
          for (const [player, expected] of Object.entries(step.after)) {
            const walk = walks.get(player);
            if (!walk) {
              failures.push(`${name}: ${step.message.type} reaches ${player}, who takes no part`);
              continue;
            }
            let sends;
            try {
              sends = applyGroupMessage(walk, player, step.message);
            } catch (e) {
              failures.push(`${name}: ${player} cannot follow ${JSON.stringify(step.message)}: ${e}`);
              continue;
            }
            compareRecord(failures, `${name}: ${player} after ${JSON.stringify(step.message)}`, expected, recordJson(walk, sends));
          }
        } else {
          failures.push(`${name}: unknown step ${JSON.stringify(step)}`);
        }
      } catch (e) {
        failures.push(`${name}: threw ${e}`);
        break;
      }
    }
  }
  report(t, 'shared_walks.json', scenarios.length, failures, `scenarios over ${Object.keys(conversations).length} conversations, ${steps} steps: ${[...kinds].map(([k, n]) => `${k} ${n}`).join(', ')}`);
});

test('vector counts', (t) => {
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  const line = `conformance vectors: ${[...counts].map(([f, n]) => `${f} ${n}`).join(', ')}; ${total} in all (server_verdicts.json: see e2e.test.js)`;
  t.diagnostic(line);
  console.log(line);
});
