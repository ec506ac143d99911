import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { round } from './stats.ts';

/**
 * Webhook delivery throughput (docs/performance.md): deliveries a second through the local
 * queue (SQS's semantics: batches of 10, `pollers` batches at once) and the deployed
 * consumer (functions/webhook-delivery.ts: the workspace slot, the claim, the signed POST
 * through the egress guard, the log entry) to a receiver on 127.0.0.1 that answers after
 * `receiverMs`, against a raw loop of fetch() POSTs of the same body to the same receiver with
 * as many in flight (pollers × 10). The ratio is what the delivery path keeps of what the
 * receiver and the concurrency allow: goal ≥ 0.8. Each side runs `deliveries` after a warm-up.
 */
export interface WebhookThroughput {
  deliveries: number;
  inFlight: number;
  receiverMs: number;
  queuePerSecond: number;
  rawPerSecond: number;
  /** What a batch took beyond the receiver's answer: the delivery path's own time, ten deliveries at once. */
  batchOverheadMs: number;
  ratio: number;
  met: boolean;
}

export const WEBHOOK_TARGET_RATIO = 0.8;
const BATCH_SIZE = 10;

/** A receiver answering 200 after `delayMs`, counting what it got. */
async function receiver(delayMs: number): Promise<{ url: string; hits: () => number; server: Server }> {
  let hits = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hits++;
      setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'), delayMs);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, hits: () => hits, server };
}

export async function measureWebhookThroughput(
  options: { deliveries: number; pollers: number; receiverMs: number },
  log: (line: string) => void,
): Promise<WebhookThroughput> {
  const { startDynamoDbLocal } = await import('../local/dynamodb.ts');
  const dynamoDbLocal = await startDynamoDbLocal();
  process.env.DYNAMODB_ENDPOINT = dynamoDbLocal.endpoint;
  const target = await receiver(options.receiverMs);
  try {
    const [{ ensureTable }, { dynamo, tableName }, { createWorkspace }, { LocalMessageQueue }, { setLocalQueue }, { enqueueWebhook }, { handler }] = await Promise.all([
      import('../shared/platform/store/create-table.ts'),
      import('../shared/platform/store/db.ts'),
      import('../shared/account/workspaces.ts'),
      import('../local/local-queue.ts'),
      import('../shared/platform/aws/queue.ts'),
      import('../shared/webhooks/webhooks.ts'),
      import('../functions/webhook-delivery.ts'),
    ]);
    await ensureTable(dynamo, tableName);
    const inFlight = options.pollers * BATCH_SIZE;
    // A workspace whose cap does not bind: the path's cost is measured, not the fairness.
    const ws = await createWorkspace('bench webhooks');
    const payload = { call: { call_id: 'call_bench', transcript: 'x'.repeat(2_000) } };
    const body = JSON.stringify({ event: 'call_ended', ...payload });

    const throughQueue = async (count: number): Promise<number> => {
      const queue = new LocalMessageQueue({ name: 'bench-webhooks', batchSize: BATCH_SIZE, maxConcurrency: options.pollers, visibilityTimeoutSeconds: 120 });
      setLocalQueue('webhooks', queue);
      // The attempt's timeout well past the receiver's answer: every delivery succeeds on its first attempt.
      const timeoutMs = options.receiverMs + 20_000;
      for (let i = 0; i < count; i++) await enqueueWebhook({ workspaceId: ws.workspace_id, url: target.url, event: 'call_ended', payload, timeoutMs }, queue);
      const before = target.hits();
      const started = performance.now();
      queue.start((event, context) => handler(event, context));
      await queue.whenIdle();
      const elapsed = performance.now() - started;
      await queue.stop();
      if (target.hits() - before !== count) throw new Error(`the receiver got ${target.hits() - before} of ${count} deliveries`);
      return count / (elapsed / 1000);
    };

    const raw = async (count: number): Promise<number> => {
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (next < count) {
            next++;
            const response = await fetch(target.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
            await response.arrayBuffer();
          }
        }),
      );
      return count / ((performance.now() - started) / 1000);
    };

    const warmUp = Math.min(options.deliveries, inFlight);
    await throughQueue(warmUp);
    await raw(warmUp);
    const queuePerSecond = await throughQueue(options.deliveries);
    const rawPerSecond = await raw(options.deliveries);
    const ratio = queuePerSecond / rawPerSecond;
    const batchOverheadMs = (inFlight / queuePerSecond) * 1000 - options.receiverMs;
    log(`  ${options.deliveries} deliveries, ${inFlight} in flight, receiver ${options.receiverMs} ms: queue ${queuePerSecond.toFixed(0)}/s, raw fetch ${rawPerSecond.toFixed(0)}/s, ratio ${ratio.toFixed(2)}, a batch's own time ${batchOverheadMs.toFixed(0)} ms`);
    return {
      deliveries: options.deliveries,
      inFlight,
      receiverMs: options.receiverMs,
      queuePerSecond: round(queuePerSecond, 3),
      rawPerSecond: round(rawPerSecond, 3),
      batchOverheadMs: round(batchOverheadMs, 0),
      ratio: round(ratio, 3),
      met: ratio >= WEBHOOK_TARGET_RATIO,
    };
  } finally {
    target.server.closeAllConnections();
    target.server.close();
    await dynamoDbLocal.stop();
  }
}

/** Run alone (`npm run bench -- --only=webhooks` spawns this in its own process, with its own DynamoDB Local). */
if (process.argv[1]?.endsWith('webhook-delivery.ts')) {
  await import('../local/quiet-aws-sdk.ts');
  const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
  const result = await measureWebhookThroughput(
    { deliveries: arg('deliveries', 40), pollers: arg('pollers', 1), receiverMs: arg('receiver-ms', 10_000) },
    (line) => process.stderr.write(`${line}\n`),
  );
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}
