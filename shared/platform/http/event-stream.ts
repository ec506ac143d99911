/*
 * Server-sent events (text/event-stream) from a route handler. A handler answers an
 * `EventStream`: a cursor (the last event ID the client has) and a `poll` that reads what
 * came after it. How it is sent depends on where the handler runs:
 *
 * - **Streaming** (the local runtime, which hands the invocation a `StreamSink` on its
 *   context): one response held open, each poll's frames written as they come, until
 *   `poll` says the source is done or the client goes away.
 * - **Buffered** (Lambda behind API Gateway's HTTP API, which sends a response only once it
 *   is whole): a long-poll chunk. The handler waits until at least one frame is there (or
 *   `chunkMs` passed), answers the frames with `retry: <retryMs>`, and the client's
 *   EventSource reconnects with `Last-Event-ID` for the next chunk. A source that is done
 *   with nothing after the cursor answers 204, which tells EventSource to stop.
 *
 * Either way a frame is sent within one poll interval of `poll` seeing it.
 */

interface SseFrame {
  id?: string | number;
  event?: string;
  data: unknown;
}

interface PollResult {
  frames: SseFrame[];
  /** The cursor after these frames (the last frame's ID, or the cursor as it was). */
  cursor: number;
  /** Nothing will ever come after this cursor (the call ended and its last frame is sent). */
  done: boolean;
}

export interface EventStreamOptions {
  /** The last event ID the client has (Last-Event-ID), 0 for everything. */
  cursor: number;
  poll: (cursor: number) => Promise<PollResult>;
  /** How often the source is read. */
  pollMs: number;
  /** Buffered mode: the longest one chunk waits for a first frame. */
  chunkMs: number;
  /** Buffered mode: the `retry:` the client waits before asking for the next chunk. */
  retryMs: number;
  /** Streaming mode: a comment line this often keeps proxies from closing an idle stream. */
  keepAliveMs?: number;
}

export class EventStream {
  constructor(readonly options: EventStreamOptions) {}
}

/** Where the local runtime lets a handler write its response as it goes (set on the invocation's context). */
export interface StreamSink {
  start(status: number, headers: Record<string, string>): void;
  write(chunk: string): void;
  end(): void;
  /** Aborted when the client has gone. */
  readonly signal: AbortSignal;
}

const EVENT_STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const;

/** One frame as SSE text: `id:`, `event:`, one `data:` line of JSON, a blank line. */
function formatFrame(frame: SseFrame): string {
  const data = typeof frame.data === 'string' ? frame.data : JSON.stringify(frame.data);
  return `${frame.id !== undefined ? `id: ${frame.id}\n` : ''}${frame.event ? `event: ${frame.event}\n` : ''}${data
    .split('\n')
    .map((line) => `data: ${line}`)
    .join('\n')}\n\n`;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });

/** Streaming mode: writes frames as they come until the source is done or the client left. */
export async function streamEvents(stream: EventStream, sink: StreamSink, headers: Record<string, string> = {}): Promise<void> {
  const { poll, pollMs } = stream.options;
  const keepAliveMs = stream.options.keepAliveMs ?? 15_000;
  let cursor = stream.options.cursor;
  sink.start(200, { ...headers, ...EVENT_STREAM_HEADERS });
  sink.write(`retry: ${stream.options.retryMs}\n\n`);
  let quietSince = Date.now();
  try {
    while (!sink.signal.aborted) {
      const result = await poll(cursor);
      for (const frame of result.frames) sink.write(formatFrame(frame));
      cursor = result.cursor;
      if (result.frames.length) quietSince = Date.now();
      if (result.done) break;
      if (Date.now() - quietSince >= keepAliveMs) {
        sink.write(': keep-alive\n\n');
        quietSince = Date.now();
      }
      await sleep(pollMs, sink.signal);
    }
  } finally {
    sink.end();
  }
}

/** Buffered mode: one long-poll chunk, as an API Gateway result. */
export async function eventStreamChunk(
  stream: EventStream,
  headers: Record<string, string> = {},
): Promise<{ statusCode: number; headers: Record<string, string>; body: string }> {
  const { poll, pollMs, chunkMs, retryMs } = stream.options;
  const deadline = Date.now() + chunkMs;
  let cursor = stream.options.cursor;
  for (;;) {
    const result = await poll(cursor);
    cursor = result.cursor;
    if (result.frames.length) {
      const body = `retry: ${retryMs}\n\n${result.frames.map(formatFrame).join('')}`;
      return { statusCode: 200, headers: { ...headers, ...EVENT_STREAM_HEADERS }, body };
    }
    // Nothing after the cursor and nothing to come: 204 tells EventSource not to reconnect.
    if (result.done) return { statusCode: 204, headers: { ...headers }, body: '' };
    if (Date.now() + pollMs > deadline) {
      return { statusCode: 200, headers: { ...headers, ...EVENT_STREAM_HEADERS }, body: `retry: ${retryMs}\n\n: no news, reconnect\n\n` };
    }
    await sleep(pollMs);
  }
}

/** The `StreamSink` the local runtime put on an invocation's context, if any. */
export const streamSinkOf = (context: object): StreamSink | undefined => (context as { parleyStreamSink?: StreamSink }).parleyStreamSink;
