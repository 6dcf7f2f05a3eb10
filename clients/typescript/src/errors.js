// The error classes of the client. Every one carries a stable `code` to match on (never the
// message, whose wording may change), and says what went wrong and where.

/**
 * The base of every error this package throws.
 * @template {string} [C=string]
 */
export class BanterError extends Error {
  /**
   * @param {C} code  a stable code to match on
   * @param {string} message  for people and logs
   * @param {ErrorOptions} [options]
   */
  constructor(code, message, options) {
    super(message, options);
    this.name = 'BanterError';
    /** @readonly */
    this.code = code;
  }
}

/**
 * @typedef {"field_count" | "bad_escape" | "bad_amount" | "unknown_action" | "bad_action"} PayloadErrorCode
 *   `field_count`, `bad_escape` and `bad_amount` are the conformance codes of a payload that does
 *   not parse (conformance/README.md); `unknown_action` is an action type outside the protocol's
 *   vocabulary and `bad_action` an action object that cannot be built (a missing field).
 */

/**
 * An `ActionPayload` that does not parse, or an action that cannot be built into one.
 * @extends {BanterError<PayloadErrorCode>}
 */
export class PayloadError extends BanterError {
  /**
   * @param {PayloadErrorCode} code
   * @param {string} message
   * @param {{ action?: string, position?: number, field?: number, value?: string }} [detail]
   */
  constructor(code, message, detail = {}) {
    super(code, message);
    this.name = 'PayloadError';
    /** The action type concerned. */
    this.action = detail.action;
    /** For `bad_escape`: the UTF-16 index of the lone `\` in the payload. */
    this.position = detail.position;
    /** For `bad_amount`: the 1-based field holding the amount. */
    this.field = detail.field;
    /** For `bad_amount`: the text that is not a canonical amount. */
    this.value = detail.value;
  }
}

/**
 * A condition that does not parse. `position` is the byte offset (UTF-8) the Rust parser would
 * report; for ASCII text, as every valid condition is, it is also the string index.
 * @extends {BanterError<"bad_condition">}
 */
export class ConditionError extends BanterError {
  /**
   * @param {string} condition  the text that was parsed
   * @param {number} position
   * @param {string} detail
   */
  constructor(condition, position, detail) {
    super('bad_condition', `condition ${JSON.stringify(truncate(condition, 80))}: at byte ${position}: ${detail}`);
    this.name = 'ConditionError';
    this.condition = condition;
    this.position = position;
    this.detail = detail;
  }
}

/**
 * Conversation content that cannot be read at all (not JSON, not an object).
 * @extends {BanterError<"bad_content">}
 */
export class ContentError extends BanterError {
  /**
   * @param {string} conversation
   * @param {string} detail
   * @param {ErrorOptions} [options]
   */
  constructor(conversation, detail, options) {
    super('bad_content', `conversation ${JSON.stringify(conversation)}: ${detail}`, options);
    this.name = 'ContentError';
    this.conversation = conversation;
  }
}

/**
 * @typedef {"unknown_vertex" | "not_reachable" | "not_a_line" | "not_a_response" | "awaits_choice"
 *   | "awaits_jump" | "condition_failed" | "response_disabled" | "not_armed" | "payload_mismatch"
 *   | "no_conversation" | "internal" | "not_current" | "not_leader"} WalkRefusalCode
 *   The wire code (docs/PROTOCOL.md section 7) the server would answer the same step with, so a
 *   client's refusal reads like the server's. `internal` is a jump to something that is not an
 *   NPC line; `no_conversation` a step on a closed walk; `response_disabled` a pick of a response
 *   shown greyed out (`Disabled`, its conditions failing: section 10.1); `not_current` a vote for a response
 *   under another line than the one on screen and `not_leader` an advance from a participant
 *   who does not lead, in a shared conversation (section 17).
 */

/**
 * A step the client walk refuses: nothing was queued and the walk is as it was.
 * @extends {BanterError<WalkRefusalCode>}
 */
export class WalkRefusal extends BanterError {
  /**
   * @param {WalkRefusalCode} code
   * @param {string} message
   * @param {string} [vertex]  the node or response named
   */
  constructor(code, message, vertex) {
    super(code, vertex === undefined ? message : `${JSON.stringify(vertex)}: ${message}`);
    this.name = 'WalkRefusal';
    this.vertex = vertex;
  }
}

/**
 * The server refused a request: its `error` answer. `messages` are the server messages the
 * request caused before the refusal (for example `closed` `walked_away` before a `too_far`).
 * @extends {BanterError<string>}
 */
export class RefusalError extends BanterError {
  /**
   * @param {{ code: string, message: string, retryable: boolean, id?: number | null }} error
   *   the `error` message
   * @param {string} request  the request's `type`, for the message
   * @param {import('./protocol.js').ServerMessage[]} messages
   */
  constructor(error, request, messages) {
    super(error.code, `${request} refused: ${error.code}: ${error.message}`);
    this.name = 'RefusalError';
    this.retryable = error.retryable;
    /** The server's own words, for logs. */
    this.serverMessage = error.message;
    /** False when the `error` carried no id (refused before decoding, section 3). */
    this.withId = error.id !== undefined && error.id !== null;
    this.request = request;
    this.messages = messages;
  }
}

/**
 * @typedef {"closed" | "timeout" | "connect_failed" | "not_connected" | "frame_too_large"
 *   | "protocol" | "bye" | "no_websocket" | "http"} ConnectionErrorCode
 *   `closed`: the socket closed before the answer; `timeout`: no answer in time;
 *   `connect_failed`: no session could be opened; `not_connected`: nothing to send on;
 *   `frame_too_large`: refused here, before sending, as the server would (4,096 bytes);
 *   `protocol`: the server sent something that is not a protocol message; `bye`: the server
 *   ended the session; `no_websocket`: no WebSocket constructor available; `http`: an HTTP
 *   endpoint answered with an error status.
 */

/**
 * A transport problem: the request may or may not have reached the server.
 * @extends {BanterError<ConnectionErrorCode>}
 */
export class ConnectionError extends BanterError {
  /**
   * @param {ConnectionErrorCode} code
   * @param {string} message
   * @param {{ status?: number, body?: string, reason?: string, cause?: unknown }} [detail]
   */
  constructor(code, message, detail = {}) {
    super(code, message, detail.cause === undefined ? undefined : { cause: detail.cause });
    this.name = 'ConnectionError';
    /** For `http`: the status code. */
    this.status = detail.status;
    /** For `http`: the response body. */
    this.body = detail.body;
    /** For `bye`: the bye's reason. */
    this.reason = detail.reason;
  }
}

/** @param {string} s @param {number} n */
function truncate(s, n) {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}
