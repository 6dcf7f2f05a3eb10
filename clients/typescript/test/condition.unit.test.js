import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  parseCondition,
  evaluate,
  holds,
  factsOf,
  applyEffect,
  cutsceneDone,
  withAfk,
  ConditionError,
  MAX_DEPTH,
  MAX_CONDITION_BYTES,
} from '../src/index.js';

/** The reference's test player: 50 coins, two tags, quest `Done` completed, others active. */
const player = {
  questStatus: (q) => (q === 'Done' ? 'completed' : 'active'),
  objectiveProgress: (_q, o) => (o === 'Fish' ? 3 : 0),
  has: (name) => ['PostReveal', 'Fishing.Casted'].includes(name),
  counter: (c) => (c === 'coins' ? 50 : 0),
};

test('every form evaluates as the reference does', () => {
  const yes = (text) => assert.equal(holds(text, player), true, text);
  const no = (text) => assert.equal(holds(text, player), false, text);
  yes('true');
  no('false');
  yes('has(PostReveal) && has(Fishing.Casted)');
  no('!has(PostReveal)');
  yes('quest(Done) == completed && quest(Other) != completed');
  yes('coins >= 50 && coins < 51 && coins == 50 && coins != -1');
  yes('progress(Q, Fish) > 2 || false');
  yes('(false || true) && !(false)');
  no('coins > 50 || has(Night)');
  yes('3 > 2');
  yes('-3 < coins');
});

test('a fact sheet answers with its defaults: absent quest available, absent progress 0', () => {
  const sheet = { quests: { A: 'completed' }, progress: { 'A/O': 2 }, coins: 7, experience: 1, tutorial_stage: 0, has: ['Dialogue.Talking'] };
  assert.equal(holds('quest(A) == completed', sheet), true);
  assert.equal(holds('quest(B) == available', sheet), true);
  assert.equal(holds('progress(A, O) == 2 && progress(B, O) == 0', sheet), true);
  assert.equal(holds('has(Dialogue.Talking) && !has(Afk)', sheet), true);
  assert.equal(holds('coins == 7', factsOf(sheet)), true);
  // `quests`, `progress` and `has` may be left out (the schema gives them defaults).
  assert.equal(holds('quest(A) == available && !has(X)', { coins: 0, experience: 0, tutorial_stage: 0 }), true);
  // Keys like `__proto__` are data, not the object's prototype.
  assert.equal(holds('quest(constructor) == available', sheet), true);
});

test('errors say what and where (byte position)', () => {
  const error = (text) => {
    try {
      parseCondition(text);
    } catch (e) {
      assert.ok(e instanceof ConditionError, `${text}: ${e}`);
      assert.equal(e.code, 'bad_condition');
      return e;
    }
    assert.fail(`${text} parsed`);
  };
  assert.equal(error('coins >= ').position, 9);
  assert.match(error('gold > 3').message, /unknown name `gold`/);
  assert.match(error('quest(Q) == finished').message, /unknown quest status/);
  assert.equal(error('has(A) has(B)').position, 7);
  error('coins > 99999999999999999999');
  error('has(A) @');
  error('has(');
  error('coins >=');
  error('');
  error('a & b');
  error('- coins > 1');
  assert.match(error('has(A) é').message, /unexpected character `é`/);
});

test('integers are 64-bit: the largest parses, one more does not, and comparisons are exact', () => {
  assert.equal(holds('9223372036854775807 > 9223372036854775806', player), true);
  assert.throws(() => parseCondition('9223372036854775808 > 1'), ConditionError);
  assert.equal(holds('-9223372036854775807 < 0', player), true);
  const rich = { coins: 2 ** 53, experience: 0, tutorial_stage: 0 };
  assert.equal(holds('coins == 9007199254740992', rich), true);
});

test('nesting and length are bounded', () => {
  assert.throws(() => parseCondition(`${'('.repeat(10_000)}true${')'.repeat(10_000)}`), ConditionError);
  assert.throws(() => parseCondition(`${'('.repeat(100)}true${')'.repeat(100)}`), /nested deeper than 32/);
  assert.throws(() => parseCondition(`${'!'.repeat(500)}true`), ConditionError);
  assert.ok(parseCondition(`${'('.repeat(MAX_DEPTH)}true${')'.repeat(MAX_DEPTH)}`));
  assert.throws(() => parseCondition(`${'('.repeat(MAX_DEPTH + 1)}true${')'.repeat(MAX_DEPTH + 1)}`), ConditionError);
  const long = `true${' '.repeat(MAX_CONDITION_BYTES - 4)}`;
  assert.equal(holds(long, player), true);
  assert.throws(() => parseCondition(`${long} `), /longer than 1024 bytes/);
  // Bytes, not UTF-16 units: 342 three-byte characters are 1,026 bytes.
  assert.throws(() => parseCondition('あ'.repeat(342)), /longer than 1024 bytes/);
});

test('the tree is plain data', () => {
  assert.deepEqual(parseCondition('!has(A) || coins > 2'), {
    kind: 'any',
    parts: [
      { kind: 'not', inner: { kind: 'has', name: 'A' } },
      { kind: 'compare', left: { kind: 'counter', counter: 'coins' }, op: '>', right: { kind: 'int', value: 2n } },
    ],
  });
  assert.equal(evaluate({ kind: 'const', value: true }, player), true);
});

test('effects keep the sheet current (PROTOCOL.md section 10)', () => {
  const profile = { coins: 0, experience: 0, tutorial_stage: 0 };
  let sheet = { quests: {}, progress: {}, coins: 0, experience: 0, tutorial_stage: 0, has: ['Dialogue.Talking', 'Afk'] };
  sheet = applyEffect(sheet, { type: 'effect', action: 'AcceptQuest', effect: { kind: 'quest_accepted', quest: 'P', objectives: ['A', 'B'] }, profile });
  assert.deepEqual(sheet.quests, { P: 'active' });
  assert.deepEqual(sheet.progress, { 'P/A': 0, 'P/B': 0 });
  sheet = applyEffect(sheet, { type: 'effect', action: 'AdvanceObjective', effect: { kind: 'objective_advanced', quest: 'P', objective: 'A', progress: 1, target: 1 }, profile });
  assert.equal(sheet.progress['P/A'], 1);
  sheet = applyEffect(sheet, { type: 'effect', action: 'CompleteQuest', effect: { kind: 'quest_completed', quest: 'P', coins: 30, experience: 20 }, profile: { coins: 30, experience: 20, tutorial_stage: 0 } });
  assert.equal(sheet.quests.P, 'completed');
  assert.equal(sheet.coins, 30);
  assert.equal(holds('coins >= 30 && quest(P) == completed && progress(P, A) == 1', sheet), true);
  sheet = applyEffect(sheet, { type: 'effect', action: 'PlayCutscene', effect: { kind: 'play_cutscene', scene: 'S' }, profile });
  assert.deepEqual(sheet.has, ['Dialogue.Talking', 'Story.Cutscene', 'Afk'], 'states before tags');
  sheet = cutsceneDone(sheet);
  assert.deepEqual(sheet.has, ['Dialogue.Talking', 'Afk']);
  assert.deepEqual(withAfk(sheet, false).has, ['Dialogue.Talking']);
  assert.deepEqual(withAfk(withAfk(sheet, false), true).has, ['Dialogue.Talking', 'Afk']);
});
