import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake ECS container agent on 127.0.0.1, speaking the task scale-in protection endpoint as
 * amazon-ecs-agent serves it (agent/handlers/agentapi/taskprotection/v1): `PUT
 * <ECS_AGENT_URI>/task-protection/v1/state` with `{ProtectionEnabled, ExpiresInMinutes?}`,
 * unknown fields refused (400 `InvalidParameterException`), a missing ProtectionEnabled 400,
 * ExpiresInMinutes outside 1..2880 400 as ECS answers it. Success is 200
 * `{"protection": {"ExpirationDate", "ProtectionEnabled", "TaskArn"}}`; ECS's refusals are
 * `{"failure": {"Arn", "Reason", "Detail"}}` (409 for DEPLOYMENT_BLOCKED and
 * TASK_STOPPING_OR_STOPPED); the task role lacking the grant is 400 `{"error": {"Code":
 * "AccessDeniedException", …}}`. `GET` answers the current state.
 */
const TASK_ARN = 'arn:aws:ecs:us-east-1:111122223333:task/parley-dev-voice/0f1e2d3c4b5a69788796a5b4c3d2e1f0';

export interface FakeEcsAgent {
  /** What ECS_AGENT_URI holds in the task: `http://127.0.0.1:<port>/api/<task id>`. */
  agentUri: string;
  /** Every PUT body, parsed, in arrival order. */
  requests: { ProtectionEnabled?: boolean; ExpiresInMinutes?: number }[];
  state: { protectionEnabled: boolean; expiresAt: number | null };
  /** The next PUT answers this failure reason (ECS refused for the task). */
  failNext(reason: 'DEPLOYMENT_BLOCKED' | 'TASK_STOPPING_OR_STOPPED' | 'MISSING'): void;
  /** The next PUT answers AccessDeniedException (the task role lacks ecs:UpdateTaskProtection). */
  denyNext(): void;
  /** The next PUT answers this raw text and status. */
  answerNext(status: number, text: string): void;
  close(): Promise<void>;
}

const FAILURE_STATUS = { DEPLOYMENT_BLOCKED: 409, TASK_STOPPING_OR_STOPPED: 409, MISSING: 404 } as const;

export async function startFakeEcsAgent(now: () => number = Date.now): Promise<FakeEcsAgent> {
  const taskPath = '/api/0f1e2d3c4b5a69788796a5b4c3d2e1f0-3227353711';
  const requests: FakeEcsAgent['requests'] = [];
  const state: FakeEcsAgent['state'] = { protectionEnabled: false, expiresAt: null };
  const next: (() => [number, unknown]  | [number, string])[] = [];

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };
  const protection = () => ({
    protection: {
      ExpirationDate: state.expiresAt === null ? null : new Date(state.expiresAt).toISOString(),
      ProtectionEnabled: state.protectionEnabled,
      TaskArn: TASK_ARN,
    },
  });
  const invalid = (message: string) => ({ error: { Code: 'InvalidParameterException', Message: message } });

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url !== `${taskPath}/task-protection/v1/state`) return json(res, 404, { error: { Code: 'ResourceNotFoundException', Message: 'Invalid request: no task was found' } });
    if (req.method === 'GET') return json(res, 200, protection());
    if (req.method !== 'PUT') return json(res, 405, invalid('method not allowed'));
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    req.on('end', () => {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        return json(res, 400, invalid('UpdateTaskProtection: failed to decode request'));
      }
      requests.push(body as FakeEcsAgent['requests'][number]);
      if (Object.keys(body).some((key) => key !== 'ProtectionEnabled' && key !== 'ExpiresInMinutes')) {
        return json(res, 400, invalid('UpdateTaskProtection: failed to decode request'));
      }
      if (typeof body.ProtectionEnabled !== 'boolean') return json(res, 400, invalid("Invalid request: does not contain 'ProtectionEnabled' field"));
      const minutes = body.ExpiresInMinutes;
      if (minutes !== undefined && (!Number.isInteger(minutes) || (minutes as number) < 1 || (minutes as number) > 2880)) {
        return json(res, 400, invalid('expiresInMinutes must be between 1 and 2880'));
      }
      const planned = next.shift();
      if (planned) {
        const [status, answer] = planned();
        return json(res, status, answer);
      }
      state.protectionEnabled = body.ProtectionEnabled;
      state.expiresAt = body.ProtectionEnabled ? now() + ((minutes as number | undefined) ?? 120) * 60_000 : null;
      return json(res, 200, protection());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    agentUri: `http://127.0.0.1:${port}${taskPath}`,
    requests,
    state,
    failNext: (reason) =>
      next.push(() => [FAILURE_STATUS[reason], { failure: { Arn: TASK_ARN, Reason: reason, Detail: reason === 'DEPLOYMENT_BLOCKED' ? 'The task is part of a deployment that is blocked' : null } }]),
    denyNext: () =>
      next.push(() => [400, { requestID: 'b2c3', error: { Arn: TASK_ARN, Code: 'AccessDeniedException', Message: 'User is not authorized to perform: ecs:UpdateTaskProtection' } }]),
    answerNext: (status, text) => next.push(() => [status, text]),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
