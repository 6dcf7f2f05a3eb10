#!/usr/bin/env node
// Generates src/GraphemeTables.generated.luau: the Unicode property tables that Graphemes.luau
// segments text with (UAX #29 extended grapheme clusters) and that Text.luau decides blips with,
// taken from the tables of the Rust crate the server segments with, unicode-segmentation, at the
// version Cargo.lock pins (its src/tables.rs in cargo's registry cache: `cargo fetch` puts it
// there), so the Luau client and the server draw the same clusters.
//
//   node scripts/gen-graphemes.js           writes src/GraphemeTables.generated.luau
//   node scripts/gen-graphemes.js --check   exits 1 if the committed file is out of date
//
// Every table is a flat list of code point ranges, merged where adjacent ranges agree, searched
// by binary search: `{ lo1, hi1, lo2, hi2, ... }` (and `{ lo, hi, category, ... }` for the
// Grapheme_Cluster_Break table).

import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const PACKAGE_DIR = resolve(here, '..');
const WORKSPACE = resolve(PACKAGE_DIR, '../..');
const OUTPUT = join(PACKAGE_DIR, 'src/GraphemeTables.generated.luau');
const CRATE = 'unicode-segmentation';

/** The crate's version in the workspace's Cargo.lock. */
function lockedVersion() {
  const lock = readFileSync(join(WORKSPACE, 'Cargo.lock'), 'utf8');
  const m = new RegExp(`\\[\\[package\\]\\]\\nname = "${CRATE}"\\nversion = "([^"]+)"`).exec(lock);
  if (!m) throw new Error(`Cargo.lock has no ${CRATE}`);
  return m[1];
}

/** src/tables.rs of that version in cargo's registry cache. */
function tablesPath(/** @type {string} */ version) {
  const registry = join(process.env.CARGO_HOME ?? join(homedir(), '.cargo'), 'registry/src');
  const candidates = existsSync(registry)
    ? readdirSync(registry).map((index) => join(registry, index, `${CRATE}-${version}`, 'src/tables.rs'))
    : [];
  const found = candidates.find((p) => existsSync(p));
  if (!found) {
    throw new Error(`${CRATE} ${version} is not in ${registry}: run \`cargo fetch\` in ${WORKSPACE} first`);
  }
  return found;
}

/** The body of `const NAME: &[...] = &[ ... ];`. */
function tableBody(/** @type {string} */ source, /** @type {string} */ name) {
  const start = source.indexOf(`const ${name}: &[`);
  if (start < 0) throw new Error(`tables.rs: no table ${name}`);
  const open = source.indexOf('= &[', start);
  const close = source.indexOf('];', open);
  return source.slice(open + 4, close);
}

const CHAR = String.raw`'\\u\{([0-9a-fA-F]+)\}'`;

/** `[(lo, hi)]` of a `&[(char, char)]` table. */
function ranges(/** @type {string} */ source, /** @type {string} */ name) {
  const out = [];
  for (const m of tableBody(source, name).matchAll(new RegExp(String.raw`\(\s*${CHAR}\s*,\s*${CHAR}\s*\)`, 'g'))) {
    out.push([parseInt(m[1], 16), parseInt(m[2], 16)]);
  }
  if (out.length === 0) throw new Error(`tables.rs: ${name} is empty`);
  return out;
}

/** `[(lo, hi, cat)]` of a `&[(char, char, Cat)]` table. */
function valueRanges(/** @type {string} */ source, /** @type {string} */ name) {
  const out = [];
  for (const m of tableBody(source, name).matchAll(new RegExp(String.raw`\(\s*${CHAR}\s*,\s*${CHAR}\s*,\s*(\w+)\s*\)`, 'g'))) {
    out.push([parseInt(m[1], 16), parseInt(m[2], 16), m[3]]);
  }
  if (out.length === 0) throw new Error(`tables.rs: ${name} is empty`);
  return out;
}

/** Sorted, merged ranges of a union of range lists. */
function union(/** @type {number[][][]} */ ...lists) {
  const all = lists.flat().map(([lo, hi]) => [lo, hi]).sort((a, b) => a[0] - b[0]);
  const out = [];
  for (const [lo, hi] of all) {
    const last = out[out.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

/** Merges adjacent ranges of the same value; checks the table is sorted and disjoint. */
function mergeValues(/** @type {[number, number, string][]} */ table) {
  const out = [];
  for (const [lo, hi, v] of table) {
    const last = out[out.length - 1];
    if (last && lo <= last[1]) throw new Error(`grapheme table not sorted at U+${lo.toString(16)}`);
    if (last && lo === last[1] + 1 && last[2] === v) last[1] = hi;
    else out.push([lo, hi, v]);
  }
  return out;
}

/** A flat list of numbers, wrapped. */
function numbers(/** @type {number[]} */ values, /** @type {number} */ perLine) {
  const lines = [];
  for (let i = 0; i < values.length; i += perLine) lines.push(`\t${values.slice(i, i + perLine).join(', ')},`);
  return lines.join('\n');
}

export function generate() {
  const version = lockedVersion();
  const path = tablesPath(version);
  const source = readFileSync(path, 'utf8');
  const unicode = /pub const UNICODE_VERSION: \(u64, u64, u64\) = \((\d+), (\d+), (\d+)\);/.exec(source);
  if (!unicode) throw new Error('tables.rs: no UNICODE_VERSION');

  const grapheme = mergeValues(valueRanges(source, 'grapheme_cat_table'));
  // The category names, GC_ dropped; 0 is "Any" (every code point no range names).
  const names = ['Any', ...new Set(grapheme.map(([, , c]) => c.replace(/^GC_/, '')).filter((c) => c !== 'Any'))].sort((a, b) =>
    a === 'Any' ? -1 : b === 'Any' ? 1 : a < b ? -1 : a > b ? 1 : 0,
  );
  const index = new Map(names.map((n, i) => [n, i]));
  const graphemeFlat = grapheme.filter(([, , c]) => c !== 'GC_Any').flatMap(([lo, hi, c]) => [lo, hi, /** @type {number} */ (index.get(c.replace(/^GC_/, '')))]);

  const incbExtend = union(ranges(source, 'InCB_Extend_table'));
  const linkerMatch = /pub fn is_incb_linker\(c: char\) -> bool \{\s*matches!\(c,([^)]*)\)/.exec(source);
  if (!linkerMatch) throw new Error('tables.rs: no is_incb_linker');
  const linkers = [...linkerMatch[1].matchAll(new RegExp(CHAR, 'g'))].map((m) => parseInt(m[1], 16));
  if (linkers.length === 0) throw new Error('tables.rs: is_incb_linker names nothing');
  // char::is_alphanumeric: Alphabetic or General_Category N (Nd, Nl, No).
  const alphanumeric = union(ranges(source, 'Alphabetic_table'), ranges(source, 'N_table'));

  return [
    '--!strict',
    `-- GENERATED by clients/luau/scripts/gen-graphemes.js from the tables of the Rust crate ${CRATE}`,
    `-- ${version} (src/tables.rs), Unicode ${unicode[1]}.${unicode[2]}.${unicode[3]}. Do not edit: run`,
    '-- `node clients/luau/scripts/gen-graphemes.js`.',
    '--',
    '-- Every table is a flat array of inclusive code point ranges in ascending order, searched by',
    '-- binary search (Graphemes.luau): `{ lo, hi, lo, hi, ... }`, and `{ lo, hi, category, ... }` for',
    '-- GRAPHEME_BREAK, where a code point in no range is category 0 (Any).',
    '',
    'local Tables = {}',
    '',
    `Tables.UNICODE_VERSION = "${unicode[1]}.${unicode[2]}.${unicode[3]}"`,
    '',
    '-- Grapheme_Cluster_Break (with InCB=Consonant and Extended_Pictographic folded in, as the crate',
    '-- folds them), by number.',
    `Tables.CATEGORY_NAMES = table.freeze({ ${names.map((n) => `"${n}"`).join(', ')} }) :: { string }`,
    ...names.map((n, i) => `Tables.${n.toUpperCase()} = ${i}`),
    '',
    `-- ${grapheme.length} ranges.`,
    'Tables.GRAPHEME_BREAK = table.freeze({',
    numbers(graphemeFlat, 15),
    '}) :: { number }',
    '',
    '-- Indic_Conjunct_Break=Extend.',
    'Tables.INCB_EXTEND = table.freeze({',
    numbers(incbExtend.flat(), 16),
    '}) :: { number }',
    '',
    '-- Indic_Conjunct_Break=Linker (the viramas), as a set.',
    `Tables.INCB_LINKER = table.freeze({ ${linkers.map((c) => `[${c}] = true`).join(', ')} }) :: { [number]: boolean }`,
    '',
    "-- Rust's char::is_alphanumeric: Alphabetic or a number (General_Category N).",
    'Tables.ALPHANUMERIC = table.freeze({',
    numbers(alphanumeric.flat(), 16),
    '}) :: { number }',
    '',
    'return table.freeze(Tables)',
    '',
  ].join('\n');
}

function main() {
  const text = generate();
  if (process.argv.includes('--check')) {
    let committed = '';
    try {
      committed = readFileSync(OUTPUT, 'utf8');
    } catch {
      // Missing is out of date.
    }
    if (committed !== text) {
      console.error(`${OUTPUT} is out of date with ${CRATE}'s tables: run node clients/luau/scripts/gen-graphemes.js`);
      process.exit(1);
    }
    console.log(`${OUTPUT} is current`);
    return;
  }
  writeFileSync(OUTPUT, text);
  console.log(`wrote ${OUTPUT}`);
}

main();
