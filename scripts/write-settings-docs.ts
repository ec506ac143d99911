/**
 * Writes README.md's settings section from shared/platform/settings-docs.ts (the settings'
 * descriptions) and shared/platform/config.ts (their defaults and which production requires).
 * `npm run docs:settings`; test/platform/settings-docs.test.ts fails while README differs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { withSettingsReference } from '../shared/platform/settings-docs.ts';

const path = new URL('../README.md', import.meta.url);
const before = readFileSync(path, 'utf8');
const after = withSettingsReference(before);
if (after === before) console.log('README.md settings: up to date');
else {
  writeFileSync(path, after);
  console.log('README.md settings: written');
}
