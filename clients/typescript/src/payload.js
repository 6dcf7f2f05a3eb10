// `ActionPayload`: the one canonical string form of an authored action (docs/PROTOCOL.md
// section 9.3; protocol/src/payload.rs is the reference).
//
// The server runs an `action` only if an armed action has the same type and exactly the same
// payload, byte for byte, so a client must build it exactly as the server does: the action's
// fields, positionally, joined with `|`; inside a field `|` is written `\|` and `\` is `\\`.
// Parsing is strict: only canonical payloads parse, so `build(parse(s)) === s` whenever parsing
// succeeds.

import { ACTION_TYPES } from './protocol.generated.js';
import { PayloadError } from './errors.js';

/** @import { ActionType } from './protocol.generated.js' */

/**
 * An action as the content writes it (`opened.content`, `Actions` lists): `Type` and the fields
 * that type takes, in PascalCase.
 * @typedef {{ Type: "AcceptQuest" | "CompleteQuest" | "TrackQuest" | "ChooseRideBoat", QuestId: string }
 *   | { Type: "CheckQuest", QuestId: string, SuccessNode?: string, FailureNode?: string }
 *   | { Type: "AdvanceObjective", QuestId: string, ObjectiveId: string, Amount?: number, Island?: string }
 *   | { Type: "OpenShop", Shop: string }
 *   | { Type: "OpenSellMenu" }
 *   | { Type: "PlayCutscene", Scene: string, QuestId?: string }} Action
 */

const SEPARATOR = '|';
const ESCAPE = '\\';
/** The largest amount: the Rust type is a u32. */
const MAX_AMOUNT = 4294967295;

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
  /** @type {string[]} */
  let fields;
  switch (type) {
    case 'AcceptQuest':
    case 'CompleteQuest':
    case 'TrackQuest':
    case 'ChooseRideBoat':
      fields = [need('QuestId')];
      break;
    case 'CheckQuest':
      fields = [need('QuestId'), may('SuccessNode') ?? '', may('FailureNode') ?? ''];
      break;
    case 'AdvanceObjective': {
      fields = [need('QuestId'), need('ObjectiveId')];
      const island = may('Island');
      const amount = record.Amount ?? null;
      if (amount !== null || island !== undefined) {
        const n = amount ?? 1;
        if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_AMOUNT) {
          throw new PayloadError('bad_amount', `${type}: Amount must be a whole number from 1 to ${MAX_AMOUNT}, got ${describe(n)}`, {
            action: type,
            field: 3,
            value: String(n),
          });
        }
        fields.push(String(n));
        if (island !== undefined) fields.push(island);
      }
      break;
    }
    case 'OpenShop':
      fields = [need('Shop')];
      break;
    case 'OpenSellMenu':
      fields = [];
      break;
    case 'PlayCutscene': {
      fields = [need('Scene')];
      const quest = may('QuestId');
      if (quest !== undefined) fields.push(quest);
      break;
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
  const count = (/** @type {string} */ expected) =>
    new PayloadError('field_count', `${type}: expected ${expected} fields, found ${fields.length}`, { action: type });
  switch (type) {
    case 'AcceptQuest':
    case 'CompleteQuest':
    case 'TrackQuest':
    case 'ChooseRideBoat':
      if (fields.length !== 1) throw count('1');
      return { Type: type, QuestId: fields[0] };
    case 'CheckQuest': {
      if (fields.length !== 3) throw count('3');
      /** @type {Action} */
      const action = { Type: type, QuestId: fields[0] };
      if (fields[1] !== '') action.SuccessNode = fields[1];
      if (fields[2] !== '') action.FailureNode = fields[2];
      return action;
    }
    case 'AdvanceObjective': {
      if (fields.length < 2 || fields.length > 4) throw count('2 to 4');
      /** @type {Action} */
      const action = { Type: type, QuestId: fields[0], ObjectiveId: fields[1] };
      if (fields.length >= 3) {
        const amount = parseAmount(fields[2]);
        if (amount === undefined) {
          throw new PayloadError('bad_amount', `${type}: field 3 is not a canonical whole number: \`${fields[2]}\``, {
            action: type,
            field: 3,
            value: fields[2],
          });
        }
        action.Amount = amount;
        if (fields.length === 4) action.Island = fields[3];
      }
      return action;
    }
    case 'OpenShop':
      if (fields.length !== 1) throw count('1');
      return { Type: type, Shop: fields[0] };
    case 'OpenSellMenu':
      // The empty payload splits into one empty field.
      if (fields.length !== 1 || fields[0] !== '') throw count('0');
      return { Type: type };
    case 'PlayCutscene': {
      if (fields.length !== 1 && fields.length !== 2) throw count('1 or 2');
      /** @type {Action} */
      const action = { Type: type, Scene: fields[0] };
      if (fields.length === 2) action.QuestId = fields[1];
      return action;
    }
  }
  throw new PayloadError('unknown_action', `unknown action type ${JSON.stringify(type)}`);
}

/** A short description of a value for an error message. */
function describe(/** @type {unknown} */ value) {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}
