import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { signedWebhook, startFakeLiveKit } from '../support/fake-livekit.ts';
import { call } from '../support/http.ts';
import { importNumber, newAgent } from '../support/factories.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

/*
 * What one three-minute outbound call costs the platform in AWS operations, counted at the
 * single entry point of each (docs/scale.md, "Cost per 1,000 three-minute calls" quotes the
 * figures this prints): every DynamoDB call goes through the one client of
 * shared/platform/store/db.ts (a middleware asks each for its consumed capacity), every SQS
 * send through a queue's send, every KMS call through the key management, every request
 * through the local server's route table (one Lambda invocation of the route's function),
 * every queue batch through its consumer (one invocation), every log line through the
 * logger. The call is the production path on LiveKit: create-phone-call, the dial step,
 * the callee's answer, the worker's reports of a 3-minute conversation (30 turns: 60
 * utterances, one report each, and one tool call), LiveKit's webhooks, the call's end, its
 * analysis and the customer's webhooks, with transcript_updated off and then on. The clock
 * moves 3 s a report (Date only), so the call lasts its 3 minutes and transcript_updated is
 * throttled as in production. A warm-up call first, so the counts are a warm platform's
 * (caches filled, the number's trunk made).
 */

// Logged at production's level, each line counted instead of printed.
process.env.POWERTOOLS_LOG_LEVEL = 'INFO';
const logged = { lines: 0, bytes: 0 };
type Printable = { getAttributes(): unknown };
const loggerProto = Logger.prototype as unknown as { printLog(level: number, log: Printable): void; getJsonReplacer(): (key: string, value: unknown) => unknown };
loggerProto.printLog = function countLine(this: typeof loggerProto, _level: number, log: Printable) {
  logged.lines += 1;
  logged.bytes += Buffer.byteLength(JSON.stringify(log.getAttributes(), this.getJsonReplacer())) + 1;
};

const RECORDINGS = {
  RECORDINGS_BUCKET: 'parley-recordings-cost',
  RECORDINGS_EGRESS_ROLE_ARN: 'arn:aws:iam::123456789012:role/livekit-egress',
  AWS_ACCESS_KEY_ID: 'AKIAPARLEYTEST000000',
  AWS_SECRET_ACCESS_KEY: 'parley-test-secret-not-real',
};
const livekit = await startFakeLiveKit();
const { startTestApp } = await import('../support/app.ts');
const app = await startTestApp({ LIVEKIT_URL: livekit.url, LIVEKIT_API_KEY: livekit.apiKey, LIVEKIT_API_SECRET: livekit.apiSecret, ...RECORDINGS });
livekit.connect(app.url);
const [{ JOBS }, { startBackgroundWork }, { localQueue }, { LocalMessageQueue }, { domainFunctions }, { dynamo }, { LocalKeyManagement }, { recordedMetrics }, { logger }, { FUNCTIONS }] = await Promise.all([
  import('../../shared/jobs.ts'),
  import('../../local/background.ts'),
  import('../../local/queues.ts'),
  import('../../local/local-queue.ts'),
  import('../../local/functions.ts'),
  import('../../shared/platform/store/db.ts'),
  import('../../shared/platform/crypto/kms.ts'),
  import('../../shared/platform/observability/metrics.ts'),
  import('../../shared/platform/logger.ts'),
  import('../../lib/functions.ts'),
]);
const [{ table }, { keys }] = await Promise.all([import('../../shared/platform/store/table.ts'), import('../../shared/platform/store/keys.ts')]);
logger.setLogLevel('INFO');

/** The function whose invocation a DynamoDB call is part of. */
const running = new AsyncLocalStorage<string>();

interface Tally {
  /** DynamoDB by operation: calls, read and write request units (on-demand), and conditional writes refused. */
  dynamo: Record<string, { calls: number; read: number; write: number; refused: number }>;
  /** Write and read request units by the function that spent them. */
  dynamoByFunction: Record<string, { read: number; write: number }>;
  sqs: Record<string, number>;
  kms: Record<string, number>;
  /** Requests through API Gateway, by route. */
  routes: Record<string, number>;
  /** Lambda invocations, by function, and their summed wall time here (ms). */
  invocations: Record<string, number>;
  invocationMs: Record<string, number>;
  logLines: number;
  logBytes: number;
  metricBytes: number;
}

let tally: Tally | undefined;
const add = (record: Record<string, number>, name: string, value = 1) => (record[name] = (record[name] ?? 0) + value);

// DynamoDB: every table call of the code, asked for its consumed capacity (on-demand: a
// write request unit per KB written, a read unit per 4 KB read strongly, half that
// eventually; a transaction's items twice). DynamoDB Local answers the figure, transactions
// included at twice their items' size, but for a transaction of several small new items it
// answers less than their 2 units each: that is the floor taken. A refused conditional write
// is charged too (1 unit for these small items) but its error carries no figure. The local
// queues' own items (SQS here) are left out.
type Capacity = { CapacityUnits?: number } | { CapacityUnits?: number }[] | undefined;
const units = (capacity: Capacity) => [capacity ?? []].flat().reduce((sum, entry) => sum + (entry.CapacityUnits ?? 0), 0);
const WRITES = /^(Put|Update|Delete|TransactWrite|BatchWrite)/;
dynamo.middlewareStack.add(
  ((next: (args: { input: Record<string, unknown> }) => Promise<{ output: { ConsumedCapacity?: Capacity } }>, context: { commandName?: string }) =>
    async (args: { input: Record<string, unknown> }) => {
      const operation = (context.commandName ?? '?').replace(/Command$/, '');
      // Outside an invocation: the test's own reads, not the call's.
      if (!tally || running.getStore() === undefined || JSON.stringify(args.input).includes('LOCALQUEUE#')) return next(args);
      const counted = tally;
      args.input.ReturnConsumedCapacity = 'TOTAL';
      const entry = (counted.dynamo[operation] ??= { calls: 0, read: 0, write: 0, refused: 0 });
      const ofFunction = (counted.dynamoByFunction[running.getStore()!] ??= { read: 0, write: 0 });
      entry.calls += 1;
      // A transaction's item costs at least 2 units.
      const items = operation.startsWith('Transact') ? ((args.input.TransactItems as unknown[] | undefined)?.length ?? 1) : 0;
      const floor = 2 * items;
      const spend = (used: number) => {
        const kind = WRITES.test(operation) ? 'write' : 'read';
        entry[kind] += used;
        ofFunction[kind] += used;
      };
      try {
        const result = await next(args);
        spend(Math.max(units(result.output.ConsumedCapacity), floor));
        return result;
      } catch (error) {
        if (WRITES.test(operation) && /ConditionalCheckFailed|TransactionCanceled/.test((error as Error).name)) {
          entry.refused += 1;
          spend(Math.max(floor, 1));
        }
        throw error;
      }
    }) as never,
  { step: 'initialize', name: 'parleyCallCostCounter' },
);

// SQS: each message sent (a send, and later a receive and a delete, all billed per request).
type Consumer = (event: { Records: unknown[] }, context: unknown) => Promise<unknown>;
const queueProto = LocalMessageQueue.prototype as unknown as {
  enqueue(this: { name: string }, body: string, options: unknown): unknown;
  start(this: { name: string }, consumer: Consumer): void;
};
const enqueue = queueProto.enqueue;
queueProto.enqueue = function countSend(body, options) {
  if (tally) add(tally.sqs, this.name);
  return enqueue.call(this, body, options);
};
// A queue's batch is one invocation of its consumer.
const CONSUMER_OF: Record<string, string> = { 'parley-call-steps': 'call-steps', 'parley-webhooks': 'webhook-delivery' };
const start = queueProto.start;
queueProto.start = function countBatches(consumer) {
  const name = CONSUMER_OF[this.name] ?? this.name;
  start.call(this, (event, context) => invocation(name, () => consumer(event, context)));
};

/** One Lambda invocation of `name`: counted, timed, and its DynamoDB calls put down to it. */
async function invocation<T>(name: string, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await running.run(name, run);
  } finally {
    if (tally) {
      add(tally.invocations, name);
      add(tally.invocationMs, name, performance.now() - started);
    }
  }
}

// KMS: the two operations of envelope encryption.
const kmsProto = LocalKeyManagement.prototype as unknown as Record<'generateDataKey' | 'decryptDataKey', (...args: unknown[]) => Promise<unknown>>;
for (const operation of ['generateDataKey', 'decryptDataKey'] as const) {
  const original = kmsProto[operation];
  kmsProto[operation] = function countKms(this: unknown, ...args: unknown[]) {
    if (tally) add(tally.kms, operation === 'generateDataKey' ? 'GenerateDataKey' : 'Decrypt');
    return original.apply(this, args);
  };
}

// Every HTTP function: one invocation per request, by the route the request matched.
for (const domain of Object.keys(domainFunctions) as (keyof typeof domainFunctions)[]) {
  const load = domainFunctions[domain];
  domainFunctions[domain] = async () => {
    const { handler } = await load();
    return {
      handler: (event, context, options) => {
        if (tally) add(tally.routes, event.routeKey);
        return invocation(domain, () => handler(event, context, options));
      },
    };
  };
}

// The queue consumers only: the schedules' own work (batch ticks, sweeps, refreshes) is the platform's, not the call's.
const background = startBackgroundWork(JOBS.filter((job) => job.trigger.kind === 'queue').map((job) => ({ ...job, scheduledMessages: undefined })));
afterAll(() => background.stop());

function startCounting(): void {
  tally = { dynamo: {}, dynamoByFunction: {}, sqs: {}, kms: {}, routes: {}, invocations: {}, invocationMs: {}, logLines: 0, logBytes: 0, metricBytes: 0 };
  logged.lines = 0;
  logged.bytes = 0;
  metricsBefore = recordedMetrics().length;
}
let metricsBefore = 0;

function stopCounting(): Tally {
  const counted = tally!;
  tally = undefined;
  counted.logLines = logged.lines;
  counted.logBytes = logged.bytes;
  counted.metricBytes = recordedMetrics()
    .slice(metricsBefore)
    .reduce((sum, document) => sum + Buffer.byteLength(JSON.stringify(document)) + 1, 0);
  return counted;
}

async function livekitEvent(event: Record<string, unknown>) {
  const signed = await signedWebhook(event);
  const res = await call(app.url, 'POST', '/livekit/webhook', { rawBody: signed.body, headers: { 'content-type': 'application/json', authorization: signed.authorization } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

const VOCABULARY = ['thanks', 'for', 'calling', 'about', 'your', 'order', 'we', 'can', 'check', 'the', 'delivery', 'window', 'today', 'please', 'hold'];
/** Utterance n: a dozen words with their timings, as the worker reports them. */
function utterance(n: number) {
  const texts = Array.from({ length: 12 }, (_, i) => VOCABULARY[(n * 7 + i) % VOCABULARY.length]!);
  const words = texts.map((word, i) => ({ word, start: Number((n * 3 + i * 0.22).toFixed(2)), end: Number((n * 3 + i * 0.22 + 0.2).toFixed(2)) }));
  return { role: n % 2 === 0 ? 'agent' : 'user', content: texts.join(' '), words };
}

const TURNS = 30;
const REPORT_EVERY_MS = 3000;

setupClock();
function setupClock() {
  // Date only: timers stay real, the clock runs on and is moved forward a report at a time.
  vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
  afterAll(() => vi.useRealTimers());
}

const ws = await app.newWorkspace();
const hooks = await webhookReceiver();
const { agent } = await newAgent(ws.api, { agent: { webhook_url: hooks.url } });
const { agent: transcriptAgent } = await newAgent(ws.api, {
  agent: { webhook_url: hooks.url, webhook_events: ['call_started', 'call_ended', 'call_analyzed', 'transcript_updated'] },
});
const number = await importNumber(ws.api, { outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] });

/** One outbound call from dial to analysis; `utterances` reports of one line each (every 3 s of the clock). */
async function runCall(options: { utterances: number; agentId?: string }): Promise<{ callId: string }> {
  const created = await ws.api.post('/v2/create-phone-call', {
    body: { from_number: number, to_number: '+14155550199', ...(options.agentId ? { override_agent_id: options.agentId } : {}) },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const callId = created.body.call_id as string;
  // The dial step places the dial; the fake LiveKit's callee answers at once (the worker's callee_answered, report 1).
  await eventually(async () => (await table.get<{ call_status: string }>(keys.call(callId)))?.call_status, (status) => status === 'ongoing');
  const dispatch = livekit.calls('AgentDispatchService/CreateDispatch').find((req) => req.body.room === callId)!;
  const { report_token: token } = JSON.parse(dispatch.body.metadata);
  let sequence = 1;
  const report = async (body: Record<string, unknown>) => {
    const res = await call(app.url, 'POST', `/internal/calls/${callId}/events`, {
      rawBody: JSON.stringify({ timestamp: Date.now(), sequence: ++sequence, ...body }),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(204);
  };
  const room = { name: callId, sid: `RM_${callId}` };
  const callee = { identity: 'callee', sid: `PA_callee_${callId}`, kind: 'SIP', attributes: { 'sip.callStatus': 'active' } };
  const worker = { identity: `agent-${callId}`, sid: `PA_agent_${callId}`, kind: 'AGENT' };
  const egress = { egressId: `EG_${callId}`, roomName: callId };
  // What LiveKit sends while the call starts: the room, both parties and their tracks, the recording.
  await livekitEvent({ event: 'room_started', room });
  await livekitEvent({ event: 'participant_joined', room, participant: callee });
  await livekitEvent({ event: 'participant_joined', room, participant: worker });
  await livekitEvent({ event: 'track_published', room, participant: callee, track: { sid: `TR_callee_${callId}`, type: 'AUDIO' } });
  await livekitEvent({ event: 'track_published', room, participant: worker, track: { sid: `TR_agent_${callId}`, type: 'AUDIO' } });
  await livekitEvent({ event: 'egress_started', egressInfo: { ...egress, status: 'EGRESS_STARTING' } });
  await livekitEvent({ event: 'egress_updated', egressInfo: { ...egress, status: 'EGRESS_ACTIVE' } });

  for (let n = 0; n < options.utterances; n++) {
    vi.setSystemTime(Date.now() + REPORT_EVERY_MS);
    await report({ event: 'transcript_updated', utterances: [utterance(n)] });
    // One tool call in the middle of the conversation.
    if (n === Math.floor(options.utterances / 2)) {
      await report({ event: 'tool_call_invoked', tool_call_id: 'lookup_1', name: 'lookup_order', arguments: '{"order":"A-17"}' });
      await report({ event: 'tool_call_result', tool_call_id: 'lookup_1', content: 'Out for delivery', successful: true });
    }
  }
  await report({ event: 'call_ended', disconnection_reason: 'user_hangup' });

  // What LiveKit sends as the call ends: the parties leave, the recording is written, the room closes.
  await livekitEvent({ event: 'track_unpublished', room, participant: callee, track: { sid: `TR_callee_${callId}`, type: 'AUDIO' } });
  await livekitEvent({ event: 'participant_left', room, participant: { ...callee, attributes: { 'sip.callStatus': 'hangup' } } });
  await livekitEvent({ event: 'track_unpublished', room, participant: worker, track: { sid: `TR_agent_${callId}`, type: 'AUDIO' } });
  await livekitEvent({ event: 'participant_left', room, participant: worker });
  await livekitEvent({ event: 'egress_ended', egressInfo: { ...egress, status: 'EGRESS_COMPLETE', fileResults: [{ filename: 'recording.ogg', duration: String(options.utterances * REPORT_EVERY_MS * 1e6) }] } });
  await livekitEvent({ event: 'room_finished', room });

  await eventually(async () => hooks.events(callId), (events) => events.includes('call_analyzed'), 60_000);
  await Promise.all([localQueue('call-steps').whenIdle(), localQueue('webhooks').whenIdle()]);
  return { callId };
}

/** The GB-seconds a call's invocations would bill at their functions' memory, at the wall time measured here. */
function gbSeconds(counted: Tally): number {
  return Object.entries(counted.invocationMs).reduce((sum, [name, ms]) => {
    const memoryMb = FUNCTIONS.find((spec) => spec.name === name)?.memoryMb ?? 1024;
    return sum + (ms / 1000) * (memoryMb / 1024);
  }, 0);
}

function summary(counted: Tally, webhooks: number) {
  const dynamoTotal = Object.values(counted.dynamo).reduce(
    (sum, entry) => ({ calls: sum.calls + entry.calls, read: sum.read + entry.read, write: sum.write + entry.write, refused: sum.refused + entry.refused }),
    { calls: 0, read: 0, write: 0, refused: 0 },
  );
  const sum = (record: Record<string, number>) => Object.values(record).reduce((total, value) => total + value, 0);
  return {
    dynamo: { ...dynamoTotal, byOperation: counted.dynamo, byFunction: counted.dynamoByFunction },
    sqsSends: sum(counted.sqs),
    sqsByQueue: counted.sqs,
    kms: counted.kms,
    kmsCalls: sum(counted.kms),
    apiRequests: sum(counted.routes),
    routes: counted.routes,
    invocations: sum(counted.invocations),
    invocationsByFunction: counted.invocations,
    invocationMs: Object.fromEntries(Object.entries(counted.invocationMs).map(([name, ms]) => [name, Math.round(ms)])),
    gbSeconds: Number(gbSeconds(counted).toFixed(2)),
    logLines: counted.logLines,
    logBytes: counted.logBytes,
    metricBytes: counted.metricBytes,
    webhooks,
  };
}

describe('the AWS operations of one three-minute outbound call on LiveKit', () => {
  it('stay within their stated bounds, with transcript_updated off and on', async () => {
    // Warm-up: caches filled, the number's outbound trunk made. A minute of the clock, so its
    // dial-timeout step (45 s after the dial) comes due while it runs, not 45 s of real time later.
    await runCall({ utterances: 20 });

    const results: Record<string, ReturnType<typeof summary>> = {};
    for (const [name, agentId] of [['transcript_updated off', undefined], ['transcript_updated on', transcriptAgent.agent_id]] as const) {
      const hitsBefore = hooks.hits.length;
      startCounting();
      const { callId } = await runCall({ utterances: 2 * TURNS, agentId });
      const counted = stopCounting();
      const got = (await ws.api.get(`/v2/get-call/${callId}`)).body;
      expect(counted.routes['GET /v2/get-call/{call_id}']).toBeUndefined();
      expect(got).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
      expect(got.duration_ms).toBeGreaterThanOrEqual(2 * TURNS * REPORT_EVERY_MS);
      expect(got.transcript_object).toHaveLength(2 * TURNS);
      results[name] = summary(counted, hooks.hits.length - hitsBefore);
    }
    console.log(`call-cost: ${JSON.stringify(results, null, 1)}`);

    const off = results['transcript_updated off']!;
    const on = results['transcript_updated on']!;
    // The workload: create-phone-call, 64 worker reports (the answer, 60 utterances, a tool
    // call's two, the end), 13 LiveKit webhooks; 3 webhooks, or 63 with transcript_updated.
    for (const measured of [off, on]) {
      expect(measured.apiRequests).toBe(78);
      expect(measured.routes).toEqual({ 'POST /v2/create-phone-call': 1, 'POST /internal/calls/{call_id}/events': 64, 'POST /livekit/webhook': 13 });
    }
    expect(off.webhooks).toBe(3);
    expect(on.webhooks).toBeGreaterThanOrEqual(55);
    // The bounds: about 1.4 × what was measured (docs/scale.md quotes the figures), so a
    // change that doubles any of them fails. Measured: writes 587 / 948 units (the analytics
    // rollups' two recordings 132 of them: 66 items in two transactions, on cells still small),
    // reads 261 / 603, SQS 6 / 66, KMS 0 (warm caches), invocations 83 / 143, log lines 35 KB.
    const bounds = {
      off: { write: 820, read: 370, sqs: 9, invocations: 90, logBytes: 50_000 },
      on: { write: 1330, read: 850, sqs: 95, invocations: 155, logBytes: 50_000 },
    };
    for (const [measured, bound] of [[off, bounds.off], [on, bounds.on]] as const) {
      expect(measured.dynamo.write).toBeLessThanOrEqual(bound.write);
      expect(measured.dynamo.read).toBeLessThanOrEqual(bound.read);
      expect(measured.sqsSends).toBeLessThanOrEqual(bound.sqs);
      expect(measured.kmsCalls).toBeLessThanOrEqual(2);
      expect(measured.invocations).toBeLessThanOrEqual(bound.invocations);
      expect(measured.logBytes).toBeLessThanOrEqual(bound.logBytes);
      // A worker report, the most frequent request, writes its line and the call's count: 6 units (a transaction of a 2 KB item and a line).
      expect(measured.dynamo.byFunction['calls-media']!.write / 77).toBeLessThanOrEqual(8);
    }
  }, 300_000);
});
