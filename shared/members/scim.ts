import { randomBytes } from 'node:crypto';
import type { Principal } from '../platform/auth/gate.ts';
import { rawBearer } from '../platform/auth/gate.ts';
import { ROLES, type Role } from '../platform/auth/roles.ts';
import { maskSecret } from '../platform/auth/credentials.ts';
import { sha256 } from '../platform/crypto/hash.ts';
import { ApiError, Conflict, conflict, notFound, unauthorized } from '../platform/errors.ts';
import { MediaResponse } from '../platform/http/handler.ts';
import { keys } from '../platform/store/keys.ts';
import { table } from '../platform/store/table.ts';
import { auditOp, changeMember, createMember, removeMember, type MemberChange } from './members.ts';
import { publicBase } from './sso.ts';
import { listMemberItems, members, scimConfigs, scimTokens, type MemberItem, type ScimConfigItem } from './store.ts';

/*
 * SCIM 2.0 (RFC 7643/7644) Users over the workspace's members, for identity providers'
 * provisioning. A bearer token per workspace (`scim_` + 48 hex, shown once, kept as its
 * SHA-256) authenticates; every answer is `application/scim+json`, errors in SCIM's Error
 * schema. Deprovisioning (`active: false`, or DELETE) ends the member's sessions at once:
 * the gate reads the member on every session request.
 */

const SCIM_TYPE = 'application/scim+json';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const TOKEN = /^scim_[0-9a-f]{48}$/;

class ScimError extends ApiError {
  constructor(status: number, detail: string, readonly scimType?: string) {
    super(status, detail);
  }
}

const scimResponse = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new MediaResponse(SCIM_TYPE, JSON.stringify(body), headers, status);

/** Any failure as SCIM's Error (status as a string, detail, scimType). */
function scimFailure(error: unknown): MediaResponse {
  if (!(error instanceof ApiError)) throw error;
  return scimResponse(
    { schemas: [ERROR], status: String(error.status), detail: error.message, ...(error instanceof ScimError && error.scimType ? { scimType: error.scimType } : {}) },
    error.status,
  );
}

/** Runs a SCIM operation for the workspace whose token the request carries. */
export async function scim(headers: Record<string, string | undefined>, run: (workspaceId: string) => Promise<MediaResponse>): Promise<MediaResponse> {
  try {
    const token = rawBearer(headers.authorization);
    if (!token || !TOKEN.test(token)) throw unauthorized();
    const record = await scimTokens.get(sha256(token));
    if (!record) throw unauthorized();
    return await run(record.workspace_id);
  } catch (error) {
    return scimFailure(error);
  }
}

// ── Token and status (dashboard routes) ──────────────────────────────────────────────

const scimBaseUrl = () => `${publicBase()}/scim/v2`;
const toStatus = (item: ScimConfigItem | undefined) => ({
  enabled: item !== undefined,
  base_url: scimBaseUrl(),
  token_created_timestamp: item?.created_timestamp ?? null,
  masked_token: item?.masked_token ?? null,
});

export const getScimStatus = async (workspaceId: string) => toStatus(await scimConfigs.get(workspaceId));

/** A new token, replacing the previous one (which stops working at once). */
export async function createScimToken(principal: Principal) {
  const workspaceId = principal.workspaceId;
  const token = `scim_${randomBytes(24).toString('hex')}`;
  const hash = sha256(token);
  const previous = await scimConfigs.get(workspaceId);
  const item: ScimConfigItem = { ...keys.scimConfig(workspaceId), token_hash: hash, masked_token: maskSecret(token), created_timestamp: Date.now() };
  await table.transact([
    {
      Put: {
        Item: item,
        ...(previous ? { ConditionExpression: 'token_hash = :old', ExpressionAttributeValues: { ':old': previous.token_hash } } : { ConditionExpression: 'attribute_not_exists(pk)' }),
      },
    },
    scimTokens.createOp({ workspace_id: workspaceId, created_timestamp: item.created_timestamp }, hash),
    ...(previous ? [{ Delete: { Key: keys.scimToken(previous.token_hash) } }] : []),
    auditOp(workspaceId, principal, { action: 'scim.token_create', target: { type: 'scim', id: workspaceId }, changes: ['token'] }),
  ]).catch(() => {
    throw conflict('The SCIM token changed meanwhile; retry');
  });
  return { ...toStatus(item), token };
}

export async function deleteScimToken(principal: Principal): Promise<void> {
  const workspaceId = principal.workspaceId;
  const current = await scimConfigs.mustGet(workspaceId);
  await table.transact([
    { Delete: { Key: keys.scimConfig(workspaceId), ConditionExpression: 'token_hash = :h', ExpressionAttributeValues: { ':h': current.token_hash } } },
    { Delete: { Key: keys.scimToken(current.token_hash) } },
    auditOp(workspaceId, principal, { action: 'scim.token_delete', target: { type: 'scim', id: workspaceId }, changes: [] }),
  ]);
}

// ── Users ───────────────────────────────────────────────────────────────────────────

function toUser(item: MemberItem) {
  return {
    schemas: [USER],
    id: item.member_id,
    ...(item.external_id ? { externalId: item.external_id } : {}),
    userName: item.email,
    name: {
      ...(item.name ? { formatted: item.name } : {}),
      ...(item.given_name ? { givenName: item.given_name } : {}),
      ...(item.family_name ? { familyName: item.family_name } : {}),
    },
    ...(item.name ? { displayName: item.name } : {}),
    emails: [{ value: item.email, type: 'work', primary: true }],
    active: item.active !== false,
    roles: [{ value: item.role, primary: true }],
    meta: {
      resourceType: 'User',
      created: new Date(item.created_timestamp).toISOString(),
      location: `${scimBaseUrl()}/Users/${item.member_id}`,
    },
  };
}

const invalidValue = (detail: string) => new ScimError(400, detail, 'invalidValue');

/** `attribute eq "value"` (and `active eq true|false`): the filters this service supports. */
function parseFilter(filter: string): (item: MemberItem) => boolean {
  const match = /^\s*(userName|emails\.value|emails|externalId|active)\s+eq\s+(?:"((?:[^"\\]|\\.)*)"|(true|false))\s*$/i.exec(filter);
  if (!match) throw new ScimError(400, `Unsupported filter: ${filter}; supported: userName eq "…", emails.value eq "…", externalId eq "…", active eq true|false`, 'invalidFilter');
  const attribute = match[1]!.toLowerCase();
  if (attribute === 'active') {
    if (match[3] === undefined) throw new ScimError(400, 'active eq takes true or false', 'invalidFilter');
    const wanted = match[3].toLowerCase() === 'true';
    return (item) => (item.active !== false) === wanted;
  }
  if (match[2] === undefined) throw new ScimError(400, `${match[1]} eq takes a quoted string`, 'invalidFilter');
  const value = match[2].replace(/\\(.)/g, '$1');
  if (attribute === 'externalid') return (item) => item.external_id === value;
  // userName and emails are case-insensitive (RFC 7643 caseExact false); stored lower-case.
  return (item) => item.email === value.toLowerCase();
}

export async function listUsers(workspaceId: string, query: { filter?: string; startIndex: number; count: number }) {
  const predicate = query.filter ? parseFilter(query.filter) : () => true;
  const all = (await listMemberItems(workspaceId)).filter(predicate).sort((a, b) => a.created_timestamp - b.created_timestamp || (a.member_id < b.member_id ? -1 : 1));
  const page = all.slice(query.startIndex - 1, query.startIndex - 1 + query.count);
  return scimResponse({ schemas: [LIST], totalResults: all.length, startIndex: query.startIndex, itemsPerPage: page.length, Resources: page.map(toUser) });
}

async function userItem(workspaceId: string, id: string): Promise<MemberItem> {
  const item = /^member_[0-9a-f]{24}$/.test(id) ? await members.get(workspaceId, id) : undefined;
  if (!item) throw notFound(`User ${id} not found`);
  return item;
}

export const getUser = async (workspaceId: string, id: string) => scimResponse(toUser(await userItem(workspaceId, id)));

interface UserFields {
  userName?: string;
  name?: { givenName?: string; familyName?: string; formatted?: string } | null;
  displayName?: string | null;
  emails?: { value?: string; primary?: boolean }[];
  active?: boolean;
  roles?: { value?: string; primary?: boolean }[];
  externalId?: string | null;
}

const EMAIL = /^[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)+$/;

/** The member fields a SCIM User (or a part of one) sets; wrong types are 400 invalidValue. */
function memberFields(user: UserFields, whole: boolean): MemberChange & { email?: string } {
  const change: MemberChange & { email?: string } = {};
  const primaryEmail = user.emails?.find((entry) => entry.primary)?.value ?? user.emails?.[0]?.value;
  const email = user.userName ?? primaryEmail;
  if (email !== undefined) {
    if (typeof email !== 'string' || !EMAIL.test(email)) throw invalidValue('userName: Must be an email address');
    change.email = email.toLowerCase();
  } else if (whole) {
    throw invalidValue('userName: Required');
  }
  if (user.active !== undefined) {
    if (typeof user.active !== 'boolean') throw invalidValue('active: Must be a boolean');
    change.active = user.active;
  }
  if (user.roles !== undefined) {
    if (!Array.isArray(user.roles)) throw invalidValue('roles: Must be an array');
    const value = (user.roles.find((r) => r?.primary) ?? user.roles[0])?.value;
    if (value !== undefined && !ROLES.includes(value as Role)) throw invalidValue(`roles: Must be one of ${ROLES.join(', ')}`);
    change.role = (value as Role | undefined) ?? 'member';
  } else if (whole) {
    change.role = 'member';
  }
  if (user.name !== undefined || user.displayName !== undefined) {
    const formatted = user.displayName ?? user.name?.formatted ?? ([user.name?.givenName, user.name?.familyName].filter(Boolean).join(' ') || null);
    change.name = formatted ?? null;
    change.givenName = user.name?.givenName ?? null;
    change.familyName = user.name?.familyName ?? null;
  }
  if (user.externalId !== undefined) change.externalId = user.externalId;
  return change;
}

export async function createUser(workspaceId: string, body: Record<string, unknown>) {
  const fields = memberFields(body as UserFields, true);
  const item = await createMember(workspaceId, scimActor(workspaceId), {
    email: fields.email!,
    role: fields.role ?? 'member',
    name: fields.name ?? undefined,
    source: 'scim',
    externalId: fields.externalId ?? undefined,
    givenName: fields.givenName ?? undefined,
    familyName: fields.familyName ?? undefined,
    active: fields.active,
  }).catch((error: unknown) => {
    // SCIM's duplicate is 409 with scimType uniqueness.
    if (error instanceof Conflict) throw new ScimError(409, error.message, 'uniqueness');
    throw error;
  });
  return scimResponse(toUser(item), 201, { location: `${scimBaseUrl()}/Users/${item.member_id}` });
}

export async function replaceUser(workspaceId: string, id: string, body: Record<string, unknown>) {
  await userItem(workspaceId, id);
  const fields = memberFields(body as UserFields, true);
  if (fields.active === undefined) fields.active = true;
  if (fields.name === undefined) Object.assign(fields, { name: null, givenName: null, familyName: null });
  if (fields.externalId === undefined) fields.externalId = null;
  return scimResponse(toUser(await changeMember(workspaceId, scimActor(workspaceId), id, fields)));
}

interface PatchOperation {
  op?: string;
  path?: string;
  value?: unknown;
}

/** PATCH with add, replace and remove on the attributes Users support. */
export async function patchUser(workspaceId: string, id: string, body: Record<string, unknown>) {
  const current = await userItem(workspaceId, id);
  if (!Array.isArray(body.schemas) || !body.schemas.includes(PATCH_OP)) throw invalidValue(`schemas: Must include ${PATCH_OP}`);
  const operations = body.Operations;
  if (!Array.isArray(operations) || operations.length === 0) throw invalidValue('Operations: Required');
  const user: UserFields = { name: { givenName: current.given_name, familyName: current.family_name, formatted: current.name } };
  let touched = false;
  for (const raw of operations as PatchOperation[]) {
    const op = String(raw?.op ?? '').toLowerCase();
    if (!['add', 'replace', 'remove'].includes(op)) throw invalidValue(`op: Must be add, replace or remove`);
    const path = raw.path;
    if (path === undefined) {
      if (op === 'remove' || typeof raw.value !== 'object' || raw.value === null) throw new ScimError(400, 'A patch without path takes an object value', 'noTarget');
      for (const [attribute, value] of Object.entries(raw.value as Record<string, unknown>)) applyPath(user, attribute, value, op);
    } else {
      applyPath(user, path, raw.value, op);
    }
    touched = true;
  }
  if (!touched) return scimResponse(toUser(current));
  const fields = memberFields(user, false);
  return scimResponse(toUser(await changeMember(workspaceId, scimActor(workspaceId), id, fields)));
}

function applyPath(user: UserFields, path: string, value: unknown, op: string) {
  const lower = path.toLowerCase();
  const remove = op === 'remove';
  const name = (user.name ??= {});
  switch (lower) {
    case 'active':
      // Entra ID sends "False" as a string.
      user.active = remove ? false : typeof value === 'string' ? value.toLowerCase() === 'true' : (value as boolean);
      return;
    case 'username':
      if (remove) throw new ScimError(400, 'userName cannot be removed', 'mutability');
      user.userName = value as string;
      return;
    case 'displayname':
    case 'name.formatted':
      name.formatted = remove ? undefined : (value as string);
      user.displayName = remove ? null : (value as string);
      return;
    case 'name.givenname':
      name.givenName = remove ? undefined : (value as string);
      return;
    case 'name.familyname':
      name.familyName = remove ? undefined : (value as string);
      return;
    case 'name':
      user.name = remove ? null : (value as UserFields['name']);
      return;
    case 'externalid':
      user.externalId = remove ? null : (value as string);
      return;
    case 'roles':
      user.roles = remove ? [{ value: 'member' }] : Array.isArray(value) ? (value as UserFields['roles']) : [{ value: value as string }];
      return;
    case 'emails':
    case 'emails[type eq "work"].value':
      if (remove) throw new ScimError(400, 'The email cannot be removed', 'mutability');
      user.emails = Array.isArray(value) ? (value as UserFields['emails']) : [{ value: value as string, primary: true }];
      return;
    default:
      throw new ScimError(400, `Unsupported path: ${path}`, 'invalidPath');
  }
}

export async function deleteUser(workspaceId: string, id: string) {
  await userItem(workspaceId, id);
  await removeMember(workspaceId, scimActor(workspaceId), id);
  return new MediaResponse(SCIM_TYPE, '', {}, 204);
}

/** The audit log's actor for provisioning: the workspace's SCIM client. */
const scimActor = (workspaceId: string): Principal => ({ kind: 'secret', workspaceId, credentialId: 'scim', scopes: [], capabilities: [] });

// ── Discovery ───────────────────────────────────────────────────────────────────────

export const serviceProviderConfig = () =>
  scimResponse({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    documentationUri: `${publicBase()}/docs`,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: 1000 },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: false },
    authenticationSchemes: [{ type: 'oauthbearertoken', name: 'OAuth Bearer Token', description: 'The workspace SCIM token (POST /workspace/scim-token)', primary: true }],
    meta: { resourceType: 'ServiceProviderConfig', location: `${scimBaseUrl()}/ServiceProviderConfig` },
  });

const USER_RESOURCE_TYPE = {
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
  id: 'User',
  name: 'User',
  endpoint: '/Users',
  description: 'A member of the workspace',
  schema: USER,
};
export const resourceTypes = () =>
  scimResponse({ schemas: [LIST], totalResults: 1, startIndex: 1, itemsPerPage: 1, Resources: [{ ...USER_RESOURCE_TYPE, meta: { resourceType: 'ResourceType', location: `${scimBaseUrl()}/ResourceTypes/User` } }] });

const attribute = (name: string, type: string, extra: Record<string, unknown> = {}) => ({
  name,
  type,
  multiValued: false,
  required: false,
  caseExact: false,
  mutability: 'readWrite',
  returned: 'default',
  uniqueness: 'none',
  ...extra,
});
const USER_SCHEMA = {
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
  id: USER,
  name: 'User',
  description: 'A workspace member: userName is the email; roles is one of admin, developer, member',
  attributes: [
    attribute('userName', 'string', { required: true, uniqueness: 'server' }),
    attribute('name', 'complex', { subAttributes: [attribute('formatted', 'string'), attribute('givenName', 'string'), attribute('familyName', 'string')] }),
    attribute('displayName', 'string'),
    attribute('emails', 'complex', { multiValued: true, subAttributes: [attribute('value', 'string'), attribute('type', 'string'), attribute('primary', 'boolean')] }),
    attribute('active', 'boolean'),
    attribute('roles', 'complex', { multiValued: true, subAttributes: [attribute('value', 'string', { canonicalValues: [...ROLES] }), attribute('primary', 'boolean')] }),
    attribute('externalId', 'string', { caseExact: true }),
  ],
};
export const schemasList = () =>
  scimResponse({ schemas: [LIST], totalResults: 1, startIndex: 1, itemsPerPage: 1, Resources: [{ ...USER_SCHEMA, meta: { resourceType: 'Schema', location: `${scimBaseUrl()}/Schemas/${USER}` } }] });

