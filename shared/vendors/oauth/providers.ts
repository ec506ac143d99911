import { vendorSetting } from '../../platform/aws/secrets.ts';
import { config, isProduction } from '../../platform/config.ts';
import { unavailable } from '../../platform/errors.ts';
import { trimTrailing } from '../../platform/text/text.ts';

/*
 * The OAuth provider table (spec: OAuth connection; wire names in NAMING.md): every
 * provider's authorize and token endpoints, its fixed scopes, whether it uses PKCE, the
 * values its token answer carries that Parley keeps, and its settings' prefix. One table,
 * so adding a provider is one entry.
 */

export const OAUTH_PROVIDERS = [
  'hubspot',
  'salesforce',
  'dynamics',
  'zoho',
  'gohighlevel',
  'calendly',
  'google_drive',
  'sharepoint',
  'notion',
] as const;
export type OAuthProviderName = (typeof OAUTH_PROVIDERS)[number];

/** Providers that connect with pasted credentials only (no OAuth). */
export const PASTED_PROVIDERS = ['cal_com', 'zendesk'] as const;
export type PastedProviderName = (typeof PASTED_PROVIDERS)[number];

type OAuthTarget = 'crm' | 'app' | 'kb_sync';

/** What the start request may say about the provider's tenant (spec: POST /oauth/start `options`). */
export interface ProviderOptions {
  instance_url?: string;
  tenant?: string;
  login_url?: string;
  accounts_url?: string;
}

/** A value from the token answer kept on the connection (spec: "Values returned with a token are kept"). */
export type KeptValue = 'instance_url' | 'api_domain' | 'location_id' | 'workspace_id';

export interface ProviderSpec {
  name: OAuthProviderName;
  /** Settings prefix: `<PREFIX>_OAUTH_CLIENT_ID` and the rest. */
  prefix: string;
  targets: readonly OAuthTarget[];
  pkce: boolean;
  scopes: readonly string[];
  /** Scopes that depend on the tenant (Dynamics: the organisation's own resource); `scopes` otherwise. */
  scopesFor?: (options: ProviderOptions) => readonly string[];
  /** Where the token answer holds each kept value (its own field name). */
  kept: Partial<Record<KeptValue, string>>;
  /** Tokens that never expire and come without a refresh token (notion). */
  neverRefreshed?: boolean;
  /** How the client authenticates at the token endpoint. */
  clientAuth: 'client_secret_post' | 'client_secret_basic';
  /** Extra authorize parameters the vendor needs (offline access, consent). */
  authorizeExtras?: Readonly<Record<string, string>>;
  /** The vendor endpoints, from the tenant options the start request gave. */
  endpoints: (options: ProviderOptions) => { authorize: string; token: string };
  /** The vendor's API base (CRM calls, tests of the credentials). */
  apiBase: (options: ProviderOptions, kept: Partial<Record<KeptValue, string>>) => string;
  /** Hosts a user-given URL option may name (SSRF: a tenant URL is never an arbitrary host). */
  allowedHostSuffixes?: readonly string[];
  /** Options the start request must give. */
  requiredOptions?: readonly (keyof ProviderOptions)[];
}

const microsoftTenant = (options: ProviderOptions, fallback: string) => encodeURIComponent(options.tenant ?? fallback);

export const PROVIDER_TABLE: Record<OAuthProviderName, ProviderSpec> = {
  hubspot: {
    name: 'hubspot',
    prefix: 'HUBSPOT',
    targets: ['crm', 'app'],
    pkce: false,
    scopes: ['oauth', 'crm.objects.contacts.read', 'crm.objects.contacts.write', 'crm.schemas.contacts.read'],
    kept: {},
    clientAuth: 'client_secret_post',
    endpoints: () => ({ authorize: 'https://app.hubspot.com/oauth/authorize', token: 'https://api.hubapi.com/oauth/v1/token' }),
    apiBase: () => 'https://api.hubapi.com',
  },
  salesforce: {
    name: 'salesforce',
    prefix: 'SALESFORCE',
    targets: ['crm', 'app'],
    pkce: true,
    scopes: ['api', 'refresh_token'],
    kept: { instance_url: 'instance_url' },
    clientAuth: 'client_secret_post',
    endpoints: (options) => {
      const login = options.login_url ?? 'https://login.salesforce.com';
      return { authorize: `${login}/services/oauth2/authorize`, token: `${login}/services/oauth2/token` };
    },
    apiBase: (_options, kept) => kept.instance_url ?? 'https://login.salesforce.com',
    allowedHostSuffixes: ['.salesforce.com', '.force.com'],
  },
  dynamics: {
    name: 'dynamics',
    prefix: 'DYNAMICS',
    targets: ['crm', 'app'],
    pkce: true,
    scopes: ['offline_access'],
    // A Dataverse token is for one organisation: its URL is the resource of the delegated scope.
    scopesFor: (options) => [...(options.instance_url ? [`${trimTrailing(options.instance_url, '/')}/user_impersonation`] : []), 'offline_access'],
    kept: {},
    clientAuth: 'client_secret_post',
    endpoints: (options) => {
      const tenant = microsoftTenant(options, 'organizations');
      return {
        authorize: `https://login.microsoftonline.com/${tenant}/oauth2/v2.0/authorize`,
        token: `https://login.microsoftonline.com/${tenant}/oauth2/v2.0/token`,
      };
    },
    apiBase: (options) => options.instance_url ?? '',
    allowedHostSuffixes: ['.dynamics.com'],
    requiredOptions: ['instance_url'],
  },
  zoho: {
    name: 'zoho',
    prefix: 'ZOHO',
    targets: ['crm', 'app'],
    pkce: false,
    scopes: ['ZohoCRM.modules.ALL', 'ZohoCRM.settings.fields.READ'],
    kept: { api_domain: 'api_domain' },
    clientAuth: 'client_secret_post',
    authorizeExtras: { access_type: 'offline', prompt: 'consent' },
    endpoints: (options) => {
      const accounts = options.accounts_url ?? 'https://accounts.zoho.com';
      return { authorize: `${accounts}/oauth/v2/auth`, token: `${accounts}/oauth/v2/token` };
    },
    apiBase: (_options, kept) => kept.api_domain ?? 'https://www.zohoapis.com',
    allowedHostSuffixes: ['.zoho.com', '.zoho.eu', '.zoho.in', '.zoho.com.au', '.zoho.jp', '.zoho.com.cn', '.zohocloud.ca', '.zoho.sa'],
  },
  gohighlevel: {
    name: 'gohighlevel',
    prefix: 'GOHIGHLEVEL',
    targets: ['crm', 'app'],
    pkce: false,
    scopes: ['contacts.readonly', 'contacts.write', 'locations.readonly', 'locations/customFields.readonly'],
    kept: { location_id: 'locationId' },
    clientAuth: 'client_secret_post',
    endpoints: () => ({
      authorize: 'https://marketplace.gohighlevel.com/oauth/chooselocation',
      token: 'https://services.leadconnectorhq.com/oauth/token',
    }),
    apiBase: () => 'https://services.leadconnectorhq.com',
  },
  calendly: {
    name: 'calendly',
    prefix: 'CALENDLY',
    targets: ['app'],
    pkce: true,
    scopes: ['default'],
    kept: {},
    clientAuth: 'client_secret_post',
    endpoints: () => ({ authorize: 'https://auth.calendly.com/oauth/authorize', token: 'https://auth.calendly.com/oauth/token' }),
    apiBase: () => 'https://api.calendly.com',
  },
  google_drive: {
    name: 'google_drive',
    prefix: 'GOOGLE_DRIVE',
    // kb_sync: a knowledge base's synced source; app: a knowledge app's search_documents tool.
    targets: ['kb_sync', 'app'],
    pkce: true,
    scopes: ['https://www.googleapis.com/auth/drive.readonly'],
    kept: {},
    clientAuth: 'client_secret_post',
    authorizeExtras: { access_type: 'offline', prompt: 'consent' },
    endpoints: () => ({ authorize: 'https://accounts.google.com/o/oauth2/v2/auth', token: 'https://oauth2.googleapis.com/token' }),
    apiBase: () => 'https://www.googleapis.com/drive/v3',
  },
  sharepoint: {
    name: 'sharepoint',
    prefix: 'SHAREPOINT',
    // kb_sync: a knowledge base's synced source; app: a knowledge app's search_documents tool.
    targets: ['kb_sync', 'app'],
    pkce: true,
    scopes: ['offline_access', 'Files.Read.All', 'Sites.Read.All'],
    kept: {},
    clientAuth: 'client_secret_post',
    endpoints: (options) => {
      const tenant = microsoftTenant(options, 'common');
      return {
        authorize: `https://login.microsoftonline.com/${tenant}/oauth2/v2.0/authorize`,
        token: `https://login.microsoftonline.com/${tenant}/oauth2/v2.0/token`,
      };
    },
    apiBase: () => 'https://graph.microsoft.com/v1.0',
  },
  notion: {
    name: 'notion',
    prefix: 'NOTION',
    // kb_sync: a knowledge base's synced source; app: a knowledge app's search_documents tool.
    targets: ['kb_sync', 'app'],
    pkce: false,
    scopes: [],
    kept: { workspace_id: 'workspace_id' },
    neverRefreshed: true,
    clientAuth: 'client_secret_basic',
    authorizeExtras: { owner: 'user' },
    endpoints: () => ({ authorize: 'https://api.notion.com/v1/oauth/authorize', token: 'https://api.notion.com/v1/oauth/token' }),
    apiBase: () => 'https://api.notion.com/v1',
  },
};

export const isOAuthProvider = (name: string): name is OAuthProviderName => (OAUTH_PROVIDERS as readonly string[]).includes(name);
export const isPastedProvider = (name: string): name is PastedProviderName => (PASTED_PROVIDERS as readonly string[]).includes(name);

/** The API's public base URL (the registered redirect URI is `{base}/oauth/callback`). */
export function publicBaseUrl(): string {
  return trimTrailing(config.PUBLIC_BASE_URL ?? `http://127.0.0.1:${config.PORT}`, '/');
}

export const redirectUri = (): string => `${publicBaseUrl()}/oauth/callback`;

/**
 * The built-in mock provider's endpoints and client (spec: without a client id, a provider
 * uses the mock). Outside production only: the mock connects anyone to a made-up account,
 * so a production deployment without a provider's client refuses to start its connections
 * (providerNotConfigured) and does not serve the mock's pages.
 */
export const MOCK_AUTHORIZE_PATH = '/oauth/mock/authorize';
export const MOCK_TOKEN_PATH = '/oauth/mock/token';
const mockClientId = (provider: OAuthProviderName) => `parley-mock-${provider}`;

/** A provider as this deployment uses it: the vendor (with its client) or the mock. */
export interface ResolvedProvider {
  spec: ProviderSpec;
  mock: boolean;
  pkce: boolean;
  clientId: string;
  clientSecret?: string;
  /** The scopes the authorize URL asks for. */
  scopes: readonly string[];
  authorizeUrl: string;
  tokenUrl: string;
}

/** 503 naming the missing settings: a production deployment has no client for the provider (as payments without Stripe). */
const providerNotConfigured = (name: OAuthProviderName) => {
  const prefix = PROVIDER_TABLE[name].prefix;
  return unavailable(`OAuth for ${name} is not configured on this deployment: set ${prefix}_OAUTH_CLIENT_ID (and ${prefix}_OAUTH_CLIENT_SECRET) in the vendor settings`, 3600);
};

/** How this deployment connects the provider: the vendor (a client id is set), the mock (outside production), or not at all. */
export async function providerMode(name: OAuthProviderName, production = isProduction): Promise<'vendor' | 'mock' | 'unconfigured'> {
  if (await vendorSetting(`${PROVIDER_TABLE[name].prefix}_OAUTH_CLIENT_ID`)) return 'vendor';
  return production ? 'unconfigured' : 'mock';
}

/**
 * The provider's client and endpoints from the vendor settings (Secrets Manager in AWS,
 * the environment locally): `<PREFIX>_OAUTH_CLIENT_ID/SECRET`, and the optional
 * `<PREFIX>_OAUTH_AUTHORIZE_URL/TOKEN_URL` overrides. No client id: the mock, always PKCE,
 * outside production; in production a 503 naming the settings. `mock` forces the mock (a
 * connection made in mock mode stays in it).
 */
export async function resolveProvider(name: OAuthProviderName, options: ProviderOptions = {}, forceMock = false): Promise<ResolvedProvider> {
  const spec = PROVIDER_TABLE[name];
  const clientId = forceMock ? undefined : await vendorSetting(`${spec.prefix}_OAUTH_CLIENT_ID`);
  if (!clientId && !forceMock && isProduction) throw providerNotConfigured(name);
  if (!clientId) {
    const base = publicBaseUrl();
    return {
      spec,
      mock: true,
      pkce: true,
      scopes: spec.scopesFor?.(options) ?? spec.scopes,
      clientId: mockClientId(name),
      authorizeUrl: `${base}${MOCK_AUTHORIZE_PATH}`,
      tokenUrl: `${base}${MOCK_TOKEN_PATH}`,
    };
  }
  const [clientSecret, authorizeOverride, tokenOverride] = await Promise.all([
    vendorSetting(`${spec.prefix}_OAUTH_CLIENT_SECRET`),
    vendorSetting(`${spec.prefix}_OAUTH_AUTHORIZE_URL`),
    vendorSetting(`${spec.prefix}_OAUTH_TOKEN_URL`),
  ]);
  const endpoints = spec.endpoints(options);
  return {
    spec,
    mock: false,
    pkce: spec.pkce,
    scopes: spec.scopesFor?.(options) ?? spec.scopes,
    clientId,
    clientSecret,
    authorizeUrl: authorizeOverride ?? endpoints.authorize,
    tokenUrl: tokenOverride ?? endpoints.token,
  };
}

/** The vendor API base for a connection (`<PREFIX>_API_BASE_URL` overrides it: a proxy, or a test's fake). */
export async function providerApiBase(name: OAuthProviderName, options: ProviderOptions, kept: Partial<Record<KeptValue, string>>): Promise<string> {
  const override = await vendorSetting(`${PROVIDER_TABLE[name].prefix}_API_BASE_URL`);
  return trimTrailing(override ?? PROVIDER_TABLE[name].apiBase(options, kept), '/');
}

/**
 * Checks the tenant options a user gave (400 text, or undefined when fine): URLs must be
 * https on the vendor's own domains, a tenant a plain name. The egress guard still checks
 * every address they resolve to.
 */
export function optionsProblem(name: OAuthProviderName, options: ProviderOptions): string | undefined {
  const spec = PROVIDER_TABLE[name];
  for (const required of spec.requiredOptions ?? []) {
    if (!options[required]) return `options.${required} is required for ${name}`;
  }
  if (options.tenant !== undefined && !/^[A-Za-z0-9.-]{1,128}$/.test(options.tenant)) return 'options.tenant: must be a tenant id or domain';
  for (const field of ['instance_url', 'login_url', 'accounts_url'] as const) {
    const value = options[field];
    if (value === undefined) continue;
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return `options.${field}: must be a URL`;
    }
    const suffixes = spec.allowedHostSuffixes ?? [];
    const host = url.hostname.toLowerCase();
    if (url.protocol !== 'https:' || url.username || url.password || (url.pathname !== '/' && url.pathname !== '') || url.search) {
      return `options.${field}: must be an https origin (no path, query or credentials)`;
    }
    if (!suffixes.some((suffix) => host.endsWith(suffix))) {
      return `options.${field}: must be a host under ${suffixes.length ? suffixes.join(', ') : `${name}'s own domain`}`;
    }
  }
  return undefined;
}
