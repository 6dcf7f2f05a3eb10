// Logging in and addressing the server (docs/PROTOCOL.md sections 1 and 2).
//
// Device login (`POST /v1/auth/device`, development servers only) answers a token; the
// WebSocket carries it as `?token=` because a browser cannot set headers on a WebSocket, and
// the player's language as `?locale=`.

import { ConnectionError } from './errors.js';

/**
 * The answer of device login.
 * @typedef {object} DeviceLoginAnswer
 * @property {string} token  an HS256 JWT for `?token=`
 * @property {string} player  the player id: `d-` and 24 hex digits, stable per device
 * @property {number} expires_at  seconds since the Unix epoch
 */

/**
 * The HTTP base of a server address: `ws://h:p` and `wss://h:p` map to `http://h:p` and
 * `https://h:p`; a path is dropped.
 * @param {string | URL} address
 * @returns {URL}
 */
export function httpBase(address) {
  const url = new URL(String(address));
  if (url.protocol === 'ws:') url.protocol = 'http:';
  else if (url.protocol === 'wss:') url.protocol = 'https:';
  else if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`unsupported server address ${String(address)}: expected http(s):// or ws(s)://`);
  }
  url.pathname = '/';
  url.search = '';
  url.hash = '';
  return url;
}

/**
 * The WebSocket URL of a server: `ws(s)://host/v1/ws?token=...&locale=...`.
 * @param {string | URL} address  `http://127.0.0.1:7350`, `ws://...`, or a full `/v1/ws` URL
 * @param {{ token?: string, locale?: string | null }} [query]
 * @returns {string}
 */
export function webSocketUrl(address, query = {}) {
  const url = httpBase(address);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  url.pathname = '/v1/ws';
  if (query.token !== undefined) url.searchParams.set('token', query.token);
  if (query.locale !== undefined && query.locale !== null && query.locale !== '') url.searchParams.set('locale', query.locale);
  return url.toString();
}

/** @typedef {(input: string, init?: { method?: string, headers?: Record<string, string>, body?: string }) => Promise<{ ok: boolean, status: number, text(): Promise<string> }>} FetchLike */

/**
 * Device login: `POST /v1/auth/device` with `{"device_id": ...}`. Development servers only (the
 * route does not exist with `--production`: HTTP 404).
 * @param {{ address: string | URL, deviceId: string, fetch?: FetchLike }} options
 *   `deviceId`: 8 to 128 printable ASCII characters, no spaces
 * @returns {Promise<DeviceLoginAnswer>}
 * @throws {ConnectionError} `http` with the status and body on an error status; `connect_failed`
 *   when the server cannot be reached
 */
export async function deviceLogin({ address, deviceId, fetch: fetchImpl }) {
  const doFetch = fetchImpl ?? /** @type {FetchLike | undefined} */ (globalThis.fetch);
  if (!doFetch) throw new ConnectionError('connect_failed', 'no fetch available: pass options.fetch');
  const url = new URL('/v1/auth/device', httpBase(address)).toString();
  let response;
  try {
    response = await doFetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ device_id: deviceId }),
    });
  } catch (e) {
    throw new ConnectionError('connect_failed', `POST ${url}: ${e instanceof Error ? e.message : e}`, { cause: e });
  }
  const body = await response.text();
  if (!response.ok) {
    throw new ConnectionError('http', `POST ${url}: HTTP ${response.status}: ${body.slice(0, 300)}`, { status: response.status, body });
  }
  let answer;
  try {
    answer = JSON.parse(body);
  } catch (e) {
    throw new ConnectionError('protocol', `POST ${url}: the answer is not JSON: ${body.slice(0, 120)}`, { cause: e });
  }
  if (typeof answer?.token !== 'string' || typeof answer?.player !== 'string' || typeof answer?.expires_at !== 'number') {
    throw new ConnectionError('protocol', `POST ${url}: expected {token, player, expires_at}, got ${body.slice(0, 120)}`);
  }
  return { token: answer.token, player: answer.player, expires_at: answer.expires_at };
}

/**
 * A device's login that renews itself: `token()` logs in on first use and again once the token
 * is within `marginSeconds` of expiring (or after `invalidate()`, for a `bye` `token_expired`).
 * Pass `() => login.token()` as a connection's token so every reconnect gets a good one.
 */
export class DeviceLogin {
  /**
   * @param {{ address: string | URL, deviceId: string, fetch?: FetchLike, marginSeconds?: number, now?: () => number }} options
   *   `now`: seconds since the epoch (tests)
   */
  constructor(options) {
    this.options = options;
    this.marginSeconds = options.marginSeconds ?? 60;
    this.now = options.now ?? (() => Date.now() / 1000);
    /** @type {DeviceLoginAnswer | undefined} */
    this.current = undefined;
  }

  /** The player id, once logged in. */
  get player() {
    return this.current?.player;
  }

  /** A token good for at least `marginSeconds` more. */
  async token() {
    if (!this.current || this.current.expires_at - this.marginSeconds <= this.now()) {
      this.current = await deviceLogin(this.options);
    }
    return this.current.token;
  }

  /** Forgets the token: the next `token()` logs in again. */
  invalidate() {
    this.current = undefined;
  }
}
