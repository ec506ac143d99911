import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'cdk.out/', '.data/', 'coverage/', 'bench/out/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
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
