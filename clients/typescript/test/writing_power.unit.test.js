// Writing power (docs/CONTENT.md "Writing power", docs/PROTOCOL.md section 10.1): variables,
// visits, opens, once, line groups and greyed-out responses, from the documents' own rules.
// conformance/writing_power.json replays the reference's vectors (conformance.test.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { parseCondition, holds, countTests, applyEffect, buildGraph, ClientWalk, WalkRefusal, ConditionError, draw } from '../src/index.js';
import { freshFacts } from './fixtures.js';

/** Asserts a WalkRefusal with this code. */
function refuses(fn, code) {
  assert.throws(fn, (e) => e instanceof WalkRefusal && e.code === code, `expected ${code}`);
}

/** Asserts a parse error. */
function bad(text) {
  assert.throws(() => parseCondition(text), ConditionError, text);
}

const facts = freshFacts({
  vars: { MetWren: true, Shy: false, NetsMended: 3, Mood: 'sunny', Big: 9007199254740993n },
  visits: { Wren_Hello: 2, Wren_Hello_r2: 1 },
  opens: 4,
});

test('conditions: variables, strings, visits, visited and opens', () => {
  const cases = [
    ['$MetWren', true],
    ['!$MetWren', false],
    ['$Shy', false],
    ['$Unset', false],
    ['$NetsMended >= 3', true],
    ['$NetsMended<3', false],
    ['$Mood == "sunny"', true],
    ['"sunny" == $Mood', true],
    ['$Mood != "calm"', true],
    ['$Mood == ""', false],
    ['$Unset == ""', true],
    ['$Unset == 0', true],
    ['$Unset != "x"', true],
    ['$Mood == $Mood', true],
    ['$Mood == $NetsMended', false],
    ['$MetWren == 0', true], // a bool read as a value has none: 0 (content that does it does not load)
    ['$MetWren == ""', true],
    ['"a" == "a"', true], // types are check-content's, not the parser's
    ['"a" == 1', false],
    ['$Mood < "zzz"', false],
    ['visits(Wren_Hello) >= 2', true],
    ['visits(Wren_Hello) > 2', false],
    ['visits(Nobody) == 0', true],
    ['visited(Wren_Hello_r2)', true],
    ['visited(Wren_Hello_r1)', false],
    ['opens == 4', true],
    ['opens >= 1 && $MetWren', true],
    ['$MetWren && (visited(Wren_Hello) || has(X))', true],
    ['$Mood == "a b  c"', false],
    ['has(visits) || quest(opens) == available', true],
  ];
  for (const [text, expected] of cases) assert.equal(holds(text, facts), expected, text);
  // Absent sheet fields read as empty.
  assert.equal(holds('opens == 0 && !visited(X) && !$X', freshFacts()), true);
});

test('conditions: what does not parse', () => {
  for (const text of [
    '$',
    '$ MetWren',
    '$1x',
    '"unclosed == $Mood',
    '$A.b',
    '$Mood == "back\\slash"',
    '$Mood == "line\nbreak"',
    `$Mood == "${'x'.repeat(65)}"`,
    'visited(X) == 1',
    'visits(X)',
    'opens',
    '$MetWren == true',
    'visited()',
    'visits X > 1',
  ]) {
    bad(text);
  }
  // 64 bytes of UTF-8 is the longest string; a multi-byte character counts its bytes.
  parseCondition(`$Mood == "${'x'.repeat(64)}"`);
  parseCondition(`$Mood == "${'é'.repeat(32)}"`);
  bad(`$Mood == "${'é'.repeat(32)}x"`);
  assert.equal(holds('$Mood == "ça va"', freshFacts({ vars: { Mood: 'ça va' } })), true);
  // A `$VAR` followed by a comparison is a value; alone, a condition.
  assert.deepEqual(parseCondition('$A'), { kind: 'var', name: 'A' });
  assert.deepEqual(parseCondition('!$A'), { kind: 'not', inner: { kind: 'var', name: 'A' } });
  assert.equal(parseCondition('$A == 1').kind, 'compare');
  // An error after a multi-byte string reports the byte offset.
  assert.throws(() => parseCondition('$M == "é" &'), (e) => e instanceof ConditionError && e.position === 11);
  assert.throws(() => parseCondition('$M == "é\\"'), (e) => e instanceof ConditionError && e.position === 6);
});

test('MostSpecific counts tests: has, quest, comparisons, $VAR and visited', () => {
  const n = (text) => countTests(parseCondition(text));
  assert.equal(n('true'), 0);
  assert.equal(countTests(null), 0);
  assert.equal(n('has(A) && quest(Q) == active'), 2);
  assert.equal(n('$A || !visited(X)'), 2);
  assert.equal(n('($N >= 2 && true) || $M == "x" || opens > 1'), 3);
});

test('variable_set sets facts.vars and keeps the other sheet fields', () => {
  const sheet = freshFacts({ vars: { MetWren: false }, visits: { A: 1 }, opens: 2, seed: '7', last_seen: { A: 3 } });
  const profile = { coins: 0, experience: 0, tutorial_stage: 0 };
  const after = applyEffect(sheet, { type: 'effect', action: 'SetVariable', effect: { kind: 'variable_set', variable: 'MetWren', value: true }, profile });
  assert.deepEqual(after.vars, { MetWren: true });
  assert.deepEqual(sheet.vars, { MetWren: false }, 'the given sheet is not changed');
  assert.equal(after.opens, 2);
  assert.equal(after.seed, '7');
  assert.deepEqual(after.visits, { A: 1 });
  const again = applyEffect(freshFacts(), { type: 'effect', action: 'SetVariable', effect: { kind: 'variable_set', variable: 'Mood', value: 'calm' }, profile });
  assert.deepEqual(again.vars, { Mood: 'calm' });
  assert.equal(holds('$Mood == "calm"', again), true);
});

test('the graph reads Once, Disabled, DisabledLineId and groups; SetVariable is an action', () => {
  const graph = buildGraph(
    JSON.stringify({
      A: {
        Text: 'a',
        Once: true,
        Actions: [{ Type: 'SetVariable', Variable: 'MetWren', Value: 'true' }],
        Responses: [
          { Text: 'r1', Once: true, NextNode: { Pick: 'Weighted', Among: ['B', { Node: 'C', Weight: 3 }], Fallback: 'D' } },
          { Text: 'r2', Conditions: 'coins >= 100', Disabled: 'Needs 100 coins.', DisabledLineId: 'line:00000000aa' },
        ],
      },
      B: { Text: 'b', NextNode: { Pick: 'First', Among: [{ Node: 'C' }, 'D'] } },
      C: { Text: 'c' },
      D: { Text: 'd' },
    }),
  );
  assert.deepEqual(graph.problems, []);
  const a = graph.find('A');
  assert.equal(a.once, true);
  assert.deepEqual(a.actions.map((x) => [x.type, x.payload]), [['SetVariable', 'MetWren|true']]);
  const [r1, r2] = graph.responsesOf('A');
  assert.equal(r1.once, true);
  assert.equal(r2.disabled, 'Needs 100 coins.');
  assert.equal(r2.disabledLineId, 'line:00000000aa');
  const group = graph.vertex(r1.outputs[0]);
  assert.equal(group.kind, 'branch');
  assert.deepEqual(group.group, { pick: 'Weighted', weights: [1, 3], fallback: graph.find('D').id });
  assert.deepEqual(group.outputs, [graph.find('B').id, graph.find('C').id]);
  assert.match(group.name, /^A_b\d+$/);
  // Refused group shapes are problems, not content.
  for (const bad of [
    { Pick: 'Random', Among: ['C'] },
    { Pick: 'First', Among: [] },
    { Pick: 'First', Among: ['C', 'C'] },
    { Pick: 'First', Among: [{ Node: 'C', Weight: 2 }] },
    { Pick: 'Weighted', Among: [{ Node: 'C', Weight: 0 }] },
    { Pick: 'Weighted', Among: [{ Node: 'C', Weight: 1001 }] },
    { Pick: 'First', Among: ['C'], Else: 'D' },
    { Among: ['C'] },
  ]) {
    const g = buildGraph(JSON.stringify({ X: { Text: 'x', NextNode: bad }, C: { Text: 'c' }, D: { Text: 'd' } }));
    assert.ok(g.problems.length > 0, JSON.stringify(bad));
  }
});

/** A conversation of a hub line whose responses go through each kind of group. */
function hub(next, extra = {}) {
  return buildGraph(
    JSON.stringify({
      Hub: { Text: 'hub', NextNode: next },
      Idle_Nets: { Text: 'nets', NextNode: 'Hub' },
      Idle_Gulls: { Text: 'gulls', Conditions: 'has(Dialogue.Talking)', NextNode: 'Hub' },
      Idle_Tide: { Text: 'tide', Conditions: 'has(Dialogue.Talking) && coins >= 0', NextNode: 'Hub' },
      Idle_Quiet: { Text: 'quiet', NextNode: 'Hub' },
      ...extra,
    }),
  );
}

const AMONG = ['Idle_Nets', 'Idle_Gulls', 'Idle_Tide'];

test('groups: First, MostSpecific, LeastRecent and the fallback', () => {
  let { walk } = ClientWalk.open(hub({ Pick: 'First', Among: AMONG }), 'Hub', freshFacts());
  walk.advance();
  assert.equal(walk.line.name, 'Idle_Nets');

  ({ walk } = ClientWalk.open(hub({ Pick: 'MostSpecific', Among: AMONG }), 'Hub', freshFacts()));
  walk.advance();
  assert.equal(walk.line.name, 'Idle_Tide', 'two tests beat one and none');

  // LeastRecent: never shown first, in Among order; then the oldest showing. Idle_Nets and
  // Idle_Gulls were seen before this conversation, Idle_Tide never.
  ({ walk } = ClientWalk.open(hub({ Pick: 'LeastRecent', Among: AMONG }), 'Hub', freshFacts({ last_seen: { Idle_Nets: 5, Idle_Gulls: 2 }, visits: { Idle_Nets: 1, Idle_Gulls: 1 } })));
  const seen = [];
  for (let i = 0; i < 5; i++) {
    walk.advance(); // Hub
    seen.push(walk.line.name);
    walk.advance(); // back to Hub
  }
  assert.deepEqual(seen, ['Idle_Tide', 'Idle_Gulls', 'Idle_Nets', 'Idle_Tide', 'Idle_Gulls']);
  assert.deepEqual(walk.counted, { Hub: 6, Idle_Gulls: 2, Idle_Nets: 1, Idle_Tide: 2 });
  // Visited with no last_seen kept: seen, as if at time 0; a tie goes to the first in Among order.
  ({ walk } = ClientWalk.open(hub({ Pick: 'LeastRecent', Among: AMONG }), 'Hub', freshFacts({ last_seen: { Idle_Nets: 0, Idle_Tide: 1 }, visits: { Idle_Nets: 1, Idle_Gulls: 1, Idle_Tide: 1 } })));
  walk.advance();
  assert.equal(walk.line.name, 'Idle_Nets');

  // None holds: the fallback, whatever its own conditions; without one, the end.
  const cold = freshFacts({ has: [] });
  const g = hub({ Pick: 'First', Among: ['Idle_Gulls', 'Idle_Tide'], Fallback: 'Idle_Cold' }, { Idle_Cold: { Text: 'cold', Conditions: 'false', Once: true, NextNode: 'Hub' } });
  ({ walk } = ClientWalk.open(g, 'Hub', cold));
  walk.advance();
  assert.equal(walk.line.name, 'Idle_Cold');
  walk.advance();
  walk.advance();
  assert.equal(walk.line.name, 'Idle_Cold', 'a fallback is not tested for Once either');
  ({ walk } = ClientWalk.open(hub({ Pick: 'First', Among: ['Idle_Gulls', 'Idle_Tide'] }), 'Hub', cold));
  assert.deepEqual(walk.advance(), [{ type: 'advance', node: 'Hub' }, { type: 'close' }]);
  assert.equal(walk.ended, true);
});

test('groups: Weighted draws from the seed, k counting the draws of this walk', () => {
  const graph = hub({ Pick: 'Weighted', Among: ['Idle_Nets', { Node: 'Idle_Gulls', Weight: 5 }, { Node: 'Idle_Tide', Weight: 2 }] });
  for (const seed of ['0', '7', '18446744073709551615']) {
    const { walk } = ClientWalk.open(graph, 'Hub', freshFacts({ seed }));
    for (let k = 0; k < 6; k++) {
      walk.advance();
      const r = Number(draw(seed, k) % 8n);
      const expected = r < 1 ? 'Idle_Nets' : r < 6 ? 'Idle_Gulls' : 'Idle_Tide';
      assert.equal(walk.line.name, expected, `seed ${seed}, k ${k}`);
      walk.advance();
    }
  }
  // Only holding candidates weigh, and no candidate holding takes no draw.
  const g2 = hub({ Pick: 'Weighted', Among: [{ Node: 'Idle_Gulls', Weight: 5 }, 'Idle_Nets'] }, { Start: { Text: 's', NextNode: { Pick: 'Weighted', Among: ['Idle_Gulls'] } } });
  const { walk } = ClientWalk.open(g2, 'Start', freshFacts({ seed: '7', has: [] }));
  walk.advance('Start');
  assert.equal(walk.ended, true);
  const { walk: w2 } = ClientWalk.open(g2, 'Hub', freshFacts({ seed: '7', has: [] }));
  w2.advance();
  assert.equal(w2.line.name, 'Idle_Nets');
  assert.equal(w2.walk.memory.draws, 1);
});

test('once lines are passed over as next lines once counted, never as an entry or jump', () => {
  const graph = buildGraph(
    JSON.stringify({
      Hello: { Text: 'hi', NextNode: ['Intro', 'Again'] },
      Intro: { Text: 'first time', Once: true, NextNode: 'Hello' },
      Again: { Text: 'again', NextNode: 'Hello' },
    }),
  );
  const { walk } = ClientWalk.open(graph, 'Hello', freshFacts());
  walk.advance();
  assert.equal(walk.line.name, 'Intro');
  walk.advance();
  walk.advance();
  assert.equal(walk.line.name, 'Again', 'Intro counted in this walk');
  // Counted before this conversation: passed over at once, but an entry all the same.
  const { walk: w2 } = ClientWalk.open(graph, 'Intro', freshFacts({ visits: { Intro: 1 } }));
  assert.equal(w2.line.name, 'Intro');
  w2.advance();
  w2.advance();
  assert.equal(w2.line.name, 'Again');
  assert.deepEqual(w2.counted, { Hello: 1, Intro: 1, Again: 1 });
});

/** A shop line with a greyed-out option, a once option and a plain one. */
function shop() {
  return buildGraph(
    JSON.stringify({
      Shop: {
        Text: 'What will it be?',
        Responses: [
          { Text: 'The rod.', Conditions: 'coins >= 100', Disabled: 'Needs 100 coins.', NextNode: 'Sold' },
          { Text: 'Tell me a secret.', Once: true, NextNode: 'Secret' },
          { Text: 'Secret again?', Conditions: 'visited(Shop_r2)', NextNode: 'Secret' },
          { Text: 'Bye.' },
        ],
      },
      Sold: { Text: 'Sold!', Actions: [{ Type: 'SetVariable', Variable: 'HasRod', Value: 'true' }], NextNode: 'Shop' },
      Secret: { Text: 'Psst.', NextNode: 'Shop' },
    }),
  );
}

test('greyed-out responses: listed with their reason, refused with response_disabled, no obstacle to advancing', () => {
  const graph = shop();
  const { walk } = ClientWalk.open(graph, 'Shop', freshFacts());
  assert.deepEqual(walk.choices, ['Shop_r2', 'Shop_r4']);
  assert.deepEqual(walk.greyed, [{ response: 'Shop_r1', reason: 'Needs 100 coins.' }]);
  const screen = walk.screen;
  assert.equal(screen.kind, 'line');
  assert.deepEqual(screen.greyed.map((g) => [g.response.name, g.response.text, g.reason, g.reasonLineId]), [['Shop_r1', 'The rod.', 'Needs 100 coins.', null]]);
  refuses(() => walk.choose('Shop_r1'), 'response_disabled');
  refuses(() => walk.choose('Shop_r3'), 'not_reachable');
  // Its conditions come to hold while the line is on screen: a choice like any other.
  walk.facts = freshFacts({ coins: 100 });
  assert.deepEqual(walk.choices, ['Shop_r1', 'Shop_r2', 'Shop_r4']);
  assert.deepEqual(walk.greyed, []);
  assert.deepEqual(walk.choose('Shop_r1'), [{ type: 'choose', response: 'Shop_r1' }, { type: 'action', action: 'SetVariable', payload: 'HasRod|true' }]);
  assert.equal(walk.line.name, 'Sold');
  // Back to the shop, poor again: greyed again (it is in R, its conditions fail).
  walk.facts = freshFacts();
  walk.advance();
  assert.deepEqual(walk.greyed.map((g) => g.response), ['Shop_r1']);

  // A line whose only choice-holding response is gone: all greyed, advancing ends it.
  const lone = buildGraph(JSON.stringify({ L: { Text: 'l', Responses: [{ Text: 'x', Conditions: 'false', Disabled: 'Never.' }] } }));
  const { walk: w2 } = ClientWalk.open(lone, 'L', freshFacts());
  assert.deepEqual(w2.choices, []);
  assert.equal(w2.canAdvance, true);
  refuses(() => w2.choose('L_r1'), 'response_disabled');
  assert.deepEqual(w2.advance(), [{ type: 'advance', node: 'L' }, { type: 'close' }]);
});

test('once responses: offered until picked, then hidden (condition_failed), not greyed', () => {
  const graph = shop();
  const { walk } = ClientWalk.open(graph, 'Shop', freshFacts());
  walk.choose('Shop_r2');
  assert.equal(walk.line.name, 'Secret');
  walk.advance();
  assert.equal(walk.line.name, 'Shop');
  // Shop_r3 reads visited(Shop_r2): this walk's pick counts.
  assert.deepEqual(walk.choices, ['Shop_r3', 'Shop_r4']);
  refuses(() => walk.choose('Shop_r2'), 'condition_failed');
  assert.deepEqual(walk.counted, { Shop: 2, Shop_r2: 1, Secret: 1 });

  // Picked in an earlier conversation: never added to R.
  const { walk: w2 } = ClientWalk.open(graph, 'Shop', freshFacts({ visits: { Shop_r2: 1 } }));
  assert.deepEqual(w2.choices, ['Shop_r3', 'Shop_r4']);
  refuses(() => w2.choose('Shop_r2'), 'not_reachable');
});

test('a line counts as soon as it is shown: its responses see this showing, its own conditions the count before', () => {
  const graph = buildGraph(
    JSON.stringify({
      Door: { Text: 'door', NextNode: 'Hello' },
      Hello: {
        Text: 'hi',
        Conditions: 'visits(Hello) == 0',
        Responses: [
          { Text: 'first time here', Conditions: 'visits(Hello) == 1', NextNode: 'Hello' },
          { Text: 'later', Conditions: 'visits(Hello) >= 3', NextNode: 'Hello' },
          { Text: 'any' },
        ],
      },
    }),
  );
  const { walk } = ClientWalk.open(graph, 'Door', freshFacts());
  walk.advance();
  assert.equal(walk.line.name, 'Hello', 'its own Conditions saw 0');
  assert.deepEqual(walk.choices, ['Hello_r1', 'Hello_r3'], 'the responses see 1, when shown and when picked');
  // Picked, its next line (Hello again) fails its own condition now (1): the end.
  assert.deepEqual(walk.choose('Hello_r1'), [{ type: 'choose', response: 'Hello_r1' }, { type: 'close' }]);
  assert.deepEqual(walk.counted, { Door: 1, Hello: 1, Hello_r1: 1 });
  // The sheet's count plus this showing: 2 + 1.
  const { walk: w2 } = ClientWalk.open(graph, 'Hello', freshFacts({ visits: { Hello: 2 } }));
  assert.deepEqual(w2.choices, ['Hello_r2', 'Hello_r3']);
  refuses(() => w2.choose('Hello_r1'), 'not_reachable');
});
