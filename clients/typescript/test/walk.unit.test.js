import { test } from 'node:test';
import assert from 'node:assert/strict';

import { buildGraph, ClientWalk, Walk, WalkRefusal, ARM_CAP, applyEffect } from '../src/index.js';
import { baseConversation, freshFacts, recorded, recordedClientFrames } from './fixtures.js';

/** Asserts a WalkRefusal with this code. */
function refuses(fn, code) {
  assert.throws(fn, (e) => e instanceof WalkRefusal && e.code === code, `expected ${code}`);
}

test("Pim's conversation sends exactly the frames recorded from a real server (PROTOCOL.md 8.4)", () => {
  const graph = buildGraph(recorded('pim-content'), 'Pim');
  const { walk, sends } = ClientWalk.open(graph, 'PimsTideTale_Greet', freshFacts());
  assert.deepEqual(sends, [], 'the greeting has no node actions');
  assert.deepEqual(walk.choices, ['PimsTideTale_Greet_r1', 'PimsTideTale_Greet_r2']);
  assert.equal(walk.canAdvance, false);
  const sent = [];
  sent.push(...walk.choose('PimsTideTale_Greet_r1'));
  assert.equal(walk.line.name, 'PimsTideTale_Tale');
  sent.push(...walk.advance());
  assert.equal(walk.line.name, 'PimsTideTale_Ending');
  sent.push(...walk.advance('PimsTideTale_Ending'));
  assert.equal(walk.line.name, 'PimsTideTale_Complete');
  assert.equal(walk.ended, false, 'a Close line is still a line: advance past it');
  sent.push(...walk.advance());
  assert.equal(walk.ended, true);
  const expected = ['pim-choose', 'pim-advance-1', 'pim-advance-2', 'pim-advance-3'].flatMap(recordedClientFrames);
  assert.deepEqual(sent, expected, 'the last step ends with the close');
});

test('a response action is held until the player advances past a final Close line (Fennick)', () => {
  const graph = buildGraph(baseConversation('Fennick'), 'Fennick');
  const { walk } = ClientWalk.open(graph, 'CopperSnappers_Greet', freshFacts());
  assert.deepEqual(walk.choose('CopperSnappers_Greet_r1'), [{ type: 'choose', response: 'CopperSnappers_Greet_r1' }]);
  assert.equal(walk.line.name, 'CopperSnappers_Accepted');
  assert.deepEqual(walk.advance(), [
    { type: 'advance', node: 'CopperSnappers_Accepted' },
    { type: 'action', action: 'AcceptQuest', payload: 'CopperSnappers' },
    { type: 'action', action: 'TrackQuest', payload: 'CopperSnappers' },
    { type: 'close' },
  ]);
  assert.equal(walk.ended, true);
  refuses(() => walk.advance(), 'no_conversation');
  refuses(() => walk.advance('CopperSnappers_Accepted'), 'no_conversation');
});

test("a CheckQuest response goes out at once and the walk waits for the server's jump (PROTOCOL.md 8.5)", () => {
  const graph = buildGraph(baseConversation('Fennick'), 'Fennick');
  const facts = freshFacts({ quests: { CopperSnappers: 'active' }, progress: { 'CopperSnappers/CatchSnappers': 0 } });
  const { walk } = ClientWalk.open(graph, 'CopperSnappers_Check', facts);
  assert.deepEqual(walk.choose('CopperSnappers_Check_r1'), [
    { type: 'choose', response: 'CopperSnappers_Check_r1' },
    { type: 'action', action: 'CheckQuest', payload: 'CopperSnappers|CopperSnappers_Complete|CopperSnappers_NotYet' },
  ]);
  assert.equal(walk.screen.kind, 'waiting_for_jump');
  assert.equal(walk.waitingForJump, true);
  refuses(() => walk.advance(), 'awaits_jump');
  refuses(() => walk.advance('CopperSnappers_Check'), 'awaits_jump');
  // Until the jump every step is refused, as the server refuses it, even a response still in R.
  refuses(() => walk.choose('CopperSnappers_Check_r2'), 'awaits_jump');
  refuses(() => walk.choose('CopperSnappers_Check_r1'), 'awaits_jump');
  assert.deepEqual(walk.jump('CopperSnappers_NotYet'), []);
  assert.deepEqual(walk.choices, ['CopperSnappers_NotYet_r1', 'CopperSnappers_NotYet_r2']);
  // The recorded exchange: a response with no next line ends the conversation at once.
  assert.deepEqual(walk.choose('CopperSnappers_NotYet_r1'), [{ type: 'choose', response: 'CopperSnappers_NotYet_r1' }, { type: 'close' }]);
  assert.equal(walk.ended, true);
  const recordedSends = recordedClientFrames('fennick-check').filter((m) => m.type !== 'talk');
  assert.deepEqual(recordedSends.map((m) => m.type), ['choose', 'action', 'choose', 'close']);
});

test('a jump shows the line whatever its conditions and sends its node actions', () => {
  const graph = buildGraph(baseConversation('Fennick'), 'Fennick');
  const { walk } = ClientWalk.open(graph, 'CopperSnappers_Check', freshFacts());
  walk.choose('CopperSnappers_Check_r1');
  assert.deepEqual(walk.jump('CopperSnappers_Complete'), [{ type: 'action', action: 'CompleteQuest', payload: 'CopperSnappers' }]);
  refuses(() => walk.jump('Nowhere'), 'unknown_vertex');
  refuses(() => walk.jump('CopperSnappers_Check_r1'), 'internal');
});

test("picking a response to the reply sends the held actions first (rule 4)", () => {
  const graph = buildGraph({
    Greet: { Text: 'g', Responses: [{ Text: 'yes', Actions: [{ Type: 'AcceptQuest', QuestId: 'Q' }], NextNode: 'Reply' }] },
    Reply: { Text: 'r', Actions: [{ Type: 'TrackQuest', QuestId: 'Q' }], Responses: [{ Text: 'ok', NextNode: 'Bye' }] },
    Bye: { Text: 'b', Close: true },
  });
  const { walk } = ClientWalk.open(graph, 'Greet', freshFacts());
  assert.deepEqual(walk.choose('Greet_r1'), [
    { type: 'choose', response: 'Greet_r1' },
    { type: 'action', action: 'TrackQuest', payload: 'Q' },
  ]);
  assert.deepEqual(walk.choose('Reply_r1'), [
    { type: 'choose', response: 'Reply_r1' },
    { type: 'action', action: 'AcceptQuest', payload: 'Q' },
  ]);
});

test("a branch shows the first target whose conditions hold (Marisol's specials, PROTOCOL.md 8.2)", () => {
  const content = baseConversation('Marisol');
  const pick = (facts) => {
    const graph = buildGraph(content, 'Marisol');
    const { walk } = ClientWalk.open(graph, 'Marisol_Hello', facts);
    walk.choose('Marisol_Hello_r3');
    return walk.line.name;
  };
  assert.equal(pick(freshFacts()), 'Marisol_Regular');
  assert.equal(pick(freshFacts({ coins: 100 })), 'Marisol_Premium');
  assert.equal(pick(freshFacts({ quests: { CopperSnappers: 'completed' } })), 'Marisol_Snapper');
  assert.equal(pick(freshFacts({ coins: 100, has: ['Dialogue.Talking', 'PostReveal'] })), 'Marisol_Lantern');
});

test('responses whose conditions fail are not offered; facts are checked again on choose', () => {
  const graph = buildGraph({
    Hi: { Text: 'h', Responses: [{ Text: 'rich', Conditions: 'coins >= 10', NextNode: 'Hi' }, { Text: 'any', NextNode: 'Hi' }] },
  });
  const { walk } = ClientWalk.open(graph, 'Hi', freshFacts({ coins: 10 }));
  assert.deepEqual(walk.choices, ['Hi_r1', 'Hi_r2']);
  walk.facts = freshFacts({ coins: 0 });
  refuses(() => walk.choose('Hi_r1'), 'condition_failed');
  assert.deepEqual(walk.choices, ['Hi_r2'], 'the choices are those that hold now');
  const poor = ClientWalk.open(graph, 'Hi', freshFacts()).walk;
  assert.deepEqual(poor.choices, ['Hi_r2']);
  refuses(() => poor.choose('Hi_r1'), 'not_reachable');
  refuses(() => poor.choose('Hi_r99'), 'unknown_vertex');
  refuses(() => poor.advance(), 'awaits_choice');
  refuses(() => poor.advance('Hi_r2'), 'not_a_line');
  refuses(() => poor.advance('Hi_r1'), 'not_reachable');
});

test('the walk follows effects: applyEffect then the next condition sees the quest active', () => {
  const graph = buildGraph({
    A: { Text: 'a', NextNode: ['Active', 'Other'] },
    Active: { Text: 'active', Conditions: 'quest(Q) == active', Close: true },
    Other: { Text: 'other', Close: true },
  });
  const { walk } = ClientWalk.open(graph, 'A', freshFacts());
  walk.facts = applyEffect(walk.facts, {
    type: 'effect',
    action: 'AcceptQuest',
    effect: { kind: 'quest_accepted', quest: 'Q', objectives: [] },
    profile: { coins: 0, experience: 0, tutorial_stage: 0 },
  });
  walk.advance();
  assert.equal(walk.line.name, 'Active');
});

test("the server's walk: R, arming capped at 2, not_armed and payload_mismatch", () => {
  const graph = buildGraph({
    Loop: { Text: 'l', Actions: [{ Type: 'OpenShop', Shop: 'S' }], NextNode: 'Loop' },
  });
  const loop = graph.find('Loop').id;
  const { walk } = Walk.open(graph, loop, freshFacts());
  const index = graph.find('Loop').actions[0].index;
  assert.equal(walk.armings(index), 1);
  walk.advance(loop, freshFacts());
  walk.advance(loop, freshFacts());
  assert.equal(walk.armings(index), ARM_CAP, 'a loop never stockpiles more than two runs');
  refuses(() => walk.takeAction('OpenShop', 'Other'), 'payload_mismatch');
  refuses(() => walk.takeAction('AcceptQuest', 'S'), 'not_armed');
  assert.equal(walk.takeAction('OpenShop', 'S'), index);
  assert.equal(walk.takeAction('OpenShop', 'S'), index);
  refuses(() => walk.takeAction('OpenShop', 'S'), 'not_armed');
  walk.close();
  refuses(() => walk.advance(loop, freshFacts()), 'no_conversation');
});

test('an unknown entry is refused', () => {
  const graph = buildGraph({ A: { Text: 'a' } });
  refuses(() => ClientWalk.open(graph, 'B', freshFacts()), 'unknown_vertex');
  const { walk } = ClientWalk.open(graph, 'A', freshFacts());
  assert.deepEqual(walk.advance(), [{ type: 'advance', node: 'A' }, { type: 'close' }], 'a line with no exit is still advanced past');
  assert.equal(walk.ended, true);
});

test('a response shown earlier may be picked again, and a line advanced again, as the server accepts them', () => {
  const graph = buildGraph({
    Hi: { Text: 'h', Responses: [{ Text: 'tale', NextNode: 'Tale' }, { Text: 'bye', NextNode: 'Bye' }] },
    Tale: { Text: 't', NextNode: 'End' },
    End: { Text: 'e', Actions: [{ Type: 'OpenShop', Shop: 'S' }], Responses: [{ Text: 'again', NextNode: 'Hi' }] },
    Bye: { Text: 'b', Close: true },
  });
  const { walk } = ClientWalk.open(graph, 'Hi', freshFacts());
  walk.choose('Hi_r1');
  walk.advance();
  assert.equal(walk.line.name, 'End');
  // Tale is no longer on screen but is in R: advancing it again shows End again.
  assert.deepEqual(walk.advance('Tale'), [{ type: 'advance', node: 'Tale' }, { type: 'action', action: 'OpenShop', payload: 'S' }]);
  // Hi_r2 was shown with Hi and never picked: it may still be.
  assert.deepEqual(walk.choose('Hi_r2'), [{ type: 'choose', response: 'Hi_r2' }]);
  assert.equal(walk.line.name, 'Bye');
});

test("a line carrying CheckQuest itself stays on screen and waits for the jump", () => {
  const graph = buildGraph({
    Look: { Text: 'let me see', Actions: [{ Type: 'CheckQuest', QuestId: 'Q', SuccessNode: 'Yes', FailureNode: 'No' }], NextNode: 'No' },
    Yes: { Text: 'y', Close: true },
    No: { Text: 'n', Close: true },
  });
  const { walk, sends } = ClientWalk.open(graph, 'Look', freshFacts());
  assert.deepEqual(sends, [{ type: 'action', action: 'CheckQuest', payload: 'Q|Yes|No' }]);
  assert.equal(walk.screen.kind, 'line');
  assert.equal(walk.canAdvance, false);
  assert.equal(walk.waitingForJump, true);
  refuses(() => walk.advance(), 'awaits_jump');
  walk.jump('No');
  assert.equal(walk.waitingForJump, false);
  assert.equal(walk.line.name, 'No');
});
