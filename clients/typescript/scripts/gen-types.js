#!/usr/bin/env node
// Generates src/protocol.generated.js from the protocol's JSON Schemas (docs/schema/*.schema.json,
// themselves generated from the Rust types in protocol/src/messages.rs), and
// src/actions.generated.js from the action table (docs/schema/actions.json, generated from the
// actions! table in protocol/src/action.rs).
//
// The output holds one JSDoc @typedef per message and per shared type, plus the closed
// vocabularies (action types, error codes, ...) as frozen arrays, so both the types and the
// runtime lists drift-check against the schema: test/schema.test.js regenerates in memory and
// fails when the committed file differs.
//
//   node scripts/gen-types.js           writes src/protocol.generated.js
//   node scripts/gen-types.js --check   exits 1 if the committed file is out of date
//
// It understands the subset of JSON Schema that schemars emits for these types: `$ref` into
// `$defs`, `const`, `enum`, `oneOf`, `anyOf` (an untagged union), `type` (one or a list, `null` included), `items` with
// `minItems`/`maxItems` (fixed-length arrays become tuples), `properties` + `required`, and
// `additionalProperties` as a schema (maps). Anything else fails loudly, naming where it is,
// rather than generating a wrong type.

import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
/** The package folder (clients/typescript). */
export const PACKAGE_DIR = resolve(here, '..');
/** Where the schemas live: the workspace's docs/schema. */
export const SCHEMA_DIR = resolve(PACKAGE_DIR, '../../docs/schema');
/** The generated module. */
export const OUTPUT = join(PACKAGE_DIR, 'src/protocol.generated.js');

/**
 * @typedef {{ [key: string]: unknown }} Schema
 */

/**
 * Reads both schema files.
 * @param {string} [dir]
 * @returns {{ client: Schema, server: Schema }}
 */
export function readSchemas(dir = SCHEMA_DIR) {
  /** @param {string} file */
  const read = (file) => {
    const path = join(dir, file);
    try {
      return /** @type {Schema} */ (JSON.parse(readFileSync(path, 'utf8')));
    } catch (e) {
      throw new Error(`cannot read the schema ${path}: ${e instanceof Error ? e.message : e}`, { cause: e });
    }
  };
  return { client: read('client-message.schema.json'), server: read('server-message.schema.json') };
}

/** `set_afk` -> `SetAfk`, `quest_accepted` -> `QuestAccepted`. */
function pascal(/** @type {string} */ snake) {
  return snake
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}

/** @param {unknown} v @returns {v is Schema} */
function isObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A property name as JSDoc needs it: quoted unless it is a plain identifier. */
function key(/** @type {string} */ name) {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

/** Turns schema text into comment lines that cannot end the comment early. */
function commentLines(/** @type {unknown} */ text) {
  if (typeof text !== 'string' || text === '') return [];
  return text.replaceAll('*/', '*\\/').split('\n');
}

class Generator {
  constructor() {
    /** Typedef blocks in output order. @type {string[]} */
    this.blocks = [];
    /** Named definitions already emitted, with the schema they came from (for the dedupe check). @type {Map<string, string>} */
    this.defined = new Map();
    /** Runtime vocabularies: exported constant name -> values. @type {Map<string, string[]>} */
    this.vocabularies = new Map();
  }

  /**
   * The JSDoc type expression for a schema.
   * @param {unknown} schema
   * @param {string} where  a path for error messages
   * @returns {string}
   */
  type(schema, where) {
    if (!isObject(schema)) throw new Error(`${where}: expected a schema object`);
    if (typeof schema.$ref === 'string') {
      const m = /^#\/\$defs\/(.+)$/.exec(schema.$ref);
      if (!m) throw new Error(`${where}: unsupported $ref ${schema.$ref}`);
      return m[1];
    }
    if ('const' in schema) return JSON.stringify(schema.const);
    if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
    if (Array.isArray(schema.oneOf)) {
      return schema.oneOf.map((s, i) => this.type(s, `${where}.oneOf[${i}]`)).join(' | ');
    }
    // An untagged union (VarValue: a boolean, an integer or a string).
    if (Array.isArray(schema.anyOf)) {
      return schema.anyOf.map((s, i) => this.type(s, `${where}.anyOf[${i}]`)).join(' | ');
    }
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    const parts = types.map((t) => this.single(schema, t, where));
    return parts.join(' | ');
  }

  /**
   * One member of `type`.
   * @param {Schema} schema
   * @param {unknown} t
   * @param {string} where
   */
  single(schema, t, where) {
    switch (t) {
      case 'string':
        return 'string';
      case 'integer':
      case 'number':
        return 'number';
      case 'boolean':
        return 'boolean';
      case 'null':
        return 'null';
      case 'array': {
        const item = this.type(schema.items, `${where}.items`);
        const { minItems, maxItems } = schema;
        if (typeof minItems === 'number' && minItems === maxItems && minItems <= 8) {
          return `[${Array(minItems).fill(item).join(', ')}]`;
        }
        return item.includes('|') ? `Array<${item}>` : `${item}[]`;
      }
      case 'object': {
        if (isObject(schema.properties)) return this.inlineObject(schema, where);
        if (isObject(schema.additionalProperties)) {
          return `Record<string, ${this.type(schema.additionalProperties, `${where}.additionalProperties`)}>`;
        }
        return 'Record<string, unknown>';
      }
      default:
        throw new Error(`${where}: unsupported type ${JSON.stringify(t)}`);
    }
  }

  /** An object schema written inline: `{ a: T, b?: U }`. */
  inlineObject(/** @type {Schema} */ schema, /** @type {string} */ where) {
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    const props = /** @type {Schema} */ (schema.properties);
    const fields = Object.keys(props).map((name) => {
      const optional = required.has(name) ? '' : '?';
      return `${key(name)}${optional}: ${this.type(props[name], `${where}.${name}`)}`;
    });
    return `{ ${fields.join(', ')} }`;
  }

  /**
   * A named object typedef with one @property per field.
   * @param {string} name
   * @param {Schema} schema
   * @param {string} where
   */
  objectTypedef(name, schema, where) {
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    const props = isObject(schema.properties) ? schema.properties : {};
    const lines = ['/**', ...commentLines(schema.description).map((l) => ` * ${l}`.trimEnd())];
    if (schema.description) lines.push(' *');
    lines.push(` * @typedef {object} ${name}`);
    // The tag first, so a reader of the generated file sees which message this is at once.
    const order = Object.keys(props).sort((a, b) => {
      const tag = (/** @type {string} */ k) => (k === 'type' || k === 'kind' ? 0 : 1);
      return tag(a) - tag(b) || a.localeCompare(b);
    });
    for (const field of order) {
      const propSchema = props[field];
      const type = this.type(propSchema, `${where}.${field}`);
      const label = required.has(field) ? key(field) : `[${key(field)}]`;
      const description = isObject(propSchema) ? commentLines(propSchema.description) : [];
      const [first = '', ...rest] = description;
      lines.push(` * @property {${type}} ${label}${first ? ` - ${first}` : ''}`);
      for (const line of rest) lines.push(` *   ${line}`.trimEnd());
    }
    lines.push(' */');
    this.blocks.push(lines.join('\n'));
  }

  /**
   * A named alias typedef (`@typedef {A | B} Name`).
   * @param {string} name
   * @param {string} type
   * @param {unknown} description
   * @param {string[]} [memberNotes]  one comment line per union member
   */
  aliasTypedef(name, type, description, memberNotes = []) {
    const lines = ['/**', ...commentLines(description).map((l) => ` * ${l}`.trimEnd())];
    if (memberNotes.length) {
      if (description) lines.push(' *');
      lines.push(...memberNotes.map((n) => ` * - ${n}`));
    }
    if (description || memberNotes.length) lines.push(' *');
    lines.push(` * @typedef {${type}} ${name}`, ' */');
    this.blocks.push(lines.join('\n'));
  }

  /**
   * Emits a `$defs` entry once; a second schema defining the same name must agree.
   * @param {string} name
   * @param {Schema} schema
   * @param {string} file
   */
  def(name, schema, file) {
    const text = JSON.stringify(schema);
    const seen = this.defined.get(name);
    if (seen !== undefined) {
      if (seen !== text) throw new Error(`$defs/${name} differs between the two schemas (${file})`);
      return;
    }
    this.defined.set(name, text);
    const where = `${file}#/$defs/${name}`;
    if (Array.isArray(schema.oneOf) && schema.oneOf.every((s) => isObject(s) && 'const' in s)) {
      // A closed vocabulary of strings, each with its own description.
      const values = schema.oneOf.map((s) => String(/** @type {Schema} */ (s).const));
      const notes = schema.oneOf.map((s) => {
        const o = /** @type {Schema} */ (s);
        const d = typeof o.description === 'string' ? o.description.replaceAll('\n', ' ') : '';
        return `\`${String(o.const)}\`${d ? `: ${d.replaceAll('*/', '*\\/')}` : ''}`;
      });
      this.aliasTypedef(name, values.map((v) => JSON.stringify(v)).join(' | '), schema.description, notes);
      this.vocabularies.set(name, values);
    } else if (Array.isArray(schema.enum)) {
      this.aliasTypedef(name, this.type(schema, where), schema.description);
      this.vocabularies.set(name, schema.enum.map(String));
    } else if (Array.isArray(schema.oneOf)) {
      // A tagged union of objects (Effect): one typedef per variant, named by its tag.
      const tag = 'kind';
      const names = schema.oneOf.map((variant, i) => {
        if (!isObject(variant) || !isObject(variant.properties)) {
          throw new Error(`${where}.oneOf[${i}]: expected an object variant`);
        }
        const tagSchema = variant.properties[tag];
        if (!isObject(tagSchema) || typeof tagSchema.const !== 'string') {
          throw new Error(`${where}.oneOf[${i}]: expected a \`${tag}\` const`);
        }
        const variantName = `${pascal(tagSchema.const)}${name}`;
        this.objectTypedef(variantName, variant, `${where}.oneOf[${i}]`);
        return { variantName, value: tagSchema.const };
      });
      this.aliasTypedef(name, names.map((n) => n.variantName).join(' | '), schema.description);
      this.aliasTypedef(`${name}Kind`, names.map((n) => JSON.stringify(n.value)).join(' | '), `The \`${tag}\` of every \`${name}\`.`);
      this.defined.set(`${name}Kind`, '');
      this.vocabularies.set(`${name}Kind`, names.map((n) => n.value));
    } else if (schema.type === 'object') {
      this.objectTypedef(name, schema, where);
    } else {
      this.aliasTypedef(name, this.type(schema, where), schema.description);
    }
  }

  /**
   * The messages of one schema: a typedef per `type`-tagged variant and the union.
   * @param {Schema} schema
   * @param {string} file
   */
  messages(schema, file) {
    const title = String(schema.title);
    if (!Array.isArray(schema.oneOf)) throw new Error(`${file}: expected a oneOf of messages`);
    const names = schema.oneOf.map((variant, i) => {
      const where = `${file}#/oneOf[${i}]`;
      if (!isObject(variant) || !isObject(variant.properties)) throw new Error(`${where}: expected an object`);
      const tagSchema = variant.properties.type;
      if (!isObject(tagSchema) || typeof tagSchema.const !== 'string') {
        throw new Error(`${where}: expected a \`type\` const`);
      }
      const name = `${pascal(tagSchema.const)}Message`;
      this.objectTypedef(name, variant, where);
      return { name, value: tagSchema.const };
    });
    this.aliasTypedef(title, names.map((n) => n.name).join(' | '), schema.description);
    this.aliasTypedef(`${title}Type`, names.map((n) => JSON.stringify(n.value)).join(' | '), `The \`type\` of every \`${title}\`.`);
    this.defined.set(`${title}Type`, '');
    this.vocabularies.set(`${title}Type`, names.map((n) => n.value));
  }
}

/** `ErrorCode` -> `ERROR_CODES`, `ServerMessageType` -> `SERVER_MESSAGE_TYPES`. */
function constantName(/** @type {string} */ typeName) {
  const snake = typeName.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
  if (snake.endsWith('_STATUS')) return `${snake}ES`;
  if (snake.endsWith('_KIND')) return `${snake}S`;
  return `${snake}S`;
}

/**
 * The generated module's text for two schemas.
 * @param {{ client: Schema, server: Schema }} schemas
 * @returns {string}
 */
export function generate({ client, server }) {
  const g = new Generator();
  g.blocks.push('// ---------------------------------------------------------------------------------------------\n// Client messages (docs/schema/client-message.schema.json).');
  g.messages(client, 'client-message.schema.json');
  g.blocks.push('// ---------------------------------------------------------------------------------------------\n// Server messages (docs/schema/server-message.schema.json).');
  g.messages(server, 'server-message.schema.json');
  g.blocks.push('// ---------------------------------------------------------------------------------------------\n// Shared types ($defs of both schemas).');
  const defs = new Map();
  for (const [schema, file] of /** @type {const} */ ([[client, 'client-message.schema.json'], [server, 'server-message.schema.json']])) {
    const d = isObject(schema.$defs) ? schema.$defs : {};
    for (const name of Object.keys(d)) {
      if (!defs.has(name)) defs.set(name, []);
      defs.get(name).push({ schema: /** @type {Schema} */ (d[name]), file });
    }
  }
  for (const name of [...defs.keys()].sort()) {
    for (const { schema, file } of defs.get(name)) g.def(name, schema, file);
  }

  const constants = [...g.vocabularies.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([typeName, values]) => {
      const elementType = g.defined.has(typeName) ? typeName : values.map((v) => JSON.stringify(v)).join(' | ');
      return [
        `/** Every \`${typeName}\`, in schema order. @type {ReadonlyArray<${elementType}>} */`,
        `export const ${constantName(typeName)} = Object.freeze(${JSON.stringify(values)});`,
      ].join('\n');
    });

  return [
    '// GENERATED by scripts/gen-types.js from docs/schema/client-message.schema.json and',
    '// docs/schema/server-message.schema.json. Do not edit: run `npm run gen-types`.',
    '//',
    '// Integers are JSON numbers; ids and counters the schema calls uint64/int64 are exact in a',
    '// JavaScript number up to 2^53 - 1, which a client choosing its own request ids never passes.',
    '',
    ...g.blocks.flatMap((b) => [b, '']),
    '// ---------------------------------------------------------------------------------------------',
    '// Closed vocabularies, for validation at run time.',
    '',
    ...constants.flatMap((c) => [c, '']),
  ].join('\n');
}

/** The action table (docs/schema/actions.json, generated from protocol/src/action.rs). */
export const ACTIONS_OUTPUT = join(PACKAGE_DIR, 'src/actions.generated.js');

/**
 * @typedef {{ rust: string, kind: 'ident' | 'target' | 'optional_ident' | 'amount', keys: string[] }} ActionFieldEntry
 * @typedef {{ name: string, doc: string, changes_store: boolean, placement: string,
 *   payload_fields: { min: number, max: number }, fields: ActionFieldEntry[] }} ActionEntry
 * @typedef {{ max_amount: number, kinds: Record<string, string>, actions: ActionEntry[] }} ActionTable
 */

/**
 * Reads docs/schema/actions.json.
 * @param {string} [dir]
 * @returns {ActionTable}
 */
export function readActions(dir = SCHEMA_DIR) {
  const path = join(dir, 'actions.json');
  try {
    return /** @type {ActionTable} */ (JSON.parse(readFileSync(path, 'utf8')));
  } catch (e) {
    throw new Error(`cannot read the action table ${path}: ${e instanceof Error ? e.message : e}`, { cause: e });
  }
}

/**
 * src/actions.generated.js: the content form of each action (`Action`) and the table the payload
 * builder and parser (src/payload.js) and the content reader (src/graph.js) walk.
 * @param {ActionTable} table
 * @returns {string}
 */
export function generateActions(table) {
  const kinds = ['ident', 'target', 'optional_ident', 'amount'];
  const members = table.actions.map((a) => {
    const props = [`Type: ${JSON.stringify(a.name)}`];
    for (const f of a.fields) {
      if (!kinds.includes(f.kind)) throw new Error(`actions.json: ${a.name}.${f.rust}: unknown field kind ${JSON.stringify(f.kind)}`);
      if (f.kind === 'ident') props.push(`${key(f.keys[0])}: string`);
      else if (f.kind === 'amount') props.push(`${key(f.keys[0])}?: number`, `${key(f.keys[1])}?: string`);
      else props.push(`${key(f.keys[0])}?: string`);
    }
    return `{ ${props.join(', ')} }`;
  });
  const entries = table.actions.map((a) => {
    const fields = a.fields.map((f) => `Object.freeze({ kind: ${JSON.stringify(f.kind)}, keys: Object.freeze(${JSON.stringify(f.keys)}) })`);
    return [
      ...commentLines(a.doc).map((l) => `  // ${l}`),
      `  ${a.name}: Object.freeze({`,
      `    changesStore: ${JSON.stringify(a.changes_store)},`,
      `    placement: ${JSON.stringify(a.placement)},`,
      `    min: ${a.payload_fields.min},`,
      `    max: ${a.payload_fields.max},`,
      `    fields: Object.freeze([${fields.join(', ')}]),`,
      '  }),',
    ].join('\n');
  });
  return [
    '// GENERATED by scripts/gen-types.js from docs/schema/actions.json (itself generated from the',
    '// actions! table in protocol/src/action.rs). Do not edit: run `npm run gen-types`.',
    '',
    '/** @import { ActionType } from \'./protocol.generated.js\' */',
    '',
    '/**',
    ' * An action as the content writes it (`opened.content`, `Actions` lists): `Type` and the fields',
    ' * that type takes, in PascalCase.',
    ` * @typedef {${members.join('\n *   | ')}} Action`,
    ' */',
    '',
    '/**',
    ...Object.entries(table.kinds).map(([k, v]) => ` * - \`${k}\`: ${v}`),
    " * @typedef {'ident' | 'target' | 'optional_ident' | 'amount'} ActionFieldKind",
    ' * @typedef {{ readonly kind: ActionFieldKind, readonly keys: ReadonlyArray<string> }} ActionField',
    ' * @typedef {{ readonly changesStore: boolean, readonly placement: string, readonly min: number, readonly max: number,',
    ' *   readonly fields: ReadonlyArray<ActionField> }} ActionSpec',
    ' */',
    '',
    '/** The largest amount: the Rust type is a u32. */',
    `export const MAX_AMOUNT = ${table.max_amount};`,
    '',
    '/** Each action type\'s fields (payload order, content keys), `min` to `max` payload fields. @type {Readonly<Record<ActionType, ActionSpec>>} */',
    'export const ACTION_SPECS = Object.freeze({',
    ...entries,
    '});',
    '',
  ].join('\n');
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (invokedDirectly) {
  const outputs = [
    { path: OUTPUT, text: generate(readSchemas()) },
    { path: ACTIONS_OUTPUT, text: generateActions(readActions()) },
  ];
  if (process.argv.includes('--check')) {
    let stale = false;
    for (const { path, text } of outputs) {
      let committed = '';
      try {
        committed = readFileSync(path, 'utf8');
      } catch {
        // A missing file is out of date like any other.
      }
      if (committed !== text) {
        console.error(`${path} is out of date with docs/schema: run npm run gen-types`);
        stale = true;
      } else {
        console.log(`${path} is current`);
      }
    }
    if (stale) process.exit(1);
  } else {
    for (const { path, text } of outputs) {
      writeFileSync(path, text);
      console.log(`wrote ${path}`);
    }
  }
}
