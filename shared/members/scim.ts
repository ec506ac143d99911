import { randomBytes } from 'node:crypto';
import type * as z from 'zod';
import type { Principal } from '../platform/auth/gate.ts';
import { rawBearer } from '../platform/auth/gate.ts';
import { ROLES, type Role } from '../platform/auth/roles.ts';
import { maskSecret } from '../platform/auth/credentials.ts';
import { sha256 } from '../platform/crypto/hash.ts';
import { Conflict, conflict, notFound, unauthorized } from '../platform/errors.ts';
import { MediaResponse } from '../platform/http/handler.ts';
import { keys } from '../platform/store/keys.ts';
import { table, TransactionCancelled } from '../platform/store/table.ts';
import { auditOp, changeMember, createMember, removeMember, type MemberChange } from './members.ts';
import {
  isObject,
  parseScim,
  SCIM_LIST as LIST,
  SCIM_PATCH_PATHS as PATHS,
  isIgnoredPatchPath,
  SCIM_TYPE,
  SCIM_USER as USER,
  ScimError,
  ScimPatch,
  ScimUser,
  type ScimPatchPath,
} from './scim-schemas.ts';
import { publicBase } from './sso.ts';
import { listMemberItems, members, scimConfigs, scimTokens, type MemberItem, type ScimConfigItem } from './store.ts';

/*
 * SCIM 2.0 (RFC 7643/7644) Users over the workspace's members, for identity providers'
 * provisioning. A bearer token per workspace (`scim_` + 48 hex, shown once, kept as its
 * SHA-256) authenticates; every answer is `application/scim+json`, errors in SCIM's Error
 * schema (the routes' errorFormat, scim-schemas.ts, which also holds the bodies' schemas).
 * Deprovisioning (`active: false`, or DELETE) ends the member's sessions at once: the gate
 * reads the member on every session request.
 */

const TOKEN = /^scim_[0-9a-f]{48}$/;

const scimResponse = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new MediaResponse(SCIM_TYPE, JSON.stringify(body), headers, status);

/**
 * Runs a SCIM operation for the workspace whose token the request carries; the token is
 * checked before the body is. What it throws is answered in SCIM's Error format.
 */
export async function scim(headers: Record<string, string | undefined>, run: (workspaceId: string) => Promise<MediaResponse>): Promise<MediaResponse> {
  const token = rawBearer(headers.authorization);
  if (!token || !TOKEN.test(token)) throw unauthorized();
  const record = await scimTokens.get(sha256(token));
  if (!record) throw unauthorized();
  return run(record.workspace_id);
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
  ]).catch((error: unknown) => {
    // A failed condition (another token written meanwhile) or a lost race is the caller's to retry; anything else is not a 409.
    throw error instanceof TransactionCancelled ? conflict('The SCIM token changed meanwhile; retry') : error;
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
  name?: { givenName?: string | null; familyName?: string | null; formatted?: string | null } | null;
  displayName?: string | null;
  emails?: { value: string; primary?: boolean }[];
  active?: boolean;
  roles?: { value: Role; primary?: boolean }[];
  externalId?: string | null;
}

const EMAIL = /^[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)+$/;

/** The member fields a SCIM User (or a part of one) sets, its types already checked (scim-schemas.ts). */
function memberFields(user: UserFields, whole: boolean): MemberChange & { email?: string } {
  const change: MemberChange & { email?: string } = {};
  const primaryEmail = user.emails?.find((entry) => entry.primary)?.value ?? user.emails?.[0]?.value;
  const email = user.userName ?? primaryEmail;
  if (email !== undefined) {
    if (!EMAIL.test(email)) throw invalidValue('userName: Must be an email address');
    change.email = email.toLowerCase();
  } else if (whole) {
    throw invalidValue('userName: Required');
  }
  if (user.active !== undefined) change.active = user.active;
  if (user.roles !== undefined) change.role = (user.roles.find((entry) => entry.primary) ?? user.roles[0])?.value ?? 'member';
  else if (whole) change.role = 'member';
  if (user.name !== undefined || user.displayName !== undefined) {
    const formatted = user.displayName ?? user.name?.formatted ?? ([user.name?.givenName, user.name?.familyName].filter(Boolean).join(' ') || null);
    change.name = formatted ?? null;
    change.givenName = user.name?.givenName ?? null;
    change.familyName = user.name?.familyName ?? null;
  }
  if (user.externalId !== undefined) change.externalId = user.externalId;
  return change;
}

export async function createUser(workspaceId: string, body: unknown) {
  const fields = memberFields(parseScim(ScimUser, body, 'invalidValue'), true);
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

export async function replaceUser(workspaceId: string, id: string, body: unknown) {
  await userItem(workspaceId, id);
  const fields = memberFields(parseScim(ScimUser, body, 'invalidValue'), true);
  if (fields.active === undefined) fields.active = true;
  if (fields.name === undefined) Object.assign(fields, { name: null, givenName: null, familyName: null });
  if (fields.externalId === undefined) fields.externalId = null;
  return scimResponse(toUser(await changeMember(workspaceId, scimActor(workspaceId), id, fields)));
}

/** PATCH with add, replace and remove on the attributes Users support; every operation is checked before anything is written. */
export async function patchUser(workspaceId: string, id: string, body: unknown) {
  const current = await userItem(workspaceId, id);
  const { Operations: operations } = parseScim(ScimPatch, body, 'invalidSyntax');
  const user: UserFields = { name: { givenName: current.given_name, familyName: current.family_name, formatted: current.name } };
  operations.forEach(({ op, path, value }, index) => {
    const at = `Operations.${index}`;
    if (path !== undefined) return applyPath(user, path, value, op, `${at}.value`);
    if (op === 'remove') throw new ScimError(400, `${at}.path: A remove takes a path`, 'noTarget');
    if (!isObject(value)) throw invalidValue(`${at}.value: An operation without a path takes an object of attributes`);
    for (const [attribute, attributeValue] of Object.entries(value)) applyPath(user, attribute, attributeValue, op, `${at}.value.${attribute}`);
  });
  const fields = memberFields(user, false);
  return scimResponse(toUser(await changeMember(workspaceId, scimActor(workspaceId), id, fields)));
}

/** One operation on one attribute; its value is checked against the path's schema (a wrong type is invalidValue). */
function applyPath(user: UserFields, path: string, raw: unknown, op: 'add' | 'replace' | 'remove', at: string) {
  const remove = op === 'remove';
  const parse = <S extends z.ZodType>(schema: S): z.output<S> => parseScim(schema, raw, 'invalidValue', at);
  const name = (user.name ??= {});
  switch (path.toLowerCase() as ScimPatchPath) {
    case 'active':
      user.active = remove ? false : parse(PATHS.active);
      return;
    case 'username':
      if (remove) throw new ScimError(400, 'userName cannot be removed', 'mutability');
      user.userName = parse(PATHS.username);
      return;
    case 'displayname':
    case 'name.formatted': {
      const formatted = remove ? null : parse(PATHS.displayname);
      name.formatted = formatted ?? undefined;
      user.displayName = formatted;
      return;
    }
    case 'name.givenname':
      name.givenName = remove ? undefined : (parse(PATHS['name.givenname']) ?? undefined);
      return;
    case 'name.familyname':
      name.familyName = remove ? undefined : (parse(PATHS['name.familyname']) ?? undefined);
      return;
    case 'name':
      user.name = remove ? null : parse(PATHS.name);
      return;
    case 'externalid':
      user.externalId = remove ? null : parse(PATHS.externalid);
      return;
    case 'roles':
      user.roles = remove ? [{ value: 'member' }] : parse(PATHS.roles);
      return;
    case 'emails':
      if (remove) throw new ScimError(400, 'The email cannot be removed', 'mutability');
      user.emails = parse(PATHS.emails);
      return;
    case 'emails[type eq "work"].value':
      if (remove) throw new ScimError(400, 'The email cannot be removed', 'mutability');
      user.emails = [{ value: parse(PATHS['emails[type eq "work"].value']), primary: true }];
      return;
    default:
      if (isIgnoredPatchPath(path)) return;
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

