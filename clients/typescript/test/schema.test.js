// The committed src/protocol.generated.js must be what scripts/gen-types.js makes of the
// schemas in docs/schema today: a schema change that was not regenerated fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { generate, readSchemas, OUTPUT, generateActions, readActions, ACTIONS_OUTPUT } from '../scripts/gen-types.js';
import { ACTION_SPECS } from '../src/actions.generated.js';
import * as protocol from '../src/protocol.js';

/**
 * Fails, showing the first line that differs, unless the generated file at `output` (`name`)
 * holds `expected`, what scripts/gen-types.js makes of `source` today (`label`: what to call it).
 * @param {string} name
 * @param {string} output
 * @param {string} expected
 * @param {string} source
 * @param {string} label
 */
function assertCurrent(name, output, expected, source, label) {
  const committed = readFileSync(output, 'utf8');
  if (committed !== expected) {
    const a = committed.split('\n');
    const b = expected.split('\n');
    const line = a.findIndex((l, i) => l !== b[i]);
    assert.fail(
      `${name} is out of date with ${source}: run npm run gen-types\n` +
        `first difference at line ${line + 1}:\n  committed: ${a[line]}\n  ${`${label}:`.padEnd(10)} ${b[line]}`,
    );
  }
}

test('src/protocol.generated.js is current with docs/schema', () => {
  assertCurrent('src/protocol.generated.js', OUTPUT, generate(readSchemas()), 'docs/schema', 'schema');
});

test('src/actions.generated.js is current with docs/schema/actions.json', () => {
  assertCurrent(
    'src/actions.generated.js',
    ACTIONS_OUTPUT,
    generateActions(readActions()),
    'docs/schema/actions.json',
    'table',
  );
});

test('the action table names exactly the protocol\'s action types, in order', () => {
  assert.deepEqual(Object.keys(ACTION_SPECS), [...protocol.ACTION_TYPES]);
  assert.deepEqual(
    readActions().actions.map((a) => a.name),
    [...protocol.ACTION_TYPES],
  );
});

test('every message of both schemas has a typedef and its type in the vocabularies', () => {
  const { client, server } = readSchemas();
  const text = readFileSync(OUTPUT, 'utf8');
  for (const [schema, list] of [[client, protocol.CLIENT_MESSAGE_TYPES], [server, protocol.SERVER_MESSAGE_TYPES]]) {
    const types = schema.oneOf.map((v) => v.properties.type.const);
    assert.deepEqual([...list], types);
    for (const t of types) {
      const name = `${t.split('_').map((w) => w[0].toUpperCase() + w.slice(1)).join('')}Message`;
      assert.match(text, new RegExp(`@typedef \\{object\\} ${name}\\n`), name);
    }
  }
  assert.deepEqual([...protocol.ERROR_CODES], server.$defs.ErrorCode.oneOf.map((v) => v.const));
});

test('the generator writes tuples, maps, nullable and optional fields, and refuses what it does not know', () => {
  const client = {
    title: 'ClientMessage',
    oneOf: [
      {
        type: 'object',
        description: 'A test message.',
        properties: {
          type: { type: 'string', const: 'ping' },
          at: { type: 'array', items: { type: 'number' }, minItems: 3, maxItems: 3 },
          tags: { type: 'object', additionalProperties: { $ref: '#/$defs/Mood' } },
          note: { type: ['string', 'null'], description: 'Optional.\nTwo lines.' },
        },
        required: ['type', 'at'],
      },
    ],
    $defs: { Mood: { oneOf: [{ type: 'string', const: 'calm', description: 'Calm.' }, { type: 'string', const: 'loud' }] } },
  };
  const server = { title: 'ServerMessage', oneOf: [{ type: 'object', properties: { type: { const: 'pong' } }, required: ['type'] }] };
  const out = generate({ client, server });
  assert.match(out, / \* @property \{\[number, number, number\]\} at\n/);
  assert.match(out, / \* @property \{string \| null\} \[note\] - Optional\.\n \* {3}Two lines\.\n/);
  assert.match(out, / \* @property \{Record<string, Mood>\} \[tags\]\n/);
  assert.match(out, /@typedef \{"calm" \| "loud"\} Mood/);
  assert.match(out, /export const MOODS = Object\.freeze\(\["calm","loud"\]\);/);
  assert.throws(
    () => generate({ client: { ...client, oneOf: [{ type: 'object', properties: { type: { const: 'x' }, y: { type: 'date' } } }] }, server }),
    /client-message\.schema\.json#\/oneOf\[0\]\.y: unsupported type "date"/,
  );
});
