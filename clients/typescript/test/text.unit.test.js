import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  visibleGraphemes,
  visibleText,
  visibleUnits,
  prefix,
  balancedPrefix,
  tags,
  pacingFor,
  pacingOffset,
  Typewriter,
} from '../src/index.js';

test('tags are invisible; an entity is one character; graphemes are clusters', () => {
  assert.equal(visibleGraphemes('<font color="#fff">hi</font>'), 2);
  assert.equal(visibleGraphemes('<b>Bold</b> and <i>italic</i>'), 15);
  assert.equal(visibleGraphemes('<color="a>b">x</color>'), 1, 'a quoted value may contain >');
  assert.equal(visibleGraphemes('Fish &amp; chips &lt;3'), 15);
  assert.equal(visibleText('&quot;&apos;&nbsp;&#39;&#x27;&#X27;'), '"\'\u00a0\'\'\'');
  assert.equal(visibleGraphemes('e\u0301te\u0301'), 3, 'combining accents');
  assert.equal(visibleGraphemes('<b>e&#x301;</b>'), 1, 'a tag inside a cluster does not split it');
  assert.equal(visibleGraphemes('👨‍👩‍👧 🇯🇵 👍🏽'), 5);
  assert.equal(visibleGraphemes('<!-- a comment -->visible'), 7);
  assert.equal(visibleGraphemes('line<br/>break\nnewline'), 17, 'a newline is a grapheme, <br/> is not');
  assert.equal(visibleGraphemes(''), 0);
});

test('lone < and > are visible, and so is what is not an entity', () => {
  assert.equal(visibleText('a < b > c, <3'), 'a < b > c, <3');
  assert.equal(visibleText('x<y'), 'x<y');
  assert.equal(visibleText('<b x="never closed>y'), '<b x="never closed>y');
  assert.equal(visibleText('&foo; &amp no entity &#xD800; &#0; &#12345678; &#x110000;'), '&foo; &amp no entity &#xD800; &#0; &#12345678; &#x110000;');
  assert.equal(visibleText('<!-- unclosed comment'), '<!-- unclosed comment');
  assert.equal(visibleText("<i'm>x"), 'x', 'an apostrophe not after = is just a character of the tag');
});

test('units map each grapheme to the source that draws it', () => {
  const units = visibleUnits('<b>A&amp;</b>B');
  assert.deepEqual(units.map((u) => u.grapheme), ['A', '&', 'B']);
  assert.deepEqual([units[1].start, units[1].end], [4, 9]);
  assert.deepEqual(visibleUnits('a, 1!').map((u) => u.blips), [true, false, false, true, false]);
  assert.deepEqual(visibleUnits('日本').map((u) => u.blips), [true, true], 'any script blips');
});

test('prefixes keep earlier tags, cut nothing, and end in the whole line', () => {
  const text = '<b>hi</b> there';
  assert.equal(prefix(text, 0), '');
  assert.equal(prefix(text, 1), '<b>h');
  assert.equal(prefix(text, 2), '<b>hi');
  assert.equal(prefix(text, 3), '<b>hi</b> ');
  assert.equal(prefix(text, 8), text);
  assert.equal(prefix(text, 100), text);
  assert.equal(prefix('a&amp;b', 2), 'a&amp;');
  assert.equal(prefix('e\u0301x', 1), 'e\u0301');
  assert.equal(prefix('<b>e&#x301;</b>!', 1), '<b>e&#x301;', 'the cluster ends after the entity');
  assert.equal(prefix('👍🏽!', 1), '👍🏽');
});

test('balanced prefixes close what is open, innermost first', () => {
  assert.equal(balancedPrefix('<b>hi</b>', 1), '<b>h</b>');
  assert.equal(balancedPrefix('<b><i>hi</i></b>', 1), '<b><i>h</i></b>');
  assert.equal(balancedPrefix('<color=#f00>赤い</color>魚', 1), '<color=#f00>赤</color>');
  assert.equal(balancedPrefix('a<br/>b<br>c', 2), 'a<br/>b');
  assert.equal(balancedPrefix('<B>x</b>y', 2), '<B>x</b>y', 'closing tags match case-insensitively');
  assert.equal(balancedPrefix('</i>x<b>yz', 2), '</i>x<b>y</b>', 'a closing tag that matches nothing is ignored');
  assert.deepEqual(tags('<b>x</b><!-- c --><br/>'), ['<b>', '</b>', '<br/>']);
});

test('pacing: a voiced line ends with its clip, an unvoiced one at its interval', () => {
  const voiced = pacingFor({ voice: { clip: 'voice/ja/line-1.wav', ms: 1000 } }, 40);
  assert.deepEqual(voiced, { kind: 'voice', clipMs: 1000 });
  assert.deepEqual([0, 1, 2, 3].map((k) => pacingOffset(voiced, k, 3)), [0, 1000 / 3, 2000 / 3, 1000]);
  assert.deepEqual(pacingFor({ Voice: { Clip: 'c.wav', Ms: 500 } }, 40), { kind: 'voice', clipMs: 500 });
  const blips = pacingFor({ voice: null }, 40);
  assert.deepEqual(blips, { kind: 'interval', intervalMs: 40 });
  assert.equal(pacingOffset(blips, 3, 10), 120);
  assert.equal(pacingOffset(blips, 30, 10), 400, 'capped at the line');
});

test('the typewriter shows 0, each count in turn, blips letters, completes once', () => {
  const tw = new Typewriter();
  const g = tw.start('<b>Hi!</b>', { kind: 'interval', intervalMs: 10 }, 1000);
  assert.deepEqual(tw.poll(1000), [{ kind: 'show', generation: g, visible: 0, text: '' }]);
  assert.deepEqual(tw.poll(1015), [
    { kind: 'show', generation: g, visible: 1, text: '<b>H' },
    { kind: 'blip', generation: g, grapheme: 'H' },
  ]);
  assert.deepEqual(tw.poll(1030), [
    { kind: 'show', generation: g, visible: 2, text: '<b>Hi' },
    { kind: 'blip', generation: g, grapheme: 'i' },
    { kind: 'show', generation: g, visible: 3, text: '<b>Hi!</b>' },
    { kind: 'completed', generation: g },
  ]);
  assert.deepEqual(tw.poll(2000), [], 'completed once');
});

test('a voiced line never blips and finishes exactly with the clip; a new line supersedes the old', () => {
  const tw = new Typewriter({ balanced: true });
  const first = tw.start('<i>ab</i>', { kind: 'voice', clipMs: 100 }, 0);
  assert.deepEqual(tw.poll(50).map((e) => e.kind), ['show', 'show']);
  assert.equal(tw.poll(50).length, 0);
  assert.equal(tw.busy, true);
  const second = tw.start('xy', { kind: 'interval', intervalMs: 10 }, 60);
  assert.ok(second > first);
  const events = tw.poll(200);
  assert.ok(events.every((e) => e.generation === second), 'nothing from the superseded line');
  assert.equal(events.at(-1).kind, 'completed');
  const third = tw.start('<i>long line</i>', { kind: 'interval', intervalMs: 1000 }, 0);
  tw.poll(0);
  tw.skip();
  assert.deepEqual(tw.poll(1), [
    { kind: 'show', generation: third, visible: 9, text: '<i>long line</i>' },
    { kind: 'completed', generation: third },
  ]);
  tw.start('x', { kind: 'voice', clipMs: 10 }, 0);
  tw.cancel();
  assert.deepEqual(tw.poll(100), [], 'a cancelled line never completes');
  assert.equal(tw.busy, false);
});
