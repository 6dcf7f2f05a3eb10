// Starts a real banter-server for the e2e test: a fresh SQLite database in a temporary folder,
// the sample content, a port the OS picks. The address comes from the server's own log line
// (`listening addr=127.0.0.1:PORT`).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';

import { CONTENT_DIR, PACKAGE_DIR } from './paths.js';

/** The server binary: BANTER_SERVER_BIN, or the workspace's debug build, from the package folder. */
export function serverBinary() {
  const configured = process.env.BANTER_SERVER_BIN ?? '../../target/debug/banter-server';
  return isAbsolute(configured) ? configured : resolve(PACKAGE_DIR, configured);
}

/**
 * Starts the server; resolves once it listens.
 * @returns {Promise<{ address: string, stop: () => Promise<void>, log: () => string }>}
 */
export async function startServer({ timeoutMs = 60_000 } = {}) {
  const bin = serverBinary();
  if (!existsSync(bin)) {
    throw new Error(`no server binary at ${bin}: build it with \`cargo build -p banter-server\` (or set BANTER_SERVER_BIN)`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'banter-e2e-'));
  const args = ['serve', '--bind', '127.0.0.1:0', '--database-url', `sqlite://${join(dir, 'banter.db')}`, '--content', CONTENT_DIR];
  // The log format is pinned: a BANTER_LOG_FORMAT=json in the caller's environment would change
  // the line we look for.
  const child = spawn(bin, args, { env: { ...process.env, BANTER_LOG_FORMAT: 'human', NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  // If the test process dies first (a crash, Ctrl-C), take the server with it.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let output = '';
  const exited = new Promise((resolveExit) => child.once('exit', (code, signal) => resolveExit({ code, signal })));
  const address = await new Promise((resolveAddress, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not log "listening" within ${timeoutMs} ms:\n${output}`)), timeoutMs);
    const onData = (chunk) => {
      output += chunk.toString();
      // eslint-disable-next-line no-control-regex
      const m = /listening\b.*?addr=(\S+)/.exec(output.replace(/\x1b\[[0-9;]*m/g, ''));
      if (m) {
        clearTimeout(timer);
        resolveAddress(m[1]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${bin}: ${e.message}`));
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (code ${code}, signal ${signal}) before listening:\n${output}`));
    });
  });
  return {
    address: `http://${address}`,
    log: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(killer);
      }
      process.off('exit', killOnExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
