// @banter/client: a client of the Banter wire protocol, version 1 (docs/PROTOCOL.md).
//
// Build-free ES modules for browsers and Node 20:
//
//   import { deviceLogin, Connection, buildGraph, ClientWalk } from '@banter/client';
//
// Each module can also be imported on its own (`@banter/client/payload.js`), for example by a
// game that only needs the payload builder or the typewriter.

export * from './protocol.js';
export { BanterError, PayloadError, ConditionError, ContentError, WalkRefusal, RefusalError, ConnectionError } from './errors.js';
export { buildPayload, parsePayload, isActionType } from './payload.js';
// The typewriter (visibleText, prefix, pacingFor, Typewriter, ...) and conditions
// (parseCondition, evaluate, holds, applyEffect, ...): every export of the two modules.
export * from './text.js';
export * from './condition.js';
export { buildGraph, DialogueGraph, compareUtf8, PICKS, MAX_GROUP_CANDIDATES, MAX_WEIGHT } from './graph.js';
export { ClientWalk, Walk, nextLine, ARM_CAP } from './walk.js';
export {
  decide,
  draw,
  roll,
  splitmix64,
  toU64,
  choiceRule,
  latestVotes,
  CHOICE_MODES,
  TIE_RULES,
  DEFAULT_MAJORITY_TIME_LIMIT_SECS,
  MAX_TIME_LIMIT_SECS,
  ROLL_SIDES,
} from './ballot.js';
export { SharedConversation } from './shared.js';
export { Connection, DEFAULT_BACKOFF, backoffDelay } from './connection.js';
export { deviceLogin, DeviceLogin, webSocketUrl, httpBase } from './login.js';

/**
 * @typedef {import('./payload.js').Action} Action
 * @typedef {import('./condition.js').Condition} Condition
 * @typedef {import('./condition.js').Facts} Facts
 * @typedef {import('./graph.js').Vertex} Vertex
 * @typedef {import('./graph.js').AuthoredAction} AuthoredAction
 * @typedef {import('./walk.js').Screen} Screen
 * @typedef {import('./walk.js').Greyed} Greyed
 * @typedef {import('./walk.js').WalkMemory} WalkMemory
 * @typedef {import('./graph.js').GroupRule} GroupRule
 * @typedef {import('./graph.js').Pick} Pick
 * @typedef {import('./walk.js').ArmedAction} ArmedAction
 * @typedef {import('./walk.js').OpenOptions} OpenOptions
 * @typedef {import('./ballot.js').ChoiceMode} ChoiceMode
 * @typedef {import('./ballot.js').TieRule} TieRule
 * @typedef {import('./ballot.js').ChoiceSpec} ChoiceSpec
 * @typedef {import('./ballot.js').ChoiceRule} ChoiceRule
 * @typedef {import('./ballot.js').Decision} Decision
 * @typedef {import('./ballot.js').Ballot} Ballot
 * @typedef {import('./shared.js').Departure} Departure
 * @typedef {import('./text.js').VisibleUnit} VisibleUnit
 * @typedef {import('./text.js').Pacing} Pacing
 * @typedef {import('./text.js').TypewriterEvent} TypewriterEvent
 * @typedef {import('./connection.js').ConnectionOptions} ConnectionOptions
 * @typedef {import('./connection.js').Reply} Reply
 * @typedef {import('./connection.js').ConnectionEvents} ConnectionEvents
 * @typedef {import('./connection.js').WebSocketLike} WebSocketLike
 * @typedef {import('./login.js').DeviceLoginAnswer} DeviceLoginAnswer
 */
