import * as z from 'zod';
import { ROLES } from '../platform/auth/roles.ts';
import { epochMs, idOf, lazySchema, queryInt, refuseDestination } from '../platform/http/schemas.ts';

/*
 * The members domain's API contract. The spec names the routes (Members and access) and
 * the roles, not the shapes: these are ours, in the style of the rest of the API.
 */

const email = () => z.email().max(254).transform((value) => value.toLowerCase());
const role = () => z.enum(ROLES);

export const Member = lazySchema(() =>
  z.object({
    member_id: z.string(),
    email: z.string(),
    name: z.string().nullable(),
    role: role(),
    active: z.boolean().describe('false: deprovisioned (SCIM); it cannot sign in'),
    is_owner: z.boolean(),
    source: z.enum(['api', 'invite', 'sso', 'saml', 'scim', 'cli']),
    created_timestamp: epochMs(),
  }),
);
export type Member = z.infer<typeof Member>;

export const memberIdParams = lazySchema(() => z.object({ id: idOf('member', 'a member ID') }));
export const inviteIdParams = lazySchema(() => z.object({ id: idOf('invite', 'an invite ID') }));
export const workspaceIdParams = lazySchema(() => z.object({ workspace_id: idOf('workspace', 'a workspace ID') }));

export const AddMemberBody = lazySchema(() =>
  z.object({ email: email(), role: role().default('member'), name: z.string().trim().min(1).max(200).optional() }),
);
export const UpdateMemberBody = lazySchema(() =>
  z.object({ role: role().optional(), name: z.string().trim().min(1).max(200).nullable().optional() }),
);

export const Invite = lazySchema(() =>
  z.object({
    invite_id: z.string(),
    email: z.string(),
    role: role(),
    created_timestamp: epochMs(),
    expires_timestamp: epochMs(),
  }),
);
export const CreatedInvite = lazySchema(() =>
  Invite.and(z.object({ token: z.string().describe('Shown once: the invitee accepts with it (POST /auth/invites/accept)') })),
);
export const CreateInviteBody = lazySchema(() => z.object({ email: email(), role: role().default('member') }));
export const AcceptInviteBody = lazySchema(() => z.object({ token: z.string().min(1).max(300), name: z.string().trim().min(1).max(200).optional() }));

export const TransferBody = lazySchema(() => z.object({ member_id: idOf('member', 'a member ID') }));
export const DeleteWorkspaceBody = lazySchema(() => z.object({ confirm: z.string().describe("The workspace's name, exactly") }));

export const SessionView = lazySchema(() =>
  z.object({
    token_type: z.literal('Bearer'),
    session_token: z.string().describe('Send as Authorization: Bearer, or use the parley_session cookie set with it'),
    expires_in: z.number().int(),
    refresh_token: z.string().describe('Single use: each refresh answers a new one; a reused one signs the session out'),
    csrf_token: z.string().describe('Echo in x-csrf-token on writes authenticated by the cookie'),
    workspace_id: z.string(),
    member: Member,
  }),
);
export const RefreshBody = lazySchema(() => z.object({ refresh_token: z.string().min(1).max(300) }));

export const SsoConfig = lazySchema(() =>
  z.object({
    enabled: z.boolean(),
    issuer: z.string().nullable(),
    client_id: z.string().nullable(),
    client_secret: z.string().nullable().describe('Always ******** once set'),
    allowed_domains: z.array(z.string()),
    default_role: role(),
    redirect_uri: z.string().describe('Register this at the identity provider'),
    updated_timestamp: epochMs().nullable(),
  }),
);
export const PutSsoBody = lazySchema(() =>
  z.object({
    // Parley fetches the issuer's discovery document, keys and tokens.
    issuer: z.url({ protocol: /^https?$/ }).max(500).superRefine(refuseDestination()),
    client_id: z.string().min(1).max(500),
    client_secret: z.string().min(1).max(2000),
    allowed_domains: z.array(z.string().trim().toLowerCase().regex(/^[a-z0-9.-]+\.[a-z]{2,}$/, 'Must be a domain name')).min(1).max(50),
    default_role: role().default('member'),
  }),
);

export const SamlConfig = lazySchema(() =>
  z.object({
    enabled: z.boolean(),
    idp_entity_id: z.string().nullable(),
    sso_url: z.string().nullable(),
    certificate_fingerprint: z.string().nullable().describe('SHA-256 of the IdP signing certificate'),
    allowed_domains: z.array(z.string()),
    default_role: role(),
    sp_entity_id: z.string(),
    acs_url: z.string().describe('Assertion consumer service: the IdP posts SAMLResponse here'),
    allow_idp_initiated: z.boolean().describe('Unsolicited (IdP-initiated) responses are accepted; false: only answers to our AuthnRequests'),
    updated_timestamp: epochMs().nullable(),
  }),
);
export const PutSamlBody = lazySchema(() =>
  z.object({
    idp_entity_id: z.string().min(1).max(500).optional(),
    sso_url: z.url({ protocol: /^https?$/ }).max(1000).optional(),
    certificate: z.string().min(1).max(20_000).optional().describe('PEM or base64 DER of the IdP signing certificate'),
    metadata_xml: z.string().min(1).max(200_000).optional().describe('IdP metadata: entity id, SSO URL and certificate are read from it'),
    allowed_domains: z.array(z.string().trim().toLowerCase().regex(/^[a-z0-9.-]+\.[a-z]{2,}$/, 'Must be a domain name')).max(50).default([]),
    default_role: role().default('member'),
    allow_idp_initiated: z.boolean().default(true),
  }),
);
export const SamlAcsBody = lazySchema(() => z.object({ SAMLResponse: z.string().min(1).max(500_000), RelayState: z.string().max(2000).optional() }));
export const SamlConfirmBody = lazySchema(() => z.object({ confirm: z.string().min(1).max(100) }));

/** A path on the dashboard: one leading `/`, no scheme, host, backslash or control character (no open redirect). */
const dashboardPath = () =>
  z
    .string()
    .max(500)
    .regex(/^\/(?![/\\])[\w\-.~!$&'()*+,;=:@/%?#]*$/, 'Must be a path on the dashboard starting with a single /');
export const SsoStartQuery = lazySchema(() =>
  z.object({
    /** `json` answers `{authorization_url}` (and the callback answers the session as JSON) instead of redirecting. */
    format: z.enum(['json', 'redirect']).optional(),
    return_to: dashboardPath().optional(),
    /** The confirmation page's Continue: the token whose hash its cookie holds. */
    confirm: z.string().min(1).max(100).optional(),
  }),
);
export const SsoStart = lazySchema(() => z.object({ authorization_url: z.string() }));
export const SsoCallbackQuery = lazySchema(() =>
  z.object({ code: z.string().min(1).max(4000).optional(), state: z.string().min(1).max(200), error: z.string().max(200).optional(), error_description: z.string().max(1000).optional() }),
);

export const ScimStatus = lazySchema(() =>
  z.object({
    enabled: z.boolean(),
    base_url: z.string(),
    token_created_timestamp: epochMs().nullable(),
    masked_token: z.string().nullable(),
  }),
);
export const CreatedScimToken = lazySchema(() => ScimStatus.and(z.object({ token: z.string().describe('Shown once') })));

export const ScimListQuery = lazySchema(() =>
  z.object({
    filter: z.string().max(500).optional(),
    startIndex: queryInt({ min: 1, max: 1_000_000_000, default: 1 }),
    count: queryInt({ min: 0, max: 1000, default: 100 }),
  }),
);
export const scimUserParams = lazySchema(() => z.object({ id: z.string().max(100) }));
/**
 * A SCIM body is taken as any JSON here and checked by the SCIM module after the token
 * (ScimUser, ScimPatch in scim-schemas.ts), so that a bad token is 401 whatever the body.
 */
export const ScimBody = lazySchema(() =>
  z.unknown().describe('A SCIM User (POST, PUT) or PatchOp message (PATCH), RFC 7643/7644; checked after the SCIM token, errors in SCIM\'s Error format'),
);
