import { test } from 'node:test';
import assert from 'node:assert/strict';

import { buildPayload, parsePayload, PayloadError, ACTION_TYPES } from '../src/index.js';
import { ACTION_SPECS } from '../src/actions.generated.js';

/** Asserts a PayloadError with this code. */
function refuses(fn, code) {
  assert.throws(fn, (e) => e instanceof PayloadError && e.code === code, `expected ${code}`);
}

test('every action type builds its documented payload (PROTOCOL.md 9.3)', () => {
  assert.equal(buildPayload({ Type: 'AcceptQuest', QuestId: 'PimsTideTale' }), 'PimsTideTale');
  assert.equal(
    buildPayload({ Type: 'CheckQuest', QuestId: 'CopperSnappers', SuccessNode: 'CopperSnappers_Complete', FailureNode: 'CopperSnappers_NotYet' }),
    'CopperSnappers|CopperSnappers_Complete|CopperSnappers_NotYet',
  );
  assert.equal(buildPayload({ Type: 'CompleteQuest', QuestId: 'PimsTideTale' }), 'PimsTideTale');
  assert.equal(buildPayload({ Type: 'AdvanceObjective', QuestId: 'Q', ObjectiveId: 'O' }), 'Q|O');
  assert.equal(buildPayload({ Type: 'AdvanceObjective', QuestId: 'Q', ObjectiveId: 'O', Amount: 3 }), 'Q|O|3');
  assert.equal(
    buildPayload({ Type: 'AdvanceObjective', QuestId: 'PimsTideTale', ObjectiveId: 'HearTheTale', Amount: 1, Island: 'mistral_cay' }),
    'PimsTideTale|HearTheTale|1|mistral_cay',
  );
  assert.equal(buildPayload({ Type: 'TrackQuest', QuestId: 'CopperSnappers' }), 'CopperSnappers');
  assert.equal(buildPayload({ Type: 'OpenShop', Shop: 'SaltyHookRods' }), 'SaltyHookRods');
  assert.equal(buildPayload({ Type: 'OpenSellMenu' }), '');
  assert.equal(buildPayload({ Type: 'PlayCutscene', Scene: 'LanternLighting', QuestId: 'LanternsOfGullRock' }), 'LanternLighting|LanternsOfGullRock');
  assert.equal(buildPayload({ Type: 'PlayCutscene', Scene: 'LanternLighting' }), 'LanternLighting');
  assert.equal(buildPayload({ Type: 'ChooseRideBoat', QuestId: 'VoyageToMistral' }), 'VoyageToMistral');
});

test('an island without an amount writes 1', () => {
  assert.equal(buildPayload({ Type: 'AdvanceObjective', QuestId: 'Q', ObjectiveId: 'O', Island: 'isle' }), 'Q|O|1|isle');
});

test('separators and escapes inside fields are escaped, and parse back (the documented example)', () => {
  const action = { Type: 'CheckQuest', QuestId: 'a|b', SuccessNode: 'c\\', FailureNode: '|' };
  const payload = buildPayload(action);
  assert.equal(payload, 'a\\|b|c\\\\|\\|');
  assert.deepEqual(parsePayload('CheckQuest', payload), action);
});

test('build(parse(s)) === s for canonical payloads of every type', () => {
  const samples = {
    AcceptQuest: ['Q', 'Pipe\\|Quest', '日本'],
    CheckQuest: ['Q|A|B', 'Q||'],
    CompleteQuest: ['Back\\\\slash'],
    AdvanceObjective: ['Q|O', 'Q|O|1', 'Q|O|4294967295|isle\\|x'],
    TrackQuest: ['T'],
    OpenShop: ['S'],
    OpenSellMenu: [''],
    PlayCutscene: ['S', 'S|Q', 'S|'],
    ChooseRideBoat: ['V'],
  };
  for (const type of Object.keys(samples)) assert.ok(ACTION_TYPES.includes(type), type);
  for (const [type, payloads] of Object.entries(samples)) {
    for (const p of payloads) assert.equal(buildPayload(parsePayload(type, p)), p, `${type} ${p}`);
  }
  // Every type, from the action table: its fewest and its most fields.
  for (const type of ACTION_TYPES) {
    const spec = ACTION_SPECS[type];
    const fewest = spec.fields.filter((f) => f.kind === 'ident' || f.kind === 'target').map((_, i) => `f${i}`);
    const most = spec.fields.flatMap((f, i) => (f.kind === 'amount' ? ['2', `isle${i}`] : [`f${i}`]));
    assert.equal(fewest.length, spec.min, type);
    assert.equal(most.length, spec.max, type);
    for (const p of [fewest.join('|'), most.join('|')]) assert.equal(buildPayload(parsePayload(type, p)), p, `${type} ${p}`);
  }
});

test('field counts are checked per action type', () => {
  refuses(() => parsePayload('AcceptQuest', 'a|b'), 'field_count');
  refuses(() => parsePayload('CheckQuest', 'a|b'), 'field_count');
  refuses(() => parsePayload('AdvanceObjective', 'Q'), 'field_count');
  refuses(() => parsePayload('AdvanceObjective', 'Q|O|1|isle|extra'), 'field_count');
  refuses(() => parsePayload('OpenSellMenu', 'x'), 'field_count');
  refuses(() => parsePayload('OpenSellMenu', '|'), 'field_count');
  refuses(() => parsePayload('PlayCutscene', 'a|b|c'), 'field_count');
  // The empty payload is one empty field: right for one-field types.
  assert.deepEqual(parsePayload('ChooseRideBoat', ''), { Type: 'ChooseRideBoat', QuestId: '' });
});

test('a lone backslash is bad_escape, with its position', () => {
  refuses(() => parsePayload('AcceptQuest', 'bad\\escape'), 'bad_escape');
  try {
    parsePayload('AcceptQuest', 'a\\');
    assert.fail('accepted');
  } catch (e) {
    assert.equal(e.code, 'bad_escape');
    assert.equal(e.position, 1);
    assert.match(e.message, /AcceptQuest: index 1/);
  }
});

test('amounts are strict: from 1, no sign, no leading zero, no fraction, at most 2^32-1', () => {
  for (const bad of ['0', '00', '02', '+2', '-2', '2.0', '', '1e3', '4294967296', '99999999999', ' 1', '١']) {
    refuses(() => parsePayload('AdvanceObjective', `Q|O|${bad}`), 'bad_amount');
  }
  assert.deepEqual(parsePayload('AdvanceObjective', 'Q|O|1'), { Type: 'AdvanceObjective', QuestId: 'Q', ObjectiveId: 'O', Amount: 1 });
  refuses(() => buildPayload({ Type: 'AdvanceObjective', QuestId: 'Q', ObjectiveId: 'O', Amount: 0 }), 'bad_amount');
  refuses(() => buildPayload({ Type: 'AdvanceObjective', QuestId: 'Q', ObjectiveId: 'O', Amount: 1.5 }), 'bad_amount');
  refuses(() => buildPayload({ Type: 'AdvanceObjective', QuestId: 'Q', ObjectiveId: 'O', Amount: -1 }), 'bad_amount');
  refuses(() => buildPayload({ Type: 'AdvanceObjective', QuestId: 'Q', ObjectiveId: 'O', Amount: 2 ** 32 }), 'bad_amount');
});

test('bad actions say what is wrong', () => {
  refuses(() => buildPayload({ Type: 'Teleport' }), 'unknown_action');
  refuses(() => parsePayload('Teleport', ''), 'unknown_action');
  refuses(() => buildPayload({ Type: 'AcceptQuest' }), 'bad_action');
  assert.throws(() => buildPayload({ Type: 'OpenShop', Shop: 3 }), /OpenShop: Shop must be a string, got 3/);
});
