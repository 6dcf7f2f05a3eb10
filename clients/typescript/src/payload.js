// `ActionPayload`: the one canonical string form of an authored action (docs/PROTOCOL.md
// section 9.3; protocol/src/payload.rs is the reference).
//
// The server runs an `action` only if an armed action has the same type and exactly the same
// payload, byte for byte, so a client must build it exactly as the server does: the action's
// fields, positionally, joined with `|`; inside a field `|` is written `\|` and `\` is `\\`.
// Parsing is strict: only canonical payloads parse, so `build(parse(s)) === s` whenever parsing
// succeeds.

import { ACTION_TYPES } from './protocol.generated.js';
import { ACTION_SPECS, MAX_AMOUNT } from './actions.generated.js';
import { PayloadError } from './errors.js';

/** @import { ActionType } from './protocol.generated.js' */

/**
 * An action as the content writes it (`opened.content`, `Actions` lists): `Type` and the fields
 * that type takes, in PascalCase. Generated from docs/schema/actions.json.
 * @typedef {import('./actions.generated.js').Action} Action
 */

const SEPARATOR = '|';
const ESCAPE = '\\';

/**
 * True if `name` is one of the protocol's action types.
 * @param {unknown} name
 * @returns {name is ActionType}
 */
export function isActionType(name) {
  return typeof name === 'string' && ACTION_TYPES.includes(/** @type {ActionType} */ (name));
}

/** Escapes one field. */
function escapeField(/** @type {string} */ field) {
  return field.replaceAll(ESCAPE, ESCAPE + ESCAPE).replaceAll(SEPARATOR, ESCAPE + SEPARATOR);
}

/**
 * The canonical payload of an action written in the content form.
 *
 * `AdvanceObjective` writes `QuestId|ObjectiveId`, then `|Amount` if `Amount` or `Island` is
 * given (an `Island` without `Amount` writes 1), then `|Island`. `CheckQuest` writes empty
 * success and failure nodes when they are missing, as the server does.
 *
 * @param {Action} action
 * @returns {string}
 * @throws {PayloadError} `unknown_action` for a type outside the protocol, `bad_action` for a
 *   missing or non-string field, `bad_amount` for an amount that is not a whole number from 1 to
 *   4294967295.
 */
export function buildPayload(action) {
  if (typeof action !== 'object' || action === null) {
    throw new PayloadError('bad_action', `an action must be an object, got ${describe(action)}`);
  }
  const type = action.Type;
  if (!isActionType(type)) {
    throw new PayloadError('unknown_action', `unknown action type ${JSON.stringify(type)} (expected one of ${ACTION_TYPES.join(', ')})`);
  }
  const record = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (action));
  /** A required string field. */
  const need = (/** @type {string} */ key) => {
    const value = record[key];
    if (typeof value !== 'string') {
      throw new PayloadError('bad_action', `${type}: ${key} must be a string, got ${describe(value)}`, { action: type });
    }
    return value;
  };
  /** An optional string field; null counts as absent. */
  const may = (/** @type {string} */ key) => {
    const value = record[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') {
      throw new PayloadError('bad_action', `${type}: ${key} must be a string when given, got ${describe(value)}`, { action: type });
    }
    return value;
  };
  // The fields, in payload order, come from the action table (src/actions.generated.js).
  /** @type {string[]} */
  const fields = [];
  for (const field of ACTION_SPECS[type].fields) {
    const key = field.keys[0];
    switch (field.kind) {
      case 'ident':
        fields.push(need(key));
        break;
      case 'target':
        fields.push(may(key) ?? '');
        break;
      case 'optional_ident': {
        const value = may(key);
        if (value !== undefined) fields.push(value);
        break;
      }
      case 'amount': {
        const island = may(field.keys[1]);
        const amount = record[key] ?? null;
        if (amount !== null || island !== undefined) {
          const n = amount ?? 1;
          if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_AMOUNT) {
            throw new PayloadError('bad_amount', `${type}: ${key} must be a whole number from 1 to ${MAX_AMOUNT}, got ${describe(n)}`, {
              action: type,
              field: fields.length + 1,
              value: String(n),
            });
          }
          fields.push(String(n));
          if (island !== undefined) fields.push(island);
        }
        break;
      }
    }
  }
  return fields.map(escapeField).join(SEPARATOR);
}

/**
 * Splits on unescaped separators and removes the escapes.
 * @param {ActionType} action
 * @param {string} payload
 */
function split(action, payload) {
  /** @type {string[]} */
  const fields = [''];
  for (let i = 0; i < payload.length; i++) {
    const c = payload[i];
    if (c === SEPARATOR) {
      fields.push('');
    } else if (c === ESCAPE) {
      const next = payload[i + 1];
      if (next !== SEPARATOR && next !== ESCAPE) {
        throw new PayloadError('bad_escape', `${action}: index ${i}: a \`\\\` must be followed by \`|\` or \`\\\``, {
          action,
          position: i,
        });
      }
      fields[fields.length - 1] += next;
      i++;
    } else {
      fields[fields.length - 1] += c;
    }
  }
  return fields;
}

/** A decimal u32 from 1 up, without sign or leading zeros: one spelling per amount, never 0. */
function parseAmount(/** @type {string} */ text) {
  if (!/^[1-9][0-9]*$/.test(text) || text.length > 10) return undefined;
  const n = Number(text);
  return n <= MAX_AMOUNT ? n : undefined;
}

/**
 * Parses a payload of the given type back into the action it was built from, in the content
 * form (the same object `buildPayload` takes; `CheckQuest` leaves out empty nodes).
 *
 * @param {ActionType} type
 * @param {string} payload
 * @returns {Action}
 * @throws {PayloadError} `field_count` (wrong number of `|`-separated fields), `bad_escape` (a `\`
 *   not followed by `|` or `\`), `bad_amount` (not a canonical whole number from 1 to
 *   4294967295), `unknown_action` (a type outside the protocol). When several apply, the first
 *   bad escape (left to right) wins, then the field count, then the amount.
 */
export function parsePayload(type, payload) {
  if (!isActionType(type)) {
    throw new PayloadError('unknown_action', `unknown action type ${JSON.stringify(type)} (expected one of ${ACTION_TYPES.join(', ')})`);
  }
  if (typeof payload !== 'string') {
    throw new PayloadError('bad_action', `${type}: the payload must be a string, got ${describe(payload)}`, { action: type });
  }
  const fields = split(type, payload);
  const spec = ACTION_SPECS[type];
  const expected = spec.max === spec.min ? `${spec.min}` : spec.max === spec.min + 1 ? `${spec.min} or ${spec.max}` : `${spec.min} to ${spec.max}`;
  // A type without fields takes the empty payload, which splits into one empty field.
  const counted = spec.max === 0 ? fields.length === 1 && fields[0] === '' : fields.length >= spec.min && fields.length <= spec.max;
  if (!counted) {
    throw new PayloadError('field_count', `${type}: expected ${expected} fields, found ${fields.length}`, { action: type });
  }
  /** @type {Record<string, string | number>} */
  const action = { Type: type };
  let at = 0;
  for (const field of spec.fields) {
    const key = field.keys[0];
    switch (field.kind) {
      case 'ident':
        action[key] = fields[at++];
        break;
      case 'target': {
        // An empty node is left out, as content leaves it out.
        const value = fields[at++];
        if (value !== '') action[key] = value;
        break;
      }
      case 'optional_ident':
        if (at < fields.length) action[key] = fields[at++];
        break;
      case 'amount':
        if (at < fields.length) {
          const amount = parseAmount(fields[at]);
          if (amount === undefined) {
            throw new PayloadError('bad_amount', `${type}: field ${at + 1} is not a canonical whole number: \`${fields[at]}\``, {
              action: type,
              field: at + 1,
              value: fields[at],
            });
          }
          action[key] = amount;
          if (at + 1 < fields.length) action[field.keys[1]] = fields[at + 1];
          at += 2;
        }
        break;
    }
  }
  return /** @type {Action} */ (/** @type {unknown} */ (action));
}

/** A short description of a value for an error message. */
function describe(/** @type {unknown} */ value) {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}
