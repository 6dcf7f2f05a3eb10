import { test } from 'node:test';
import assert from 'node:assert/strict';

import { buildGraph, decide, draw, roll, splitmix64, toU64, choiceRule, latestVotes } from '../src/index.js';
import { baseConversation } from './fixtures.js';

const BOATS = JSON.stringify({
  FirstNode: 'Boat',
  Speaker: 'Wren',
  Shared: { Mode: 'Majority' },
  Boat: {
    Text: 'Which boat?',
    Responses: [
      { Text: 'The dinghy.', NextNode: 'Off' },
      { Text: 'The barge.', NextNode: 'Off' },
      { Text: 'The raft.', NextNode: 'Off' },
    ],
  },
  Off: { Text: 'Off we go.', Close: true },
});
const graph = buildGraph(BOATS, 'Boats');
const PARTY = ['ana', 'bo', 'cy', 'di'];
const vote = (player, i) => ({ player, response: `Boat_r${i}` });

test('draws are splitmix64 of the seed stepped by the golden gamma, in 64-bit BigInt arithmetic', () => {
  // splitmix64's reference stream for seed 0.
  assert.equal(draw(0, 0), 0xe220a8397b1dcdafn);
  assert.equal(draw('0', 1), 0x6e789e6aa1b965f4n);
  assert.equal(draw(0n, 2), 0x06c45d188009454fn);
  // Wrapping: the largest seed steps past 2^64.
  const max = '18446744073709551615';
  assert.equal(draw(max, 3), splitmix64((2n ** 64n - 1n + 3n * 0x9e3779b97f4a7c15n) % 2n ** 64n));
  for (const seed of ['0', '1', '42', max]) {
    for (let k = 0; k < 8; k++) {
      const r = roll(seed, k);
      assert.ok(Number.isInteger(r) && r >= 1 && r <= 100, `roll ${r}`);
      assert.equal(r, 1 + Number(draw(seed, k) % 100n));
    }
  }
});

test('seeds are unsigned 64-bit integers, written in decimal', () => {
  assert.equal(toU64('18446744073709551615'), 2n ** 64n - 1n);
  for (const bad of ['18446744073709551616', '-1', '1.5', '0x10', '', ' 1', 1.5, -1]) {
    assert.throws(() => toU64(/** @type {any} */ (bad)), RangeError, JSON.stringify(bad));
  }
});

test('a rule takes the defaults of docs/CONTENT.md', () => {
  assert.deepEqual(choiceRule({}), { Mode: 'Leader' });
  assert.deepEqual(choiceRule({ Mode: 'Majority' }), { Mode: 'Majority', TimeLimit: 30, Tie: 'Leader' });
  assert.deepEqual(choiceRule({ Mode: 'Majority', TimeLimit: 20, Tie: 'Roll' }), { Mode: 'Majority', TimeLimit: 20, Tie: 'Roll' });
  assert.deepEqual(choiceRule({ Mode: 'Roll' }), { Mode: 'Roll' });
  assert.deepEqual(choiceRule({ Mode: 'Roll', TimeLimit: 15 }), { Mode: 'Roll', TimeLimit: 15 });
  assert.deepEqual(choiceRule({ Mode: 'All' }), { Mode: 'All' });
  // The sample's ferry: Majority with 20 s for the conversation, its own Roll on the oars.
  const wren = buildGraph(baseConversation('Wren'), 'Wren');
  assert.deepEqual(wren.problems, []);
  assert.deepEqual(wren.shared, { Mode: 'Majority', TimeLimit: 20, Tie: 'Leader' });
  assert.deepEqual(wren.choiceRule('Ferry_Greet'), { Mode: 'Majority', TimeLimit: 20, Tie: 'Leader' });
  assert.deepEqual(wren.choiceRule('Ferry_Rowing'), { Mode: 'Roll' }, "a node's Choice is a whole rule");
  assert.equal(wren.choiceRule('Ferry_Greet_r1'), null, 'only lines have a rule');
  assert.equal(buildGraph(baseConversation('Pim'), 'Pim').choiceRule('PimsTideTale_Greet'), null, 'Pim is walked alone');
});

test('Leader: the leader vote decides, the others are suggestions', () => {
  const rule = { Mode: 'Leader' };
  assert.equal(decide({ graph, rule, participants: PARTY, leader: 'bo', votes: [vote('ana', 1)] }), null);
  assert.deepEqual(decide({ graph, rule, participants: PARTY, leader: 'bo', votes: [vote('ana', 1), vote('bo', 3)] }), { response: 'Boat_r3', by: 'leader', rolls: [] });
});

test('Majority: more than half of the participants at once; the most votes at the limit; ties by the tie rule', () => {
  const rule = { Mode: 'Majority' };
  const two = [vote('ana', 2), vote('bo', 2)];
  assert.equal(decide({ graph, rule, participants: PARTY, leader: 'ana', votes: two }), null, '2 of 4 is not more than half');
  assert.deepEqual(decide({ graph, rule, participants: PARTY, leader: 'ana', votes: [...two, vote('cy', 2)] }), { response: 'Boat_r2', by: 'majority', rolls: [] });
  assert.deepEqual(decide({ graph, rule, participants: PARTY, leader: 'ana', votes: two, expired: true }), { response: 'Boat_r2', by: 'majority', rolls: [] });
  const tied = [vote('ana', 3), vote('bo', 2), vote('cy', 3), vote('di', 2)];
  const by = (Tie, leader = 'ana') => decide({ graph, rule: { Mode: 'Majority', Tie }, participants: PARTY, leader, votes: tied, expired: true, seed: '7' });
  assert.deepEqual(by('Leader'), { response: 'Boat_r3', by: 'tie_leader', rolls: [] });
  assert.deepEqual(by('First'), { response: 'Boat_r2', by: 'tie_first', rolls: [] });
  const picked = ['Boat_r2', 'Boat_r3'][Number(draw(7, 0) % 2n)];
  assert.deepEqual(by('Roll'), { response: picked, by: 'tie_roll', rolls: [] });
  // The leader voted for none of the tied: as First.
  const spread = [vote('ana', 1), vote('bo', 2), vote('cy', 3)];
  assert.deepEqual(decide({ graph, rule, participants: PARTY, leader: 'di', votes: spread, expired: true }), { response: 'Boat_r1', by: 'tie_first', rolls: [] });
  // No vote at the limit: nothing yet (the first vote after it decides).
  assert.equal(decide({ graph, rule, participants: PARTY, leader: 'ana', votes: [], expired: true }), null);
});

test('Roll: waits for everyone (or the limit), voters roll in join order, the highest wins, a tie to the earlier joiner', () => {
  const rule = { Mode: 'Roll' };
  const three = PARTY.slice(0, 3);
  const votes = [vote('cy', 3), vote('ana', 1)];
  assert.equal(decide({ graph, rule, participants: three, leader: 'ana', votes, seed: '5' }), null);
  const d = decide({ graph, rule, participants: three, leader: 'ana', votes, expired: true, seed: '5' });
  assert.deepEqual(d?.rolls, [
    { player: 'ana', roll: roll(5, 0) },
    { player: 'cy', roll: roll(5, 1) },
  ]);
  assert.equal(d?.response, roll(5, 1) > roll(5, 0) ? 'Boat_r3' : 'Boat_r1');
  assert.equal(d?.by, 'roll');
  // A seed whose first two rolls are equal: the earlier joiner's vote wins.
  let seed = 1n;
  while (roll(seed, 0) !== roll(seed, 1)) seed++;
  const equal = decide({ graph, rule, participants: ['ana', 'bo'], leader: 'bo', votes: [vote('bo', 2), vote('ana', 1)], seed });
  assert.equal(equal?.response, 'Boat_r1');
});

test('All: only a unanimous group decides, whatever the clock', () => {
  const rule = { Mode: 'All' };
  const three = PARTY.slice(0, 3);
  assert.equal(decide({ graph, rule, participants: three, leader: 'ana', votes: [vote('ana', 2), vote('bo', 2)], expired: true }), null);
  assert.deepEqual(decide({ graph, rule, participants: three, leader: 'ana', votes: [vote('ana', 2), vote('bo', 2), vote('cy', 2)] }), { response: 'Boat_r2', by: 'unanimous', rolls: [] });
  assert.equal(decide({ graph, rule, participants: three, leader: 'ana', votes: [vote('ana', 2), vote('bo', 2), vote('cy', 1)], expired: true }), null);
});

test('only participants count, only responses count, and the latest vote of each', () => {
  const rule = { Mode: 'Majority' };
  const votes = [vote('eve', 1), vote('mallory', 1), vote('ana', 2)];
  assert.deepEqual(decide({ graph, rule, participants: ['ana', 'bo'], leader: 'bo', votes, expired: true }), { response: 'Boat_r2', by: 'majority', rolls: [] });
  for (const Mode of ['Leader', 'Majority', 'Roll', 'All']) {
    assert.equal(decide({ graph, rule: { Mode }, participants: PARTY, leader: 'ana', votes: [{ player: 'ana', response: 'Boat' }, { player: 'bo', response: 'Nowhere_r1' }], expired: true }), null, Mode);
  }
  assert.deepEqual(latestVotes([vote('ana', 1), vote('bo', 2), vote('ana', 3)]), [vote('ana', 3), vote('bo', 2)]);
  // Without a graph, a response's priority is read from its name.
  assert.deepEqual(decide({ rule: { Mode: 'Majority', Tie: 'First' }, participants: ['a', 'b'], leader: 'a', votes: [{ player: 'a', response: 'X_r10' }, { player: 'b', response: 'X_r9' }], expired: true }), { response: 'X_r9', by: 'tie_first', rolls: [] });
});
