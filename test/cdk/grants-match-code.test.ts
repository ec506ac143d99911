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

  it.each([...DOMAINS])('%s may use the recordings bucket exactly when it bundles the object store', async (domain) => {
    const usesObjects = (await bundledModules(domain)).includes('shared/platform/aws/object-store.ts');
    expect(DOMAIN_ACCESS[domain].recordings === 'readWrite', `${domain} bundles shared/platform/aws/object-store.ts: ${usesObjects}`).toBe(usesObjects);
  });

  it.each([...DOMAINS])('%s ships the phone metadata file exactly when it bundles the phone module', async (domain) => {
    const readsPhoneMetadata = (await bundledModules(domain)).includes('shared/platform/phone.ts');
    expect((DOMAIN_FILES[domain] ?? []).includes(PHONE_METADATA_FILE), `${domain} bundles shared/platform/phone.ts: ${readsPhoneMetadata}`).toBe(
      readsPhoneMetadata,
    );
  });
});
