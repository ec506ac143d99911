import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bundledInputs } from '../support/bundle.ts';
import type { WorkerEntries } from '../../lib/bundling.ts';
import { EXTRACT_WORKER, FUNCTIONS as MANIFEST, PHONE_METADATA_FILE, type FunctionName } from '../../lib/functions.ts';
import type { ParleyAccess } from '../../lib/parley-function.ts';
import { JOBS, type JobName } from '../../shared/jobs.ts';
import type { QueueName } from '../../shared/platform/aws/queue.ts';

/**
 * Grants are declared by hand per function; this derives what the code needs from what
 * each function's bundle (and its worker scripts', lib/bundling.ts) contains. Every function (domains, jobs, the WebSocket monitor)
 * and every kind of grant is held to least privilege: no grant without bundled code that
 * uses it. Where a module's presence means the function uses it (the store client, the
 * vendor settings, recordings, knowledge bases, the phone module, the queue that triggers
 * a job), the grant must also be there, so a function that starts reading vendor
 * credentials cannot ship without the grant (it would fail only once deployed). Envelope
 * encryption and queue sends are bundled far more widely than they are called (the
 * webhooks module, say, is in most bundles), so for those the test holds only the first
 * direction.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

type FunctionRow = [FunctionName, ParleyAccess, readonly string[], WorkerEntries];
/** Every function of the manifest (lib/functions.ts): its grants and what ships beside its bundle. */
const FUNCTIONS: FunctionRow[] = MANIFEST.map((spec): FunctionRow => [spec.name, spec.access, spec.files ?? [], spec.workers ?? {}]);
const workersOf = new Map(FUNCTIONS.map(([name, , , workers]) => [name as string, workers]));

const bundles = new Map<string, Promise<string[]>>();
/** The project files bundled from an entry, built once per entry for the whole file. */
function inputsOf(entry: string): Promise<string[]> {
  let modules = bundles.get(entry);
  if (!modules) {
    modules = bundledInputs(entry);
    bundles.set(entry, modules);
  }
  return modules;
}
/** The project files in a function's asset: its bundle and its worker scripts'. */
async function bundledModules(name: string): Promise<string[]> {
  const entries = [`functions/${name}.ts`, ...Object.values(workersOf.get(name) ?? {})];
  return [...new Set((await Promise.all(entries.map((entry) => inputsOf(entry)))).flat())];
}

const QUEUE_OPTION: Record<QueueName, keyof ParleyAccess> = {
  webhooks: 'webhookQueue',
  'call-steps': 'callStepsQueue',
  'contact-jobs': 'contactJobsQueue',
  'export-jobs': 'exportJobsQueue',
  'integration-jobs': 'integrationJobsQueue',
  'kb-jobs': 'kbJobsQueue',
};

/** The queues a bundle's own code sends to: `queueNamed('<queue>')`, `sendAt('<queue>', …)`, `webhookQueue()`. */
async function queuesSentTo(name: string): Promise<Set<QueueName>> {
  const sent = new Set<QueueName>();
  for (const module of await bundledModules(name)) {
    if (!module.startsWith('shared/') || module === 'shared/platform/aws/queue.ts') continue;
    const source = readFileSync(`${ROOT}${module}`, 'utf8');
    for (const match of source.matchAll(/\b(?:queueNamed|sendAt)\('([a-z-]+)'/g)) sent.add(match[1] as QueueName);
    if (/\bwebhookQueue\(\)/.test(source)) sent.add('webhooks');
  }
  return sent;
}

// The modules that call objectStore() for recordings; the object store module itself also
// serves the knowledge-base bucket (knowledgeBaseObjectStore) and account objects.
const RECORDINGS_USERS = ['shared/calls/artifacts/recordings.ts', 'shared/calls/artifacts/scrubbing.ts'];
const ACCOUNT_OBJECT_USERS = ['shared/account-data/assets.ts', 'shared/account-data/exports.ts'];

describe('function grants match the code they bundle', { timeout: 60_000 }, () => {
  it.each(FUNCTIONS)('%s has the table exactly when it bundles the store client', async (name, access) => {
    const usesTable = (await bundledModules(name)).includes('shared/platform/store/db.ts');
    expect(access.table !== undefined, `${name} bundles shared/platform/store/db.ts: ${usesTable}`).toBe(usesTable);
  });

  it.each(FUNCTIONS)('%s may use the key directly only when it bundles envelope encryption', async (name, access) => {
    const seals = (await bundledModules(name)).includes('shared/platform/crypto/envelope.ts');
    if ((access.key ?? []).length > 0) expect(seals, `${name} has a key grant but bundles no shared/platform/crypto/envelope.ts`).toBe(true);
  });

  it.each(FUNCTIONS)('%s may send only to queues its code sends to', async (name, access) => {
    const sent = await queuesSentTo(name);
    for (const [queue, option] of Object.entries(QUEUE_OPTION) as [QueueName, keyof ParleyAccess][]) {
      const granted = ((access[option] as readonly string[] | undefined) ?? []).includes('send');
      if (granted) expect(sent.has(queue), `${name} may send to ${queue} but no bundled code does`).toBe(true);
    }
  });

  it.each(FUNCTIONS)('%s consumes exactly the queue that triggers it', (name, access) => {
    const job = JOBS.find((candidate) => candidate.name === (name as JobName));
    const trigger = job?.trigger.kind === 'queue' ? job.trigger.queue : undefined;
    for (const [queue, option] of Object.entries(QUEUE_OPTION) as [QueueName, keyof ParleyAccess][]) {
      const consumes = ((access[option] as readonly string[] | undefined) ?? []).includes('consume');
      expect(consumes, `${name} is triggered by ${trigger ?? 'no queue'}`).toBe(trigger === queue);
    }
  });

  it.each(FUNCTIONS)('%s reads the vendor secret only if granted', async (name, access) => {
    const readsVendorSettings = (await bundledModules(name)).includes('shared/platform/aws/secrets.ts');
    expect(access.vendorSecret === 'read', `${name} bundles shared/platform/aws/secrets.ts: ${readsVendorSettings}`).toBe(readsVendorSettings);
  });

  it.each(FUNCTIONS)('%s may use the recordings bucket exactly when it bundles what writes recordings', async (name, access) => {
    const modules = await bundledModules(name);
    const usesRecordings = RECORDINGS_USERS.some((module) => modules.includes(module));
    expect(access.recordings === 'readWrite', `${name} bundles ${RECORDINGS_USERS.join(' or ')}: ${usesRecordings}`).toBe(usesRecordings);
  });

  it.each(FUNCTIONS)('%s may use exports and assets exactly when it bundles what writes them', async (name, access) => {
    const modules = await bundledModules(name);
    const usesAccountObjects = ACCOUNT_OBJECT_USERS.some((module) => modules.includes(module));
    expect(access.accountObjects === 'readWrite', `${name} bundles ${ACCOUNT_OBJECT_USERS.join(' or ')}: ${usesAccountObjects}`).toBe(usesAccountObjects);
  });

  it.each(FUNCTIONS)('%s may use presigned uploads exactly when it bundles them or the workspace purge', async (name, access) => {
    const modules = await bundledModules(name);
    const usesUploads = ['shared/platform/uploads.ts', 'shared/members/purge.ts'].some((module) => modules.includes(module));
    expect(access.uploads === 'readWrite', `${name} bundles shared/platform/uploads.ts or shared/members/purge.ts: ${usesUploads}`).toBe(usesUploads);
  });

  it.each(FUNCTIONS)('%s may use the knowledge-base bucket exactly when it bundles the knowledge-base store or the workspace purge', async (name, access) => {
    const modules = await bundledModules(name);
    // The purge of a deleted workspace (export-jobs) deletes its knowledge-base objects.
    const usesKnowledgeBases = ['shared/knowledge-bases/store.ts', 'shared/members/purge.ts'].some((module) => modules.includes(module));
    expect(access.knowledgeBases === 'readWrite', `${name} bundles shared/knowledge-bases/store.ts or shared/members/purge.ts: ${usesKnowledgeBases}`).toBe(usesKnowledgeBases);
  });

  it.each(FUNCTIONS)('%s ships the phone metadata file exactly when it bundles the phone module', async (name, _access, files) => {
    const readsPhoneMetadata = (await bundledModules(name)).includes('shared/platform/telephony/phone.ts');
    expect(files.includes(PHONE_METADATA_FILE), `${name} bundles shared/platform/telephony/phone.ts: ${readsPhoneMetadata}`).toBe(readsPhoneMetadata);
  });

  it.each(FUNCTIONS)('%s ships the extraction worker exactly when its bundle can start it', async (name, _access, _files, workers) => {
    const startsExtraction = (await inputsOf(`functions/${name}.ts`)).includes('shared/knowledge-bases/extract.ts');
    expect(workers, `${name} bundles shared/knowledge-bases/extract.ts: ${startsExtraction}`).toEqual(startsExtraction ? EXTRACT_WORKER : {});
  });
});
