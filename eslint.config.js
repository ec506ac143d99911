import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import regexp from 'eslint-plugin-regexp';
import { readdirSync } from 'node:fs';
import { relative, sep } from 'node:path';

// The layout (docs/architecture.md, Layers): platform code at the bottom, vendor
// adapters beside it, one folder per domain above them, the route table on top.
const LOWER = ['platform', 'vendors'];
const DOMAINS = readdirSync('shared', { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !LOWER.includes(entry.name))
  .map((entry) => entry.name);
const domainGroup = DOMAINS.join('|');
// How deep a domain's files sit below shared/<domain>/: 0 for its own files, 1 for a sub-folder's, and so on.
const deepest = Math.max(
  ...DOMAINS.flatMap((domain) =>
    readdirSync(`shared/${domain}`, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => relative(`shared/${domain}`, entry.parentPath ?? entry.path).split(sep).filter(Boolean).length),
  ),
);
const DOMAIN_DEPTHS = Array.from({ length: deepest + 1 }, (_, depth) => depth);

export default tseslint.config(
  { ignores: ['node_modules/', 'cdk.out/', '.data/', 'coverage/', 'bench/out/', 'web/dist/', 'web/widget/dist/'] },
  // Browser code (web/): TypeScript's DOM types check its globals.
  { files: ['web/**'], rules: { 'no-undef': 'off' } },
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
    // Heavy vendor packages load on first use: a literal `import('pkg')` is its own chunk
    // when esbuild splits a bundle, which a cold start does not load; one static value import
    // anywhere puts the package back into the cold closure (docs/performance.md, "Heavy
    // vendor packages on first use"). Types stay `import type`. local/ runs no Lambda.
    files: ['shared/**', 'functions/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: ['livekit-server-sdk', '@livekit/protocol', 'stripe', '@node-saml/node-saml', 'ws', 'minisearch'].map((name) => ({
            name,
            allowTypeImports: true,
            message: `Load ${name} on first use: a cached literal import('${name}') (see shared/vendors/media/sdk.ts); import type for its types.`,
          })),
        },
      ],
    },
  },
  {
    // Platform never imports a domain, a vendor adapter, the route table or the local runtime.
    files: ['shared/platform/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `(^|/)(${domainGroup}|vendors)/|(^|/)(route-table|openapi)\\.ts$|(^|/)local/`,
              message: 'Platform code never imports a domain, a vendor adapter or the local runtime.',
            },
            {
              regex: '(^|/)store/db\\.ts$',
              message: 'Reach the table through shared/platform/store/table.ts (or an entity), not the client.',
            },
          ],
        },
      ],
    },
  },
  {
    // Vendor adapters stand on the platform only.
    files: ['shared/vendors/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^\\.\\./\\.\\./(?!platform/)`,
              message: 'A vendor adapter imports only platform code (and its own kind).',
            },
          ],
        },
      ],
    },
  },
  ...DOMAINS.map((domain) => ({
    files: [`shared/${domain}/**`],
    rules: {
      // Domain code decides by the kind of error it caught, never by its HTTP status.
      'no-restricted-syntax': [
        'error',
        {
          selector: "ImportDeclaration[source.value='zod'] > :matches(ImportSpecifier, ImportDefaultSpecifier)",
          message: "Use `import * as z from 'zod'`.",
        },
        {
          selector: "BinaryExpression > MemberExpression[object.name=/^(error|failure|err|cause)$/][property.name='status']",
          message: 'Catch errors by kind (instanceof NotFound, Conflict, VendorFailed…), not by HTTP status.',
        },
        // Schemas are built on first use, not at a function's cold import (docs/performance.md,
        // "every function at 0 zod objects"): a z.lazy is itself a zod object, and so is a schema
        // declared at module level.
        {
          selector: "CallExpression[callee.object.name='z'][callee.property.name='lazy']",
          message: 'Use lazySchema (shared/platform/http/schemas.ts): a z.lazy is a zod object built at import. Only a schema that refers to itself needs z.lazy (inside a lazySchema).',
        },
        {
          selector:
            ":matches(Program > VariableDeclaration, Program > ExportNamedDeclaration > VariableDeclaration) > VariableDeclarator:matches([init.callee.object.name='z'], [init.callee.object.callee.object.name='z'], [init.callee.object.callee.object.callee.object.name='z'])",
          message: 'A schema at module level is built at every cold import: wrap it in lazySchema(() => ...) (shared/platform/http/schemas.ts), or make it a function.',
        },
      ],
    },
  })),
  // A domain reaches another only through an index.ts: the domain's own
  // (`../<domain>/index.ts`) or one of its sub-folders' (`../<domain>/<sub-folder>/index.ts`,
  // the narrow entries such as agents/lookups/ among them: docs/architecture.md), and never the
  // local runtime or the route table. Import paths are relative, so the patterns depend on how
  // deep the importing file sits in its domain: one block per depth.
  ...DOMAINS.flatMap((domain) =>
    DOMAIN_DEPTHS.map((depth) => {
      const up = '\\.\\./'.repeat(depth + 1);
      return {
        files: [`shared/${domain}/${'*/'.repeat(depth)}*`],
        rules: {
          'no-restricted-imports': [
            'error',
            {
              patterns: [
                {
                  regex: `^${up}(?!platform/|vendors/|${domain}/)[\\w-]+/(?!index\\.ts$|[\\w-]+/index\\.ts$)`,
                  message: `Import another domain through its index.ts or a sub-folder's index.ts (../<domain>/index.ts, ../<domain>/<sub-folder>/index.ts) (from ${domain}).`,
                },
                { regex: `^${up}\\.\\./`, message: 'A domain never imports outside shared/ (local stand-ins are injected).' },
                { regex: `^${up}(route-table|openapi)\\.ts$`, message: 'The route table sits above the domains.' },
                {
                  regex: '(^|/)store/db\\.ts$',
                  message: 'Reach the table through shared/platform/store/table.ts (or an entity), not the client.',
                },
              ],
            },
          ],
        },
      };
    }),
  ),
  {
    files: ['local/**', 'scripts/**', 'bench/**', 'test/**', 'worker/test/**', 'bin/**'],
    rules: { 'no-console': 'off' },
  },
  {
    // Response bodies in tests are arbitrary JSON read by assertions.
    files: ['test/**', 'worker/test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
