import { test } from 'node:test';
import assert from 'node:assert/strict';

import { deviceLogin, DeviceLogin, webSocketUrl, httpBase, ConnectionError } from '../src/index.js';

/** A fetch that records its calls and answers `status` with `body`. */
function fakeFetch(answers) {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, init });
    const [status, body] = answers.shift();
    return { ok: status >= 200 && status < 300, status, text: async () => (typeof body === 'string' ? body : JSON.stringify(body)) };
  };
  return { fetch, calls };
}

test('device login posts the device id and answers the token', async () => {
  const { fetch, calls } = fakeFetch([[200, { token: 'a.b.c', player: 'd-b2b4ce0ae16d8aa3e71f8d4a', expires_at: 1795967232 }]]);
  const answer = await deviceLogin({ address: 'ws://127.0.0.1:7350/v1/ws', deviceId: 'device-pim-0001', fetch });
  assert.deepEqual(answer, { token: 'a.b.c', player: 'd-b2b4ce0ae16d8aa3e71f8d4a', expires_at: 1795967232 });
  assert.equal(calls[0].url, 'http://127.0.0.1:7350/v1/auth/device');
  assert.equal(calls[0].init.method, 'POST');
  assert.deepEqual(JSON.parse(calls[0].init.body), { device_id: 'device-pim-0001' });
});

test('an error status is a ConnectionError with the status and body', async () => {
  const { fetch } = fakeFetch([[400, { error: 'bad_request', message: 'device_id: 8 to 128 printable ASCII characters' }], [200, 'nope']]);
  await assert.rejects(deviceLogin({ address: 'http://h:1', deviceId: 'x', fetch }), (e) => {
    assert.ok(e instanceof ConnectionError);
    assert.equal(e.code, 'http');
    assert.equal(e.status, 400);
    assert.match(e.message, /POST http:\/\/h:1\/v1\/auth\/device: HTTP 400: .*bad_request/);
    return true;
  });
  await assert.rejects(deviceLogin({ address: 'http://h:1', deviceId: 'device-0001', fetch }), (e) => e.code === 'protocol');
});

test('DeviceLogin logs in again when the token is about to expire or was invalidated', async () => {
  let now = 1000;
  const { fetch, calls } = fakeFetch([
    [200, { token: 't1', player: 'p', expires_at: 1100 }],
    [200, { token: 't2', player: 'p', expires_at: 5000 }],
    [200, { token: 't3', player: 'p', expires_at: 9000 }],
  ]);
  const login = new DeviceLogin({ address: 'http://h:1', deviceId: 'device-0001', fetch, now: () => now, marginSeconds: 60 });
  assert.equal(await login.token(), 't1');
  assert.equal(await login.token(), 't1');
  now = 1041;
  assert.equal(await login.token(), 't2', 'within the margin of expiry');
  login.invalidate();
  assert.equal(await login.token(), 't3');
  assert.equal(login.player, 'p');
  assert.equal(calls.length, 3);
});

test('addresses: http and ws map to each other, the path is /v1/ws, the query carries token and locale', () => {
  assert.equal(webSocketUrl('http://127.0.0.1:7350', { token: 'x.y.z' }), 'ws://127.0.0.1:7350/v1/ws?token=x.y.z');
  assert.equal(webSocketUrl('https://b.example/anything?q=1', { token: 't', locale: 'en-XA' }), 'wss://b.example/v1/ws?token=t&locale=en-XA');
  assert.equal(webSocketUrl('ws://h:1/v1/ws'), 'ws://h:1/v1/ws');
  assert.equal(httpBase('wss://h/v1/ws?token=t').toString(), 'https://h/');
  assert.throws(() => httpBase('ftp://h'), /expected http\(s\):\/\/ or ws\(s\):\/\//);
});
