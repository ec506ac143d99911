import { Annotations, type Stack } from 'aws-cdk-lib';
import { stageContext } from './stage.ts';

/**
 * The load the platform's shared limits are sized for: the route throttles every tenant
 * shares, the reservations of the functions whose load grows with calls and chats, and the
 * account quotas a deployment needs (docs/scale.md has the arithmetic). Per-tenant limits are
 * not here: the gate (per key), the concurrency counter and the numbers' CPS buckets bound a
 * workspace, and every shared limit sits above what one key may send, so one tenant at its
 * own limit leaves room for the rest; the chat routes excepted, whose turns hold an
 * execution for seconds each and are sized for the platform's planned turns instead.
 */
export const SCALE_TARGET = {
  /** Calls in progress at once on the media server, platform-wide. */
  concurrentCalls: 10_000,
  /** The busiest key: 100,000 requests a minute, the most a key's rate_limit_per_minute may be. */
  keyRequestsPerSecond: 100_000 / 60,
  /**
   * Keyed API traffic of the whole platform, planned (not measured): the busiest key and as
   * much again twice over for every other tenant.
   */
  apiRequestsPerSecond: 5000,
  /**
   * Chat turns a second, platform-wide, planned (not measured): as many chats in progress as
   * calls (10,000), a user message every 20 s each. A tenth of the keyed API traffic above,
   * and within it (public keys are keys too).
   */
  chatTurnsPerSecond: 500,
  /** Of those, the browser widget's public chats (the public function), planned at a tenth; the rest are keyed (the chats function). */
  publicChatTurnsPerSecond: 50,
} as const;

/**
 * A chat turn's execution, in seconds: the function waits for the language model's whole
 * answer (a turn is answered as a whole, docs/chats.md), a planning figure between a short
 * answer (about 2 s) and one with a tool call (5 s or more).
 */
export const CHAT_TURN_SECONDS = 3;

/** Executions a function running `turnsPerSecond` chat turns holds: rate × duration. */
export const chatExecutions = (turnsPerSecond: number): number => Math.ceil(turnsPerSecond * CHAT_TURN_SECONDS);

/**
 * Requests a second one call in progress sends to each calls-media route, planned above the
 * average (docs/scale.md says where each comes from): the worker reports every finished
 * utterance, tool call and transfer decision (about one every 3 s, 0.33; planned at 0.5);
 * it retrieves once per user turn when the agent has knowledge bases (about one every 6 s);
 * LiveKit sends about 15 webhooks a call, planned for calls averaging 75 s (unanswered and
 * voicemail calls are short).
 */
export const PER_CALL_REQUESTS_PER_SECOND = {
  workerReports: 0.5,
  workerRetrievals: 0.2,
  mediaWebhooks: 0.2,
} as const;

/**
 * Concurrent calls one vCPU of the voice worker carries: each call's job process takes
 * 7.0 % of a vCPU (measured: docs/performance.md, "Voice worker: CPU and memory per
 * concurrent call"; speech, model and voice run at the vendors).
 */
export const VOICE_WORKER_CALLS_PER_VCPU = 14.3;

/**
 * Voice worker tasks that carry the target's calls with the service at its CPU scaling
 * target (docs/scale.md, "Voice worker"): calls ÷ (calls a vCPU × vCPUs a task × the target
 * share). At LiveKit's load threshold (0.7) the same tasks carry 40 % more, so the target
 * holds before any task refuses a job.
 */
export function voiceWorkerTasksFor(calls: number, vcpusPerTask: number, cpuTargetPercent: number): number {
  return Math.ceil(calls / (VOICE_WORKER_CALLS_PER_VCPU * vcpusPerTask * (cpuTargetPercent / 100)));
}

/** Requests a second at the target of one calls-media route. */
export const atTarget = (perCall: number): number => Math.round(perCall * SCALE_TARGET.concurrentCalls);

/** Requests a second the target sends through API Gateway in all: the calls-media routes and keyed API traffic. */
export const TARGET_API_REQUESTS_PER_SECOND =
  atTarget(PER_CALL_REQUESTS_PER_SECOND.workerReports) +
  atTarget(PER_CALL_REQUESTS_PER_SECOND.workerRetrievals) +
  atTarget(PER_CALL_REQUESTS_PER_SECOND.mediaWebhooks) +
  SCALE_TARGET.apiRequestsPerSecond;

/** An account quota the stack needs room in: its context key, AWS's default and how to ask for more. */
export interface AccountQuota {
  /** The CDK context key stating what the account has. */
  context: string;
  /** AWS's default, assumed when the context does not say. */
  awsDefault: number;
  /** Service Quotas' name for it, with the service and its code, as an operator searches for it. */
  quotaName: string;
}

/** Lambda's concurrent executions of the account in the region; reservations must leave 100 unreserved. */
export const LAMBDA_CONCURRENCY_QUOTA: AccountQuota = {
  context: 'accountConcurrency',
  awsDefault: 1000,
  quotaName: 'AWS Lambda "Concurrent executions" (L-B99A9384)',
};

/** API Gateway's throttle for the account in the region, across every HTTP, REST and WebSocket API in it. */
export const API_THROTTLE_QUOTA: AccountQuota = {
  context: 'apiThrottleQuota',
  awsDefault: 10_000,
  quotaName: 'Amazon API Gateway "Throttle rate" (L-8A5B8E43, requests a second per account per Region)',
};

/**
 * Holds what the stack needs to the quota the context states (`stages.<stage>.<key>`, else
 * `<key>`: a quota is a fact of the stage's account). Stated and too low: the synth
 * fails, naming the quota to request. Not stated: the account is unknown, so AWS's default is
 * assumed and a shortfall is a warning (the synth of a stack that needs a raise still passes
 * CI; `cdk synth --strict` fails on it); README, Deploy settings, says to state each quota a
 * deployment has. Returns the quota used.
 */
export function checkAccountQuota(stack: Stack, stage: string, quota: AccountQuota, needed: number, what: string, otherwise = ''): number {
  const stated = stageContext(stack, stage, quota.context);
  const value = Number(stated ?? quota.awsDefault);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${quota.context} must be a whole number, not ${String(stated)}`);
  if (needed <= value) return value;
  const request =
    `Ask for at least ${needed} in Service Quotas (${quota.quotaName}, in the stack's region) and, once granted, ` +
    `deploy with -c ${quota.context}=<the granted quota>${otherwise ? `; ${otherwise}` : ''} (docs/scale.md, Quotas a deployment needs).`;
  if (stated !== undefined) {
    throw new Error(`${what} needs ${needed}, more than ${quota.context} (${value}) says the account has. ${request}`);
  }
  Annotations.of(stack).addWarningV2(
    `parley:quota:${quota.context}`,
    `${what} needs ${needed}, more than AWS's default of ${quota.awsDefault} (context ${quota.context} is not set). ${request}`,
  );
  return value;
}
