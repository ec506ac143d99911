import { describe, expect, it } from 'vitest';
import { bundledInputs } from '../support/bundle.ts';
import { DOMAIN_ACCESS, DOMAIN_FILES, PHONE_METADATA_FILE } from '../../lib/parley-stack.ts';
import { DOMAINS } from '../../shared/platform/http/route.ts';

/**
 * Grants are declared by hand per function; this derives what the code needs from what
 * each function's bundle contains, so a domain that starts reading vendor credentials
 * cannot ship without the grant to read them (it would fail only once deployed).
 */
async function bundledModules(domain: string): Promise<string[]> {
  return bundledInputs(`functions/${domain}.ts`);
}

describe('function grants match the code they bundle', () => {
  it.each([...DOMAINS])('%s reads the vendor secret only if granted', async (domain) => {
    const readsVendorSettings = (await bundledModules(domain)).includes('shared/platform/aws/secrets.ts');
    expect(DOMAIN_ACCESS[domain].vendorSecret === 'read', `${domain} bundles shared/platform/aws/secrets.ts: ${readsVendorSettings}`).toBe(
      readsVendorSettings,
    );
  });

  // The modules that call objectStore() (the recordings bucket); the object store module itself
  // also serves the knowledge-base bucket (knowledgeBaseObjectStore), granted apart below.
  const RECORDINGS_USERS = ['shared/calls/recordings.ts', 'shared/calls/scrubbing.ts'];
  it.each([...DOMAINS])('%s may use the recordings bucket exactly when it bundles what writes recordings', async (domain) => {
    const modules = await bundledModules(domain);
    const usesRecordings = RECORDINGS_USERS.some((module) => modules.includes(module));
    expect(DOMAIN_ACCESS[domain].recordings === 'readWrite', `${domain} bundles ${RECORDINGS_USERS.join(' or ')}: ${usesRecordings}`).toBe(usesRecordings);
  });

  it.each([...DOMAINS])('%s may use the knowledge-base bucket exactly when it bundles the knowledge-base store', async (domain) => {
    const usesKnowledgeBases = (await bundledModules(domain)).includes('shared/knowledge-bases/store.ts');
    expect(DOMAIN_ACCESS[domain].knowledgeBases === 'readWrite', `${domain} bundles shared/knowledge-bases/store.ts: ${usesKnowledgeBases}`).toBe(usesKnowledgeBases);
  });

  it.each([...DOMAINS])('%s ships the phone metadata file exactly when it bundles the phone module', async (domain) => {
    const readsPhoneMetadata = (await bundledModules(domain)).includes('shared/platform/phone.ts');
    expect((DOMAIN_FILES[domain] ?? []).includes(PHONE_METADATA_FILE), `${domain} bundles shared/platform/phone.ts: ${readsPhoneMetadata}`).toBe(
      readsPhoneMetadata,
    );
  });
});
