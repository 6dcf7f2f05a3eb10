import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Connection, ConnectionError, RefusalError, backoffDelay, DEFAULT_BACKOFF } from '../src/index.js';
import { fakeWebSocket, welcome, settle } from './fake-websocket.js';

const noSleep = () => Promise.resolve();

/** A server that welcomes and answers each frame with `answer(socket, message)`. */
function server(answer, sessionStart = 1) {
  let session = sessionStart;
  return fakeWebSocket((socket) => {
    socket.deliver(welcome(session++));
    socket.onClientFrame = (m) => answer(socket, m);
  });
}

test('connects with the token and locale in the query, and waits for the welcome', async () => {
  const WebSocket = server(() => {});
  const c = await Connection.open({ address: 'http://127.0.0.1:7350', token: 'tok en', locale: 'pt-BR', WebSocket });
  assert.equal(WebSocket.sockets[0].url, 'ws://127.0.0.1:7350/v1/ws?token=tok+en&locale=pt-BR');
  assert.equal(c.welcome.session, 1);
  assert.equal(c.resumeToken, 'resume-1');
  assert.equal(c.connected, true);
  await c.close();
  assert.equal(WebSocket.sockets[0].closedByClient, true);
});

test('an ack ends its request; the messages before it belong to it', async () => {
  const WebSocket = server((s, m) => {
    s.deliver({ type: 'effect', action: 'AcceptQuest', effect: { kind: 'quest_accepted', quest: 'Q', objectives: [] }, profile: { coins: 0, experience: 0, tutorial_stage: 0 } });
    s.deliver({ type: 'ack', id: m.id });
  });
  const c = await Connection.open({ address: 'ws://h:1', token: 't', WebSocket });
  const seen = [];
  c.on('message', (m) => seen.push(m.type));
  const reply = await c.request({ type: 'action', action: 'AcceptQuest', payload: 'Q' });
  assert.equal(reply.id, 1);
  assert.deepEqual(reply.messages.map((m) => m.type), ['effect']);
  assert.deepEqual(seen, ['effect', 'ack']);
  assert.deepEqual(WebSocket.sockets[0].sent, [{ type: 'action', action: 'AcceptQuest', payload: 'Q', id: 1 }]);
  await c.close();
});

test('an error with the id rejects with a typed refusal carrying what came before it', async () => {
  const WebSocket = server((s, m) => {
    s.deliver({ type: 'closed', reason: 'walked_away' });
    s.deliver({ type: 'error', id: m.id, code: 'too_far', message: 'the NPC is out of reach', retryable: false });
  });
  const c = await Connection.open({ address: 'ws://h:1', token: 't', WebSocket });
  await assert.rejects(c.request({ type: 'action', action: 'CompleteQuest', payload: 'Q' }), (e) => {
    assert.ok(e instanceof RefusalError);
    assert.equal(e.code, 'too_far');
    assert.equal(e.retryable, false);
    assert.equal(e.withId, true);
    assert.deepEqual(e.messages, [{ type: 'closed', reason: 'walked_away' }]);
    assert.match(e.message, /action refused: too_far: the NPC is out of reach/);
    return true;
  });
  await c.close();
});

test('pipelined requests are answered in order; an error without an id answers the oldest', async () => {
  const frames = [];
  const WebSocket = server((s, m) => {
    frames.push(m);
    if (frames.length < 3) return;
    // Answer all three at once: the first refused before decoding (no id), then two acks.
    s.deliver({ type: 'error', code: 'rate_limited', message: 'slow down', retryable: true });
    s.deliver({ type: 'opened', conversation: 'Pim', npc: { id: 'pim', name: 'Pim', island: 'x' }, entry: 'E', hash: 'h', facts: { coins: 0, experience: 0, tutorial_stage: 0 } });
    s.deliver({ type: 'ack', id: frames[1].id });
    s.deliver({ type: 'ack', id: frames[2].id });
  });
  const c = await Connection.open({ address: 'ws://h:1', token: 't', WebSocket });
  const [a, b, d] = await Promise.allSettled([
    c.request({ type: 'move', position: [0, 0, 0] }),
    c.request({ type: 'talk', npc: 'Pim' }),
    c.request({ type: 'close' }),
  ]);
  assert.equal(a.status, 'rejected');
  assert.equal(a.reason.code, 'rate_limited');
  assert.equal(a.reason.withId, false);
  assert.equal(a.reason.retryable, true);
  assert.deepEqual(b.value.messages.map((m) => m.type), ['opened']);
  assert.deepEqual(d.value.messages, []);
  await c.close();
});

test('messages nobody asked for go to listeners only', async () => {
  const WebSocket = server(() => {});
  const c = await Connection.open({ address: 'ws://h:1', token: 't', WebSocket });
  const seen = [];
  c.on('message', (m) => seen.push(m));
  const pushed = { type: 'effect', action: 'AdvanceObjective', effect: { kind: 'objective_advanced', quest: 'Q', objective: 'O', progress: 1, target: 3 }, profile: { coins: 0, experience: 0, tutorial_stage: 0 } };
  WebSocket.sockets[0].deliver(pushed);
  assert.deepEqual(seen, [pushed]);
  const protocolErrors = [];
  c.on('protocol', (e) => protocolErrors.push(e));
  WebSocket.sockets[0].deliver('not json');
  WebSocket.sockets[0].deliver({ type: 'mystery' });
  assert.deepEqual(protocolErrors.map((e) => e.code), ['protocol', 'protocol']);
  await c.close();
});

test('a frame over 4,096 bytes is refused here and never sent', async () => {
  const WebSocket = server(() => {});
  const c = await Connection.open({ address: 'ws://h:1', token: 't', WebSocket });
  await assert.rejects(c.request({ type: 'talk', npc: 'x'.repeat(4100) }), (e) => e instanceof ConnectionError && e.code === 'frame_too_large');
  assert.deepEqual(WebSocket.sockets[0].sent, []);
  await c.close();
});

test('a request that times out keeps its place: its late answer does not end the next one', async () => {
  let first;
  const WebSocket = server((s, m) => {
    if (!first) {
      first = m;
      return;
    }
    s.deliver({ type: 'ack', id: first.id });
    s.deliver({ type: 'ack', id: m.id });
  });
  const c = await Connection.open({ address: 'ws://h:1', token: 't', WebSocket, answerTimeoutMs: 20 });
  await assert.rejects(c.request({ type: 'set_afk', afk: true }), (e) => e.code === 'timeout');
  const reply = await c.request({ type: 'set_afk', afk: false });
  assert.equal(reply.id, 2);
  await c.close();
});

test('no session: store_unavailable before the welcome, or a close before it', async () => {
  const Busy = fakeWebSocket((s) => {
    s.deliver({ type: 'error', code: 'store_unavailable', message: 'later (ref 1)', retryable: true });
    s.drop(1000);
  });
  await assert.rejects(Connection.open({ address: 'ws://h:1', token: 't', WebSocket: Busy, reconnect: false }), (e) => e instanceof RefusalError && e.code === 'store_unavailable' && e.retryable);
  const Refused = fakeWebSocket((s) => s.drop(1006));
  await assert.rejects(Connection.open({ address: 'ws://h:1', token: 't', WebSocket: Refused }), (e) => e.code === 'connect_failed' && /401/.test(e.message));
});

test('without a WebSocket constructor the error says how to get one', () => {
  const saved = Object.getOwnPropertyDescriptor(globalThis, 'WebSocket');
  delete globalThis.WebSocket;
  try {
    assert.throws(() => new Connection({ address: 'ws://h:1', token: 't' }), (e) => e.code === 'no_websocket' && /--experimental-websocket/.test(e.message));
  } finally {
    if (saved) Object.defineProperty(globalThis, 'WebSocket', saved);
  }
});

test('a dropped connection reconnects with a fresh token and resumes the open conversation', async () => {
  let tokens = 0;
  const WebSocket = server((s, m) => {
    if (m.type === 'talk') s.deliver({ type: 'opened', conversation: 'Pim', npc: { id: 'pim', name: 'Pim', island: 'x' }, entry: 'E', hash: 'h1', facts: { coins: 0, experience: 0, tutorial_stage: 0 } });
    if (m.type === 'resume') {
      assert.equal(m.token, 'resume-1', "the previous session's token");
      s.deliver({ type: 'resumed', conversation: 'Pim', hash: 'h1' });
    }
    s.deliver({ type: 'ack', id: m.id });
  });
  const c = await Connection.open({ address: 'ws://h:1', token: () => `t${++tokens}`, WebSocket, sleep: noSleep });
  await c.request({ type: 'talk', npc: 'Pim' });
  const events = [];
  const reconnected = new Promise((resolve) => c.on('reconnect', resolve));
  c.on('disconnect', (e) => events.push(e));
  const pending = c.request({ type: 'advance', node: 'E' });
  WebSocket.sockets[0].drop(1006);
  await assert.rejects(pending, (e) => e.code === 'closed');
  const { welcome: w, resumed, resumeRefused } = await reconnected;
  assert.equal(events[0].willReconnect, true);
  assert.equal(w.session, 2);
  assert.deepEqual(resumed, { type: 'resumed', conversation: 'Pim', hash: 'h1' });
  assert.equal(resumeRefused, undefined);
  assert.match(WebSocket.sockets[1].url, /token=t2/);
  assert.equal(c.resumeToken, 'resume-2');
  await c.close();
});

test('without an open conversation a reconnect does not resume; a refused resume is reported', async () => {
  const WebSocket = server((s, m) => {
    if (m.type === 'talk') s.deliver({ type: 'opened', conversation: 'Pim', npc: { id: 'pim', name: 'Pim', island: 'x' }, entry: 'E', hash: 'h', facts: { coins: 0, experience: 0, tutorial_stage: 0 } });
    if (m.type === 'resume') s.deliver({ type: 'error', id: m.id, code: 'resume_refused', message: 'nothing to resume', retryable: false });
    else s.deliver({ type: 'ack', id: m.id });
  });
  const c = await Connection.open({ address: 'ws://h:1', token: 't', WebSocket, sleep: noSleep });
  let next = new Promise((resolve) => c.on('reconnect', resolve));
  WebSocket.sockets[0].drop();
  let e = await next;
  assert.equal(e.resumed, undefined);
  assert.deepEqual(WebSocket.sockets[1].sent, [], 'no resume without a conversation');
  await c.request({ type: 'talk', npc: 'Pim' });
  next = new Promise((resolve) => {
    const off = c.on('reconnect', (ev) => {
      off();
      resolve(ev);
    });
  });
  WebSocket.sockets[1].drop();
  e = await next;
  assert.equal(e.resumeRefused.code, 'resume_refused');
  await c.close();
});

test('bye replaced and flooding end for good; shutdown reconnects; close() never reconnects', async () => {
  for (const [reason, again] of [['replaced', false], ['flooding', false], ['shutdown', true], ['timeout', true], ['token_expired', true]]) {
    const WebSocket = server(() => {});
    const c = await Connection.open({ address: 'ws://h:1', token: 't', WebSocket, sleep: noSleep });
    const byes = [];
    c.on('bye', (b) => byes.push(b.reason));
    const outcome = new Promise((resolve) => {
      c.on('ended', () => resolve('ended'));
      c.on('reconnect', () => resolve('reconnect'));
    });
    WebSocket.sockets[0].deliver({ type: 'bye', reason, message: 'bye' });
    WebSocket.sockets[0].drop(1000, 'bye');
    assert.equal(await outcome, again ? 'reconnect' : 'ended', reason);
    assert.deepEqual(byes, [reason]);
    await c.close();
  }
  const WebSocket = server(() => {});
  const c = await Connection.open({ address: 'ws://h:1', token: 't', WebSocket, sleep: noSleep });
  const ended = new Promise((resolve) => c.on('ended', resolve));
  await c.close();
  await ended;
  await settle();
  assert.equal(WebSocket.sockets.length, 1);
  await assert.rejects(c.request({ type: 'close' }), (e) => e.code === 'not_connected');
});

test('reconnecting gives up after the backoff attempts and says why', async () => {
  let connects = 0;
  const WebSocket = fakeWebSocket((s) => {
    if (++connects === 1) s.deliver(welcome(1));
    else s.drop(1006);
  });
  const waits = [];
  const c = await Connection.open({ address: 'ws://h:1', token: 't', WebSocket, reconnect: { attempts: 4, firstMs: 10, maxMs: 25 }, sleep: async (ms) => void waits.push(ms) });
  const ended = new Promise((resolve) => c.on('ended', resolve));
  WebSocket.sockets[0].drop();
  const { error } = await ended;
  assert.equal(error.code, 'connect_failed');
  assert.match(error.message, /after 4 attempts/);
  assert.deepEqual(waits, [0, 10, 20, 25]);
});

test('backoff doubles from the second attempt up to the cap', () => {
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 7].map((a) => backoffDelay(DEFAULT_BACKOFF, a)), [0, 100, 200, 400, 800, 1600, 3000, 3000]);
  assert.equal(backoffDelay(DEFAULT_BACKOFF, 10_000), 3000);
});

test('setLocale sends set_locale, answers the locale served, and reconnects with ?locale= of the new tag', async () => {
  const WebSocket = server((s, m) => {
    s.deliver({ type: 'locale_set', locale: 'ja' });
    s.deliver({ type: 'ack', id: m.id });
  });
  const c = await Connection.open({ address: 'https://banter.example', token: 't', WebSocket, sleep: noSleep });
  assert.equal(WebSocket.sockets[0].url, 'wss://banter.example/v1/ws?token=t');
  assert.equal(await c.setLocale('ja-JP'), 'ja');
  assert.deepEqual(WebSocket.sockets[0].sent.at(-1), { type: 'set_locale', locale: 'ja-JP', id: 1 });
  await c.setLocale('ja');
  assert.deepEqual(WebSocket.sockets[0].sent.at(-1), { type: 'set_locale', locale: 'ja', id: 2 });
  const again = new Promise((resolve) => c.on('reconnect', resolve));
  WebSocket.sockets[0].drop();
  await again;
  assert.equal(WebSocket.sockets[1].url, 'wss://banter.example/v1/ws?token=t&locale=ja');
  await c.close();
});

test('abandonQuest sends abandon_quest and answers quest_abandoned; a refusal rejects', async () => {
  const profile = { coins: 0, experience: 0, tutorial_stage: 0 };
  const WebSocket = server((s, m) => {
    if (m.quest === 'PimsTideTale') {
      s.deliver({ type: 'quest_abandoned', quest: m.quest, profile });
      s.deliver({ type: 'ack', id: m.id });
    } else {
      s.deliver({ type: 'error', id: m.id, code: 'quest_state', message: `quest \`${m.quest}\` is never accepted, not active` });
    }
  });
  const c = await Connection.open({ address: 'https://banter.example', token: 't', WebSocket, sleep: noSleep });
  assert.deepEqual(await c.abandonQuest('PimsTideTale'), { type: 'quest_abandoned', quest: 'PimsTideTale', profile });
  assert.deepEqual(WebSocket.sockets[0].sent.at(-1), { type: 'abandon_quest', quest: 'PimsTideTale', id: 1 });
  await assert.rejects(c.abandonQuest('Other'), (e) => e instanceof RefusalError && e.code === 'quest_state');
  await c.close();
});

test('the party messages answer with the party, and the connection keeps party and invites current', async () => {
  const party = { id: 'pty_1', leader: 'd-000000000000000000000000', members: ['d-000000000000000000000000'] };
  const WebSocket = fakeWebSocket((socket) => {
    socket.deliver({ ...welcome(1), invites: [{ party: 'pty_old', from: 'd-a' }] });
    socket.onClientFrame = (m) => {
      if (m.type === 'party_form') socket.deliver({ type: 'party', party });
      if (m.type === 'party_invite') {
        if (m.player === 'd-000000000000000000000000') {
          socket.deliver({ type: 'error', id: m.id, code: 'already_in_party', message: 'the invitee is you', retryable: false });
          return;
        }
        // A push from elsewhere comes first; the answer is the last `party` before the ack.
        socket.deliver({ type: 'party_invited', party: 'pty_9', from: 'd-b' });
        socket.deliver({ type: 'party', party: { ...party, members: [...party.members] } });
      }
      if (m.type === 'party_accept') socket.deliver({ type: 'party', party: { id: m.party, leader: 'd-b', members: ['d-b', party.leader] } });
      if (m.type === 'party_leave') socket.deliver({ type: 'party' });
      socket.deliver({ type: 'ack', id: m.id });
    };
  });
  const c = await Connection.open({ address: 'ws://h:1', token: 't', WebSocket });
  assert.equal(c.party, undefined);
  assert.deepEqual(c.invites, [{ party: 'pty_old', from: 'd-a' }]);
  const changes = [];
  const invited = [];
  c.on('party', (e) => changes.push(e.party?.id ?? null));
  c.on('party_invited', (i) => invited.push(i.party));
  assert.deepEqual(await c.partyForm(), party);
  assert.deepEqual(c.party, party);
  assert.deepEqual(await c.partyInvite('d-friend'), party);
  assert.deepEqual(WebSocket.sockets[0].sent.at(-1), { type: 'party_invite', player: 'd-friend', id: 2 });
  await assert.rejects(c.partyInvite('d-000000000000000000000000'), (e) => e instanceof RefusalError && e.code === 'already_in_party');
  assert.deepEqual(invited, ['pty_9']);
  assert.deepEqual(c.invites, [{ party: 'pty_old', from: 'd-a' }, { party: 'pty_9', from: 'd-b' }]);
  const joined = await c.partyAccept('pty_9');
  assert.equal(joined.leader, 'd-b');
  assert.deepEqual(c.invites, [{ party: 'pty_old', from: 'd-a' }], 'the invitation used is gone');
  assert.equal(await c.partyLeave(), undefined);
  assert.equal(c.party, undefined);
  assert.deepEqual(changes, ['pty_1', 'pty_1', 'pty_9', null]);
  await c.close();
});

test('pushed group messages reach listeners, and ride along with a waiting request', async () => {
  let pending;
  const WebSocket = server((s, m) => {
    pending = m;
  });
  const c = await Connection.open({ address: 'ws://h:1', token: 't', WebSocket });
  const seen = [];
  c.on('message', (m) => seen.push(m.type));
  const reply = c.request({ type: 'move', position: [0, 0, 0] });
  await settle();
  const socket = WebSocket.sockets[0];
  socket.deliver({ type: 'voted', player: 'd-b', response: 'Ferry_Greet_r1' });
  socket.deliver({ type: 'ack', id: pending.id });
  socket.deliver({ type: 'chosen', line: 'Ferry_Greet', response: 'Ferry_Greet_r1', node: 'Ferry_Skiff', by: 'majority', votes: [] });
  assert.deepEqual((await reply).messages.map((m) => m.type), ['voted']);
  assert.deepEqual(seen, ['voted', 'ack', 'chosen']);
  await c.close();
});
