// End to end against a real server (target/debug/banter-server, or BANTER_SERVER_BIN): Pim's
// quest played with this client's own walk, every scenario of conformance/server_verdicts.json
// replayed as a fresh player, and a party of two playing the ferry's shared quest together
// (PROTOCOL.md section 17).
//
// Needs a WebSocket: run with `node --experimental-websocket --test` on Node 20 (npm test does).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

import { CONFORMANCE_DIR } from './paths.js';
import { startServer } from './server.js';
import { Connection, RefusalError, DeviceLogin, buildGraph, ClientWalk, applyEffect, SharedConversation, decide } from '../src/index.js';

/** @type {Awaited<ReturnType<typeof startServer>>} */
let server;

before(async () => {
  if (typeof globalThis.WebSocket !== 'function') {
    throw new Error('no global WebSocket: run this test with node --experimental-websocket --test');
  }
  server = await startServer();
});

after(async () => {
  await server?.stop();
});

/** A fresh player: device login and a session. */
async function freshPlayer(label) {
  const login = new DeviceLogin({ address: server.address, deviceId: `e2e-${label}-${randomUUID()}` });
  const connection = await Connection.open({ address: server.address, token: () => login.token(), reconnect: false });
  return { login, connection };
}

/** The one message of a type a reply holds. */
function only(reply, type) {
  const found = reply.messages.filter((m) => m.type === type);
  assert.equal(found.length, 1, `expected one ${type} in ${JSON.stringify(reply.messages)}`);
  return found[0];
}

test("Pim's quest, played with the client walk, completes and pays", async (t) => {
  const { connection } = await freshPlayer('pim');
  const welcome = connection.welcome;
  assert.equal(welcome.protocol, 1);
  t.diagnostic(`welcome: session ${welcome.session}, locale ${JSON.stringify(welcome.locale)}, locales ${JSON.stringify(welcome.locales)}`);
  const coinsBefore = welcome.profile.coins;
  try {
    await connection.request({ type: 'move', position: [-640, 2, 910] });
    const talk = await connection.request({ type: 'talk', npc: 'Pim' });
    const opened = only(talk, 'opened');
    assert.equal(opened.conversation, 'Pim');
    assert.equal(typeof opened.content, 'string');
    const graph = buildGraph(opened.content, opened.conversation);
    assert.deepEqual(graph.problems, []);

    const effects = [];
    const sent = [];
    const opening = ClientWalk.open(graph, opened.entry, opened.facts);
    const walk = opening.walk;
    /** Sends what the walk queued, in order, applying each reply's effects and jumps. */
    const send = async (messages) => {
      const queue = [...messages];
      while (queue.length > 0) {
        const message = queue.shift();
        sent.push(message);
        const reply = await connection.request(message);
        for (const m of reply.messages) {
          if (m.type === 'effect') {
            effects.push(m);
            walk.facts = applyEffect(walk.facts, m);
          } else if (m.type === 'jump') {
            queue.push(...walk.jump(m.node));
          }
        }
      }
    };
    await send(opening.sends);
    for (let step = 0; !walk.ended; step++) {
      assert.ok(step < 50, 'the conversation ends');
      const choices = walk.choices;
      if (choices.length > 0) await send(walk.choose(choices[0]));
      else if (walk.canAdvance) await send(walk.advance());
      else assert.fail(`stuck on ${JSON.stringify(walk.screen)}`);
    }
    // The walk's last message was its `close`, answered with `closed`.
    assert.deepEqual(sent.at(-1), { type: 'close' });

    t.diagnostic(`sent: ${sent.map((m) => (m.type === 'action' ? `${m.action}(${m.payload})` : `${m.type}(${m.node ?? m.response})`)).join(', ')}`);
    const kinds = effects.map((e) => e.effect.kind);
    assert.deepEqual(kinds, ['quest_accepted', 'objective_advanced', 'quest_completed']);
    const completed = effects.at(-1);
    assert.equal(completed.effect.quest, 'PimsTideTale');
    assert.ok(completed.profile.coins > coinsBefore, `coins rose: ${coinsBefore} -> ${completed.profile.coins}`);
    assert.equal(walk.facts.quests.PimsTideTale, 'completed');

    // Talking again (after the 1.5 s cooldown) with the cached hash: no content, and the quest
    // is done, so Pim opens on AllDone.
    await sleep(1600);
    const again = only(await connection.request({ type: 'talk', npc: 'Pim', cached: opened.hash }), 'opened');
    assert.equal(again.content, undefined, 'the cached hash leaves the content out');
    assert.equal(again.hash, opened.hash);
    assert.equal(again.entry, 'AllDone');
    assert.equal(again.facts.quests.PimsTideTale, 'completed');
    await connection.request({ type: 'close' });
  } finally {
    await connection.close();
  }
});

test('a refusal comes back typed, with the wire code', async () => {
  const { connection } = await freshPlayer('refusal');
  try {
    await assert.rejects(connection.request({ type: 'talk', npc: 'Pim' }), (e) => e instanceof RefusalError && e.code === 'no_body' && e.retryable === false);
    await assert.rejects(connection.request({ type: 'set_locale', locale: 'not a tag' }), (e) => e.code === 'bad_locale');
    const reply = await connection.request({ type: 'set_locale', locale: 'ja' });
    assert.deepEqual(reply.messages, [{ type: 'locale_set', locale: 'ja' }]);
    assert.equal(await connection.setLocale('pt-BR'), 'en', 'no Portuguese: the source language');
  } finally {
    await connection.close();
  }
});

test('every scenario of server_verdicts.json, each as a fresh player', async (t) => {
  const path = join(CONFORMANCE_DIR, 'server_verdicts.json');
  assert.ok(existsSync(path), `${path} is missing: BANTER_BLESS=1 cargo test -p banter-server --lib server_verdict_vectors writes it`);
  const scenarios = JSON.parse(readFileSync(path, 'utf8'));
  const failures = [];
  let steps = 0;
  for (const [i, scenario] of scenarios.entries()) {
    const { connection } = await freshPlayer(`verdicts-${i}`);
    try {
      for (const [k, step] of scenario.steps.entries()) {
        steps++;
        if (step.wait_ms > 0) await sleep(step.wait_ms);
        let verdict;
        let before;
        try {
          const reply = await connection.request(step.send);
          verdict = 'ok';
          before = reply.messages.map((m) => m.type);
        } catch (e) {
          if (!(e instanceof RefusalError)) throw e;
          verdict = e.code;
          before = e.messages.map((m) => m.type);
        }
        const name = `${scenario.name}, step ${k} ${JSON.stringify(step.send)}`;
        if (verdict !== step.verdict) failures.push(`${name}: verdict ${step.verdict}, got ${verdict}`);
        if (JSON.stringify(before) !== JSON.stringify(step.before)) failures.push(`${name}: before ${JSON.stringify(step.before)}, got ${JSON.stringify(before)}`);
      }
    } finally {
      await connection.close();
    }
  }
  const line = `server_verdicts.json: ${scenarios.length} scenarios, ${steps} steps`;
  t.diagnostic(line);
  console.log(line);
  if (failures.length > 0) assert.fail(`${failures.length} of ${steps} steps differ:\n${failures.join('\n')}`);
});

/**
 * A party member's client: every message it gets, and the shared conversation it follows (made
 * from the `opened` with `shared`, requested or pushed), sending what the walk says, in order.
 */
class Member {
  constructor(label, connection) {
    this.label = label;
    this.connection = connection;
    this.id = connection.welcome.player;
    /** Every server message, in order. */
    this.seen = [];
    /** @type {SharedConversation | undefined} */
    this.conversation = undefined;
    /** Refusals of what the shared walk sent, or messages it could not follow. */
    this.problems = [];
    /** Every message the shared walk sent, in order. */
    this.sent = [];
    /** Waiters for a message. */
    this.waiters = [];
    connection.on('message', (m) => {
      this.seen.push(m);
      if (m.type === 'opened' && m.shared) this.openShared(m);
      for (const w of [...this.waiters]) {
        if (w.match(m)) {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          w.resolve(m);
        }
      }
    });
  }

  openShared(opened) {
    const graph = buildGraph(opened.content, opened.conversation);
    const { conversation, sends } = SharedConversation.open({ opened, graph, player: this.id });
    this.conversation = conversation;
    const connection = this.connection;
    const member = this;
    // Record what goes out: the walk's own sends, then the player's steps through `step`.
    const recording = {
      on: (type, listener) => connection.on(type, listener),
      request: (m) => {
        member.sent.push(m);
        return connection.request(m);
      },
    };
    this.recording = recording;
    conversation.follow(recording, { onError: (e, m) => this.problems.push(`${JSON.stringify(m)}: ${e.code ?? ''} ${e.message}`) });
    void conversation.send(recording, sends, (e, m) => this.problems.push(`${JSON.stringify(m)}: ${e.code ?? ''} ${e.message}`));
  }

  /** A player step on the shared walk (a vote, the leader's advance), sent behind the queue. */
  step(messages) {
    return this.conversation.send(this.recording, messages);
  }

  /** The first message from now on that `match`es (or one already seen at or after `from`). */
  waitFor(description, match, { from = this.seen.length, timeoutMs = 10_000 } = {}) {
    const already = this.seen.slice(from).find(match);
    if (already) return Promise.resolve(already);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.label}: no ${description} within ${timeoutMs} ms; seen: ${this.seen.slice(from).map((m) => JSON.stringify(m)).join('\n')}`)), timeoutMs);
      this.waiters.push({ match, resolve: (m) => (clearTimeout(timer), resolve(m)) });
    });
  }

  /** The effects of one kind this member got, for the ferry's quest. */
  effects(kind) {
    return this.seen.filter((m) => m.type === 'effect' && m.effect.kind === kind && m.effect.quest === 'FerryForTwo');
  }
}

const WREN = [1400, 1.5, -820];

test("a party of two plays Wren's ferry together: form, invite, accept, talk, join, vote, each paid once", { timeout: 120_000 }, async (t) => {
  const ana = new Member('ana', (await freshPlayer('ferry-ana')).connection);
  const bo = new Member('bo', (await freshPlayer('ferry-bo')).connection);
  const log = (line) => t.diagnostic(line);
  try {
    // ---- The party: Ana forms it, invites Bo, Bo accepts.
    assert.equal(ana.connection.welcome.party, undefined, 'a fresh player is in no party');
    const formed = await ana.connection.partyForm();
    assert.match(formed.id, /^pty_/);
    assert.equal(formed.leader, ana.id);
    assert.deepEqual(formed.members, [ana.id]);
    const invited = bo.waitFor('party_invited', (m) => m.type === 'party_invited');
    const afterInvite = await ana.connection.partyInvite(bo.id);
    assert.deepEqual(afterInvite.members, [ana.id], 'an invitation is not a membership');
    assert.deepEqual(await invited, { type: 'party_invited', party: formed.id, from: ana.id });
    assert.deepEqual(bo.connection.invites, [{ party: formed.id, from: ana.id }]);
    const told = ana.waitFor('party push with Bo', (m) => m.type === 'party' && m.party?.members.length === 2);
    const joined = await bo.connection.partyAccept(formed.id);
    assert.deepEqual(joined, { id: formed.id, leader: ana.id, members: [ana.id, bo.id] });
    assert.deepEqual((await told).party, joined, 'the leader is told, unrequested');
    assert.deepEqual(ana.connection.party, joined);
    assert.deepEqual(bo.connection.invites, []);
    log(`party ${joined.id}: leader ${ana.id}, members ${joined.members.join(', ')}`);

    // ---- Both walk to Wren. Ana is there first and talks: the shared conversation opens for
    // her alone (Bo is out of reach). Bo arrives and talks: he joins where the group is.
    await ana.connection.request({ type: 'move', position: [WREN[0] + 3, WREN[1], WREN[2]] });
    await bo.connection.request({ type: 'move', position: [WREN[0] + 30, WREN[1], WREN[2]] });
    const anaTalk = await ana.connection.request({ type: 'talk', npc: 'Wren' });
    const anaOpened = only(anaTalk, 'opened');
    assert.equal(anaOpened.conversation, 'Wren');
    assert.equal(anaOpened.entry, 'Ferry_Greet', 'the quest is available: its greeting');
    assert.deepEqual(anaOpened.shared, { party: formed.id, leader: ana.id, participants: [ana.id], votes: [] });
    assert.ok(ana.conversation, "Ana's client follows the shared conversation");
    assert.deepEqual(ana.conversation.rule, { Mode: 'Majority', TimeLimit: 20, Tie: 'Leader' });

    await sleep(600);
    await bo.connection.request({ type: 'move', position: [WREN[0] - 3, WREN[1], WREN[2]] });
    const anaSeesBo = ana.waitFor('participants with Bo', (m) => m.type === 'participants' && m.joined === bo.id);
    const boTalk = await bo.connection.request({ type: 'talk', npc: 'Wren' });
    const boOpened = only(boTalk, 'opened');
    assert.equal(boOpened.entry, 'Ferry_Greet', 'Bo joins on the current line');
    assert.deepEqual(boOpened.shared, { party: formed.id, leader: ana.id, participants: [ana.id, bo.id], votes: [] });
    assert.deepEqual(await anaSeesBo, { type: 'participants', leader: ana.id, participants: [ana.id, bo.id], joined: bo.id });
    assert.equal(ana.conversation.leads, true);
    assert.equal(bo.conversation.leads, false);

    // ---- Ferry_Greet (Majority): one vote of two decides nothing; the second does.
    const mark = [ana.seen.length, bo.seen.length];
    await ana.step(ana.conversation.vote('Ferry_Greet_r1'));
    await bo.waitFor('voted by Ana', (m) => m.type === 'voted' && m.player === ana.id, { from: mark[1] });
    assert.deepEqual(bo.conversation.votes, [{ player: ana.id, response: 'Ferry_Greet_r1' }]);
    assert.equal(ana.seen.slice(mark[0]).some((m) => m.type === 'chosen'), false, '1 of 2 is no majority');
    await assert.rejects(bo.connection.request({ type: 'advance', node: 'Ferry_Greet' }), (e) => e instanceof RefusalError && e.code === 'not_leader');
    await bo.step(bo.conversation.vote('Ferry_Greet_r1'));
    const chosenGreet = await Promise.all([ana, bo].map((p, i) => p.waitFor('chosen on Ferry_Greet', (m) => m.type === 'chosen' && m.line === 'Ferry_Greet', { from: mark[i] })));
    for (const c of chosenGreet) {
      assert.equal(c.response, 'Ferry_Greet_r1');
      assert.equal(c.node, 'Ferry_Skiff');
      assert.equal(c.by, 'majority');
      assert.deepEqual(new Set(c.votes.map((v) => v.player)), new Set([ana.id, bo.id]));
    }
    log(`Ferry_Greet: ${JSON.stringify(chosenGreet[0])}`);
    // Each client sends its own AcceptQuest (a node action of Ferry_Skiff).
    await Promise.all([ana, bo].map((p) => p.waitFor('quest_accepted', (m) => m.type === 'effect' && m.effect.kind === 'quest_accepted', { from: 0 })));
    assert.equal(ana.conversation.line.name, 'Ferry_Skiff');
    assert.equal(ana.conversation.walk.canAdvance, true);
    assert.equal(bo.conversation.walk.canAdvance, false, 'Bo waits for the leader');

    // ---- The leader advances: everyone follows to Ferry_Rowing.
    await ana.step(ana.conversation.advance());
    await Promise.all([ana, bo].map((p) => p.waitFor('advanced past Ferry_Skiff', (m) => m.type === 'advanced' && m.line === 'Ferry_Skiff', { from: 0 })));
    assert.equal(bo.conversation.line.name, 'Ferry_Rowing');
    assert.deepEqual(bo.conversation.rule, { Mode: 'Roll' });

    // ---- Ferry_Rowing (Roll): both vote, the highest roll wins; the client's ballot replays it.
    await ana.step(ana.conversation.vote('Ferry_Rowing_r1'));
    await bo.step(bo.conversation.vote('Ferry_Rowing_r2'));
    const rolled = await ana.waitFor('chosen on Ferry_Rowing', (m) => m.type === 'chosen' && m.line === 'Ferry_Rowing', { from: 0 });
    assert.equal(rolled.by, 'roll');
    assert.match(rolled.seed ?? '', /^[0-9]+$/);
    assert.equal(rolled.rolls.length, 2);
    const replay = decide({ graph: ana.conversation.walk.graph, rule: { Mode: 'Roll' }, participants: [ana.id, bo.id], leader: ana.id, votes: rolled.votes, seed: rolled.seed });
    assert.deepEqual(replay, { response: rolled.response, by: 'roll', rolls: rolled.rolls }, 'the ballot module replays the server');
    log(`Ferry_Rowing: ${JSON.stringify(rolled)}`);
    assert.equal(rolled.node, 'Ferry_FarBar');
    await Promise.all([ana, bo].map((p) => p.waitFor('objective_advanced', (m) => m.type === 'effect' && m.effect.kind === 'objective_advanced', { from: 0 })));

    // ---- Past the far bar to the check; both show their stubs.
    await ana.step(ana.conversation.advance());
    await Promise.all([ana, bo].map((p) => p.waitFor('advanced past Ferry_FarBar', (m) => m.type === 'advanced' && m.line === 'Ferry_FarBar', { from: 0 })));
    assert.equal(bo.conversation.line.name, 'Ferry_Check');
    await bo.step(bo.conversation.vote('Ferry_Check_r1'));
    await ana.step(ana.conversation.vote('Ferry_Check_r1'));
    const checked = await Promise.all([ana, bo].map((p) => p.waitFor('chosen on Ferry_Check', (m) => m.type === 'chosen' && m.line === 'Ferry_Check', { from: 0 })));
    for (const c of checked) assert.equal(c.node, undefined, 'the check decides the next line');
    // Each client sends its own CheckQuest; the leader's result jumps everyone; each completes.
    const jumps = await Promise.all([ana, bo].map((p) => p.waitFor('jump', (m) => m.type === 'jump', { from: 0 })));
    for (const j of jumps) assert.equal(j.node, 'Ferry_Complete');
    await Promise.all([ana, bo].map((p) => p.waitFor('quest_completed', (m) => m.type === 'effect' && m.effect.kind === 'quest_completed', { from: 0 })));

    // ---- The leader advances past the last line: it ends for both, each client closes.
    await ana.step(ana.conversation.advance());
    await Promise.all([ana, bo].map((p) => p.waitFor('advanced past Ferry_Complete', (m) => m.type === 'advanced' && m.line === 'Ferry_Complete', { from: 0 })));
    for (const p of [ana, bo]) {
      assert.equal(p.conversation.ended, true);
      await p.conversation.send(p.recording, []);
      assert.deepEqual(p.sent.at(-1), { type: 'close' }, `${p.label}'s walk ended with its close`);
    }

    // ---- Each accepted, checked and was paid once, with their own actions.
    for (const p of [ana, bo]) {
      const actions = p.sent.filter((m) => m.type === 'action').map((m) => m.action);
      assert.deepEqual(actions, ['AcceptQuest', 'AdvanceObjective', 'CheckQuest', 'CompleteQuest'], `${p.label} sent ${JSON.stringify(p.sent)}`);
      assert.equal(p.effects('quest_accepted').length, 1, `${p.label}: accepted once`);
      const paid = p.effects('quest_completed');
      assert.equal(paid.length, 1, `${p.label}: paid once`);
      assert.equal(paid[0].effect.coins, 40);
      assert.equal(paid[0].profile.coins, 40);
      assert.deepEqual(p.problems, [], `${p.label}: every message the walk sent was accepted`);
      log(`${p.label} sent: ${p.sent.map((m) => (m.type === 'action' ? `${m.action}(${m.payload})` : `${m.type}(${m.node ?? m.response ?? ''})`)).join(', ')}`);
    }

    // ---- Leaving the party: Ana leaves, Bo leads the rest and is told.
    const boTold = bo.waitFor('party push without Ana', (m) => m.type === 'party' && m.party?.members.length === 1);
    await ana.connection.partyLeave();
    assert.equal(ana.connection.party, undefined);
    assert.deepEqual((await boTold).party, { id: formed.id, leader: bo.id, members: [bo.id] });
    await bo.connection.partyLeave();
  } finally {
    await ana.connection.close();
    await bo.connection.close();
  }
});

test('the party messages are refused with their own codes (PROTOCOL.md 17.1, 17.6)', async (t) => {
  const { connection: ana } = await freshPlayer('party-refusals-ana');
  const { connection: bo } = await freshPlayer('party-refusals-bo');
  /** What the server answered, for every case: all are checked, then listed together. */
  const got = [];
  const expect = async (label, message, code, run) => {
    try {
      await run();
      got.push({ label, message, code, answer: 'ack' });
    } catch (e) {
      if (!(e instanceof RefusalError)) throw e;
      got.push({ label, message, code, answer: e.code, serverMessage: e.serverMessage });
    }
  };
  try {
    await expect('leave with no party', { type: 'party_leave' }, 'not_in_party', () => bo.partyLeave());
    await expect('accept with no invitation', { type: 'party_accept', party: 'pty_nobodyinvitedyou' }, 'no_invite', () => bo.partyAccept('pty_nobodyinvitedyou'));
    const party = await ana.partyForm();
    await expect('form while in a party', { type: 'party_form' }, 'already_in_party', () => ana.partyForm());
    await expect('invite oneself', { type: 'party_invite', player: ana.welcome.player }, 'already_in_party', () => ana.partyInvite(ana.welcome.player));
    await ana.partyInvite(bo.welcome.player);
    await bo.partyAccept(party.id);
    await expect('invite a member', { type: 'party_invite', player: bo.welcome.player }, 'already_in_party', () => ana.partyInvite(bo.welcome.player));
    await expect('accept while in a party', { type: 'party_accept', party: party.id }, 'already_in_party', () => bo.partyAccept(party.id));
  } finally {
    await ana.close();
    await bo.close();
  }
  for (const g of got) t.diagnostic(`${g.label}: ${JSON.stringify(g.message)} -> ${g.answer}${g.serverMessage ? ` (${g.serverMessage})` : ''}`);
  const wrong = got.filter((g) => g.answer !== g.code);
  if (wrong.length > 0) {
    assert.fail(`${wrong.length} of ${got.length} party refusals differ from PROTOCOL.md 17.1:\n${wrong.map((g) => `  ${g.label}: sent ${JSON.stringify(g.message)}, expected ${g.code}, got ${g.answer}${g.serverMessage ? ` (${g.serverMessage})` : ''}`).join('\n')}`);
  }
});
