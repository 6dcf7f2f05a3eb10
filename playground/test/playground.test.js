// The playground in a real browser: Debian's Chromium (never a downloaded one), driven by
// playwright-core. One test plays Pim's quest to completion through the page, one draws a
// conversation's graph with the walk's marks, one draws what players did on it, one abandons a
// quest from the quest log, switches language in game and reloads content from the page, and
// one plays a party quest in two pages at once (two players: a party formed from the page, the
// ferry's shared conversation walked together, both voting; then one, back at the dock alone,
// finds an option greyed out with its reason); each saves screenshots in
// screenshots/.
//
// The server is the binary built from this checkout (BANTER_SERVER_BIN, default
// ../../target/debug/banter-server) on a free port, a fresh SQLite file and the sample content.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const serverBin = resolve(root, process.env.BANTER_SERVER_BIN ?? 'target/debug/banter-server');
const browserBin = process.env.BANTER_CHROMIUM ?? '/usr/bin/chromium';
const shots = join(here, 'screenshots');

/** @type {import('node:child_process').ChildProcess} */
let server;
let address = '';
/** @type {import('playwright-core').Browser} */
let browser;

before(async () => {
  assert.ok(existsSync(serverBin), `no server binary at ${serverBin}: run cargo build -p banter-server`);
  assert.ok(existsSync(browserBin), `no Chromium at ${browserBin}: apt-get install chromium (.ci/run does)`);
  mkdirSync(shots, { recursive: true });
  const data = mkdtempSync(join(tmpdir(), 'banter-playground-'));
  server = spawn(serverBin, [
    'serve', '--bind', '127.0.0.1:0',
    '--database-url', `sqlite://${join(data, 'banter.db')}`,
    '--content', join(root, 'content'),
  ], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RUST_LOG: 'info', NO_COLOR: '1' } });
  address = await new Promise((resolveAddress, reject) => {
    const timer = setTimeout(() => reject(new Error('the server did not say where it listens within 20 s')), 20000);
    let seen = '';
    const read = (/** @type {Buffer} */ chunk) => {
      seen += chunk.toString();
      const found = seen.match(/listening[^\n]*?addr=(\d+\.\d+\.\d+\.\d+:\d+)/);
      if (found) {
        clearTimeout(timer);
        resolveAddress(`http://${found[1]}`);
      }
    };
    server.stdout?.on('data', read);
    server.stderr?.on('data', read);
    server.on('exit', (code) => reject(new Error(`the server exited (${code}): ${seen}`)));
  });
  browser = await chromium.launch({ executablePath: browserBin, headless: true, args: ['--no-sandbox'] });
});

/**
 * Plays the open conversation as a player who takes the first response or continues, until an
 * effect of `kind` is shown (or 30 steps).
 * @param {import('playwright-core').Page} page
 * @param {string} kind
 */
async function playUntil(page, kind) {
  await page.waitForSelector('#line[data-node]');
  for (let i = 0; i < 30; i++) {
    if (await page.locator(`#effects [data-effect="${kind}"]`).count()) break;
    const choice = page.locator('#choices button').first();
    if (await choice.count()) {
      await choice.click();
    } else if (await page.locator('#continue').isVisible()) {
      await page.click('#continue');
    } else {
      await page.waitForTimeout(200);
    }
    await page.waitForTimeout(150);
  }
}

/**
 * A new 1200 x 1400 page, with the message of every uncaught error in its scripts collected in
 * `problems`.
 */
async function watchedPage() {
  const page = await browser.newPage({ viewport: { width: 1200, height: 1400 } });
  /** @type {string[]} */
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  return { page, problems };
}

/**
 * Opens the playground, logs in (in `locale`, when given) standing by `npc` and talks to them.
 * @param {import('playwright-core').Page} page
 * @param {string} npc
 * @param {string} [locale]
 */
async function talkTo(page, npc, locale) {
  await page.goto(`${address}/playground`);
  if (locale) await page.selectOption('#locale-at-login', locale);
  await page.selectOption('#spawn', npc);
  await page.click('#play');
  await page.waitForSelector(`#map [data-npc="${npc}"]`);
  await page.click(`#map [data-npc="${npc}"]`);
}

/**
 * Waits until the writer graph's image has loaded.
 * @param {import('playwright-core').Page} page
 */
async function graphImageLoaded(page) {
  await page.waitForFunction(() => {
    const image = /** @type {HTMLImageElement | null} */ (document.querySelector('#graph img'));
    return image !== null && image.complete && image.naturalWidth > 0;
  });
}

after(async () => {
  await browser?.close();
  server?.kill('SIGTERM');
});

test('a quest played to completion through the page', { timeout: 90000 }, async () => {
  const { page, problems } = await watchedPage();
  await talkTo(page, 'pim');
  // Talk, then take the first response or continue until Pim's quest pays.
  await playUntil(page, 'quest_completed');
  await page.waitForSelector('#effects [data-effect="quest_completed"]', { timeout: 10000 });
  await page.waitForFunction(() => Number(document.querySelector('#profile')?.getAttribute('data-coins')) > 0);
  const log = await page.locator('#quest-log [data-quest="PimsTideTale"]').getAttribute('data-status');
  assert.equal(log, 'completed');
  await page.screenshot({ path: join(shots, 'quest-completed.png'), fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});

test('a conversation graph drawn on the server with the walk marked, in Japanese', { timeout: 60000 }, async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 1600 } });
  await talkTo(page, 'pim', 'ja');
  await page.waitForSelector('#line[data-node]');
  await page.waitForFunction(() => /[\u3040-\u30ff]/.test(document.querySelector('#line')?.textContent ?? ''));
  await page.click('#draw');
  const img = page.locator('#graph img[data-conversation="Pim"]');
  await img.waitFor();
  await graphImageLoaded(page);
  const src = await img.getAttribute('src');
  assert.match(src ?? '', /current=PimsTideTale_Greet/);
  const svg = await (await fetch(new URL(src ?? '', address))).text();
  assert.match(svg, /<svg/);
  assert.match(svg, /#ffd700/, 'the current line is marked gold');
  await page.screenshot({ path: join(shots, 'writer-graph.png'), fullPage: true });
  await page.close();
});

test('what players did, drawn on the writer graph', { timeout: 60000 }, async () => {
  // The first test played Pim's quest: its steps reach the store within the flush interval.
  const key = 'banter-development-service-key';
  const headers = { Authorization: `Bearer ${key}` };
  let report;
  for (let i = 0; i < 50; i++) {
    const answer = await fetch(`${address}/admin/analytics?conversation=Pim`, { headers });
    assert.equal(answer.status, 200);
    report = await answer.json();
    if (report.opens > 0) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(report.opens > 0, `Pim's conversation was counted: ${JSON.stringify(report)}`);
  const page = await browser.newPage({ viewport: { width: 1200, height: 1600 } });
  await page.goto(`${address}/playground`);
  await page.waitForSelector('#conversation-pick option[value="Pim"]', { state: 'attached' });
  await page.selectOption('#conversation-pick', 'Pim');
  await page.fill('#service-key', key);
  await page.check('#overlay');
  await page.click('#draw');
  await page.waitForSelector('#graph img[data-overlay="analytics"]');
  await graphImageLoaded(page);
  const svg = await (await fetch(`${address}/playground/api/graph/Pim.svg?analytics=true`, { headers })).text();
  assert.match(svg, /visits [1-9]/, 'a line players saw has its visits');
  assert.match(svg, /chosen [1-9]\d* \(\d+%\)/, 'a response players chose has its split');
  const refused = await fetch(`${address}/playground/api/graph/Pim.svg?analytics=true`);
  assert.equal(refused.status, 401, 'the overlay needs the service key');
  await page.screenshot({ path: join(shots, 'writer-analytics.png'), fullPage: true });
  await page.close();
});

test('the quest log abandons a quest, the language switches in game, and content reloads from the page', { timeout: 90000 }, async () => {
  const { page, problems } = await watchedPage();
  await talkTo(page, 'fennick');
  // Take the first response or continue until Grandpa Fennick's quest is accepted.
  await playUntil(page, 'quest_accepted');
  const entry = page.locator('#quest-log [data-quest="CopperSnappers"]');
  await entry.waitFor();
  assert.equal(await entry.getAttribute('data-status'), 'active');
  await entry.locator('button.abandon').click();
  await page.waitForFunction(() => document.querySelector('#quest-log [data-quest="CopperSnappers"]') === null);
  await page.waitForFunction(() => /abandoned CopperSnappers/.test(document.querySelector('#effects')?.textContent ?? ''));

  // The language, switched in game: the server says which locale it serves.
  await page.selectOption('#locale', 'ja');
  await page.waitForFunction(() => /reading in ja/.test(document.querySelector('#effects')?.textContent ?? ''));

  // Reload from the page: refused without the key, done with it.
  await page.click('#reload');
  await page.waitForFunction(() => /refused \(401\)/.test(document.querySelector('#reload-result')?.textContent ?? ''));
  await page.fill('#service-key', 'banter-development-service-key');
  await page.click('#reload');
  await page.waitForFunction(() => /^reloaded: .*"version":\d+/.test(document.querySelector('#reload-result')?.textContent ?? ''));
  assert.equal(await page.locator('#locale').inputValue(), 'ja', 'the language read in stays chosen after a reload');
  await page.screenshot({ path: join(shots, 'quest-log-abandon.png'), fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});

/**
 * Opens the playground in `page` and logs in standing by `npc`; returns the player's id.
 * @param {import('playwright-core').Page} page
 * @param {string} npc
 */
async function logIn(page, npc) {
  await page.goto(`${address}/playground`);
  await page.selectOption('#spawn', npc);
  await page.click('#play');
  await page.waitForSelector(`#map [data-npc="${npc}"]`);
  return (await page.textContent('#player'))?.trim() ?? '';
}

/**
 * Talks to `npc` (on the map) until the conversation opens on `entry`: a talk refused for the
 * cooldown between conversations (PROTOCOL.md, `talk_cooldown`, retryable) is sent again once
 * its refusal is shown.
 * @param {import('playwright-core').Page} page
 * @param {string} npc
 * @param {string} entry
 */
async function talkAgain(page, npc, entry) {
  for (let attempt = 0; attempt < 5; attempt++) {
    const refusals = await page.locator('#effects .error').count();
    await page.click(`#map [data-npc="${npc}"]`);
    const opened = await Promise.race([
      page.waitForSelector(`#line[data-node="${entry}"]`).then(() => true),
      page
        .waitForFunction((n) => document.querySelectorAll('#effects .error').length > n, refusals)
        .then(() => false),
    ]);
    if (opened) return;
    const refusal = (await page.locator('#effects .error').last().textContent()) ?? '';
    assert.match(refusal, /must pass between conversations/, `talk refused: ${refusal}`);
  }
  assert.fail(`the conversation with ${npc} did not open on ${entry}`);
}

/**
 * Waits until both pages show `selector`.
 * @param {import('playwright-core').Page[]} pages
 * @param {string} selector
 */
async function both(pages, selector, timeout = 15000) {
  await Promise.all(pages.map((p) => p.waitForSelector(selector, { timeout })));
}

test('a party of two plays the ferry together, in two pages at once', { timeout: 180000 }, async () => {
  const leader = await watchedPage();
  const member = await watchedPage();
  const pages = [leader.page, member.page];
  const [a, b] = pages;
  // Both players stand by Wren, whose conversation is shared.
  const idA = await logIn(a, 'wren');
  const idB = await logIn(b, 'wren');
  assert.match(idA, /\S/);
  assert.notEqual(idA, idB);

  // The party, formed from the page: A forms it and invites B by id; B accepts.
  await a.click('#party-form');
  await a.waitForSelector('#party-status[data-party^="pty_"]');
  const party = await a.getAttribute('#party-status', 'data-party');
  await a.fill('#invite-player', idB);
  await a.click('#party-invite');
  await a.waitForFunction((who) => (document.querySelector('#party-result')?.textContent ?? '').includes(`invited ${who}`), idB);
  await b.waitForSelector(`#party-invites [data-invite="${party}"] button.accept`);
  await b.click(`#party-invites [data-invite="${party}"] button.accept`);
  for (const p of pages) {
    await p.waitForSelector(`#party-members [data-member="${idA}"].leader`);
    await p.waitForSelector(`#party-members [data-member="${idB}"]`);
    assert.equal(await p.getAttribute('#party-status', 'data-party'), party);
  }

  // A talks to Wren; B, in reach and free, is taken into the conversation at once.
  await a.click('#map [data-npc="wren"]');
  await both(pages, '#line[data-node="Ferry_Greet"]');
  await both(pages, `#participants [data-participant="${idA}"].leader`);
  await both(pages, `#participants [data-participant="${idB}"]`);
  await both(pages, '#rule[data-mode="Majority"]');

  // The first ballot (Majority, 20 s): A's vote shows next to the response in both pages, with
  // the countdown running; it decides nothing alone.
  await a.click('#choices button[data-response="Ferry_Greet_r1"]');
  await both(pages, '#choices button[data-response="Ferry_Greet_r1"][data-votes="1"]');
  await both(pages, '#countdown[data-left]');
  const left = Number(await b.getAttribute('#countdown', 'data-left'));
  assert.ok(left > 0 && left <= 20, `the countdown shows the seconds left: ${left}`);
  assert.equal(await a.locator('#choices button.mine').getAttribute('data-response'), 'Ferry_Greet_r1', "A's own vote is marked");
  await both(pages, '#line[data-typed="true"]');
  await a.screenshot({ path: join(shots, 'party-ballot-leader.png'), fullPage: true });
  await b.screenshot({ path: join(shots, 'party-ballot-member.png'), fullPage: true });

  // B votes the same: a majority, and the decision shows in both pages.
  await b.click('#choices button[data-response="Ferry_Greet_r1"]');
  await both(pages, '#decision[data-line="Ferry_Greet"][data-by="majority"]');
  await both(pages, '#line[data-node="Ferry_Skiff"]');
  // Each client accepted the quest for its own player.
  await both(pages, '#quest-log [data-quest="FerryForTwo"][data-status="active"]');
  // Only the leader continues; B sees it greyed.
  await b.waitForSelector('#waiting:not([hidden])');
  assert.equal(await b.locator('#continue').isVisible(), false);
  await a.waitForSelector('#continue:not([hidden])');
  await a.click('#continue');

  // The oars (Roll): each votes, the highest roll wins; both pages show the rolls.
  await both(pages, '#line[data-node="Ferry_Rowing"]');
  await both(pages, '#rule[data-mode="Roll"]');
  await a.click('#choices button[data-response="Ferry_Rowing_r1"]');
  await b.click('#choices button[data-response="Ferry_Rowing_r2"]');
  await both(pages, '#decision[data-line="Ferry_Rowing"][data-by="roll"]');
  for (const p of pages) assert.match((await p.textContent('#decision')) ?? '', /Rolls: .*rolled \d+, .*rolled \d+ \(seed \d+\)/);
  await both(pages, '#line[data-node="Ferry_FarBar"][data-typed="true"]');
  await b.waitForSelector('#waiting:not([hidden])');
  await a.screenshot({ path: join(shots, 'party-decided-leader.png'), fullPage: true });
  await b.screenshot({ path: join(shots, 'party-decided-member.png'), fullPage: true });

  // Over the far bar to the check: both show their stubs; the leader's check moves the group,
  // and each page is paid its own reward.
  await a.click('#continue');
  await both(pages, '#line[data-node="Ferry_Check"]');
  await a.click('#choices button[data-response="Ferry_Check_r1"]');
  await b.click('#choices button[data-response="Ferry_Check_r1"]');
  await both(pages, '#line[data-node="Ferry_Complete"]');
  await both(pages, '#effects [data-effect="quest_completed"]');
  await a.waitForSelector('#continue:not([hidden])');
  await a.click('#continue');
  await both(pages, '#line[data-ended="true"]');
  // The decision that led to the end stays shown.
  await both(pages, '#decision[data-line="Ferry_Check"]');
  for (const p of pages) {
    await p.waitForFunction(() => Number(document.querySelector('#profile')?.getAttribute('data-coins')) === 40);
    assert.equal(await p.locator('#effects [data-effect="quest_accepted"]').count(), 1, 'accepted once');
    assert.equal(await p.locator('#effects [data-effect="quest_completed"]').count(), 1, 'paid once');
    assert.equal(await p.locator('#quest-log [data-quest="FerryForTwo"]').getAttribute('data-status'), 'completed');
    assert.equal(await p.locator('#effects .error').count(), 0, `no refusal: ${await p.textContent('#effects')}`);
  }
  await a.screenshot({ path: join(shots, 'party-paid-leader.png'), fullPage: true });
  await b.screenshot({ path: join(shots, 'party-paid-member.png'), fullPage: true });

  // B leaves the party from the page; A is told.
  await b.click('#party-leave');
  await b.waitForSelector('#party-status[data-party=""]');
  await a.waitForFunction((who) => document.querySelector(`#party-members [data-member="${who}"]`) === null, idB);

  // A, alone again, comes back to Wren's dock after the crossing: the story-only option is shown
  // greyed with its reason (PROTOCOL.md 10.1), and picking it is refused by the walk as the
  // server would refuse it (`response_disabled`), so nothing is sent.
  await a.click('#party-leave');
  await a.waitForSelector('#party-status[data-party=""]');
  await talkAgain(a, 'wren', 'AllDone');
  for (const next of ['Wren_Welcome', 'Wren_Dock']) {
    await a.waitForSelector('#continue:not([hidden])');
    await a.click('#continue');
    await a.waitForSelector(`#line[data-node="${next}"]`);
  }
  const greyed = a.locator('#choices button.greyed[data-response="Wren_Dock_r3"]');
  await greyed.waitFor();
  assert.equal(await greyed.getAttribute('aria-disabled'), 'true');
  assert.equal(await greyed.locator('.reason').textContent(), 'Ask Wren for a story of the shoals first.');
  // The greyed option keeps its place among the choices (the line's response order).
  const order = await a.locator('#choices button').evaluateAll((bs) => bs.map((b) => b.getAttribute('data-response')));
  assert.deepEqual(order.slice(0, 3), ['Wren_Dock_r1', 'Wren_Dock_r2', 'Wren_Dock_r3']);
  const refusalsBefore = await a.locator('#effects .error').count();
  // aria-disabled: Playwright will not click it unforced; a player's click still reaches it.
  await greyed.click({ force: true });
  await a.waitForFunction((n) => document.querySelectorAll('#effects .error').length > n, refusalsBefore);
  assert.match(
    (await a.locator('#effects .error').last().textContent()) ?? '',
    /"Wren_Dock_r3": the response is greyed out: Ask Wren for a story of the shoals first\./,
  );
  // Still on the dock, with the same choices: the refusal changed nothing.
  await a.waitForSelector('#line[data-node="Wren_Dock"]');
  assert.equal(await a.locator('#choices button.greyed').count(), 1);
  // The ferry's decision belonged to the shared conversation, not to this one.
  assert.equal(await a.locator('#decision[data-line]').count(), 0);
  await a.screenshot({ path: join(shots, 'greyed-option.png'), fullPage: true });
  assert.deepEqual(leader.problems, []);
  assert.deepEqual(member.problems, []);
  await a.close();
  await b.close();
});
