// A shared conversation as one participant's client lives it (docs/PROTOCOL.md section 17.2 to
// 17.5): the walk (a `ClientWalk` opened shared), who takes part and who leads, the votes on the
// line on screen, the last decision, and when the ballot's time limit passes.
//
// Everything moves on what the server says. Feed every server message to `receive` (it ignores
// what is not about the conversation): `voted` records a vote, `chosen` / `advanced` / `jump` move
// the walk and return what this client must send because of them (held actions, node actions,
// the chosen response's actions if it was shown to this player, `close` at the end),
// `participants` changes who leads, an `effect` keeps the facts current, `closed` ends it. The
// player's own steps (`vote`, `advance`, `leave`) return the message to send and move nothing.
//
//   const { conversation, sends } = SharedConversation.open({ opened, graph, player: welcome.player });
//   connection.on('message', (m) => queue(conversation.receive(m)));
//   queue(sends);
//   queue(conversation.vote('Ferry_Greet_r1'));       // a vote: `choose`; wait for `chosen`
//   if (conversation.walk.canAdvance) queue(conversation.advance()); // the leader's only
//
// `follow(connection)` does the two lines above for you: it applies every message and sends what
// comes of it, in order, one at a time.

import { applyEffect } from './condition.js';
import { decide, latestVotes } from './ballot.js';
import { ClientWalk } from './walk.js';
import { RefusalError } from './errors.js';

/**
 * @import { DialogueGraph, Vertex } from './graph.js'
 * @import { ChoiceRule, Decision } from './ballot.js'
 * @import { OpenedMessage, ServerMessage, ChosenMessage, Vote, SharedView, FactSheet } from './protocol.generated.js'
 * @import { WalkMessage } from './protocol.js'
 * @import { Connection } from './connection.js'
 */

/**
 * A participant who left, and why (`participants.left` and `reason`).
 * @typedef {{ player: string, reason: string | undefined }} Departure
 */

/** One participant's view of a shared conversation. */
export class SharedConversation {
  /**
   * Opens this client's side of a shared conversation from its `opened` (answering the
   * player's `talk`, or pushed when the player joins at once).
   * @param {object} options
   * @param {OpenedMessage} options.opened  an `opened` with `shared`
   * @param {DialogueGraph} options.graph  built from its content (or the cached content of its hash)
   * @param {string} options.player  this player's id (`welcome.player`)
   * @param {number} [options.now]  when the client got it (ms, `Date.now()` by default): the
   *   countdown of a time limit starts here
   * @returns {{ conversation: SharedConversation, sends: WalkMessage[] }} `sends`: the entry
   *   line's node actions
   */
  static open({ opened, graph, player, now = Date.now() }) {
    const shared = opened.shared;
    if (!shared) throw new TypeError('SharedConversation.open: the opened message has no `shared`: walk it with ClientWalk.open');
    const { walk, sends } = ClientWalk.open(graph, opened.entry, opened.facts, { shared: true, leads: shared.leader === player });
    return { conversation: new SharedConversation(walk, player, shared, now, opened.facts), sends };
  }

  /**
   * @param {ClientWalk} walk
   * @param {string} player
   * @param {SharedView} shared
   * @param {number} now
   * @param {FactSheet} facts
   */
  constructor(walk, player, shared, now, facts) {
    /** This player's walk (opened shared). */
    this.walk = walk;
    /** This player's facts, kept current from their effects (the walk evaluates with them). */
    this.facts = facts;
    /** This player's id. */
    this.player = player;
    /** The party's id. */
    this.party = shared.party;
    /** The conversation's leader. */
    this.leader = shared.leader;
    /** The participants, in the order they joined. @type {string[]} */
    this.participants = [...shared.participants];
    /** The votes on the line on screen: each participant's latest, in the order they first voted. @type {Vote[]} */
    this.votes = latestVotes(shared.votes ?? []);
    /** The group's last decision (`chosen`), kept until the next one. @type {ChosenMessage | undefined} */
    this.decision = undefined;
    /**
     * When the ballot on the line on screen opened, as far as this client knows (ms): when the
     * line was shown here. For a player who joined mid-ballot it is when they joined, so the
     * countdown shown may run long.
     */
    this.ballotOpenedAt = now;
    /** The last participant who left. @type {Departure | undefined} */
    this.lastDeparture = undefined;
    /** Why the conversation ended for this player: `ended` (the walk's end), `closed` (the server's `closed`), `left` (`leave`). @type {string | undefined} */
    this.endedBy = undefined;
    /** @private @type {Promise<void>} */
    this.queue = Promise.resolve();
  }

  /** The conversation's name. */
  get conversation() {
    return this.walk.graph.name;
  }

  /** The line on screen, if any. @returns {Vertex | undefined} */
  get line() {
    return this.walk.line;
  }

  /** True when this player leads the conversation (only the leader advances). */
  get leads() {
    return this.walk.leads;
  }

  /** True once the conversation is over for this player. */
  get ended() {
    return this.walk.ended;
  }

  /**
   * The rule the group picks by on the line on screen (`Choice`, else `Shared`, defaults filled
   * in), or null when no ballot is open: no line on screen, or a line without responses.
   * @returns {ChoiceRule | null}
   */
  get rule() {
    const line = this.walk.line;
    if (!line || this.walk.waitingForJump) return null;
    if (this.walk.graph.responsesOf(line.id).length === 0) return null;
    return this.walk.graph.choiceRule(line.id);
  }

  /**
   * When the ballot's time limit passes (ms, this client's clock), or null when the rule has
   * none (or no ballot is open).
   */
  get deadline() {
    const rule = this.rule;
    return rule?.TimeLimit === undefined ? null : this.ballotOpenedAt + rule.TimeLimit * 1000;
  }

  /**
   * Seconds left before the time limit (0 once passed), or null without one.
   * @param {number} [now]
   */
  secondsLeft(now = Date.now()) {
    const deadline = this.deadline;
    return deadline === null ? null : Math.max(0, Math.ceil((deadline - now) / 1000));
  }

  /**
   * The players who voted for `response` on the line on screen.
   * @param {string} response
   * @returns {string[]}
   */
  votersFor(response) {
    return this.votes.filter((v) => v.response === response).map((v) => v.player);
  }

  /** This player's vote on the line on screen, if any. */
  get myVote() {
    return this.votes.find((v) => v.player === this.player)?.response;
  }

  /**
   * Who would win now (`expired` false), or if the time ran out now (`expired` true): the
   * server's rule (`decide`) over the votes so far. Rolls need the ballot's seed, which the
   * server sends only with its decision: a `Roll` shown before it is a guess with seed 0.
   * @param {{ expired?: boolean, seed?: string }} [options]
   * @returns {Decision | null}
   */
  wouldWin({ expired = false, seed = '0' } = {}) {
    const rule = this.rule;
    if (!rule) return null;
    return decide({ graph: this.walk.graph, rule, participants: this.participants, leader: this.leader, votes: this.votes, expired, seed });
  }

  /**
   * The player votes for `response` (`choose`). Refused as the server refuses it
   * (`WalkRefusal`: `not_reachable`, `condition_failed`, `not_current`, ...).
   * @param {string} response
   * @returns {WalkMessage[]}
   */
  vote(response) {
    return this.walk.vote(response);
  }

  /**
   * The leader advances past the line on screen (`advance`). Refused with `not_leader` for the
   * others.
   * @returns {WalkMessage[]}
   */
  advance() {
    return this.walk.proposeAdvance();
  }

  /**
   * The player leaves the conversation (`close`); the others go on without them.
   * @returns {WalkMessage[]}
   */
  leave() {
    const sends = this.walk.close();
    if (sends.length > 0) this.endedBy = 'left';
    return sends;
  }

  /**
   * Applies one server message. Returns what this client sends because of it, in order.
   * @param {ServerMessage} message
   * @param {number} [now]  when it arrived (ms): a new line's ballot opens then
   * @returns {WalkMessage[]}
   */
  receive(message, now = Date.now()) {
    switch (message.type) {
      case 'voted':
        if (this.ended) return [];
        this.votes = latestVotes([...this.votes, { player: message.player, response: message.response }]);
        return [];
      case 'chosen':
        if (this.ended) return [];
        this.decision = message;
        return this.moved(this.walk.followChosen(message.response, message.node), now);
      case 'advanced':
        if (this.ended) return [];
        return this.moved(this.walk.followAdvanced(message.node), now);
      case 'jump':
        if (this.ended) return [];
        return this.moved(this.walk.jump(message.node), now);
      case 'participants':
        this.leader = message.leader;
        this.participants = [...message.participants];
        this.walk.setLeader(message.leader === this.player);
        if (message.left !== undefined) {
          // Their vote is withdrawn.
          const left = message.left;
          this.votes = this.votes.filter((v) => v.player !== left);
          this.lastDeparture = { player: left, reason: message.reason };
        }
        return [];
      case 'effect':
        this.facts = applyEffect(this.facts, message);
        this.walk.facts = this.facts;
        return [];
      case 'closed':
        if (!this.ended) {
          this.walk.close();
          this.endedBy = 'closed';
        }
        return [];
      default:
        return [];
    }
  }

  /**
   * The walk moved to a new line (or the end): a new ballot, no votes yet.
   * @private
   * @param {WalkMessage[]} sends
   * @param {number} now
   */
  moved(sends, now) {
    this.votes = [];
    this.ballotOpenedAt = now;
    if (this.walk.ended && this.endedBy === undefined) this.endedBy = 'ended';
    return sends;
  }

  /**
   * Keeps this conversation following the server over `connection`: every server message is
   * applied (`receive`) and what it makes this client send goes out in order, one message at a
   * time (`send`). Returns the function that stops following.
   * @param {Connection} connection
   * @param {object} [hooks]
   * @param {(message: ServerMessage) => void} [hooks.onChange]  after each message that concerns the conversation
   * @param {(error: Error, message: WalkMessage | ServerMessage) => void} [hooks.onError]  a
   *   message this client sent that was refused or could not be sent (the queue goes on), or a
   *   server message the walk could not follow (a `WalkRefusal`: a bug on one side)
   * @returns {() => void}
   */
  follow(connection, hooks = {}) {
    /** @type {() => void} */
    let stop = () => {};
    stop = connection.on('message', (m) => {
      let sends;
      try {
        sends = this.receive(m);
      } catch (e) {
        if (hooks.onError) hooks.onError(/** @type {Error} */ (e), m);
        else throw e;
        return;
      }
      if (sends.length > 0) void this.send(connection, sends, hooks.onError).catch(() => {});
      if (RELEVANT.has(m.type)) hooks.onChange?.(m);
      if (m.type === 'closed' || m.type === 'bye') stop();
    });
    return stop;
  }

  /**
   * Sends messages in order, each after the previous one's answer, behind whatever this
   * conversation is sending already. A refusal is passed to `onError` (or thrown from the
   * returned promise when there is none) and the rest still go out.
   * @param {Connection} connection
   * @param {WalkMessage[]} messages
   * @param {(error: Error, message: WalkMessage | ServerMessage) => void} [onError]
   * @returns {Promise<void>} once every one of them is answered
   */
  send(connection, messages, onError) {
    /** @type {Error[]} */
    const errors = [];
    const run = async () => {
      for (const message of messages) {
        try {
          await connection.request(message);
        } catch (e) {
          const error = /** @type {Error} */ (e);
          if (onError) onError(error, message);
          else errors.push(error);
          // A refused `close` after the server closed the conversation changes nothing.
          if (!(error instanceof RefusalError)) break;
        }
      }
    };
    const done = this.queue.then(run);
    this.queue = done.catch(() => {});
    return done.then(() => {
      if (errors.length > 0) throw errors[0];
    });
  }
}

/** The server messages that concern a shared conversation. */
const RELEVANT = new Set(['voted', 'chosen', 'advanced', 'jump', 'participants', 'effect', 'closed']);
