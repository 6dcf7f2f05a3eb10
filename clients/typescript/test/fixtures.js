// Conversations the unit tests walk: the sample content's own files and the canonical Pim
// content recorded from a real server in docs/PROTOCOL.md section 8.4.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { CONTENT_DIR, WORKSPACE_DIR } from './paths.js';

/** A base conversation file of the sample content, as text. */
export function baseConversation(name) {
  return readFileSync(join(CONTENT_DIR, 'dialogue/base', `${name}.json`), 'utf8');
}

/** The text between `<!-- recorded: NAME begin -->` and its end marker in PROTOCOL.md, fences removed. */
export function recorded(name) {
  const doc = readFileSync(join(WORKSPACE_DIR, 'docs/PROTOCOL.md'), 'utf8');
  const m = new RegExp(`<!-- recorded: ${name} begin -->\\n\`\`\`\\w*\\n([\\s\\S]*?)\`\`\`\\n<!-- recorded: ${name} end -->`).exec(doc);
  if (!m) throw new Error(`docs/PROTOCOL.md has no recorded block ${name}`);
  return m[1];
}

/** The client frames (`>>` lines) of a recorded exchange, ids removed. */
export function recordedClientFrames(name) {
  return recorded(name)
    .split('\n')
    .filter((l) => l.startsWith('>> '))
    .map((l) => {
      const { id: _id, ...rest } = JSON.parse(l.slice(3));
      return rest;
    });
}

/** A fresh player's facts at `opened`. */
export function freshFacts(extra = {}) {
  return { quests: {}, progress: {}, coins: 0, experience: 0, tutorial_stage: 0, has: ['Dialogue.Talking'], ...extra };
}
