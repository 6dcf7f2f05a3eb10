// One WebSocket to the server (docs/PROTOCOL.md sections 1, 3, 5 and `resume` in 4).
//
// Request ids and answers. Every request goes out with a fresh id. The server handles one
// connection's messages strictly in order and answers each message that has an id with exactly
// one `ack` or `error` carrying it, after every message the step caused. So the messages that
// arrive after one answer and before the next belong to the oldest request not yet answered,
// and an `error` without an id (refused before decoding: `rate_limited`, `frame_too_large`, ...)
// answers that oldest request too. Requests may be pipelined; their answers come in order.
//
// Sessions. The first message is `welcome` (or an `error` `store_unavailable` without id, then
// the socket closes). The last is `bye`. When the socket drops (or the server ends the session
// in a way that parks the conversation: `shutdown`, `timeout`), the connection reconnects with
// backoff and, if a conversation was open, sends `resume` with the previous welcome's
// `resume_token`: the walk continues where it was. It never reconnects after `replaced` (another
// session of the player took over: fighting it would ping-pong) or `flooding`, or after
// `close()`. After `token_expired` it reconnects with a fresh token from the token function.
//
// Parties (PROTOCOL.md section 17.1). `partyForm`, `partyInvite`, `partyAccept` and `partyLeave`
// send the four party messages and answer with the party the server says the player is in now.
// The connection keeps `party` and `invites` current from `welcome`, every `party` (answers and
// pushes) and every `party_invited`, and emits `party` and `party_invited`.
//
// Pushed messages (a party change, an invitation, and in a shared conversation `opened` for a
// member who joins at once, `participants`, `voted`, `chosen`, `advanced`, and a `jump` the
// leader's check caused) come unrequested: listen to `message`. One that arrives while a
// request waits for its answer is also listed among that request's `messages`.
//
// Node 20 has no global WebSocket without `--experimental-websocket`: pass a constructor
// (`options.WebSocket`, for example the `ws` package's) or run Node with the flag.

import { ConnectionError, RefusalError } from './errors.js';
import { webSocketUrl } from './login.js';
import { MAX_CLIENT_FRAME_BYTES, parseServerMessage } from './protocol.js';

/**
 * @import { ServerMessage, ErrorMessage, ByeMessage, ResumedMessage, ByeReason, WelcomeMessage, LocaleSetMessage, QuestAbandonedMessage, PartyView, InviteView, PartyMessage, PartyInvitedMessage } from './protocol.generated.js'
 * @import { OutgoingRequest } from './protocol.js'
 */

/**
 * The part of the WebSocket API this client uses: the browser's, Node's (flag), and `ws`'s.
 * @typedef {object} WebSocketLike
 * @property {number} readyState
 * @property {(data: string) => void} send
 * @property {(code?: number, reason?: string) => void} close
 * @property {(type: string, listener: (event: any) => void) => void} addEventListener
 */
// `any` above: the three implementations type their event objects differently; the handlers
// below read only `data`, `code` and `reason`, and check `data`'s type before use.

/** @typedef {new (url: string) => WebSocketLike} WebSocketConstructor */

/** `WebSocket.OPEN`, the same in every implementation. */
const OPEN = 1;

/**
 * How long to wait between connection attempts: none before the first, `firstMs` before the
 * second, doubling up to `maxMs`.
 * @typedef {object} Backoff
 * @property {number} attempts
 * @property {number} firstMs
 * @property {number} maxMs
 */

/** Eight attempts over about ten seconds: long enough for a server restart, short enough to tell the player. */
export const DEFAULT_BACKOFF = Object.freeze({ attempts: 8, firstMs: 100, maxMs: 3000 });

/**
 * The wait before attempt `attempt` (counted from 0).
 * @param {Backoff} backoff
 * @param {number} attempt
 */
export function backoffDelay(backoff, attempt) {
  if (attempt <= 0) return 0;
  return Math.min(backoff.firstMs * 2 ** Math.min(attempt - 1, 30), backoff.maxMs);
}

/**
 * @typedef {object} ConnectionOptions
 * @property {string | URL} address  the server: `http://127.0.0.1:7350` or `ws://...`
 * @property {string | (() => string | Promise<string>)} token  a token, or a function that gives a
 *   good one (called at every connection attempt: see `DeviceLogin`)
 * @property {string} [locale]  the player's language, a BCP 47 tag (`?locale=`)
 * @property {WebSocketConstructor} [WebSocket]  default: the global `WebSocket`
 * @property {number} [answerTimeoutMs]  how long a request waits for its answer (15,000)
 * @property {Backoff | false} [reconnect]  `false`: never reconnect
 * @property {(ms: number) => Promise<void>} [sleep]  for tests
 */

/**
 * Everything a request caused: the server messages before its `ack`, in order.
 * @typedef {object} Reply
 * @property {number} id
 * @property {ServerMessage[]} messages
 */

/**
 * @typedef {object} ConnectionEvents
 * @property {ServerMessage} message  every server message, requested or pushed (a game event's `effect`)
 * @property {WelcomeMessage} welcome  a session started (the first, and after every reconnect)
 * @property {ByeMessage} bye  the server ends the session
 * @property {{ code: number, reason: string, bye: ByeMessage | undefined, willReconnect: boolean }} disconnect  the socket closed
 * @property {{ welcome: WelcomeMessage, resumed: ResumedMessage | undefined, resumeRefused: RefusalError | undefined }} reconnect
 *   a new session after a drop; `resumed` when the open conversation was taken back, `resumeRefused`
 *   when it could not be (talk again)
 * @property {{ error: Error }} ended  no more sessions: reconnecting failed, or was not allowed
 * @property {ErrorMessage} unanswered  an `error` with no request to answer (should not happen)
 * @property {Error} protocol  a frame that is not a server message
 * @property {{ party: PartyView | undefined }} party  the player's party changed (a `party` answer
 *   or push, or a new session's `welcome`); `party` undefined: in none
 * @property {InviteView} party_invited  an invitation into a party arrived
 */

/**
 * @typedef {object} Pending
 * @property {number} id
 * @property {string} type
 * @property {ServerMessage[]} messages
 * @property {(reply: Reply) => void} resolve
 * @property {(error: Error) => void} reject
 * @property {ReturnType<typeof setTimeout> | undefined} timer
 * @property {boolean} abandoned  timed out: its answer is still awaited (to keep the order) and dropped
 */

/** One session at a time over one WebSocket, with answer matching, reconnect and resume. */
export class Connection {
  /**
   * Connects and waits for the `welcome`.
   * @param {ConnectionOptions} options
   * @returns {Promise<Connection>}
   * @throws {ConnectionError | RefusalError} when no session could be opened
   */
  static async open(options) {
    const connection = new Connection(options);
    await connection.connect();
    return connection;
  }

  /** @param {ConnectionOptions} options */
  constructor(options) {
    const ctor = options.WebSocket ?? /** @type {WebSocketConstructor | undefined} */ (globalThis.WebSocket);
    if (!ctor) {
      throw new ConnectionError(
        'no_websocket',
        'no WebSocket available: pass options.WebSocket (Node 20: run with --experimental-websocket, or use the ws package)',
      );
    }
    this.options = options;
    /** @private */
    this.WebSocketCtor = ctor;
    /** The locale for `?locale=` on every (re)connection; `setLocale` changes it. */
    this.locale = options.locale;
    this.answerTimeoutMs = options.answerTimeoutMs ?? 15000;
    /** @type {Backoff | false} */
    this.backoff = options.reconnect === undefined ? DEFAULT_BACKOFF : options.reconnect;
    /** @private */
    this.sleep = options.sleep ?? ((/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms)));
    /** The current session's welcome. @type {WelcomeMessage | undefined} */
    this.welcome = undefined;
    /** @private @type {WebSocketLike | undefined} */
    this.ws = undefined;
    /** @private @type {Pending[]} */
    this.pending = [];
    /** @private */
    this.nextId = 1;
    /** @private @type {ByeMessage | undefined} */
    this.bye = undefined;
    /** @private true once `close()` was called: the player chose to leave */
    this.closing = false;
    /** @private whether the session had a conversation open (decides `resume`) */
    this.conversationOpen = false;
    /** @private @type {{ resolve: (w: WelcomeMessage) => void, reject: (e: Error) => void } | undefined} */
    this.welcomeWaiter = undefined;
    /** @private @type {Map<string, Set<(event: unknown) => void>>} */
    this.listeners = new Map();
    /** True while a reconnect is in progress. */
    this.reconnecting = false;
    /**
     * The last session's `welcome.resume_token`, kept after the socket closes: what `resume`
     * needs after a drop. @type {string | undefined}
     */
    this.resumeToken = undefined;
    /** The player's party, as the server last said (`welcome`, `party`); undefined: in none. @type {PartyView | undefined} */
    this.party = undefined;
    /** The live invitations the server has told of, oldest first (`welcome.invites`, `party_invited`). @type {InviteView[]} */
    this.invites = [];
  }

  /**
   * Listens to an event; returns the function that stops listening.
   * @template {keyof ConnectionEvents} K
   * @param {K} type
   * @param {(event: ConnectionEvents[K]) => void} listener
   * @returns {() => void}
   */
  on(type, listener) {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    // Stored untyped: `emit` only ever passes a listener the event of the type it was added for.
    const stored = /** @type {(event: unknown) => void} */ (/** @type {unknown} */ (listener));
    set.add(stored);
    return () => set.delete(stored);
  }

  /**
   * @private
   * @template {keyof ConnectionEvents} K
   * @param {K} type
   * @param {ConnectionEvents[K]} event
   */
  emit(type, event) {
    for (const listener of [...(this.listeners.get(type) ?? [])]) {
      try {
        listener(event);
      } catch (e) {
        // A listener's bug must not break answer matching; report it where it can be seen.
        queueMicrotask(() => {
          throw e;
        });
      }
    }
  }

  /** True while a session is open. */
  get connected() {
    return this.ws !== undefined && this.ws.readyState === OPEN && this.welcome !== undefined;
  }

  /**
   * Opens a socket and waits for the welcome.
   * @private
   * @returns {Promise<WelcomeMessage>}
   */
  async connect() {
    const token = typeof this.options.token === 'function' ? await this.options.token() : this.options.token;
    const url = webSocketUrl(this.options.address, { token, locale: this.locale });
    this.bye = undefined;
    this.welcome = undefined;
    const ws = new this.WebSocketCtor(url);
    this.ws = ws;
    const welcome = new Promise((resolve, reject) => {
      this.welcomeWaiter = { resolve, reject };
    });
    const timer = setTimeout(() => {
      this.failWelcome(new ConnectionError('timeout', `no welcome within ${this.answerTimeoutMs} ms from ${redact(url)}`));
      try {
        ws.close();
      } catch {
        // Already closing.
      }
    }, this.answerTimeoutMs);
    ws.addEventListener('message', (event) => {
      if (ws === this.ws) this.onFrame(event.data);
    });
    ws.addEventListener('close', (event) => {
      if (ws === this.ws) this.onClose(event.code ?? 1006, event.reason ?? '');
    });
    ws.addEventListener('error', () => {
      // A 'close' event always follows; the outcome is decided there.
    });
    try {
      return /** @type {WelcomeMessage} */ (await welcome);
    } finally {
      clearTimeout(timer);
    }
  }

  /** @private @param {Error} error */
  failWelcome(error) {
    const waiter = this.welcomeWaiter;
    this.welcomeWaiter = undefined;
    waiter?.reject(error);
  }

  /**
   * Sends a request with a fresh id; resolves with everything it caused once its `ack` arrives.
   * @param {OutgoingRequest} message  any client message, without an id (one given is replaced)
   * @returns {Promise<Reply>}
   * @throws {RefusalError} the server's `error` (with `code`, `retryable` and the messages before it)
   * @throws {ConnectionError} `not_connected`, `closed` (the socket closed first), `timeout`,
   *   `frame_too_large` (not sent), `bye`
   */
  request(message) {
    const ws = this.ws;
    if (!ws || ws.readyState !== OPEN || this.welcome === undefined) {
      return Promise.reject(new ConnectionError('not_connected', `cannot send ${message.type}: no open session${this.reconnecting ? ' (reconnecting)' : ''}`));
    }
    const id = this.nextId++;
    const text = JSON.stringify({ ...message, id });
    const bytes = new TextEncoder().encode(text).length;
    if (bytes > MAX_CLIENT_FRAME_BYTES) {
      // The server would answer `frame_too_large` without an id; refusing here keeps the frame
      // (and the answer order) off the wire.
      return Promise.reject(new ConnectionError('frame_too_large', `${message.type} is ${bytes} bytes, over the ${MAX_CLIENT_FRAME_BYTES}-byte frame limit: not sent`));
    }
    return new Promise((resolve, reject) => {
      /** @type {Pending} */
      const pending = { id, type: message.type, messages: [], resolve, reject, timer: undefined, abandoned: false };
      pending.timer = setTimeout(() => {
        pending.abandoned = true;
        reject(new ConnectionError('timeout', `${message.type} (id ${id}): no answer within ${this.answerTimeoutMs} ms`));
      }, this.answerTimeoutMs);
      this.pending.push(pending);
      try {
        ws.send(text);
      } catch (e) {
        this.pending.splice(this.pending.indexOf(pending), 1);
        clearTimeout(pending.timer);
        reject(new ConnectionError('closed', `${message.type}: the socket refused the frame: ${e instanceof Error ? e.message : e}`, { cause: e }));
      }
    });
  }

  /**
   * Changes the player's language: `set_locale` now, and `?locale=` on every reconnection. A
   * conversation already open keeps its text; the next `opened` is in the new locale.
   * @param {string} locale  a BCP 47 tag
   * @returns {Promise<string>} the locale the text is served in now (`locale_set`): the one
   *   asked for, or the first of its fallbacks the content has, or the source language
   * @throws {RefusalError} `bad_locale`
   */
  async setLocale(locale) {
    const reply = await this.request({ type: 'set_locale', locale });
    this.locale = locale;
    const set = reply.messages.find((m) => m.type === 'locale_set');
    if (!set) throw new ConnectionError('protocol', 'a set_locale was acknowledged without `locale_set`');
    return /** @type {LocaleSetMessage} */ (set).locale;
  }

  /**
   * Gives up an active quest, as a quest log's "abandon" does (`abandon_quest`): its progress is
   * forgotten, it is no longer tracked, and its giver offers it again.
   * @param {string} quest  the quest id
   * @returns {Promise<QuestAbandonedMessage>} the quest and the profile after it
   * @throws {RefusalError} `quest_state` (not active), `store_unavailable`, `outcome_unknown`
   *   (send it again: it is applied at most once)
   */
  async abandonQuest(quest) {
    const reply = await this.request({ type: 'abandon_quest', quest });
    const abandoned = reply.messages.find((m) => m.type === 'quest_abandoned');
    if (!abandoned) throw new ConnectionError('protocol', 'an abandon_quest was acknowledged without `quest_abandoned`');
    return /** @type {QuestAbandonedMessage} */ (abandoned);
  }

  /**
   * Forms a party the player leads (`party_form`).
   * @returns {Promise<PartyView>} the new party
   * @throws {RefusalError} `already_in_party` (leave the party first)
   */
  async partyForm() {
    const party = await this.partyRequest({ type: 'party_form' });
    if (!party) throw new ConnectionError('protocol', 'a party_form was acknowledged without a party');
    return party;
  }

  /**
   * Invites a player into the player's party (`party_invite`), forming one first, led by the
   * player, if they are in none. The invitee gets `party_invited` (if connected to the same
   * server instance) and has 10 minutes to accept; inviting again renews the invitation.
   * @param {string} player  the invitee's player id (their `welcome.player`)
   * @returns {Promise<PartyView>} the player's party
   * @throws {RefusalError} `already_in_party` (the invitee is the player or a member already),
   *   `party_full` (8 members)
   */
  async partyInvite(player) {
    const party = await this.partyRequest({ type: 'party_invite', player });
    if (!party) throw new ConnectionError('protocol', 'a party_invite was acknowledged without a party');
    return party;
  }

  /**
   * Accepts an invitation into `party` (`party_accept`).
   * @param {string} party  the party id (`party_invited.party`, `welcome.invites[].party`)
   * @returns {Promise<PartyView>} the party joined
   * @throws {RefusalError} `no_invite` (none live), `already_in_party` (leave yours first),
   *   `party_full`
   */
  async partyAccept(party) {
    const joined = await this.partyRequest({ type: 'party_accept', party });
    if (!joined) throw new ConnectionError('protocol', 'a party_accept was acknowledged without a party');
    return joined;
  }

  /**
   * Leaves the player's party (`party_leave`). Leadership passes to the next member in join
   * order; the last member out deletes the party.
   * @returns {Promise<void>}
   * @throws {RefusalError} `not_in_party`
   */
  async partyLeave() {
    await this.partyRequest({ type: 'party_leave' });
  }

  /**
   * One of the four party messages: the party its `party` answer names (undefined: in none).
   * @private
   * @param {import('./protocol.js').OutgoingRequest} message
   * @returns {Promise<PartyView | undefined>}
   */
  async partyRequest(message) {
    const reply = await this.request(message);
    // The answer comes right before the ack; a push could come earlier in the same reply.
    const answer = /** @type {PartyMessage | undefined} */ (reply.messages.findLast((m) => m.type === 'party'));
    if (!answer) throw new ConnectionError('protocol', `a ${message.type} was acknowledged without \`party\``);
    return answer.party;
  }

  /**
   * Takes back the conversation a dropped session left open (`resume`). Done by itself after a
   * reconnect; call it when you connect anew with a token kept from an earlier `welcome`.
   * @param {string} resumeToken  the previous session's `welcome.resume_token`
   * @returns {Promise<ResumedMessage>}
   * @throws {RefusalError} `resume_refused` (nothing to take back: talk again), `too_far`, ...
   */
  async resume(resumeToken) {
    const reply = await this.request({ type: 'resume', token: resumeToken });
    const resumed = reply.messages.find((m) => m.type === 'resumed');
    if (!resumed) throw new ConnectionError('protocol', 'a resume was acknowledged without `resumed`');
    return /** @type {ResumedMessage} */ (resumed);
  }

  /**
   * Leaves: a Close frame from the client, which the server takes as the player choosing to go
   * (the open conversation is not parked for `resume`). No reconnect follows.
   * @returns {Promise<void>}  once the socket has closed
   */
  close() {
    this.closing = true;
    const ws = this.ws;
    if (!ws || ws.readyState > OPEN) return Promise.resolve();
    return new Promise((resolve) => {
      ws.addEventListener('close', () => resolve());
      try {
        ws.close(1000, 'client leaves');
      } catch {
        resolve();
      }
    });
  }

  /** @private @param {unknown} data */
  onFrame(data) {
    if (typeof data !== 'string') {
      // The server sends text frames only.
      this.emit('protocol', new ConnectionError('protocol', 'the server sent a binary frame'));
      return;
    }
    /** @type {ServerMessage} */
    let message;
    try {
      message = parseServerMessage(data);
    } catch (e) {
      this.emit('protocol', /** @type {Error} */ (e));
      return;
    }
    this.track(message);
    this.emit('message', message);
    switch (message.type) {
      case 'welcome': {
        this.welcome = /** @type {WelcomeMessage} */ (message);
        this.resumeToken = message.resume_token || undefined;
        this.party = message.party;
        this.invites = [...(message.invites ?? [])];
        const waiter = this.welcomeWaiter;
        this.welcomeWaiter = undefined;
        waiter?.resolve(this.welcome);
        this.emit('welcome', this.welcome);
        this.emit('party', { party: this.party });
        return;
      }
      case 'ack':
        this.answer(message.id, undefined);
        return;
      case 'error':
        if (this.welcomeWaiter && (message.id === undefined || message.id === null)) {
          // `store_unavailable` at connection time: no session, the socket closes next.
          this.failWelcome(new RefusalError(message, 'connect', []));
          return;
        }
        this.answer(message.id ?? undefined, message);
        return;
      case 'bye':
        this.bye = message;
        this.emit('bye', message);
        return;
      case 'party':
        this.party = message.party;
        // An invitation into the party the player is in now has been used.
        if (message.party) {
          const joined = message.party.id;
          this.invites = this.invites.filter((i) => i.party !== joined);
        }
        this.emit('party', { party: message.party });
        this.attach(message);
        return;
      case 'party_invited': {
        const invite = { party: message.party, from: message.from };
        // Inviting again renews the invitation: one entry per party, the newest last.
        this.invites = [...this.invites.filter((i) => i.party !== invite.party), invite];
        this.emit('party_invited', invite);
        this.attach(message);
        return;
      }
      default:
        this.attach(message);
    }
  }

  /**
   * A message that is no answer: listed with the oldest request waiting for its answer.
   * @private
   * @param {ServerMessage} message
   */
  attach(message) {
    const head = this.pending[0];
    if (head) head.messages.push(message);
  }

  /**
   * Whether a conversation is open, from what the server says.
   * @private
   * @param {ServerMessage} message
   */
  track(message) {
    if (message.type === 'opened' || message.type === 'resumed') this.conversationOpen = true;
    else if (message.type === 'closed' || message.type === 'welcome') this.conversationOpen = false;
  }

  /**
   * Ends the request an answer belongs to: the one with `id`, or, for an `error` without an id,
   * the oldest one.
   * @private
   * @param {number | undefined} id
   * @param {ErrorMessage | undefined} error
   */
  answer(id, error) {
    const at = id === undefined ? (this.pending.length > 0 ? 0 : -1) : this.pending.findIndex((p) => p.id === id);
    if (at < 0) {
      if (error) this.emit('unanswered', error);
      return;
    }
    // Requests older than the answered one can no longer be answered (answers come in order):
    // they were lost, which only a server bug causes. Fail them rather than wait forever.
    for (const lost of this.pending.splice(0, at)) {
      clearTimeout(lost.timer);
      if (!lost.abandoned) lost.reject(new ConnectionError('protocol', `${lost.type} (id ${lost.id}): answered out of order`));
    }
    const pending = /** @type {Pending} */ (this.pending.shift());
    clearTimeout(pending.timer);
    if (pending.abandoned) return;
    if (error) pending.reject(new RefusalError(error, pending.type, pending.messages));
    else pending.resolve({ id: pending.id, messages: pending.messages });
  }

  /** @private @param {number} code @param {string} reason */
  onClose(code, reason) {
    const bye = this.bye;
    const hadWelcome = this.welcome !== undefined;
    this.ws = undefined;
    this.welcome = undefined;
    const cause = bye
      ? new ConnectionError('bye', `the server ended the session: ${bye.reason}: ${bye.message}`, { reason: bye.reason })
      : new ConnectionError('closed', `the socket closed (code ${code}${reason ? `, ${reason}` : ''})`);
    for (const p of this.pending.splice(0)) {
      clearTimeout(p.timer);
      if (!p.abandoned) p.reject(cause);
    }
    if (!hadWelcome) {
      // Still connecting: the attempt failed. A browser cannot see the HTTP status of a refused
      // upgrade (401 for a bad token, 503 for a full server), only that it closed.
      this.failWelcome(
        new ConnectionError('connect_failed', `no session: the connection closed before the welcome (code ${code}${reason ? `, ${reason}` : ''}; a bad token gets HTTP 401, a full server 503)`),
      );
      return;
    }
    const willReconnect = this.backoff !== false && !this.closing && reconnects(bye?.reason);
    this.emit('disconnect', { code, reason, bye, willReconnect });
    if (willReconnect) void this.reconnectLoop();
    else this.emit('ended', { error: cause });
  }

  /**
   * Connects again with backoff, then resumes the conversation the dropped session had open.
   * @private
   */
  async reconnectLoop() {
    const backoff = /** @type {Backoff} */ (this.backoff);
    const resumeToken = this.resumeToken;
    const hadConversation = this.conversationOpen;
    this.reconnecting = true;
    /** @type {Error} */
    let last = new ConnectionError('connect_failed', 'no attempt made');
    try {
      for (let attempt = 0; attempt < backoff.attempts; attempt++) {
        await this.sleep(backoffDelay(backoff, attempt));
        if (this.closing) return;
        try {
          const welcome = await this.connect();
          if (this.closing) {
            // close() was called while this attempt was connecting: leave, as asked.
            await this.close();
            return;
          }
          /** @type {ResumedMessage | undefined} */
          let resumed;
          /** @type {RefusalError | undefined} */
          let resumeRefused;
          if (hadConversation && resumeToken) {
            try {
              resumed = await this.resume(resumeToken);
            } catch (e) {
              if (e instanceof RefusalError) resumeRefused = e;
              else throw e;
            }
          }
          this.reconnecting = false;
          this.emit('reconnect', { welcome, resumed, resumeRefused });
          return;
        } catch (e) {
          last = /** @type {Error} */ (e);
        }
      }
      this.reconnecting = false;
      this.emit('ended', { error: new ConnectionError('connect_failed', `could not reconnect after ${backoff.attempts} attempts: ${last.message}`, { cause: last }) });
    } finally {
      this.reconnecting = false;
    }
  }

}

/**
 * Whether a session that ended this way is worth reconnecting to: a drop, a restart
 * (`shutdown`), an idle timeout, or an expired token (with a fresh one). Not `replaced` (the
 * player is connected elsewhere) nor `flooding` (the client misbehaved).
 * @param {ByeReason | undefined} reason
 */
function reconnects(reason) {
  return reason !== 'replaced' && reason !== 'flooding';
}

/** A URL without its token, for messages. @param {string} url */
function redact(url) {
  return url.replace(/([?&]token=)[^&]*/, '$1…');
}
