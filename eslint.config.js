import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'dist-typecheck/**', 'node_modules/**', 'bench/results/**', 'oclif.manifest.json'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setImmediate: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': ['error', { allow: ['warn', 'error'] }],
    },
  },
  {
    files: ['test/**', 'bench/**', 'bin/**'],
    rules: { 'no-console': 'off' },
  },
  {
    // The race tests count outcomes across concurrent rounds: `count += await …` would lose counts.
    files: ['test/race/**'],
    rules: { 'require-atomic-updates': 'error' },
  },
  {
    // CommonJS (bin/load-bundle.cjs): require and module are its way of importing and exporting.
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
