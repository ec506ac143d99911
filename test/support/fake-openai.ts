import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake OpenAI-compatible provider on 127.0.0.1 for tests: `POST /v1/chat/completions`
 * (any path, really) is recorded and answered from a script, else by the default reply.
 * `GET …/models` (the model list the OpenAI SDK's clients fetch to warm up, as the LiveKit
 * OpenAI plugin does when a session starts) is answered with a list of its own and counted in
 * `modelLists`, apart from the script and `requests`, so a warm-up never takes a scripted reply.
 *
 *   const llm = await startFakeOpenAi();          // closed after the file's tests (outside vitest: { closeAfterAll: false })
 *   llm.enqueue({ status: 429, headers: { 'retry-after': '1' } }, { body: completion('hi') });
 *   ... point LLM_BASE_URL (or OpenAiCompatibleModel's baseUrl) at llm.url ...
 *   expect(llm.requests[0].body.model).toBe('gpt-4.1');
 */
export interface FakeReply {
  status?: number;
  headers?: Record<string, string>;
  /** Sent as JSON; a string is sent as it is (for garbled responses). */
  body?: unknown;
  /** A streamed answer: each item becomes `data: <item>` (objects as JSON), then `data: [DONE]`. */
  events?: unknown[];
  /** Waits this long before answering at all (slow providers, timeouts). */
  delayMs?: number;
  /** Waits this long before each streamed event. */
  eventDelayMs?: number;
  /** A stream the test holds open: after `pauseAfter` events, waits for `resume` before the rest. */
  pauseAfter?: number;
  resume?: Promise<unknown>;
  /** Drops the connection without an answer. */
  hangUp?: boolean;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The parsed JSON body (the raw text when it is not JSON). */
  body: any;
  text: string;
  /** Date.now() when the request arrived, to check back-off waits. */
  receivedAt: number;
}

type Responder = FakeReply | ((request: RecordedRequest) => FakeReply);

export interface FakeOpenAi {
  /** The base URL to configure, ending in `/v1`. */
  url: string;
  requests: RecordedRequest[];
  /** The `GET …/models` requests, answered with `modelList()`. */
  modelLists: RecordedRequest[];
  /** Replies for the next requests, in order; after them the default reply answers. */
  enqueue(...replies: Responder[]): void;
  /** Replaces the default reply (initially `defaultReply`). */
  setDefault(reply: Responder): void;
  /** Forgets recorded requests (model lists included), queued replies and a replaced default. */
  reset(): void;
  close(): Promise<void>;
}

/** A chat completion body as OpenAI sends it. */
export function completion(
  content: string | null,
  options: { model?: string; usage?: { prompt_tokens: number; completion_tokens: number }; finish_reason?: string } = {},
) {
  const usage = options.usage ?? { prompt_tokens: 11, completion_tokens: 7 };
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: options.model ?? 'fake-model',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: options.finish_reason ?? 'stop' }],
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
  };
}

/** A chat completion whose message only calls tools (`content: null`, `finish_reason: tool_calls`), as OpenAI sends it. */
export function toolCallCompletion(
  calls: { id: string; name: string; arguments: unknown }[],
  options: { model?: string; content?: string | null } = {},
) {
  const body = completion(options.content ?? null, { model: options.model, finish_reason: 'tool_calls' });
  return {
    ...body,
    choices: [
      {
        ...body.choices[0]!,
        message: {
          ...body.choices[0]!.message,
          tool_calls: calls.map((call) => ({
            id: call.id,
            type: 'function',
            function: { name: call.name, arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments) },
          })),
        },
      },
    ],
  };
}

/** The chunks of a streamed completion: one per delta, a finishing chunk, and a usage chunk. */
export function streamChunks(
  deltas: string[],
  options: { model?: string; usage?: { prompt_tokens: number; completion_tokens: number } } = {},
): unknown[] {
  const model = options.model ?? 'fake-model';
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({
    id: 'chatcmpl-fake',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model,
    choices,
    ...extra,
  });
  return [
    ...deltas.map((content, i) =>
      chunk([{ index: 0, delta: i === 0 ? { role: 'assistant', content } : { content }, finish_reason: null }]),
    ),
    chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
    chunk([], { usage: options.usage ?? { prompt_tokens: 11, completion_tokens: deltas.length } }),
  ];
}

/**
 * The chunks of a streamed answer that says `text` (in the given pieces) and then calls
 * tools, as OpenAI streams them: the call's ID and name first, its arguments in a second
 * chunk; `finish_reason: tool_calls`.
 */
export function streamToolCallChunks(text: string[], calls: { id: string; name: string; arguments: unknown }[]): unknown[] {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id: 'chatcmpl-fake',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'fake-model',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  return [
    ...text.map((content) => chunk({ content })),
    ...calls.flatMap((call, index) => [
      chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }),
      chunk({ tool_calls: [{ index, function: { arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments) } }] }),
    ]),
    chunk({}, 'tool_calls'),
  ];
}

/** The default reply: `fake reply` (streamed in two pieces when asked to stream), naming the requested model. */
export const defaultReply = (request: RecordedRequest): FakeReply => {
  const model = typeof request.body?.model === 'string' ? request.body.model : undefined;
  return request.body?.stream
    ? { events: streamChunks(['fake ', 'reply'], { model }) }
    : { body: completion('fake reply', { model }) };
};

/** The model list OpenAI answers `GET /v1/models` with. */
function modelList(ids: string[] = ['gpt-4.1', 'gpt-4.1-mini', 'fake-model']) {
  return { object: 'list', data: ids.map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'system' })) };
}

export async function startFakeOpenAi(options: { closeAfterAll?: boolean } = {}): Promise<FakeOpenAi> {
  const requests: RecordedRequest[] = [];
  const modelLists: RecordedRequest[] = [];
  const queue: Responder[] = [];
  let fallback: Responder = defaultReply;

  const server = createServer((req, res) => {
    void handle(req, res);
  });

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // recorded as text
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
    }
    const recorded: RecordedRequest = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers,
      body,
      text,
      receivedAt: Date.now(),
    };
    if (recorded.method === 'GET' && /\/models\/?(\?.*)?$/.test(recorded.path)) {
      modelLists.push(recorded);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(modelList()));
      return;
    }
    requests.push(recorded);
    const responder = queue.shift() ?? fallback;
    const reply = typeof responder === 'function' ? responder(recorded) : responder;

    const gone = () => res.destroyed || res.writableEnded;
    if (reply.delayMs) await wait(reply.delayMs, res);
    if (gone()) return;
    if (reply.hangUp) {
      res.destroy();
      return;
    }
    if (reply.events) {
      res.writeHead(reply.status ?? 200, { 'content-type': 'text/event-stream', ...reply.headers });
      res.flushHeaders();
      for (const [index, event] of reply.events.entries()) {
        if (index === reply.pauseAfter && reply.resume) await Promise.race([reply.resume, closed(res)]);
        if (reply.eventDelayMs) await wait(reply.eventDelayMs, res);
        if (gone()) return;
        res.write(`data: ${typeof event === 'string' ? event : JSON.stringify(event)}\n\n`);
      }
      if (!gone()) res.end('data: [DONE]\n\n');
      return;
    }
    const payload = reply.body === undefined ? '' : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
    res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
    res.end(payload);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const fake: FakeOpenAi = {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    modelLists,
    enqueue: (...replies) => void queue.push(...replies),
    setDefault: (reply) => {
      fallback = reply;
    },
    reset: () => {
      requests.length = 0;
      modelLists.length = 0;
      queue.length = 0;
      fallback = defaultReply;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  if (options.closeAfterAll ?? true) {
    // Loaded only here: vitest cannot be imported outside its runner (the benchmark uses this fake).
    const { afterAll } = await import('vitest');
    afterAll(() => fake.close());
  }
  return fake;
}

/** Resolves when the client goes away. */
function closed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => (res.destroyed ? resolve() : res.once('close', () => resolve())));
}

/** Resolves after `ms`, or early when the client goes away (an aborted request). */
function wait(ms: number, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.on('close', done);
  });
}
