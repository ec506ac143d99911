import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PRODUCTION_REQUIRED_SETTINGS, settingNames } from '../../shared/platform/config.ts';
import { SETTING_DOCS, settingsReference, VENDOR_SETTING_DOCS, WORKER_SETTING_DOCS, withSettingsReference } from '../../shared/platform/settings-docs.ts';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

describe('the settings reference', () => {
  it('is what README.md shows (npm run docs:settings writes it)', () => {
    const readme = readFileSync('README.md', 'utf8');
    expect(withSettingsReference(readme)).toBe(readme);
  });

  it('documents exactly the settings the schema reads, and marks the ones production requires', () => {
    expect(Object.keys(SETTING_DOCS).sort()).toEqual(settingNames().sort());
    const reference = settingsReference();
    for (const name of PRODUCTION_REQUIRED_SETTINGS) expect(reference).toContain(`| \`${name}\` (†) |`);
    expect(reference.match(/\(†\) \|/g)).toHaveLength(PRODUCTION_REQUIRED_SETTINGS.length);
    // Each default shown is the schema's own.
    expect(reference).toContain('| `RATE_LIMIT_PER_KEY` | `600` |');
    expect(reference).toContain('| `SIP_IP_RANGES` (†) | `127.0.0.1/32` |');
    expect(reference).toContain('| `EGRESS_IP_ADDRESSES` | empty |');
  });

  it('requires in production every queue the stack gives the functions', () => {
    expect(PRODUCTION_REQUIRED_SETTINGS).toEqual(expect.arrayContaining(['INTEGRATION_JOBS_QUEUE_URL', 'EXPORT_JOBS_QUEUE_URL', 'CONTACT_JOBS_QUEUE_URL']));
    const queues = Object.keys(SETTING_DOCS).filter((name) => name.endsWith('_QUEUE_URL'));
    expect(queues.filter((name) => !(PRODUCTION_REQUIRED_SETTINGS as readonly string[]).includes(name))).toEqual([]);
  });

  it('documents every vendor setting the code reads by name, and every worker process setting', () => {
    const read = new Set<string>();
    for (const file of [...sources('shared'), ...sources('worker/src')]) {
      for (const match of readFileSync(file, 'utf8').matchAll(/(?:vendorSetting|read)\('([A-Z][A-Z0-9_]+)'\)/g)) read.add(match[1]!);
    }
    expect(read.size).toBeGreaterThan(15);
    expect([...read].filter((name) => !(name in VENDOR_SETTING_DOCS)).sort()).toEqual([]);
    // The worker's process schema, as its source declares it.
    const own = [...readFileSync('worker/src/config.ts', 'utf8').matchAll(/^\s+(WORKER_[A-Z_]+): /gm)].map((match) => match[1]!);
    expect(own.length).toBeGreaterThan(4);
    expect(Object.keys(WORKER_SETTING_DOCS).sort()).toEqual(own.sort());
  });
});
