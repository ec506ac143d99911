import type { Tracer } from '@aws-lambda-powertools/tracer';
import { runsInLambda } from './config.ts';

/**
 * X-Ray traces through Powertools Tracer (issue 19 point 2). Every function runs with
 * active tracing (lib/parley-function.ts), so Lambda opens a segment per invocation; here
 * each invocation gets a `## <handler>` subsegment (cold start and service annotated), the
 * AWS SDK clients are captured (tagAwsClient calls traceAwsClient for every client), and
 * vendor calls (LLM, LiveKit, Twilio, OAuth, Stripe, webhook posts, egress fetches) are
 * subsegments through traced(). The tracer also records outgoing http/https and fetch
 * requests under whichever subsegment is open.
 *
 * Outside Lambda (npm start, tests) or with POWERTOOLS_TRACE_ENABLED=false nothing is
 * loaded and every function here is a pass-through. In Lambda the tracer module (the X-Ray
 * SDK, about 125 KiB) is imported on the first invocation rather than at import, so a cold
 * import does not evaluate it (docs/performance.md, "Metrics and traces: cold-start cost").
 */

type AwsClient = Parameters<Tracer['captureAWSv3Client']>[0];
type Segment = NonNullable<ReturnType<Tracer['getSegment']>>;

let tracer: Tracer | undefined;
let loading: Promise<Tracer | undefined> | undefined;
/** Clients created before the tracer loaded: captured when it does. */
const waiting: AwsClient[] = [];

/** Tracing runs in Lambda only, unless POWERTOOLS_TRACE_ENABLED is `false`. */
export const tracingWanted = (): boolean => runsInLambda && !/^(false|0)$/i.test(process.env.POWERTOOLS_TRACE_ENABLED ?? '');

/** The tracer once loaded (undefined outside Lambda and before the first invocation). */
export const activeTracer = (): Tracer | undefined => tracer;

/** Loads the tracer where tracing is wanted (once per process); resolves undefined elsewhere. */
export function startTracing(): Promise<Tracer | undefined> {
  if (!tracingWanted()) return Promise.resolve(undefined);
  loading ??= import('@aws-lambda-powertools/tracer').then(({ Tracer: PowertoolsTracer }) => {
    tracer = new PowertoolsTracer({ serviceName: 'parley' });
    for (const client of waiting.splice(0)) tracer.captureAWSv3Client(client);
    return tracer;
  });
  return loading;
}

/** Records the client's calls as subsegments when tracing (a no-op elsewhere); answers the client. */
export function traceAwsClient<T>(client: T): T {
  if (tracer) tracer.captureAWSv3Client(client as AwsClient);
  else if (tracingWanted()) waiting.push(client as AwsClient);
  return client;
}

/**
 * Runs `call` in a subsegment named `name` (`llm`, `livekit`, `twilio`, `oauth`, `webhook`,
 * `egress`, …) with a `vendor` annotation, recording a thrown error on it. Without an
 * active trace it just runs `call`.
 */
export async function traced<T>(name: string, call: () => Promise<T>): Promise<T> {
  const active = tracer;
  if (!active?.isTracingEnabled() || !active.getSegment()) return call();
  return (await active.provider.captureAsyncFunc(name, async (subsegment) => {
    subsegment?.addAnnotation('vendor', name);
    try {
      return await call();
    } catch (error) {
      if (error instanceof Error) subsegment?.addError(error);
      throw error;
    } finally {
      subsegment?.close();
    }
  })) as T;
}

/** What invocationSegment opened, for closing it. */
export interface OpenedSegment {
  parent: Segment;
  handler: Segment;
}

/**
 * Opens the invocation's `## <handler>` subsegment (as Powertools' captureLambdaHandler
 * does), annotated with the cold start and the service; undefined when not tracing.
 */
export async function openInvocation(annotations: Record<string, string> = {}): Promise<OpenedSegment | undefined> {
  const active = await startTracing();
  if (!active?.isTracingEnabled()) return undefined;
  const parent = active.getSegment();
  if (!parent) return undefined;
  const handler = parent.addNewSubsegment(`## ${process.env._HANDLER ?? 'handler'}`);
  active.setSegment(handler);
  active.annotateColdStart();
  active.addServiceNameAnnotation();
  for (const [key, value] of Object.entries(annotations)) active.putAnnotation(key, value);
  return { parent, handler };
}

/** Closes what openInvocation opened, with the error the invocation failed with, if any. */
export function closeInvocation(opened: OpenedSegment | undefined, error?: unknown): void {
  if (!opened || !tracer) return;
  if (error !== undefined) tracer.addErrorAsMetadata(error instanceof Error ? error : new Error(String(error)));
  try {
    opened.handler.close();
  } finally {
    tracer.setSegment(opened.parent);
  }
}
