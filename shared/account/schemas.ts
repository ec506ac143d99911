import * as z from 'zod';
import { canonicalIp } from '../platform/auth/ip.ts';
import { SCOPES } from '../platform/auth/scopes.ts';
import { destinationUrl, displayName, epochMs, idOf, lazySchema } from '../platform/http/schemas.ts';

/*
 * Request and response schemas are built on first use (z.lazy): a cold start builds only
 * the schemas of the route it serves, not the whole module's (docs/performance.md).
 */

const MAX_ALLOWED_IPS = 50;
const MAX_ALLOWED_ORIGINS = 50;
const MAX_ALLOWED_AGENTS = 100;

const scopeList = () =>
  z
  .array(z.enum(SCOPES))
  .max(SCOPES.length * 4)
  .transform((scopes) => [...new Set(scopes)]);

/** Exact addresses only, canonicalised and de-duplicated when written. */
const allowedIps = () =>
  z
  .array(
    z
      .string()
      .max(64)
      .transform((value, ctx) => {
        const ip = canonicalIp(value);
        if (!ip) {
          ctx.addIssue({
            code: 'custom',
            message: value.includes('/')
              ? 'Must be an exact IPv4 or IPv6 address (CIDR ranges are not allowed)'
              : 'Must be an exact IPv4 or IPv6 address',
          });
          return z.NEVER;
        }
        return ip;
      }),
  )
  .max(MAX_ALLOWED_IPS)
  .transform((ips) => [...new Set(ips)]);

const rateLimitPerMinute = () => z.number().int().min(1).max(100_000);

/** Browser origins, `scheme://host[:port]`, lower-cased, no path. */
const allowedOrigins = () =>
  z
  .array(
    z
      .string()
      .max(300)
      .transform((value, ctx) => {
        let origin: string | undefined;
        try {
          const url = new URL(value);
          if ((url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value.toLowerCase()) {
            origin = url.origin;
          }
        } catch {
          origin = undefined;
        }
        if (!origin) {
          ctx.addIssue({ code: 'custom', message: 'Must be an origin such as https://example.com' });
          return z.NEVER;
        }
        return origin;
      }),
  )
  .max(MAX_ALLOWED_ORIGINS)
  .transform((origins) => [...new Set(origins)]);

/** The agents a public key may start (voice or chat agents of the workspace), de-duplicated; empty: any. */
const allowedAgentIds = () =>
  z
  .array(z.string().regex(/^(?:agent|chat_agent)_[0-9a-f]{24}$/, 'Must be an agent or chat agent ID (agent_ or chat_agent_ followed by 24 hex characters)'))
  .max(MAX_ALLOWED_AGENTS)
  .transform((ids) => [...new Set(ids)]);

const apiKeyObject = () =>
  z.object({
    api_key_id: z.string(),
    name: z.string(),
    masked_key: z.string(),
    is_webhook_key: z.boolean(),
    created_timestamp: epochMs(),
    last_used_timestamp: epochMs().nullable(),
    scopes: z.array(z.enum(SCOPES)),
    allowed_ips: z.array(z.string()),
    rate_limit_per_minute: z.number().int(),
  });
export const ApiKey = lazySchema(apiKeyObject);
export type ApiKey = z.infer<typeof ApiKey>;

export const CreatedApiKey = lazySchema(() =>
  apiKeyObject().extend({ api_key: z.string().describe('The secret; shown only here') }),
);

export const ApiKeyInfo = lazySchema(() =>
  apiKeyObject().extend({
    workspace_id: z.string(),
    api_key_name: z.string().nullable().describe("The key's name (retell-sdk identity.retrieve)"),
    org_name: z.string().describe("The workspace's name (retell-sdk identity.retrieve)"),
  }),
);

export const CreateApiKeyBody = lazySchema(() =>
  z.object({
    name: displayName(),
    is_webhook_key: z.boolean().default(false),
    scopes: scopeList().default([]),
    allowed_ips: allowedIps().default([]),
    rate_limit_per_minute: rateLimitPerMinute().optional(),
  }),
);
export type CreateApiKeyInput = z.infer<typeof CreateApiKeyBody>;

export const UpdateApiKeyBody = lazySchema(() =>
  z.object({
    name: displayName().optional(),
    is_webhook_key: z
      .literal(true, { error: 'Set is_webhook_key on another key to move the webhook flag' })
      .optional(),
    scopes: scopeList().optional(),
    allowed_ips: allowedIps().optional(),
    rate_limit_per_minute: rateLimitPerMinute().nullable().optional().describe('null restores the server default'),
  }),
);
export type UpdateApiKeyInput = z.infer<typeof UpdateApiKeyBody>;

const publicKeyObject = () =>
  z.object({
    public_key_id: z.string(),
    name: z.string(),
    masked_key: z.string(),
    allowed_origins: z.array(z.string()),
    allowed_agent_ids: z.array(z.string()).describe('The agents this key may start calls and chats with; empty: any agent of the workspace'),
    created_timestamp: epochMs(),
    last_used_timestamp: epochMs().nullable(),
  });
export const PublicKey = lazySchema(publicKeyObject);
export type PublicKey = z.infer<typeof PublicKey>;

export const CreatedPublicKey = lazySchema(() => publicKeyObject().extend({ public_key: z.string() }));

export const CreatePublicKeyBody = lazySchema(() =>
  z.object({
    name: displayName(),
    allowed_origins: allowedOrigins().default([]),
    allowed_agent_ids: allowedAgentIds().default([]),
  }),
);
export type CreatePublicKeyInput = z.infer<typeof CreatePublicKeyBody>;

export const UpdatePublicKeyBody = lazySchema(() =>
  z.object({
    name: displayName().optional(),
    allowed_origins: allowedOrigins().optional(),
    allowed_agent_ids: allowedAgentIds().optional().describe('[] allows every agent again'),
  }),
);
export type UpdatePublicKeyInput = z.infer<typeof UpdatePublicKeyBody>;

export const Workspace = lazySchema(() =>
  z.object({
    workspace_id: z.string(),
    name: z.string(),
    webhook_url: z.string().nullable(),
    concurrency_limit: z.number().int(),
    created_timestamp: epochMs(),
  }),
);
export type Workspace = z.infer<typeof Workspace>;

export const UpdateWorkspaceBody = lazySchema(() =>
  z.object({
    name: displayName().optional(),
    webhook_url: destinationUrl().nullable().optional().describe('null removes the workspace webhook URL'),
    concurrency_limit: z.number().int().min(1).max(1000).optional(),
  }),
);
export type UpdateWorkspaceInput = z.infer<typeof UpdateWorkspaceBody>;

export const WorkspaceSettings = lazySchema(() =>
  z.object({
    webhook_timeout_ms: z.number().int(),
  }),
);
export type WorkspaceSettings = z.infer<typeof WorkspaceSettings>;

export const UpdateWorkspaceSettingsBody = lazySchema(() =>
  z.object({
    webhook_timeout_ms: z.number().int().min(1000).max(60_000).nullable().optional().describe('null restores 10,000'),
  }),
);
export type UpdateWorkspaceSettingsInput = z.infer<typeof UpdateWorkspaceSettingsBody>;

const AUDIT_ACTIONS = [
  'api_key.create',
  'api_key.update',
  'api_key.delete',
  'public_key.create',
  'public_key.update',
  'public_key.delete',
  'workspace.update',
  'workspace.settings.update',
  'workspace.reliability.update',
  'privacy.delete_phone_number',
  'privacy.run_retention',
  // Members and access (shared/members).
  'member.create',
  'member.invite',
  'member.invite_revoke',
  'member.join',
  'member.update',
  'member.remove',
  'member.leave',
  'workspace.transfer',
  'workspace.delete',
  'sso.update',
  'sso.delete',
  'saml.update',
  'saml.delete',
  'scim.token_create',
  'scim.token_delete',
  // Money moved back by the payments provider (shared/billing/payments/stripe-events.ts).
  'billing.refund',
  'billing.dispute_hold',
  'billing.dispute_release',
  'billing.dispute_lost',
  // A change the assistant's tool made through the API (shared/conductor; `tool` names it).
  'conductor.tool_call',
] as const;

export const AuditEntry = lazySchema(() =>
  z.object({
    audit_log_id: z.string(),
    action: z.enum(AUDIT_ACTIONS),
    actor: z.object({
      type: z.enum(['api_key', 'member', 'scim', 'system']),
      id: z.string().nullable(),
      via: z.literal('conductor').optional().describe('Present when the assistant made the request, acting as this credential'),
      conductor_session_id: z.string().optional().describe("The assistant's session whose tool made the request"),
    }),
    target: z.object({ type: z.string(), id: z.string() }),
    changes: z.array(z.string()).describe('Names of the fields the action set'),
    tool: z.string().optional().describe('action conductor.tool_call: the assistant tool that made the change'),
    created_timestamp: epochMs(),
  }),
);
export type AuditEntry = z.infer<typeof AuditEntry>;

export const apiKeyIdParams = lazySchema(() => z.object({ id: idOf('apiKey', 'an API key ID') }));
export const publicKeyIdParams = lazySchema(() => z.object({ id: idOf('publicKey', 'a public key ID') }));
