// The Banter playground: a player's view (map, walking, talking, the typewriter, effects, the
// quest log, a party and the conversations it walks together) and a writer's view (a
// conversation's graph drawn by the server, with the walk's current line and reachable set
// marked; reloading content). Every protocol step goes through the TypeScript client served
// from /playground/client/: this page has no protocol code of its own, only presentation.

import {
  Connection,
  ClientWalk,
  DeviceLogin,
  RefusalError,
  SharedConversation,
  Typewriter,
  applyEffect,
  buildGraph,
  pacingFor,
} from '/playground/client/index.js';

const address = location.origin;
/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** What the page knows. */
const state = {
  world: /** @type {any} */ (null),
  connection: /** @type {Connection | null} */ (null),
  position: /** @type {number[] | null} */ (null),
  profile: /** @type {any} */ (null),
  facts: /** @type {any} */ (null),
  graph: /** @type {any} */ (null),
  walk: /** @type {ClientWalk | null} */ (null),
  conversation: /** @type {string | null} */ (null),
  /** The shared conversation the party walks, while this player takes part. */
  shared: /** @type {SharedConversation | null} */ (null),
  busy: false,
};

// Walking: under the server's 60 studs/s, in ticks the movement budget refills between.
const WALK_STEP = 5;
const WALK_TICK_MS = 100;

async function loadWorld() {
  const answer = await fetch('/playground/api/world');
  state.world = await answer.json();
  // A reload may add or drop locales; the one the player reads in stays selected.
  const reading = /** @type {HTMLSelectElement} */ ($('locale')).value;
  for (const select of [$('locale-at-login'), $('locale')]) {
    select.replaceChildren(...state.world.locales.map((tag) => new Option(tag, tag)));
  }
  if (reading) /** @type {HTMLSelectElement} */ ($('locale')).value = reading;
  const preferred = state.world.locales.find((tag) => navigator.language.startsWith(tag));
  /** @type {HTMLSelectElement} */ ($('locale-at-login')).value = preferred ?? state.world.source_locale;
  $('conversation-pick').replaceChildren(...state.world.conversations.map((c) => new Option(c, c)));
  $('spawn').replaceChildren(...state.world.npcs.map((n) => new Option(`${n.name} (${n.id})`, n.id)));
}

async function play() {
  $('login-error').textContent = '';
  const deviceId = /** @type {HTMLInputElement} */ ($('device')).value.trim();
  const locale = /** @type {HTMLSelectElement} */ ($('locale-at-login')).value;
  try {
    const login = new DeviceLogin({ address, deviceId });
    const connection = await Connection.open({ address, token: () => login.token(), locale });
    state.connection = connection;
    connection.on('message', (m) => {
      if (m.type === 'effect') onEffect(m);
      // A shared conversation opens for this player: the answer to their talk, or pushed when
      // a party member's talk takes them in at once.
      if (m.type === 'opened' && m.shared) startShared(m);
    });
    connection.on('party', () => showParty());
    connection.on('party_invited', (invite) => {
      note(`${invite.from} invites you into party ${invite.party}`, 'info');
      showParty();
    });
    const welcome = /** @type {any} */ (connection.welcome);
    state.profile = welcome.profile;
    /** @type {HTMLSelectElement} */ ($('locale')).value = welcome.locale;
    $('player').textContent = welcome.player;
    $('login').hidden = true;
    $('game').hidden = false;
    showProfile();
    // The first move places the body: next to the NPC picked, or where the server remembers it.
    const spawn = /** @type {HTMLSelectElement} */ ($('spawn')).value;
    const next = state.world.npcs.find((n) => n.id === spawn) ?? state.world.npcs[0];
    const start = welcome.position ?? standSpot(next);
    await move(start);
    drawMap();
    showQuests();
    showParty();
  } catch (e) {
    $('login-error').textContent = `Could not start: ${e instanceof Error ? e.message : e}`;
  }
}

/** Where to stand to talk to `npc`: a step in front of it, inside its range. */
function standSpot(npc) {
  return [npc.position[0] + 3, npc.position[1], npc.position[2]];
}

/** @param {number[]} position */
async function move(position) {
  await request({ type: 'move', position });
  state.position = position;
}

/** A request; a refusal is shown, not thrown. */
async function request(message) {
  try {
    return await /** @type {Connection} */ (state.connection).request(message);
  } catch (e) {
    if (e instanceof RefusalError) {
      note(`refused: ${e.code}: ${e.message}`);
      return null;
    }
    throw e;
  }
}

/** Walks to `npc` at an honest pace, then talks to it. */
async function goTalk(npc) {
  if (state.busy) return;
  state.busy = true;
  try {
    if (state.walk) await closeConversation();
    const target = standSpot(npc);
    let here = /** @type {number[]} */ (state.position);
    let left = distance(here, target);
    while (left > 0.5) {
      const step = Math.min(WALK_STEP, left);
      here = here.map((c, i) => c + ((target[i] - c) * step) / left);
      $('walking').textContent = `Walking to ${npc.name}: ${left.toFixed(0)} studs to go`;
      await move(here);
      drawMap();
      left = distance(here, target);
      if (left > 0.5) await sleep(WALK_TICK_MS);
    }
    $('walking').textContent = '';
    await talk(npc);
  } finally {
    state.busy = false;
  }
}

async function talk(npc) {
  $('effects').replaceChildren();
  const reply = await request({ type: 'talk', npc: npc.name, instance: npc.id });
  if (!reply) return;
  const opened = reply.messages.find((m) => m.type === 'opened');
  if (!opened) {
    note('a cutscene plays');
    return;
  }
  // A shared conversation was taken up by the `message` listener (startShared).
  if (opened.shared) return;
  // A group's decision from an earlier shared conversation is not this one's.
  clearDecision();
  $('speaker').textContent = opened.speaker ?? npc.name;
  state.graph = buildGraph(opened.content, opened.conversation);
  state.conversation = opened.conversation;
  state.facts = opened.facts;
  const { walk, sends } = ClientWalk.open(state.graph, opened.entry, state.facts);
  state.walk = walk;
  /** @type {HTMLSelectElement} */ ($('conversation-pick')).value = opened.conversation;
  await send(sends);
  show();
}

/** Sends what the walk queued, in order; a jump queues the answer's own messages. */
async function send(messages) {
  const queue = [...messages];
  while (queue.length) {
    const reply = await request(queue.shift());
    if (!reply) continue;
    for (const m of reply.messages) {
      if (m.type === 'jump' && state.walk) queue.push(...state.walk.jump(m.node));
    }
  }
}

function onEffect(m) {
  state.profile = m.profile;
  if (state.facts) {
    state.facts = applyEffect(state.facts, m);
    if (state.walk) state.walk.facts = state.facts;
  }
  const li = document.createElement('li');
  li.dataset.effect = m.effect.kind ?? m.action;
  li.textContent = `${m.action}: ${describe(m.effect)}`;
  $('effects').append(li);
  showProfile();
  showQuests();
}

function describe(effect) {
  return Object.entries(effect)
    .map(([k, v]) => `${k} ${Array.isArray(v) ? v.join(', ') : v}`)
    .join(' · ');
}

const typewriter = new Typewriter();

/** Puts the walk's screen on the page. */
function show() {
  if (state.shared) {
    showShared();
    return;
  }
  $('shared').hidden = true;
  $('waiting').hidden = true;
  $('leave-conversation').hidden = true;
  const walk = state.walk;
  const choices = $('choices');
  choices.replaceChildren();
  $('continue').hidden = true;
  if (!walk) return;
  const screen = walk.screen;
  if (screen.kind === 'ended') {
    // The walk's last step sent the `close`.
    void closeConversation(false);
    return;
  }
  if (screen.kind === 'waiting_for_jump') {
    $('line').textContent = '…';
    return;
  }
  const line = screen.line;
  $('line').dataset.node = line.name;
  typewriter.start(line.text, pacingFor(line, 28), performance.now());
  const frame = (/** @type {number} */ now) => {
    for (const e of typewriter.poll(now)) {
      if (e.kind === 'show') $('line').textContent = e.text;
    }
    if (typewriter.busy) requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  // Choices and greyed-out responses, in the line's response order (PROTOCOL.md 10.1).
  const buttons = [];
  for (const response of screen.choices) {
    const button = document.createElement('button');
    button.textContent = response.text;
    button.dataset.response = response.name;
    button.addEventListener('click', () => step(() => walk.choose(response.name)));
    buttons.push({ priority: response.priority, button });
  }
  for (const greyed of screen.greyed ?? []) {
    const button = document.createElement('button');
    button.textContent = greyed.response.text;
    button.dataset.response = greyed.response.name;
    button.classList.add('greyed');
    button.setAttribute('aria-disabled', 'true');
    const reason = document.createElement('span');
    reason.className = 'reason';
    reason.textContent = greyed.reason;
    button.append(reason);
    // Picking it is refused by the walk as the server would (`response_disabled`): the note
    // says so and nothing is sent.
    button.addEventListener('click', () => step(() => walk.choose(greyed.response.name)));
    buttons.push({ priority: greyed.response.priority, button });
  }
  buttons.sort((a, b) => a.priority - b.priority);
  choices.append(...buttons.map((b) => b.button));
  $('continue').hidden = !screen.canAdvance;
  drawGraphIfShown();
}

/** One player step: the walk says what to send; the page sends it and shows what follows. */
async function step(next) {
  if (state.busy || !state.walk) return;
  state.busy = true;
  try {
    typewriter.skip();
    await send(next());
    show();
  } catch (e) {
    note(`${e instanceof Error ? e.message : e}`);
  } finally {
    state.busy = false;
  }
}

/** Leaves the conversation; `sendClose` is false when the walk's own last step sent it. */
async function closeConversation(sendClose = true) {
  const shared = state.shared;
  if (shared) {
    // Leaving a shared conversation: the others go on without this player.
    state.shared = null;
    stopShared();
    const sends = sendClose ? shared.leave() : [];
    state.walk = null;
    $('choices').replaceChildren();
    $('continue').hidden = true;
    $('waiting').hidden = true;
    $('leave-conversation').hidden = true;
    $('shared').hidden = true;
    $('line').textContent = '(the conversation is over)';
    if (sends.length) await shared.send(/** @type {Connection} */ (state.connection), sends, reportRefusal);
    return;
  }
  state.walk = null;
  $('choices').replaceChildren();
  $('continue').hidden = true;
  $('line').textContent = '(the conversation is over)';
  if (sendClose) await request({ type: 'close' });
}

function showProfile() {
  const p = state.profile ?? {};
  $('profile').textContent = `coins ${p.coins ?? 0} · experience ${p.experience ?? 0}` +
    (p.tracked_quest ? ` · tracking ${p.tracked_quest}` : '');
  $('profile').dataset.coins = String(p.coins ?? 0);
}

function showQuests() {
  const quests = state.facts?.quests ?? {};
  const items = Object.entries(quests)
    .filter(([, status]) => status === 'active' || status === 'completed')
    .map(([quest, status]) => {
      const li = document.createElement('li');
      li.dataset.quest = quest;
      li.dataset.status = String(status);
      li.textContent = `${quest}: ${status}`;
      if (status === 'active') {
        // The quest log's abandon: the server forgets the quest and its giver offers it again.
        const give = document.createElement('button');
        give.className = 'abandon';
        give.textContent = 'abandon';
        give.addEventListener('click', () => void abandon(quest));
        li.append(' ', give);
      }
      return li;
    });
  $('quest-log').replaceChildren(...items);
}

/** @param {string} quest */
async function abandon(quest) {
  try {
    const answer = await /** @type {Connection} */ (state.connection).abandonQuest(quest);
    state.profile = answer.profile;
    if (state.facts) delete state.facts.quests[quest];
    showProfile();
    showQuests();
    note(`abandoned ${quest}`, 'info');
  } catch (e) {
    note(`abandon ${quest}: ${e instanceof Error ? e.message : e}`);
  }
}

/** @param {string} text @param {'error' | 'info'} [kind] */
function note(text, kind = 'error') {
  const li = document.createElement('li');
  li.className = kind;
  li.textContent = text;
  $('effects').append(li);
}

// ----------------------------------------------------------------------------------------------
// A party, and the conversations it walks together (PROTOCOL.md section 17).

/** The player's own id. */
function me() {
  return /** @type {any} */ (state.connection?.welcome)?.player ?? '';
}

/** Shows the party panel from what the connection knows. */
function showParty() {
  const connection = state.connection;
  if (!connection) return;
  const party = connection.party;
  $('party-status').dataset.party = party?.id ?? '';
  $('party-status').textContent = party ? `Party ${party.id}, led by ${party.leader === me() ? 'you' : party.leader}.` : 'No party.';
  $('party-members').replaceChildren(...(party?.members ?? []).map((member) => {
    const li = document.createElement('li');
    li.dataset.member = member;
    li.textContent = member === me() ? `${member} (you)` : member;
    if (member === party?.leader) li.classList.add('leader');
    if (member === me()) li.classList.add('me');
    return li;
  }));
  $('party-form').hidden = party !== undefined;
  $('party-leave').hidden = party === undefined;
  const invites = connection.invites;
  $('party-invites').replaceChildren(...(invites.length === 0 ? [Object.assign(document.createElement('li'), { className: 'hint', textContent: 'None.' })] : invites.map((invite) => {
    const li = document.createElement('li');
    li.dataset.invite = invite.party;
    li.textContent = `${invite.from} invites you into ${invite.party} `;
    const accept = document.createElement('button');
    accept.className = 'accept';
    accept.textContent = 'Accept';
    accept.addEventListener('click', () => void partyStep(() => connection.partyAccept(invite.party), `joined ${invite.party}`));
    li.append(accept);
    return li;
  })));
}

/**
 * One party message; the answer (or the refusal) is shown.
 * @param {() => Promise<unknown>} run
 * @param {string} done
 */
async function partyStep(run, done) {
  $('party-result').textContent = '';
  try {
    await run();
    $('party-result').textContent = done;
  } catch (e) {
    $('party-result').textContent = e instanceof RefusalError ? `refused: ${e.code}` : `${e instanceof Error ? e.message : e}`;
  }
  showParty();
}

/** @type {(() => void) | null} */
let unfollow = null;
/** @type {ReturnType<typeof setInterval> | null} */
let ticker = null;

/** @param {Error} e @param {any} m */
function reportRefusal(e, m) {
  note(`${m?.type ?? 'message'} ${m?.response ?? m?.node ?? m?.action ?? ''}: ${e instanceof RefusalError ? `refused: ${e.code}` : e.message}`);
}

/** A shared conversation opened for this player: follow the group. @param {any} opened */
function startShared(opened) {
  if (state.shared) stopShared();
  $('effects').replaceChildren();
  const connection = /** @type {Connection} */ (state.connection);
  state.graph = buildGraph(opened.content, opened.conversation);
  state.conversation = opened.conversation;
  state.facts = opened.facts;
  const { conversation, sends } = SharedConversation.open({ opened, graph: state.graph, player: me() });
  state.shared = conversation;
  state.walk = conversation.walk;
  $('speaker').textContent = opened.speaker ?? opened.npc.name;
  /** @type {HTMLSelectElement} */ ($('conversation-pick')).value = opened.conversation;
  unfollow = conversation.follow(connection, {
    onChange: (m) => {
      if (m.type === 'effect') return;
      showShared(m.type === 'chosen' || m.type === 'advanced' || m.type === 'jump');
    },
    onError: reportRefusal,
  });
  ticker = setInterval(showCountdown, 250);
  void conversation.send(connection, sends, reportRefusal);
  showShared(true);
}

function stopShared() {
  unfollow?.();
  unfollow = null;
  if (ticker !== null) clearInterval(ticker);
  ticker = null;
}

/** What a rule says, for people. @param {any} rule */
function describeRule(rule) {
  switch (rule.Mode) {
    case 'Leader':
      return 'The leader decides; the others suggest.';
    case 'Majority':
      return `Majority of the group decides${rule.TimeLimit ? `; at ${rule.TimeLimit} s the most votes win (a tie: ${rule.Tie ?? 'Leader'})` : ''}.`;
    case 'Roll':
      return `Everyone picks, then each rolls 1 to 100: the highest roll's pick wins${rule.TimeLimit ? ` (at ${rule.TimeLimit} s, those who picked roll)` : ''}.`;
    case 'All':
      return 'Everyone must pick the same.';
    default:
      return '';
  }
}

/** The shared conversation's screen: the line, each choice with its voters, the leader's part. @param {boolean} [newLine] */
function showShared(newLine = false) {
  const shared = state.shared;
  if (!shared) return;
  const walk = shared.walk;
  $('shared').hidden = false;
  $('leave-conversation').hidden = walk.ended;
  $('participants').replaceChildren(...shared.participants.map((player) => {
    const span = document.createElement('span');
    span.className = 'participant';
    span.dataset.participant = player;
    if (player === shared.leader) span.classList.add('leader');
    if (player === me()) span.classList.add('me');
    span.textContent = player === me() ? `${player} (you)` : player;
    return span;
  }));
  showDecision();
  if (walk.ended) {
    // The walk's last step sent the `close` (or the server closed it).
    state.shared = null;
    state.walk = null;
    stopShared();
    $('choices').replaceChildren();
    $('continue').hidden = true;
    $('waiting').hidden = true;
    $('leave-conversation').hidden = true;
    $('countdown').textContent = '';
    $('rule').textContent = '';
    $('line').textContent = '(the conversation is over)';
    $('line').dataset.ended = 'true';
    return;
  }
  const screen = walk.screen;
  const rule = shared.rule;
  $('rule').textContent = rule ? describeRule(rule) : '';
  $('rule').dataset.mode = rule?.Mode ?? '';
  showCountdown();
  if (screen.kind === 'waiting_for_jump') {
    $('line').textContent = '…';
    $('choices').replaceChildren();
    $('continue').hidden = true;
    $('waiting').hidden = false;
    $('waiting').textContent = "Waiting for the leader's quest check…";
    return;
  }
  if (screen.kind !== 'line') return;
  const line = screen.line;
  if (newLine || $('line').dataset.node !== line.name) {
    delete $('line').dataset.ended;
    $('line').dataset.node = line.name;
    $('line').dataset.typed = 'false';
    typewriter.start(line.text, pacingFor(line, 28), performance.now());
    const frame = (/** @type {number} */ now) => {
      for (const e of typewriter.poll(now)) {
        if (e.kind === 'show') $('line').textContent = e.text;
      }
      if (typewriter.busy) requestAnimationFrame(frame);
      else $('line').dataset.typed = 'true';
    };
    requestAnimationFrame(frame);
  }
  // Each choice this player may vote for, with who voted for it.
  const leaderDecides = rule?.Mode === 'Leader' && !shared.leads;
  $('choices').classList.toggle('suggestions', leaderDecides);
  const mine = new Set(screen.choices.map((c) => c.name));
  $('choices').replaceChildren(...screen.choices.map((response) => {
    const button = document.createElement('button');
    button.dataset.response = response.name;
    const voters = shared.votersFor(response.name);
    button.dataset.votes = String(voters.length);
    if (shared.myVote === response.name) button.classList.add('mine');
    button.append(response.text);
    if (voters.length) {
      const who = document.createElement('span');
      who.className = 'voters';
      who.textContent = `voted: ${voters.map((v) => (v === me() ? 'you' : v)).join(', ')}`;
      button.append(who);
    }
    button.addEventListener('click', () => void vote(response.name));
    return button;
  }));
  const elsewhere = shared.votes.filter((v) => !mine.has(v.response));
  $('other-votes').textContent = elsewhere.length ? `Also voted, for a response you are not shown: ${elsewhere.map((v) => v.player).join(', ')}` : '';
  // Advancing is the leader's; the others see it greyed.
  $('continue').hidden = !walk.canAdvance;
  const waitingForLeader = (walk.awaitsAdvance && !walk.canAdvance) || leaderDecides;
  $('waiting').hidden = !waitingForLeader;
  $('waiting').textContent = leaderDecides ? 'Waiting for the leader to decide: your pick is a suggestion.' : 'Waiting for the leader to continue…';
  drawGraphIfShown();
}

/** The countdown of the ballot's time limit, if it has one. */
function showCountdown() {
  const shared = state.shared;
  const left = shared?.secondsLeft() ?? null;
  if (!shared || left === null) {
    $('countdown').textContent = '';
    delete $('countdown').dataset.left;
    return;
  }
  $('countdown').dataset.left = String(left);
  if (left > 0) {
    $('countdown').textContent = `${left} s left`;
  } else {
    const next = shared.wouldWin({ expired: true });
    $('countdown').textContent = next ? 'time is up: deciding…' : 'time is up: the next vote decides';
  }
}

/** The group's last decision: what won, how, and the rolls when a roll decided. */
function showDecision() {
  const shared = state.shared;
  const d = shared?.decision;
  const el = $('decision');
  if (!shared || !d) {
    clearDecision();
    return;
  }
  const text = shared.walk.graph.find(d.response)?.text ?? d.response;
  el.dataset.by = d.by;
  el.dataset.response = d.response;
  el.dataset.line = d.line;
  const rolls = d.rolls?.length ? ` Rolls: ${d.rolls.map((r) => `${r.player === me() ? 'you' : r.player} rolled ${r.roll}`).join(', ')} (seed ${d.seed}).` : '';
  el.textContent = `Decided: “${text}” by ${d.by.replace('_', ' ')}.${rolls}`;
}

/** Shows no decision. */
function clearDecision() {
  const el = $('decision');
  el.textContent = '';
  for (const key of ['by', 'response', 'line']) delete el.dataset[key];
}

/** The player votes. @param {string} response */
async function vote(response) {
  const shared = state.shared;
  if (!shared) return;
  try {
    await shared.send(/** @type {Connection} */ (state.connection), shared.vote(response), reportRefusal);
  } catch (e) {
    note(`${e instanceof Error ? e.message : e}`);
  }
}

/** The leader advances. */
async function leaderAdvance() {
  const shared = state.shared;
  if (!shared) return;
  try {
    typewriter.skip();
    await shared.send(/** @type {Connection} */ (state.connection), shared.advance(), reportRefusal);
  } catch (e) {
    note(`${e instanceof Error ? e.message : e}`);
  }
}

// ----------------------------------------------------------------------------------------------
// The map: NPCs by their x and z, islands as the box around their NPCs.

function drawMap() {
  const svg = $('map');
  const npcs = state.world.npcs;
  const xs = npcs.map((n) => n.position[0]);
  const zs = npcs.map((n) => n.position[2]);
  const [minX, maxX, minZ, maxZ] = [Math.min(...xs), Math.max(...xs), Math.min(...zs), Math.max(...zs)];
  const scale = Math.min(900 / Math.max(1, maxX - minX), 500 / Math.max(1, maxZ - minZ));
  const at = (/** @type {number[]} */ p) => [50 + (p[0] - minX) * scale, 50 + (p[2] - minZ) * scale];
  const ns = 'http://www.w3.org/2000/svg';
  const el = (/** @type {string} */ tag, /** @type {Record<string, string | number>} */ attrs) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    return e;
  };
  const parts = [];
  for (const island of state.world.islands) {
    const here = npcs.filter((n) => n.island === island.id).map((n) => at(n.position));
    if (!here.length) continue;
    const x0 = Math.min(...here.map((p) => p[0])) - 30;
    const x1 = Math.max(...here.map((p) => p[0])) + 30;
    const y0 = Math.min(...here.map((p) => p[1])) - 30;
    const y1 = Math.max(...here.map((p) => p[1])) + 30;
    parts.push(el('rect', { class: 'island', x: x0, y: y0, width: x1 - x0, height: y1 - y0, rx: 25 }));
    const label = el('text', { class: 'island-name', x: x0 + 6, y: y0 - 6 });
    label.textContent = island.name;
    parts.push(label);
  }
  for (const npc of npcs) {
    const [x, y] = at(npc.position);
    const dot = el('circle', { class: 'npc', cx: x, cy: y, r: 7, 'data-npc': npc.id, tabindex: 0 });
    const title = el('title', {});
    title.textContent = `${npc.name} (${npc.conversation})`;
    dot.append(title);
    dot.addEventListener('click', () => void goTalk(npc));
    parts.push(dot);
    const name = el('text', { class: 'npc-name', x: x + 9, y: y + 4 });
    name.textContent = npc.name;
    parts.push(name);
  }
  if (state.position) {
    const [x, y] = at(state.position);
    parts.push(el('circle', { class: 'player', cx: x, cy: y, r: 6, 'data-player': 'me' }));
  }
  svg.replaceChildren(...parts);
}

// ----------------------------------------------------------------------------------------------
// The writer's view.

function drawGraph() {
  const name = /** @type {HTMLSelectElement} */ ($('conversation-pick')).value;
  const query = new URLSearchParams();
  if (state.walk && state.conversation === name) {
    const line = state.walk.line;
    if (line) query.set('current', line.name);
    const reachable = state.graph.vertices
      .filter((v) => state.walk?.walk.isReachable(v.id))
      .map((v) => v.name);
    query.set('reachable', reachable.join(','));
  }
  const img = document.createElement('img');
  img.alt = `the graph of ${name}`;
  img.dataset.conversation = name;
  const src = `/playground/api/graph/${encodeURIComponent(name)}.svg`;
  const overlay = /** @type {HTMLInputElement} */ ($('overlay')).checked;
  if (!overlay) {
    img.src = `${src}?${query}`;
    $('graph').replaceChildren(img);
    $('overlay-result').textContent = '';
    return;
  }
  // What players did is for the studio only: the graph is fetched with the service key (an
  // <img> cannot send it) and shown from the answer.
  query.set('analytics', 'true');
  const key = /** @type {HTMLInputElement} */ ($('service-key')).value;
  void (async () => {
    const answer = await fetch(`${src}?${query}`, { headers: { Authorization: `Bearer ${key}` } });
    if (!answer.ok) {
      $('overlay-result').textContent = `refused (${answer.status}): ${await answer.text()}`;
      return;
    }
    const svg = await answer.text();
    img.dataset.overlay = 'analytics';
    img.src = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml' }));
    $('overlay-result').textContent = 'visits on lines, the split on responses';
    $('graph').replaceChildren(img);
  })();
}

function drawGraphIfShown() {
  if ($('graph').firstChild) drawGraph();
}

async function reload() {
  const key = /** @type {HTMLInputElement} */ ($('service-key')).value;
  const answer = await fetch('/admin/reload', { method: 'POST', headers: { Authorization: `Bearer ${key}` } });
  const body = await answer.text();
  $('reload-result').textContent = answer.ok ? `reloaded: ${body}` : `refused (${answer.status}): ${body}`;
  if (answer.ok) await loadWorld();
}

// ----------------------------------------------------------------------------------------------

/** @param {number[]} a @param {number[]} b */
function distance(a, b) {
  return Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
}

/** @param {number} ms */
function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** @type {HTMLInputElement} */ ($('device')).value = `playground-${Math.random().toString(16).slice(2, 10)}`;
$('play').addEventListener('click', () => void play());
$('continue').addEventListener('click', () => {
  if (state.shared) void leaderAdvance();
  else void step(() => /** @type {ClientWalk} */ (state.walk).advance());
});
$('leave-conversation').addEventListener('click', () => void closeConversation());
$('party-form').addEventListener('click', () => void partyStep(() => /** @type {Connection} */ (state.connection).partyForm(), 'party formed'));
$('party-invite').addEventListener('click', () => {
  const player = /** @type {HTMLInputElement} */ ($('invite-player')).value.trim();
  void partyStep(() => /** @type {Connection} */ (state.connection).partyInvite(player), `invited ${player}`);
});
$('party-leave').addEventListener('click', () => void partyStep(() => /** @type {Connection} */ (state.connection).partyLeave(), 'left the party'));
$('locale').addEventListener('change', async () => {
  const tag = /** @type {HTMLSelectElement} */ ($('locale')).value;
  const served = await /** @type {Connection} */ (state.connection).setLocale(tag);
  note(`reading in ${served} from the next conversation on`, 'info');
});
$('draw').addEventListener('click', drawGraph);
$('reload').addEventListener('click', () => void reload());
await loadWorld();
