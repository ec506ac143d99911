import * as z from 'zod';

/**
 * ECS task scale-in protection while calls run (docs/operations.md, The voice worker): a
 * task with calls is never the one ECS stops when the service scales in or a deployment
 * replaces tasks; once its last call ends, the protection is removed and the task may go.
 *
 * The task asks its own ECS container agent: `PUT $ECS_AGENT_URI/task-protection/v1/state`
 * with `{"ProtectionEnabled": true, "ExpiresInMinutes": n}` or `{"ProtectionEnabled": false}`.
 * The agent calls ECS's UpdateTaskProtection with the task role's credentials, so the task
 * role holds `ecs:UpdateTaskProtection` on this cluster's tasks (lib/voice-worker.ts). No AWS
 * SDK here: one fetch. Without ECS_AGENT_URI (npm start, tests, anything but ECS) every call
 * is a no-op.
 *
 * A call may last up to 2 hours (an agent's `max_call_duration_ms` is at most 7,200,000), so
 * while calls run the protection always reaches at least that far ahead: it is set for
 * `longestCallMinutes + renewMinutes` and renewed when less than `longestCallMinutes` is left,
 * about once every `renewMinutes` on a busy task. Protection that cannot be set (the agent
 * unreachable, a refusal) is retried on the next update; the outcome says why.
 */
export const LONGEST_CALL_MINUTES = 120;
export const RENEW_MINUTES = 10;
/** ECS takes 1 to 2,880 minutes. */
const MAX_EXPIRES_MINUTES = 2880;

export type ProtectionOutcome =
  | { ok: true; protectionEnabled: boolean; expiresAt: number | null }
  /**
   * `status` is the agent's HTTP status (null: no answer); `reason` is ECS's failure reason
   * (`DEPLOYMENT_BLOCKED`, `TASK_STOPPING_OR_STOPPED`, …), the error code
   * (`AccessDeniedException`, …), `unreachable` or `unexpected_response`.
   */
  | { ok: false; status: number | null; reason: string; message: string };

export interface TaskProtectionOptions {
  /** The container agent's endpoint; default ECS_AGENT_URI (unset: every call is a no-op). */
  agentUri?: string;
  longestCallMinutes?: number;
  renewMinutes?: number;
  /** How long one request may take. */
  timeoutMs?: number;
  fetch?: typeof fetch;
  now?: () => number;
  /** Each request's outcome (the worker logs refusals). */
  onOutcome?: (outcome: ProtectionOutcome, request: { protectionEnabled: boolean; expiresInMinutes?: number }) => void;
}

// The agent's answers (amazon-ecs-agent's task protection handler): `protection` on success,
// `failure` when ECS refused for this task, `error` when the request or the call failed.
const answerSchema = z.object({
  protection: z.object({ ProtectionEnabled: z.boolean(), ExpirationDate: z.string().nullish() }).optional(),
  failure: z.object({ Reason: z.string().nullish(), Detail: z.string().nullish() }).optional(),
  error: z.object({ Code: z.string().nullish(), Message: z.string().nullish() }).optional(),
});

export class TaskProtection {
  readonly #url: string | undefined;
  readonly #longest: number;
  readonly #renew: number;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #now: () => number;
  readonly #onOutcome: TaskProtectionOptions['onOutcome'];
  /** Until when ECS confirmed protection (epoch ms); undefined: not protected as far as we know. */
  #protectedUntil: number | undefined;
  /** Updates run one after another, each deciding from the state the previous one left. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: TaskProtectionOptions = {}) {
    const agentUri = options.agentUri ?? process.env.ECS_AGENT_URI;
    this.#url = agentUri ? `${agentUri.replace(/\/+$/, '')}/task-protection/v1/state` : undefined;
    this.#longest = options.longestCallMinutes ?? LONGEST_CALL_MINUTES;
    this.#renew = options.renewMinutes ?? RENEW_MINUTES;
    if (!Number.isInteger(this.#longest) || !Number.isInteger(this.#renew) || this.#longest < 1 || this.#renew < 1 || this.#longest + this.#renew > MAX_EXPIRES_MINUTES) {
      throw new Error(`Task protection needs whole minutes with longestCallMinutes + renewMinutes at most ${MAX_EXPIRES_MINUTES} (ECS's limit)`);
    }
    this.#timeoutMs = options.timeoutMs ?? 5000;
    this.#fetch = options.fetch ?? fetch;
    this.#now = options.now ?? Date.now;
    this.#onOutcome = options.onOutcome;
  }

  /** Whether this process runs where the agent endpoint exists (an ECS task). */
  get available(): boolean {
    return this.#url !== undefined;
  }

  /** Until when the task is protected (epoch ms), as ECS last confirmed; undefined when not. */
  get protectedUntil(): number | undefined {
    return this.#protectedUntil;
  }

  /**
   * The worker's number of running calls now: protects the task while there is at least one
   * (renewing as above), removes the protection at none. Answers the request's outcome, or
   * undefined when nothing had to be sent (or outside ECS).
   */
  setActiveJobs(count: number): Promise<ProtectionOutcome | undefined> {
    const next = this.#queue.then(() => this.#sync(count));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #sync(count: number): Promise<ProtectionOutcome | undefined> {
    if (!this.#url) return undefined;
    if (!Number.isInteger(count) || count < 0) throw new Error(`The number of running calls must be a whole number, not ${count}`);
    const now = this.#now();
    if (count === 0) return this.#protectedUntil === undefined ? undefined : this.#put(false);
    if (this.#protectedUntil !== undefined && this.#protectedUntil - now >= this.#longest * 60_000) return undefined;
    return this.#put(true);
  }

  async #put(protectionEnabled: boolean): Promise<ProtectionOutcome> {
    const expiresInMinutes = protectionEnabled ? this.#longest + this.#renew : undefined;
    const request = { protectionEnabled, ...(expiresInMinutes ? { expiresInMinutes } : {}) };
    const sentAt = this.#now();
    const outcome = await this.#send(protectionEnabled, expiresInMinutes, sentAt);
    if (outcome.ok) this.#protectedUntil = outcome.protectionEnabled ? (outcome.expiresAt ?? sentAt + expiresInMinutes! * 60_000) : undefined;
    this.#onOutcome?.(outcome, request);
    return outcome;
  }

  async #send(protectionEnabled: boolean, expiresInMinutes: number | undefined, sentAt: number): Promise<ProtectionOutcome> {
    let response: Response;
    try {
      response = await this.#fetch(this.#url!, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ProtectionEnabled: protectionEnabled, ...(expiresInMinutes ? { ExpiresInMinutes: expiresInMinutes } : {}) }),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (error) {
      return { ok: false, status: null, reason: 'unreachable', message: `The ECS agent did not answer: ${(error as Error).message}` };
    }
    const text = await response.text().catch(() => '');
    let answer: z.infer<typeof answerSchema> | undefined;
    try {
      const parsed = answerSchema.safeParse(JSON.parse(text));
      answer = parsed.success ? parsed.data : undefined;
    } catch {
      answer = undefined;
    }
    if (response.ok && answer?.protection) {
      const expiresAt = answer.protection.ProtectionEnabled ? Date.parse(answer.protection.ExpirationDate ?? '') : NaN;
      return {
        ok: true,
        protectionEnabled: answer.protection.ProtectionEnabled,
        expiresAt: Number.isNaN(expiresAt) ? (answer.protection.ProtectionEnabled ? sentAt + expiresInMinutes! * 60_000 : null) : expiresAt,
      };
    }
    if (answer?.failure) {
      return { ok: false, status: response.status, reason: answer.failure.Reason ?? 'unknown', message: answer.failure.Detail ?? `ECS refused: ${answer.failure.Reason ?? 'no reason given'}` };
    }
    if (answer?.error) {
      return { ok: false, status: response.status, reason: answer.error.Code ?? 'unknown', message: answer.error.Message ?? 'The ECS agent answered an error without a message' };
    }
    return { ok: false, status: response.status, reason: 'unexpected_response', message: `The ECS agent answered HTTP ${response.status}: ${text.slice(0, 200)}` };
  }
}
