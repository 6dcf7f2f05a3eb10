import { test } from 'node:test';
import assert from 'node:assert/strict';

import { buildGraph, ClientWalk, SharedConversation, WalkRefusal } from '../src/index.js';
import { baseConversation, freshFacts } from './fixtures.js';

/** Asserts a WalkRefusal with this code. */
function refuses(fn, code) {
  assert.throws(fn, (e) => e instanceof WalkRefusal && e.code === code, `expected ${code}`);
}

const wren = buildGraph(baseConversation('Wren'), 'Wren');
const poor = freshFacts();
const rich = freshFacts({ coins: 150 });

/** Ana (no coins) leads, Bo (150 coins) follows; both opened on the ferry's greeting. */
function ferry() {
  const ana = ClientWalk.open(wren, 'Ferry_Greet', poor, { shared: true, leads: true });
  const bo = ClientWalk.open(wren, 'Ferry_Greet', rich, { shared: true, leads: false });
  return { ana: ana.walk, bo: bo.walk, sends: [ana.sends, bo.sends] };
}

test('in a shared conversation a pick is a vote and moves nothing', () => {
  const { ana, bo, sends } = ferry();
  assert.deepEqual(sends, [[], []]);
  assert.equal(ana.shared, true);
  assert.deepEqual(ana.choices, ['Ferry_Greet_r1', 'Ferry_Greet_r2', 'Ferry_Greet_r4'], "each sees the responses that hold for them");
  assert.deepEqual(bo.choices, ['Ferry_Greet_r1', 'Ferry_Greet_r2', 'Ferry_Greet_r3', 'Ferry_Greet_r4']);
  assert.deepEqual(bo.choose('Ferry_Greet_r3'), [{ type: 'choose', response: 'Ferry_Greet_r3' }], 'choose is a vote');
  assert.deepEqual(bo.vote('Ferry_Greet_r1'), [{ type: 'choose', response: 'Ferry_Greet_r1' }], 'a vote may change');
  assert.equal(bo.line?.name, 'Ferry_Greet', 'nothing moved');
  refuses(() => ana.vote('Ferry_Greet_r3'), 'not_reachable');
  refuses(() => ana.vote('Wren_Hello_r1'), 'not_reachable');
  refuses(() => ana.vote('Ferry_Greet'), 'not_a_response');
  refuses(() => ana.vote('Nowhere'), 'unknown_vertex');
});

test('only the leader advances, and an advance moves nothing until `advanced`', () => {
  const { ana, bo } = ferry();
  refuses(() => bo.advance(), 'not_leader');
  refuses(() => bo.proposeAdvance('Ferry_Greet'), 'not_leader');
  refuses(() => ana.advance(), 'awaits_choice');
  // The group picks the skiff: both follow to Ferry_Skiff, whose AcceptQuest each sends.
  for (const walk of [ana, bo]) {
    assert.deepEqual(walk.followChosen('Ferry_Greet_r1', 'Ferry_Skiff'), [{ type: 'action', action: 'AcceptQuest', payload: 'FerryForTwo' }]);
    assert.equal(walk.line?.name, 'Ferry_Skiff');
  }
  assert.equal(ana.canAdvance, true);
  assert.equal(bo.canAdvance, false, 'the others wait for the leader');
  assert.equal(bo.awaitsAdvance, true);
  refuses(() => bo.vote('Ferry_Greet_r2'), 'not_current');
  assert.deepEqual(ana.advance(), [{ type: 'advance', node: 'Ferry_Skiff' }]);
  assert.equal(ana.line?.name, 'Ferry_Skiff', 'the advance is a proposal');
  for (const walk of [ana, bo]) {
    assert.deepEqual(walk.followAdvanced('Ferry_Rowing'), []);
    assert.equal(walk.line?.name, 'Ferry_Rowing');
  }
  // Leadership passes: now Bo advances.
  ana.setLeader(false);
  bo.setLeader(true);
  assert.equal(bo.leads, true);
  assert.deepEqual(bo.followChosen('Ferry_Rowing_r2', 'Ferry_FarBar'), [{ type: 'action', action: 'AdvanceObjective', payload: 'FerryForTwo|CrossTheShoals|1|kelpwick' }]);
  assert.deepEqual(bo.advance(), [{ type: 'advance', node: 'Ferry_FarBar' }]);
  refuses(() => ana.advance('Ferry_Skiff'), 'not_leader');
});

test("a response only some were shown wins by their votes: only they get its actions", () => {
  const content = JSON.stringify({
    FirstNode: 'Pier',
    Shared: {},
    Pier: {
      Text: 'Which boat?',
      Responses: [
        { Text: 'The fast one.', Conditions: 'coins >= 100', NextNode: 'Fast', Actions: [{ Type: 'TrackQuest', QuestId: 'Q' }] },
        { Text: 'Not today.', Actions: [{ Type: 'OpenShop', Shop: 'Bait' }] },
      ],
    },
    Fast: { Text: 'Hold on!', Close: true },
  });
  const graph = buildGraph(content, 'Pier');
  assert.deepEqual(graph.problems, []);
  const ana = ClientWalk.open(graph, 'Pier', poor, { shared: true, leads: true }).walk;
  const bo = ClientWalk.open(graph, 'Pier', rich, { shared: true, leads: false }).walk;
  assert.deepEqual(ana.followChosen('Pier_r1', 'Fast'), [], 'not shown to Ana: nothing armed, nothing held');
  assert.deepEqual(ana.armed(), []);
  assert.deepEqual(bo.followChosen('Pier_r1', 'Fast'), [], "Bo's TrackQuest is held while a line follows");
  assert.deepEqual(bo.armed(), [{ type: 'TrackQuest', payload: 'Q', on: 'Pier_r1', count: 1 }]);
  // The leader advances past the Close line: the held actions go out, then close.
  assert.deepEqual(bo.followAdvanced(undefined), [
    { type: 'action', action: 'TrackQuest', payload: 'Q' },
    { type: 'close' },
  ]);
  assert.deepEqual(ana.followAdvanced(undefined), [{ type: 'close' }]);
  assert.equal(ana.ended, true);
  refuses(() => ana.vote('Pier_r2'), 'no_conversation');
  // A response with no next line ends it for everyone, its actions sent by those shown it.
  const cy = ClientWalk.open(graph, 'Pier', poor, { shared: true, leads: true }).walk;
  assert.deepEqual(cy.followChosen('Pier_r2', undefined), [{ type: 'action', action: 'OpenShop', payload: 'Bait' }, { type: 'close' }]);
});

test("the ferry's quest check: every participant sends its CheckQuest, the leader's result jumps everyone", () => {
  const { ana, bo } = ferry();
  for (const walk of [ana, bo]) {
    walk.followChosen('Ferry_Greet_r2', 'Ferry_Barge');
    walk.followAdvanced('Ferry_Rowing');
    walk.followChosen('Ferry_Rowing_r1', 'Ferry_FarBar');
    walk.followAdvanced('Ferry_Check');
  }
  for (const walk of [ana, bo]) {
    assert.deepEqual(walk.followChosen('Ferry_Check_r1', undefined), [{ type: 'action', action: 'CheckQuest', payload: 'FerryForTwo|Ferry_Complete|Ferry_NotYet' }]);
    assert.equal(walk.screen.kind, 'waiting_for_jump');
    refuses(() => walk.vote('Ferry_Check_r2'), 'awaits_jump');
    assert.deepEqual(walk.jump('Ferry_Complete'), [{ type: 'action', action: 'CompleteQuest', payload: 'FerryForTwo' }]);
  }
  assert.deepEqual(ana.advance(), [{ type: 'advance', node: 'Ferry_Complete' }]);
  for (const walk of [ana, bo]) assert.deepEqual(walk.followAdvanced(undefined), [{ type: 'close' }]);
});

test('closing leaves: nothing held is sent, and every later step is no_conversation', () => {
  const { bo } = ferry();
  bo.followChosen('Ferry_Greet_r1', 'Ferry_Skiff');
  assert.deepEqual(bo.close(), [{ type: 'close' }]);
  assert.deepEqual(bo.close(), [], 'once');
  refuses(() => bo.vote('Ferry_Greet_r1'), 'no_conversation');
  refuses(() => bo.advance(), 'no_conversation');
  refuses(() => bo.followAdvanced('Ferry_Rowing'), 'no_conversation');
});

/** An `opened` with `shared` for the ferry. */
function opened(facts, leader = 'ana', participants = ['ana', 'bo'], votes = []) {
  return {
    type: 'opened',
    conversation: 'Wren',
    npc: { id: 'wren', name: 'Wren', island: 'kelpwick' },
    speaker: 'Wren',
    entry: 'Ferry_Greet',
    hash: '0'.repeat(32),
    facts,
    shared: { party: 'pty_1', leader, participants, votes },
  };
}

test('SharedConversation: votes, the decision, the countdown, the leader passing and the end', () => {
  const start = 1_000_000;
  const { conversation: bo, sends } = SharedConversation.open({ opened: opened(rich, 'ana', ['ana', 'bo'], [{ player: 'ana', response: 'Ferry_Greet_r2' }]), graph: wren, player: 'bo', now: start });
  assert.deepEqual(sends, []);
  assert.equal(bo.leads, false);
  assert.deepEqual(bo.rule, { Mode: 'Majority', TimeLimit: 20, Tie: 'Leader' });
  assert.equal(bo.deadline, start + 20_000);
  assert.equal(bo.secondsLeft(start + 5_500), 15);
  assert.deepEqual(bo.votersFor('Ferry_Greet_r2'), ['ana']);
  assert.equal(bo.wouldWin(), null, '1 of 2 is no majority');
  assert.deepEqual(bo.wouldWin({ expired: true }), { response: 'Ferry_Greet_r2', by: 'majority', rolls: [] });

  assert.deepEqual(bo.vote('Ferry_Greet_r3'), [{ type: 'choose', response: 'Ferry_Greet_r3' }]);
  assert.equal(bo.myVote, undefined, 'a vote counts once the server says so');
  assert.deepEqual(bo.receive({ type: 'voted', player: 'bo', response: 'Ferry_Greet_r3' }), []);
  assert.equal(bo.myVote, 'Ferry_Greet_r3');
  assert.deepEqual(bo.wouldWin({ expired: true }), { response: 'Ferry_Greet_r2', by: 'tie_leader', rolls: [] });
  bo.receive({ type: 'voted', player: 'bo', response: 'Ferry_Greet_r2' });
  assert.deepEqual(bo.votes, [{ player: 'ana', response: 'Ferry_Greet_r2' }, { player: 'bo', response: 'Ferry_Greet_r2' }]);

  const chosen = { type: 'chosen', line: 'Ferry_Greet', response: 'Ferry_Greet_r2', node: 'Ferry_Barge', by: 'majority', votes: bo.votes };
  assert.deepEqual(bo.receive(chosen, start + 8_000), [{ type: 'action', action: 'AcceptQuest', payload: 'FerryForTwo' }]);
  assert.equal(bo.decision, chosen);
  assert.deepEqual(bo.votes, [], 'a new line, a new ballot');
  assert.equal(bo.rule, null, 'no responses: no ballot');
  assert.equal(bo.deadline, null);
  bo.receive({ type: 'effect', action: 'AcceptQuest', effect: { kind: 'quest_accepted', quest: 'FerryForTwo', objectives: ['CrossTheShoals'] }, profile: { coins: 150, experience: 0, tutorial_stage: 0 } });
  assert.equal(bo.facts.quests.FerryForTwo, 'active');
  assert.equal(bo.walk.facts.quests.FerryForTwo, 'active');

  // The leader leaves: Bo leads and advances.
  bo.receive({ type: 'participants', leader: 'bo', participants: ['bo'], left: 'ana', reason: 'closed' });
  assert.equal(bo.leads, true);
  assert.deepEqual(bo.lastDeparture, { player: 'ana', reason: 'closed' });
  assert.deepEqual(bo.advance(), [{ type: 'advance', node: 'Ferry_Barge' }]);
  assert.deepEqual(bo.receive({ type: 'advanced', line: 'Ferry_Barge', node: 'Ferry_Rowing' }, start + 9_000), []);
  assert.deepEqual(bo.rule, { Mode: 'Roll' });
  assert.equal(bo.deadline, null, 'a Roll without TimeLimit waits for everyone');
  bo.receive({ type: 'voted', player: 'bo', response: 'Ferry_Rowing_r1' });
  assert.deepEqual(bo.wouldWin(), { response: 'Ferry_Rowing_r1', by: 'roll', rolls: [{ player: 'bo', roll: 36 }] }, 'seed 0 rolls 36 first (ballots.json draws)');
  assert.deepEqual(bo.leave(), [{ type: 'close' }]);
  assert.equal(bo.ended, true);
  assert.equal(bo.endedBy, 'left');
  assert.deepEqual(bo.receive({ type: 'chosen', line: 'Ferry_Rowing', response: 'Ferry_Rowing_r1', node: 'Ferry_FarBar', by: 'roll', votes: [] }), [], 'after leaving, nothing follows');
});

test('SharedConversation.follow sends what each message makes the client send, in order', async () => {
  const sent = [];
  const listeners = [];
  const connection = {
    on: (_type, l) => {
      listeners.push(l);
      return () => listeners.splice(listeners.indexOf(l), 1);
    },
    request: async (m) => {
      sent.push(m);
      if (m.type === 'close') throw Object.assign(new Error('refused'), { code: 'no_conversation' });
      return { id: sent.length, messages: [] };
    },
  };
  const { conversation } = SharedConversation.open({ opened: opened(poor), graph: wren, player: 'ana' });
  const changes = [];
  const errors = [];
  conversation.follow(/** @type {any} */ (connection), { onChange: (m) => changes.push(m.type), onError: (e) => errors.push(e.message) });
  const push = (m) => listeners.forEach((l) => l(m));
  push({ type: 'chosen', line: 'Ferry_Greet', response: 'Ferry_Greet_r1', node: 'Ferry_Skiff', by: 'majority', votes: [] });
  push({ type: 'advanced', line: 'Ferry_Skiff', node: 'Ferry_Rowing' });
  push({ type: 'ack', id: 9 });
  await conversation.send(/** @type {any} */ (connection), conversation.vote('Ferry_Rowing_r2'));
  assert.deepEqual(sent, [
    { type: 'action', action: 'AcceptQuest', payload: 'FerryForTwo' },
    { type: 'choose', response: 'Ferry_Rowing_r2' },
  ]);
  assert.deepEqual(changes, ['chosen', 'advanced']);
  assert.deepEqual(errors, []);
});

test("an advance from a participant who does not lead is not_leader whatever it names, after no_conversation", () => {
  const { ana, bo } = ferry();
  refuses(() => bo.advance('Nowhere'), 'not_leader');
  refuses(() => ana.advance('Nowhere'), 'unknown_vertex');
  refuses(() => ana.advance('Ferry_Greet_r1'), 'not_a_line');
  bo.close();
  refuses(() => bo.advance('Nowhere'), 'no_conversation');
});
