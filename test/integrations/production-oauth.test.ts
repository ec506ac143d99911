import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Principal } from '../../shared/platform/auth/gate.ts';
import { fakeSecretsManager } from '../support/fake-secrets-manager.ts';
import { useProductionSettings } from '../support/production-settings.ts';

/*
 * The built-in mock OAuth provider connects anyone to a made-up account. A production
 * deployment without a provider's client must not fall back to it: starting a connection
 * is a 503 naming the missing settings (as payments without Stripe), the providers list
 * says the provider is unavailable, and the mock's consent and token routes are not
 * served. Settings are read at load, so the modules are loaded fresh under production
 * settings; the vendor settings come from a fake Secrets Manager, as in AWS.
 */
const secrets = await fakeSecretsManager();
const restore = useProductionSettings();
vi.resetModules();
const vendorSettings = await import('../../shared/platform/aws/secrets.ts');
const oauth = await import('../../shared/integrations/oauth.ts');
const providers = await import('../../shared/vendors/oauth/providers.ts');
restore();
afterAll(() => vi.resetModules());

beforeEach(() => {
  secrets.values = {};
  // A fresh reader each test: the vendor secret is otherwise reused for a minute.
  vendorSettings.useSecretsManagerEndpoint(secrets.url);
});

const principal = { workspaceId: 'ws_0123456789abcdef01234567' } as Principal;

describe('OAuth providers in production without their client', () => {
  it.each([
    ['hubspot', { target: 'crm' as const, provider: 'hubspot' as const }, 'HUBSPOT'],
    ['google_drive', { target: 'kb_sync' as const, provider: 'google_drive' as const, knowledge_base_id: 'knowledge_base_1', sync_config: { folder_id: 'f1' } }, 'GOOGLE_DRIVE'],
    ['sharepoint', { target: 'app' as const, provider: 'sharepoint' as const }, 'SHAREPOINT'],
    ['notion', { target: 'kb_sync' as const, provider: 'notion' as const, knowledge_base_id: 'knowledge_base_1', sync_config: { page_id: 'p1' } }, 'NOTION'],
  ])('refuses to start a %s connection with 503 naming the missing setting, instead of the mock', async (name, input, prefix) => {
    await expect(oauth.startAuthorization(principal, input)).rejects.toMatchObject({
      status: 503,
      message: `OAuth for ${name} is not configured on this deployment: set ${prefix}_OAUTH_CLIENT_ID (and ${prefix}_OAUTH_CLIENT_SECRET) in the vendor settings`,
    });
  });

  it('lists such providers as unavailable, never as the mock; a configured one as the vendor', async () => {
    secrets.values = { HUBSPOT_OAUTH_CLIENT_ID: 'hub-client', HUBSPOT_OAUTH_CLIENT_SECRET: 'hub-secret' };
    const listed = await oauth.listProviders();
    expect(listed.redirect_uri).toBe('https://api.parley.ai/oauth/callback');
    for (const provider of listed.providers) {
      expect(provider, provider.provider).toMatchObject(provider.provider === 'hubspot' ? { mock: false, available: true, pkce: false } : { mock: false, available: false });
    }
    const hubspot = await providers.resolveProvider('hubspot');
    expect(hubspot).toMatchObject({ mock: false, clientId: 'hub-client', authorizeUrl: 'https://app.hubspot.com/oauth/authorize' });
  });

  it('does not serve the mock provider\'s consent page or token endpoint (404)', async () => {
    await expect(oauth.mockAuthorizePage({ response_type: 'code', client_id: 'parley-mock-hubspot' })).rejects.toMatchObject({
      status: 404,
      message: 'Route GET /oauth/mock/authorize not found',
    });
    await expect(oauth.mockTokenHttp('grant_type=refresh_token&client_id=parley-mock-hubspot')).rejects.toMatchObject({
      status: 404,
      message: 'Route POST /oauth/mock/token not found',
    });
  });
});
