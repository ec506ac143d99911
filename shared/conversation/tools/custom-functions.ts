import { config } from '../../platform/config.ts';
import { EgressRefused, EgressResponseTooLarge, egressFetch, type Resolver } from '../../platform/egress/egress.ts';
import { signatureHeaders, wire } from '../../platform/naming.ts';
import { signWebhook } from '../../webhooks/index.ts';

/*
 * Custom functions during a conversation, as the compatible API runs them: an HTTP request
 * to the tool's URL (POST by default) with the body `{call, name, args}` (or the arguments
 * at the root with `args_at_root`), signed like a webhook (both signature headers, the
 * workspace's webhook key), within the tool's `timeout_ms`. Whatever happens becomes the
 * tool result the model reads: the response text on a 2xx, else a line saying what went
 * wrong, so the conversation always continues.
 *
 * Through the egress guard: in production a URL whose host resolves to a loopback,
 * private, link-local, metadata or other non-public address is refused before anything is
 * sent; the connection goes to the checked address (no DNS rebinding); redirects are not
 * followed (a 3xx is a failure); the body read is capped.
 */

/** The compatible API's default `timeout_ms`. */
const CUSTOM_FUNCTION_DEFAULT_TIMEOUT_MS = 120_000;
/** What the model reads of a response: the first this many characters. */
const CUSTOM_FUNCTION_RESULT_MAX_CHARS = 8_000;
/** Responses larger than this are not read (the call fails with a result saying so). */
const CUSTOM_FUNCTION_MAX_RESPONSE_BYTES = 1024 * 1024;

/** The fields of a `custom` tool (retell-sdk llm.d.ts CustomTool) the runtime acts on. */
export interface CustomFunctionTool {
  name: string;
  url: string;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  query_params?: Record<string, string>;
  args_at_root?: boolean;
  timeout_ms?: number;
  /** Variable name → dot path in the JSON response (`data.slots.0`); found values become collected variables. */
  response_variables?: Record<string, string>;
}

export interface CustomFunctionCall {
  tool: CustomFunctionTool;
  args: Record<string, unknown>;
  /** The call's context, sent as `call` (the compatible API sends its call object). */
  call: Record<string, unknown>;
  /** The workspace's webhook signing secret. */
  secret: string;
  /** Tests: plays DNS for the guard. */
  resolver?: Resolver;
}

export interface CustomFunctionOutcome {
  content: string;
  successful: boolean;
  /** From `response_variables`, on success only. */
  variables: Record<string, string>;
}

/** The tool's timeout, cut to CUSTOM_FUNCTION_MAX_TIMEOUT_MS. */
function customFunctionTimeoutMs(tool: Pick<CustomFunctionTool, 'timeout_ms'>): number {
  const asked = typeof tool.timeout_ms === 'number' && tool.timeout_ms > 0 ? tool.timeout_ms : CUSTOM_FUNCTION_DEFAULT_TIMEOUT_MS;
  return Math.min(asked, config.CUSTOM_FUNCTION_MAX_TIMEOUT_MS);
}

export async function callCustomFunction(input: CustomFunctionCall): Promise<CustomFunctionOutcome> {
  const { tool, args } = input;
  const method = tool.method ?? 'POST';
  const timeoutMs = customFunctionTimeoutMs(tool);
  const failed = (content: string): CustomFunctionOutcome => ({ content, successful: false, variables: {} });

  let url: URL;
  try {
    url = new URL(tool.url);
  } catch {
    return failed('Error: the function URL is not a valid URL');
  }
  for (const [name, value] of Object.entries(tool.query_params ?? {})) url.searchParams.append(name, value);
  // GET carries the arguments in the query, as the compatible API sends them; the others in the body.
  let body = '';
  if (method === 'GET') {
    for (const [name, value] of Object.entries(args)) url.searchParams.append(name, typeof value === 'string' ? value : JSON.stringify(value));
  } else {
    body = JSON.stringify(tool.args_at_root ? args : { call: input.call, name: tool.name, args });
  }
  const signature = signWebhook(body, input.secret, Date.now());

  let response: Response;
  let text: string;
  try {
    response = await egressFetch(url, {
      method,
      headers: {
        ...tool.headers,
        ...(method === 'GET' ? {} : { 'content-type': 'application/json' }),
        'user-agent': `${wire.service}-functions/1`,
        ...Object.fromEntries(signatureHeaders.map((name) => [name, signature])),
      },
      ...(method === 'GET' ? {} : { body }),
      timeoutMs,
      maxResponseBytes: CUSTOM_FUNCTION_MAX_RESPONSE_BYTES,
      ...(input.resolver ? { resolver: input.resolver } : {}),
    });
    text = await response.text();
  } catch (error) {
    return failed(transportFailure(error, timeoutMs));
  }
  if (response.status < 200 || response.status > 299) {
    return failed(`Error: the function answered HTTP ${response.status}${text.trim() ? `: ${cut(text.trim(), 500)}` : ''}`);
  }
  return { content: cut(text, CUSTOM_FUNCTION_RESULT_MAX_CHARS), successful: true, variables: responseVariables(tool, text) };
}

function transportFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof EgressRefused) return `Error: ${error.message}`;
  if (error instanceof EgressResponseTooLarge) return `Error: the function's response is larger than ${CUSTOM_FUNCTION_MAX_RESPONSE_BYTES / 1024 / 1024} MB`;
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return `Error: the function did not answer within ${timeoutMs} ms`;
  }
  const code = (error as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  return `Error: the request failed (${typeof code === 'string' ? code : 'network error'})`;
}

export function responseVariables(tool: CustomFunctionTool, text: string): Record<string, string> {
  const paths = Object.entries(tool.response_variables ?? {});
  if (paths.length === 0) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return {};
  }
  const found: Record<string, string> = {};
  for (const [name, path] of paths) {
    let value: unknown = parsed;
    for (const part of path.split('.').filter(Boolean)) {
      value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[part] : undefined;
    }
    if (value !== undefined && value !== null) found[name] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  return found;
}

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
