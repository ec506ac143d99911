import type { AuditRecord } from '../../account/index.ts';
import type { ToolCallRecord } from '../sessions/schemas.ts';
import { toolNamed, type Tool, type ToolRequest } from './catalog.ts';
import { dispatch, type Caller } from './dispatch.ts';

/*
 * Runs tools for one turn and keeps what they did: each call's record (shown in the reply
 * and kept in the session) and, for each write that succeeded, its audit record (written in
 * the turn's transaction, marked as the assistant's).
 */

/** A tool's route input from its arguments: the path's `{params}`, then the query (reads) or the body (writes). */
function toolRequest(tool: Tool, args: Record<string, unknown>): ToolRequest | { missing: string } {
  const params: Record<string, string> = {};
  const rest: Record<string, unknown> = { ...args };
  for (const [, name] of tool.path.matchAll(/\{([^{}]+)\}/g)) {
    const value = args[name!];
    if (typeof value !== 'string' || value === '') return { missing: name! };
    params[name!] = value;
    delete rest[name!];
  }
  if (tool.method === 'GET') {
    const query = Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined && value !== null).map(([name, value]) => [name, String(value)]));
    return { params, query };
  }
  if (tool.method === 'DELETE') return { params };
  return { params, body: rest };
}

const errorMessage = (body: unknown, status: number): string => {
  const message = (body as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : `HTTP ${status}`;
};

export class ToolRunner {
  readonly calls: ToolCallRecord[] = [];
  readonly audits: AuditRecord[] = [];

  constructor(
    private readonly caller: Caller,
    private readonly sessionId: string,
  ) {}

  /** Runs `name` with `args` as the caller; answers its record (also kept in `calls`). */
  async run(name: string, args: Record<string, unknown>): Promise<ToolCallRecord> {
    const tool = toolNamed(name);
    if (!tool) return this.keep({ tool: name, arguments: args, status: 'refused', error: `No tool is named ${name}` });
    const request = toolRequest(tool, args);
    if ('missing' in request) return this.keep({ tool: name, arguments: args, status: 'refused', error: `${request.missing}: Required` });
    let answer;
    try {
      answer = await dispatch(this.caller, this.sessionId, tool, request);
    } catch (error) {
      return this.keep({ tool: name, arguments: args, status: 'failed', error: error instanceof Error ? error.message : String(error) });
    }
    if (answer.status >= 400) {
      return this.keep({ tool: name, arguments: args, status: answer.status >= 500 ? 'failed' : 'refused', http_status: answer.status, error: errorMessage(answer.body, answer.status) });
    }
    const result = withoutSecrets(answer.body, tool.secrets);
    if (tool.writes) {
      const target = tool.target?.(args, answer.body) ?? { type: tool.route, id: '-' };
      const changes = request.body && typeof request.body === 'object' ? Object.keys(request.body as object).sort() : [];
      this.audits.push({ action: 'conductor.tool_call', target, changes, tool: tool.name });
    }
    return this.keep({ tool: name, arguments: args, status: 'ok', http_status: answer.status, ...(result === undefined ? {} : { result }) });
  }

  private keep(record: ToolCallRecord): ToolCallRecord {
    this.calls.push(record);
    return record;
  }
}

function withoutSecrets(body: unknown, secrets: readonly string[] | undefined): unknown {
  if (!secrets?.length || !body || typeof body !== 'object' || Array.isArray(body)) return body;
  return Object.fromEntries(Object.entries(body).filter(([name]) => !secrets.includes(name)));
}
