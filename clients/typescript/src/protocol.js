// The wire protocol's types and constants (docs/PROTOCOL.md).
//
// Every message type and shared type is generated from docs/schema into protocol.generated.js
// (`npm run gen-types`); this module re-exports them and adds what the schema files do not
// carry: the protocol's fixed numbers, the retryable codes (section 7), and the parser of
// server frames.

import { SERVER_MESSAGE_TYPES } from './protocol.generated.js';
import { ConnectionError } from './errors.js';

export * from './protocol.generated.js';

/**
 * @import { ClientMessage, ServerMessage, AdvanceMessage, ChooseMessage, ActionMessage, CloseMessage }
 *   from './protocol.generated.js'
 */

/** The protocol version this client speaks (`welcome.protocol`). */
export const PROTOCOL_VERSION = 1;

/** The largest text frame the server accepts, in bytes of UTF-8 (section 1). */
export const MAX_CLIENT_FRAME_BYTES = 4096;

/** The four codes for which sending the same message later may succeed (section 7). */
export const RETRYABLE_CODES = Object.freeze(
  /** @type {const} */ (['rate_limited', 'talk_cooldown', 'store_unavailable', 'outcome_unknown', 'shared_elsewhere']),
);

/** @typedef {ClientMessage} OutgoingRequest  anything a client may send (without an id: the connection adds it) */

/**
 * A message the client walk queues, as JSON without an id (exactly what the conformance
 * vectors compare).
 * @typedef {Omit<AdvanceMessage, "id"> | Omit<ChooseMessage, "id"> | Omit<ActionMessage, "id"> | Omit<CloseMessage, "id">} WalkMessage
 */

/**
 * Parses one text frame from the server. Checks only what matching answers depends on (a JSON
 * object whose `type` is a server message type); the rest is trusted, as the server is.
 * @param {string} text
 * @returns {ServerMessage}
 */
export function parseServerMessage(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ConnectionError('protocol', `the server sent a frame that is not JSON: ${preview(text)}`, { cause: e });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConnectionError('protocol', `the server sent a frame that is not a JSON object: ${preview(text)}`);
  }
  if (!SERVER_MESSAGE_TYPES.includes(value.type)) {
    throw new ConnectionError('protocol', `the server sent an unknown message type ${JSON.stringify(value.type)}: ${preview(text)}`);
  }
  return /** @type {ServerMessage} */ (value);
}

/** @param {string} text */
function preview(text) {
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}
