import * as z from 'zod';
import { destinationUrlRefusal, HTTP_SCHEMES, WEBSOCKET_SCHEMES } from '../egress/egress-rules.ts';
import { idPattern, idPrefix, type IdKind } from '../ids.ts';
import { onFirstUse } from '../lazy.ts';
import { sipHeaderProblems } from '../telephony/sip-headers.ts';

/**
 * Schema building blocks shared by every route, as factories: they are called inside
 * lazily built schemas, so nothing is constructed at module load. Query strings arrive as text (API
 * Gateway joins repeated parameters with commas), so numbers are parsed strictly: ASCII
 * digits only, no hex, no exponent, no unicode digits.
 */
function strictInt(min: number, max: number) {
  return z
    .string()
    .regex(/^-?[0-9]{1,20}$/, 'Must be a whole number')
    .transform(Number)
    .pipe(z.number().min(min).max(max));
}

export function queryInt(options: { min: number; max: number; default: number }) {
  return strictInt(options.min, options.max).default(options.default);
}

export function requiredQueryInt(options: { min: number; max: number }) {
  return strictInt(options.min, options.max);
}

export function optionalQueryInt(options: { min: number; max: number }) {
  return strictInt(options.min, options.max).optional();
}

/**
 * An environment tag's name. Never a number, `latest` or `latest_published` (the
 * agents domain refuses those names), so a version reference is never ambiguous.
 */
const TAG_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

const VERSION_REFERENCE_MESSAGE = 'Must be a version number, "latest", "latest_published" or an environment tag name';

/**
 * A version reference in a query string or path (spec, Versioning 4): a version number,
 * `latest`, `latest_published` or an environment tag name (the two words fit the tag
 * pattern). Numbers come out as numbers, the rest as the string; a string of digits too
 * long for a version is neither. Resolved by `resolveVersion` (shared/platform/store/versions.ts).
 */
export const versionReferenceQuery = () =>
  z
    .string()
    .regex(TAG_NAME, VERSION_REFERENCE_MESSAGE)
    .refine((value) => !/^[0-9]{10,}$/.test(value), VERSION_REFERENCE_MESSAGE)
    .transform((value): number | string => (/^[0-9]+$/.test(value) ? Number(value) : value))
    .describe('A version number, `latest`, `latest_published` or an environment tag name');

/** `?version=` of a versioned resource: a version reference, the latest version when absent. */
export const versionQuery = () => z.object({ version: versionReferenceQuery().optional() });

export function idOf(kind: IdKind, label: string) {
  return z.string().regex(idPattern(kind), `Must be ${label} (${idPrefix[kind]} followed by 24 hex characters)`);
}

export const epochMs = () => z.number().int().nonnegative().describe('Unix epoch milliseconds');

export const displayName = () => z.string().trim().min(1).max(200);

/**
 * Parley's own field on resources an import can create (local/migration/): the ID the object
 * had in the account it came from, kept so a rerun updates it rather than creating another
 * and so customer code can find it by its old ID (docs/migration.md).
 */
export const importedFrom = () =>
  z
    .string()
    .min(1)
    .max(200)
    .nullable()
    .describe('The ID this object had in the account it was imported from (npm run cli -- import-retell); null or absent otherwise');

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

export function isWebSocketUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'ws:' || url.protocol === 'wss:') && url.hostname !== '';
  } catch {
    return false;
  }
}

const HTTP_URL_RULE = 'Must be an http:// or https:// URL';
const WEBSOCKET_URL_RULE = 'Must be a ws:// or wss:// URL';
const TEMPLATED_URL_RULE = 'Must be an http:// or https:// URL with a literal host ({{variables}} may follow it)';
/** A `{{name}}` placeholder (linear: no nested braces), as agents' URLs and workflow steps write them. */
const PLACEHOLDER = /\{\{[^{}]*\}\}/g;
/** The scheme, host and port, with nothing a placeholder could fill in them. */
const LITERAL_ORIGIN = /^https?:\/\/[^/{}?#\s]+(?:[/?#]|$)/i;

/** An http(s) URL whose scheme, host and port are literal; `{{placeholders}}` may follow them. */
export function isTemplatedHttpUrl(value: string): boolean {
  return LITERAL_ORIGIN.test(value) && isHttpUrl(value.replace(PLACEHOLDER, 'x'));
}

/**
 * What a URL Parley calls later may be: `http` (webhooks, custom tools, MCP servers, an
 * issuer), `websocket` (the custom LLM socket), or `templated`, an http(s) URL whose
 * `{{placeholders}}` are filled when it is called and so may follow the host, never be in it.
 */
export type DestinationKind = 'http' | 'websocket' | 'templated';

/**
 * Why a URL Parley will call later may not be saved, or undefined: its form, then the egress
 * guard's own rules as far as they go without DNS (shared/platform/egress/egress-rules.ts: scheme,
 * credentials, bad ports, IP literals in every spelling, localhost, private-network names,
 * under this process's production or development policy). A host name is resolved on every
 * request, where the guard checks its addresses (docs/security.md, "Egress guard").
 */
export function destinationUrlProblem(value: string, kind: DestinationKind = 'http'): string | undefined {
  let url = value;
  if (kind === 'websocket') {
    if (!isWebSocketUrl(url)) return WEBSOCKET_URL_RULE;
  } else if (kind === 'templated' && url.includes('{{')) {
    if (!isTemplatedHttpUrl(url)) return TEMPLATED_URL_RULE;
    url = url.replace(PLACEHOLDER, 'x');
  } else if (!isHttpUrl(url)) return HTTP_URL_RULE;
  return destinationUrlRefusal(url, kind === 'websocket' ? WEBSOCKET_SCHEMES : HTTP_SCHEMES);
}

/**
 * An http(s) URL, its form only: for URLs Parley never calls later (a browser's redirect
 * after payment) or calls at once and reports on (the test webhook). Anything saved for
 * Parley to call is a `destinationUrl`.
 */
export const httpUrl = () => z.string().max(2048).refine(isHttpUrl, HTTP_URL_RULE);

/** The refinement behind `destinationUrl`, for a schema that checks a URL's form its own way. */
export const refuseDestination =
  (kind: DestinationKind = 'http') =>
  (value: string, ctx: z.RefinementCtx<string>): void => {
    const problem = destinationUrlProblem(value, kind);
    if (problem) ctx.addIssue({ code: 'custom', message: problem, input: value });
  };

/**
 * A URL Parley calls later (webhook URLs, custom tools, MCP servers, the custom LLM socket,
 * workflow steps, an SSO issuer, an app's tenant): refused at write, as `field: Destination
 * not allowed: …`, by the egress guard's rules (`destinationUrlProblem`).
 */
export const destinationUrl = (kind: DestinationKind = 'http', max = 2048) => z.string().max(max).superRefine(refuseDestination(kind));

/**
 * Dynamic variables: any JSON values, stored and sent as strings (spec: non-string values
 * are converted; `true` becomes `"true"`). Objects and arrays become their JSON text.
 */
export const dynamicVariables = () =>
  z
    .record(z.string().min(1).max(256), z.unknown())
    .refine((vars) => Object.keys(vars).length <= 500, 'Must have at most 500 variables')
    .transform((vars) => Object.fromEntries(Object.entries(vars).map(([name, value]) => [name, asVariableString(value)])));

export function asVariableString(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/**
 * Custom SIP headers (`{name: value}`): the rules of shared/platform/telephony/sip-headers.ts, one
 * issue per bad header at `<field>.<name>`. Calls, batch tasks and transfer_call tools share it.
 */
export const customSipHeaders = () =>
  z
    .record(z.string(), z.string())
    .superRefine((headers, ctx) => {
      for (const problem of sipHeaderProblems(headers)) {
        ctx.addIssue({ code: 'custom', path: problem.name === undefined ? [] : [problem.name], message: problem.message, input: headers });
      }
    })
    .describe("At most 50; names are SIP tokens (1 to 128 letters, digits or !%'*+-._`~), values at most 1024 characters on one line");

/** A version reference as the client sends it: a number, a numeric string, `latest`, `latest_published` or a tag name. */
export const versionRef = () =>
  z.union([z.number().int().min(0).max(999_999_999), z.string().min(1).max(64)]).transform((value) => String(value));

/**
 * `llm_fallback` on a call, a chat or a playground answer: the provider could not answer the
 * primary model and the workspace's fallback model did (reliability settings).
 */
export const llmFallback = () =>
  z.object({
    primary_model: z.string(),
    fallback_model: z.string(),
    count: z.number().int().describe('Model calls the fallback model answered'),
    last_reason: z.string(),
    last_timestamp: epochMs(),
  });

/**
 * A schema built on its first use, as `z.lazy(build)` is, but without a zod object made at
 * import: a `z.lazy` is itself a schema whose construction costs about 20 µs of a cold
 * import (zod binds every method to each instance), and a route module makes dozens. What
 * this returns stands for the built schema (onFirstUse, shared/platform/lazy.ts): every
 * read, `instanceof` and method call goes to the schema `build` returns, built once.
 */
export function lazySchema<T extends z.ZodType>(build: () => T): T {
  let built: T | undefined;
  const real = () => (built ??= build());
  const standIn = onFirstUse(real, { bindMethods: true });
  builtBy.set(standIn, real);
  return standIn;
}

/** Each `lazySchema` stand-in and how to reach the schema it stands for. */
const builtBy = new WeakMap<object, () => z.ZodType>();

/**
 * The schema a `lazySchema` stand-in stands for (built now if it was not yet), through
 * stand-ins of stand-ins; any other schema as it is. Parsing never needs this (every read
 * goes through); code that keys maps by schema identity does.
 */
function schemaBehind<T extends z.core.$ZodType>(schema: T): T {
  let current: object = schema;
  for (let real = builtBy.get(current); real; real = builtBy.get(current)) current = real();
  return current as T;
}

/** A Map keyed by schemas that takes a stand-in and the schema behind it for the same key. */
class SchemaKeyedMap<V> extends Map<z.core.$ZodType, V> {
  override get(key: z.core.$ZodType) {
    return super.get(schemaBehind(key));
  }
  override set(key: z.core.$ZodType, value: V) {
    return super.set(schemaBehind(key), value);
  }
  override has(key: z.core.$ZodType) {
    return super.has(schemaBehind(key));
  }
  override delete(key: z.core.$ZodType) {
    return super.delete(schemaBehind(key));
  }
}

/**
 * `z.toJSONSchema` for a schema that may hold `lazySchema` stand-ins: zod's converter keys what it
 * has seen, and the metadata it reads (`.describe()`, `.meta()`), by schema identity, while the
 * built schema's own converter looks itself up by the real object; here both find the same entry,
 * so the document is the one the built schemas give (what `z.lazy` gave before).
 */
export function jsonSchemaOf(
  schema: z.ZodType,
  params: { io: 'input' | 'output'; unrepresentable: 'any' | 'throw'; target: 'draft-2020-12' },
): Record<string, unknown> {
  const ctx = z.core.initializeContext({
    ...params,
    // Every classic schema converts itself (`_zod.processJSONSchema`): no processor table needed.
    processors: {},
    metadata: { get: (key: z.core.$ZodType) => z.globalRegistry.get(schemaBehind(key)) } as unknown as typeof z.globalRegistry,
  });
  ctx.seen = new SchemaKeyedMap(ctx.seen);
  z.core.processSchema(schema, ctx);
  z.core.extractDefs(ctx, schema);
  return z.core.finalize(ctx, schema) as Record<string, unknown>;
}
