import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import regexp from 'eslint-plugin-regexp';

export default tseslint.config(
  { ignores: ['node_modules/', 'cdk.out/', '.data/', 'coverage/', 'bench/out/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  // Every pattern may meet user input: catastrophic backtracking is a denial of service
  // (one request pinning a Lambda or the local server), so super-linear patterns fail lint.
  {
    // Only code that meets requests; tests and benchmarks match their own fixtures.
    files: ['shared/**', 'functions/**', 'local/**', 'lib/**', 'bin/**'],
    plugins: { regexp },
    rules: {
      'regexp/no-dupe-disjunctions': ['error', { report: 'all' }],
      'regexp/no-super-linear-backtracking': ['error', { report: 'potential' }],
      'regexp/no-super-linear-move': ['error', { ignorePartial: false, ignoreSticky: false }],
    },
  },
  {
    languageOptions: { parserOptions: { projectService: false } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': ['error', { allow: ['error'] }],
      // `import { z }` keeps zod's whole namespace object (every locale's messages) in each
      // bundle; the namespace import lets esbuild drop what is unused (see docs/performance.md).
      'no-restricted-syntax': [
        'error',
        {
          selector: "ImportDeclaration[source.value='zod'] > :matches(ImportSpecifier, ImportDefaultSpecifier)",
          message: "Use `import * as z from 'zod'`.",
        },
      ],
    },
  },
  {
    files: ['local/**', 'scripts/**', 'bench/**', 'test/**', 'bin/**'],
    rules: { 'no-console': 'off' },
  },
  {
    // Response bodies in tests are arbitrary JSON read by assertions.
    files: ['test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
