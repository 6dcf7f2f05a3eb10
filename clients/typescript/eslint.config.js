// ESLint flat config: the recommended rules over the package's ES modules.
import js from '@eslint/js';

/** Globals of both runtimes the package targets (browsers and Node 20), as read-only. */
const shared = Object.fromEntries(
  [
    'console', 'setTimeout', 'clearTimeout', 'queueMicrotask', 'URL', 'TextEncoder', 'Intl',
    'globalThis', 'fetch', 'WebSocket',
  ].map((name) => [name, 'readonly']),
);
const node = Object.fromEntries(['process', 'Buffer', 'setImmediate'].map((name) => [name, 'readonly']));

export default [
  { ignores: ['node_modules/'] },
  js.configs.recommended,
  {
    files: ['**/*.js'],
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: shared },
    rules: {
      // `_` marks a deliberately unused binding (a counted loop variable, an ignored field).
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Tests and scripts run in Node only.
    files: ['test/**/*.js', 'scripts/**/*.js'],
    languageOptions: { globals: { ...shared, ...node } },
  },
];
