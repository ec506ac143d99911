import * as z from 'zod';
import { ROLES } from '../platform/auth/roles.ts';
import { ApiError, Invalid } from '../platform/errors.ts';
import type { ErrorFormat } from '../platform/http/route.ts';
import { lazySchema } from '../platform/http/schemas.ts';
import { formatIssues } from '../platform/http/validation.ts';

/*
 * SCIM 2.0's contract (RFC 7643 the schema, RFC 7644 the protocol): the bodies a SCIM
 * client sends and the Error every failure answers. Kept apart from scim.ts (the store and
 * the members it changes) so the route table can name the error format without loading them.
 *
 * Bodies are checked strictly, before anything is read or written, and a failure is a 400
 * in SCIM's Error format with its scimType:
 * - `invalidSyntax`: the body is not a User or a PatchOp (not an object, an attribute the
 *   User schema does not define, a missing or unknown `op`, no PatchOp in `schemas`);
 * - `invalidValue`: an attribute of the wrong type (a `displayName` that is an object, an
 *   `emails` that is not a list of `{value}` objects), a role that is not one of ours;
 * - `invalidPath`: a PATCH path (or a pathless operation's key) naming an attribute this
 *   service does not set; `noTarget`: a `remove` without a path;
 * - `mutability`: removing `userName` or the email.
 * Attribute names are matched without case (RFC 7643 section 2.1). Core User attributes
 * this service does not keep (phone numbers, addresses, password, ...) and extension
 * schemas (`urn:` keys) are accepted and ignored, since identity providers send them with
 * every User; any other attribute is refused.
 */

export const SCIM_TYPE = 'application/scim+json';
export const SCIM_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const SCIM_LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const SCIM_PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

/** The detail keywords this service answers (RFC 7644 section 3.12). */
const SCIM_TYPES = ['invalidFilter', 'invalidSyntax', 'invalidValue', 'invalidPath', 'noTarget', 'mutability', 'uniqueness'] as const;
export type ScimType = (typeof SCIM_TYPES)[number];

/** A failure with SCIM's detail keyword (RFC 7644 section 3.12). */
export class ScimError extends ApiError {
  constructor(
    status: number,
    detail: string,
    readonly scimType?: ScimType,
  ) {
    super(status, detail);
  }
}

/**
 * The SCIM routes' errors (their `errorFormat`): RFC 7644's Error, `status` as a string.
 * A 400 raised before the SCIM module reads the body (JSON that does not parse, a query
 * parameter out of range) is the request's syntax: `invalidSyntax`.
 */
export const scimErrorFormat: ErrorFormat = {
  name: 'ScimError',
  mediaType: SCIM_TYPE,
  schema: lazySchema(() =>
    z.object({
      schemas: z.array(z.literal(SCIM_ERROR)),
      status: z.string().describe('The HTTP status as a string'),
      scimType: z.enum(SCIM_TYPES).optional(),
      detail: z.string(),
    }),
  ),
  body: (error) => {
    const scimType = error instanceof ScimError ? error.scimType : error instanceof Invalid ? 'invalidSyntax' : undefined;
    return { schemas: [SCIM_ERROR], status: String(error.status), ...(scimType ? { scimType } : {}), detail: error.message };
  },
};

/**
 * Parses a SCIM body (or a part of one at `at`, e.g. `Operations.0.value`): a failure is a
 * 400 ScimError naming each field, `invalidSyntax` when a whole body is not an object or
 * names an attribute the schema does not define (or one twice), else `scimType`.
 */
export function parseScim<S extends z.ZodType>(schema: S, input: unknown, scimType: ScimType, at?: string): z.output<S> {
  const result = schema.safeParse(input, { reportInput: true });
  if (result.success) return result.data;
  const prefix = at === undefined ? [] : at.split('.');
  const issues = result.error.issues.map((issue) => ({ ...issue, path: [...prefix, ...issue.path] }));
  const syntax = result.error.issues.some(
    (issue) =>
      issue.code === 'unrecognized_keys' ||
      (issue.code === 'custom' && issue.params?.scimType === 'invalidSyntax') ||
      (at === undefined && issue.path.length === 0 && issue.code === 'invalid_type' && issue.expected === 'object'),
  );
  throw new ScimError(400, formatIssues(issues, at ?? 'body'), syntax ? 'invalidSyntax' : scimType);
}

export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * An object of SCIM attributes: names matched without case and given their schema's
 * spelling; an attribute named twice (in two spellings) or one the shape does not define
 * is refused. `extensions`: `urn:` keys (extension schemas) are dropped, not refused.
 */
function attributes<T extends z.ZodRawShape>(shape: T, options: { extensions?: boolean } = {}) {
  const spelling = new Map(Object.keys(shape).map((name) => [name.toLowerCase(), name]));
  return z.preprocess(
    (input, context) => {
      if (!isObject(input)) return input;
      const entries: [string, unknown][] = [];
      const seen = new Set<string>();
      for (const [key, value] of Object.entries(input)) {
        if (options.extensions && key.toLowerCase().startsWith('urn:')) continue;
        const name = spelling.get(key.toLowerCase()) ?? key;
        if (seen.has(name)) {
          context.addIssue({ code: 'custom', message: `Attribute ${name} given twice`, path: [key], input: value, params: { scimType: 'invalidSyntax' } });
          continue;
        }
        seen.add(name);
        entries.push([name, value]);
      }
      // fromEntries defines own properties: a `__proto__` key stays a key (refused below).
      return Object.fromEntries(entries);
    },
    z.strictObject(shape, {
      error: (issue) => (issue.code === 'unrecognized_keys' ? `Unknown attribute${issue.keys.length === 1 ? '' : 's'} ${issue.keys.join(', ')}` : undefined),
    }),
  );
}

const text = (max: number) => z.string().max(max);
const NAME_CHARS = 200;
const EMAIL_CHARS = 254;
const EXTERNAL_ID_CHARS = 500;

const scimName = () =>
  attributes({
    formatted: text(NAME_CHARS).nullish(),
    givenName: text(NAME_CHARS).nullish(),
    familyName: text(NAME_CHARS).nullish(),
    middleName: text(NAME_CHARS).nullish(),
    honorificPrefix: text(NAME_CHARS).nullish(),
    honorificSuffix: text(NAME_CHARS).nullish(),
  });

/** The sub-attributes every multi-valued attribute may carry besides `value` (RFC 7643 section 2.4). */
const multiValued = () => ({ type: text(100).optional(), primary: z.boolean().optional(), display: text(NAME_CHARS).optional() });
const scimEmail = () => attributes({ value: text(EMAIL_CHARS), ...multiValued() });
const scimRole = () => attributes({ value: z.enum(ROLES), ...multiValued() });
const scimEmails = () => z.array(scimEmail()).max(20);
const scimRoles = () => z.array(scimRole()).max(20);

/**
 * Core User attributes this service does not keep: accepted and ignored, in a body and as a
 * PATCH path (Entra ID and Okta send `title`, `phoneNumbers[type eq "work"].value` and the
 * enterprise extension's `department` by default; refusing them would stop provisioning).
 */
const IGNORED_ATTRIBUTES = [
  'id', 'meta', 'nickName', 'profileUrl', 'title', 'userType', 'preferredLanguage', 'locale', 'timezone', 'password',
  'phoneNumbers', 'ims', 'photos', 'addresses', 'groups', 'entitlements', 'x509Certificates',
] as const;
const IGNORED_PATH_ROOTS = new Set(IGNORED_ATTRIBUTES.map((attribute) => attribute.toLowerCase()));
const IGNORED_NAME_PARTS = new Set(['middlename', 'honorificprefix', 'honorificsuffix']);

/** A PATCH path that sets nothing this service keeps: an ignored attribute (or a part of one), a name part, or an extension's. */
export function isIgnoredPatchPath(path: string): boolean {
  const lower = path.toLowerCase();
  if (lower.startsWith('urn:')) return true;
  const [root, sub] = lower.split(/[.[]/, 2);
  return IGNORED_PATH_ROOTS.has(root!) || (root === 'name' && sub !== undefined && IGNORED_NAME_PARTS.has(sub));
}

const ignored = () => z.unknown().optional();

/** A User as POST and PUT send it. */
export const ScimUser = lazySchema(() =>
  attributes(
    {
      schemas: z.array(text(200)).max(20).optional(),
      userName: text(EMAIL_CHARS).optional(),
      name: scimName().nullable().optional(),
      displayName: text(NAME_CHARS).nullable().optional(),
      emails: scimEmails().optional(),
      active: z.boolean().optional(),
      roles: scimRoles().optional(),
      externalId: text(EXTERNAL_ID_CHARS).nullable().optional(),
      ...Object.fromEntries(IGNORED_ATTRIBUTES.map((attribute) => [attribute, ignored()])),
    },
    { extensions: true },
  ),
);
export type ScimUser = z.output<typeof ScimUser>;

/** A PATCH body (RFC 7644 section 3.5.2): the PatchOp message and its operations; values are checked by path. */
export const ScimPatch = lazySchema(() =>
  attributes({
    schemas: z.array(text(200)).max(20).refine((schemas) => schemas.includes(SCIM_PATCH_OP), `Must include ${SCIM_PATCH_OP}`),
    Operations: z
      .array(
        attributes({
          // Entra ID capitalises ops ("Replace").
          op: z.string().transform((op) => op.toLowerCase()).pipe(z.enum(['add', 'replace', 'remove'], { error: 'Must be add, replace or remove' })),
          path: text(200).optional(),
          value: z.unknown().optional(),
        }),
      )
      .min(1)
      .max(100),
  }),
);

// Entra ID sends booleans as "True"/"False" in PATCH values.
const patchBoolean = () =>
  z.preprocess((value) => (typeof value === 'string' && /^(?:true|false)$/i.test(value) ? value.toLowerCase() === 'true' : value), z.boolean());

/** What a PATCH path (matched without case) sets, and the value it takes. */
export const SCIM_PATCH_PATHS = {
  active: lazySchema(patchBoolean),
  username: lazySchema(() => text(EMAIL_CHARS)),
  displayname: lazySchema(() => text(NAME_CHARS).nullable()),
  'name.formatted': lazySchema(() => text(NAME_CHARS).nullable()),
  'name.givenname': lazySchema(() => text(NAME_CHARS).nullable()),
  'name.familyname': lazySchema(() => text(NAME_CHARS).nullable()),
  name: lazySchema(() => scimName().nullable()),
  externalid: lazySchema(() => text(EXTERNAL_ID_CHARS).nullable()),
  // A role alone, or the list.
  roles: lazySchema(() => z.preprocess((value) => (typeof value === 'string' ? [{ value }] : value), scimRoles())),
  // An address alone (the primary), or the list.
  emails: lazySchema(() => z.preprocess((value) => (typeof value === 'string' ? [{ value, primary: true }] : value), scimEmails().min(1))),
  'emails[type eq "work"].value': lazySchema(() => text(EMAIL_CHARS)),
};
export type ScimPatchPath = keyof typeof SCIM_PATCH_PATHS;
