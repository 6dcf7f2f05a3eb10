// Where the tests find the workspace's files, resolved from the package folder so the tests run
// from any working directory.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** clients/typescript */
export const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The Rust workspace root. */
export const WORKSPACE_DIR = resolve(PACKAGE_DIR, '../..');
/** The language-neutral vectors (conformance/README.md). */
export const CONFORMANCE_DIR = process.env.BANTER_CONFORMANCE_DIR
  ? resolve(process.env.BANTER_CONFORMANCE_DIR)
  : resolve(WORKSPACE_DIR, 'conformance');
/** The sample content the e2e server serves. */
export const CONTENT_DIR = resolve(WORKSPACE_DIR, 'content');
