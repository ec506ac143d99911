import { getAgent } from '../agents/index.ts';
import { badGateway, badRequest, notFound } from '../platform/errors.ts';
import { getLlm } from '../agents/index.ts';
import { wire } from '../platform/naming.ts';
import { EgressRefused, EgressResponseTooLarge, egressFetch } from '../platform/egress/egress.ts';
import { RETELL_LLM_ENGINE, type VersionReference } from '../agents/index.ts';

/*
 * `GET /get-mcp-tools/{agent_id}` (retell-sdk `mcpTool.getMcpTools`): the tools the MCP
 * servers of the agent's Retell LLM expose, asked of the servers themselves over MCP's
 * Streamable HTTP transport (JSON-RPC over POST; answers as JSON or as an SSE stream):
 * `initialize`, `notifications/initialized`, then `tools/list` page by page. The older
 * HTTP+SSE transport (a GET event stream) is not spoken.
 */

export interface McpServerConfig {
  id?: string;
  name?: string;
  url?: string;
  headers?: Record<string, string>;
  query_params?: Record<string, string>;
  timeout_ms?: number;
}

export interface McpToolDefinition {
  name: string;
  description: string;
  inputSchema: unknown;
}

/** The protocol revision offered; servers answer with the one they speak. */
const MCP_PROTOCOL_VERSION = '2025-06-18';
/** Per server, the whole exchange; a server's own `timeout_ms` may only shorten it (API Gateway ends requests at 30 s). */
const MCP_TIMEOUT_MS = 10_000;
const MAX_PAGES = 20;
const MAX_RESPONSE_BYTES = 5 * 1024 * 1024;

class McpFailure extends Error {}

interface JsonRpcResponse {
  jsonrpc?: string;
  id?: unknown;
  result?: Record<string, unknown>;
  error?: { code?: number; message?: string };
}

class McpSession {
  private sessionId?: string;
  private protocolVersion?: string;
  private nextId = 1;

  constructor(
    private readonly url: string,
    private readonly headers: Record<string, string>,
    private readonly signal: AbortSignal,
  ) {}

  private requestHeaders(): Record<string, string> {
    return {
      ...this.headers,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'user-agent': `${wire.service}-mcp/1`,
      ...(this.sessionId ? { 'mcp-session-id': this.sessionId } : {}),
      ...(this.protocolVersion ? { 'mcp-protocol-version': this.protocolVersion } : {}),
    };
  }

  async request(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    const response = await egressFetch(this.url, {
      method: 'POST',
      headers: this.requestHeaders(),
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
      signal: this.signal,
      timeoutMs: MCP_TIMEOUT_MS,
      maxResponseBytes: MAX_RESPONSE_BYTES,
    });
    if (response.status < 200 || response.status > 299) {
      await response.body?.cancel().catch(() => undefined);
      throw new McpFailure(`${method} answered HTTP ${response.status}`);
    }
    const session = response.headers.get('mcp-session-id');
    if (session) this.sessionId = session;
    const message = await readMessage(response, id);
    if (message.error) throw new McpFailure(`${method} failed: ${String(message.error.message ?? message.error.code ?? 'error').slice(0, 200)}`);
    if (!message.result || typeof message.result !== 'object') throw new McpFailure(`${method} answered no result`);
    return message.result;
  }

  async notify(method: string): Promise<void> {
    const response = await egressFetch(this.url, {
      method: 'POST',
      headers: this.requestHeaders(),
      body: JSON.stringify({ jsonrpc: '2.0', method }),
      signal: this.signal,
      timeoutMs: MCP_TIMEOUT_MS,
      maxResponseBytes: MAX_RESPONSE_BYTES,
    });
    await response.body?.cancel().catch(() => undefined);
    if (response.status < 200 || response.status > 299) throw new McpFailure(`${method} answered HTTP ${response.status}`);
  }

  async initialize(): Promise<void> {
    const result = await this.request('initialize', {
      protocolVersion: MCP_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: wire.service, version: '1' },
    });
    if (typeof result.protocolVersion === 'string') this.protocolVersion = result.protocolVersion;
    await this.notify('notifications/initialized');
  }

  /** Ends the server's session, when it keeps one; best effort. */
  close(): void {
    if (!this.sessionId) return;
    void egressFetch(this.url, { method: 'DELETE', headers: this.requestHeaders(), timeoutMs: 2000 })
      .then((response) => response.body?.cancel())
      .catch(() => undefined);
  }
}

/** The JSON-RPC response with the given id, from a JSON body or an SSE stream (read until it arrives). */
async function readMessage(response: Response, id: number): Promise<JsonRpcResponse> {
  const type = response.headers.get('content-type') ?? '';
  if (!response.body) throw new McpFailure('empty response');
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let size = 0;
  const matches = (message: unknown): message is JsonRpcResponse =>
    message !== null && typeof message === 'object' && (message as JsonRpcResponse).id === id;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (value) {
        size += value.byteLength;
        if (size > MAX_RESPONSE_BYTES) throw new McpFailure('response too large');
        text += decoder.decode(value, { stream: !done });
      }
      if (type.includes('text/event-stream')) {
        // Events are separated by blank lines; each `data:` line of an event joins its payload.
        const events = text.replace(/\r\n/g, '\n').split('\n\n');
        const complete = done ? events : events.slice(0, -1);
        for (const event of complete) {
          const data = event
            .split('\n')
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).replace(/^ /, ''))
            .join('\n');
          if (!data) continue;
          let parsed: unknown;
          try {
            parsed = JSON.parse(data);
          } catch {
            continue;
          }
          const found = (Array.isArray(parsed) ? parsed : [parsed]).find(matches);
          if (found) return found;
        }
      }
      if (done) break;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  if (type.includes('text/event-stream')) throw new McpFailure('the event stream ended without an answer');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new McpFailure('the answer is not JSON');
  }
  const found = (Array.isArray(parsed) ? parsed : [parsed]).find(matches);
  if (!found) throw new McpFailure('the answer has no response to the request');
  return found;
}

function serverUrl(server: McpServerConfig): string {
  let url: URL;
  try {
    url = new URL(server.url ?? '');
  } catch {
    throw badRequest(`MCP server "${server.name ?? server.id ?? '?'}" has no valid url`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw badRequest(`MCP server "${server.name ?? server.id ?? '?'}" url must be http:// or https://`);
  }
  for (const [name, value] of Object.entries(server.query_params ?? {})) url.searchParams.set(name, String(value));
  return url.toString();
}

/** Lists one server's tools. */
export async function listServerTools(server: McpServerConfig): Promise<McpToolDefinition[]> {
  const label = server.name ?? server.id ?? 'unnamed';
  const url = serverUrl(server);
  const timeoutMs = Math.min(
    MCP_TIMEOUT_MS,
    typeof server.timeout_ms === 'number' && server.timeout_ms > 0 ? server.timeout_ms : MCP_TIMEOUT_MS,
  );
  const headers = Object.fromEntries(
    Object.entries(server.headers ?? {}).filter(([, value]) => typeof value === 'string' && !/[\r\n]/.test(value)),
  );
  const session = new McpSession(url, headers, AbortSignal.timeout(timeoutMs));
  try {
    await session.initialize();
    const tools: McpToolDefinition[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await session.request('tools/list', cursor ? { cursor } : {});
      const listed = Array.isArray(result.tools) ? (result.tools as Record<string, unknown>[]) : [];
      for (const tool of listed) {
        if (typeof tool?.name !== 'string') continue;
        tools.push({
          name: tool.name,
          description: typeof tool.description === 'string' ? tool.description : '',
          inputSchema: tool.inputSchema ?? { type: 'object' },
        });
      }
      cursor = typeof result.nextCursor === 'string' && result.nextCursor ? result.nextCursor : undefined;
      if (!cursor) break;
    }
    return tools;
  } catch (error) {
    // A destination the guard refuses is the LLM's configuration, not the server's failure.
    if (error instanceof EgressRefused) throw badRequest(`MCP server "${label}": ${error.message}`);
    throw badGateway(`MCP server "${label}" failed: ${mcpReason(error, timeoutMs)}`);
  } finally {
    session.close();
  }
}

function mcpReason(error: unknown, timeoutMs: number): string {
  if (error instanceof McpFailure) return error.message;
  if (error instanceof EgressResponseTooLarge) return 'response too large';
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return `timed out after ${timeoutMs} ms`;
  const cause = (error as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  if (cause?.code) return `request failed: ${cause.code}`;
  if (cause?.message) return `request failed: ${cause.message.slice(0, 100)}`;
  return 'request failed';
}

export async function getMcpTools(
  workspaceId: string,
  agentId: string,
  query: { mcp_id?: string; version?: VersionReference },
): Promise<McpToolDefinition[]> {
  const agent = await getAgent(workspaceId, agentId, query.version);
  const engine = agent.response_engine;
  if (engine?.type !== RETELL_LLM_ENGINE) {
    throw badRequest(`Agent ${agentId} does not run a Retell LLM, so it has no MCP servers`);
  }
  const llm = await getLlm(workspaceId, engine.llm_id, engine.version ?? undefined);
  const servers = (llm.mcps ?? []) as McpServerConfig[];
  const chosen = query.mcp_id === undefined ? servers : servers.filter((server) => server.id === query.mcp_id || server.name === query.mcp_id);
  if (query.mcp_id !== undefined && chosen.length === 0) {
    throw notFound(`Agent ${agentId} has no MCP server "${query.mcp_id}"`);
  }
  return (await Promise.all(chosen.map(listServerTools))).flat();
}
