import type * as PowertoolsTracer from '@aws-lambda-powertools/tracer';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { besideBundle } from '../bundle/bundle-files.ts';
import { runsInLambda } from '../config.ts';
import { logger } from '../logger.ts';

/**
 * X-Ray traces through Powertools Tracer. Every function runs with
 * active tracing (lib/parley-function.ts), so Lambda opens a segment per invocation; here
 * each invocation gets a `## <handler>` subsegment (cold start and service annotated), the
 * AWS SDK clients are captured (tagAwsClient calls traceAwsClient for every client), and
 * vendor calls (LLM, LiveKit, Twilio, OAuth, Stripe, webhook posts, egress fetches) are
 * subsegments through traced(). The tracer also records outgoing http/https and fetch
 * requests under whichever subsegment is open.
 *
 * Outside Lambda (npm start, tests) or with POWERTOOLS_TRACE_ENABLED=false nothing is
 * loaded and every function here is a pass-through. In Lambda the tracer (Powertools and
 * the X-Ray SDK, about 125 KiB minified) is imported on the first invocation, from its own
 * file beside the function's bundle (TRACER_SIDECAR, built by lib/parley-function.ts), so
 * neither the bundle's size nor its cold import carries it (docs/performance.md, "Metrics
 * and traces"). Should it fail to load, the function runs untraced.
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

/** The tracer's module beside a deployed bundle (lib/parley-function.ts writes it there). */
export const TRACER_SIDECAR = 'powertools-tracer.mjs';

type TracerModule = typeof PowertoolsTracer;

/**
 * The sidecar beside the deployed bundle's index.mjs, else the package itself (a
 * process running the sources). Neither specifier is a literal, so esbuild bundles neither.
 */
async function importTracer(): Promise<TracerModule> {
  const beside = besideBundle(TRACER_SIDECAR);
  if (beside) {
    try {
      return (await import(beside.href)) as TracerModule;
    } catch (error) {
      if ((error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    }
  }
  const packageName = ['@aws-lambda-powertools', 'tracer'].join('/');
  return (await import(packageName)) as TracerModule;
}

/** Loads the tracer where tracing is wanted (once per process); resolves undefined elsewhere. */
export function startTracing(): Promise<Tracer | undefined> {
  if (!tracingWanted()) return Promise.resolve(undefined);
  loading ??= importTracer().then(
    (module) => {
      tracer = new module.Tracer({ serviceName: 'parley' });
      for (const client of waiting.splice(0)) tracer.captureAWSv3Client(client);
      return tracer;
    },
    (error: unknown) => {
      // Tracing is an aid: a function whose tracer is missing still serves, untraced.
      logger.error('tracer not loaded: running untraced', { error: error instanceof Error ? error.message : String(error) });
      waiting.length = 0;
      return undefined;
    },
  );
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
