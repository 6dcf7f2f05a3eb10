// End to end against a real server (target/debug/banter-server, or BANTER_SERVER_BIN): Pim's
// quest played with this client's own walk, then every scenario of
// conformance/server_verdicts.json replayed as a fresh player.
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
import { Connection, RefusalError, DeviceLogin, buildGraph, ClientWalk, applyEffect } from '../src/index.js';

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
