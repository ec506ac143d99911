import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../../shared/platform/errors.ts';
import {
  OfflineModel,
  OpenAiCompatibleModel,
  createLanguageModel,
  defineOfflineShape,
  languageModel,
  readLlmSettings,
  type Completion,
  type CompletionRequest,
  type LanguageModel,
  type StreamEvent,
} from '../../shared/vendors/llm/index.ts';
import { logger } from '../../shared/platform/logger.ts';
import { completion, startFakeOpenAi, streamChunks } from '../support/fake-openai.ts';

const KEY = 'sk-test-8c1f0e0b9d7a4c2e';
const llm = await startFakeOpenAi();

const model = (options: Partial<ConstructorParameters<typeof OpenAiCompatibleModel>[0]> = {}) =>
  new OpenAiCompatibleModel({
    baseUrl: llm.url,
    apiKey: async () => KEY,
    modelMap: { 'gpt-4.1': 'gpt-4.1-2025-04-14', 'claude-4.5-sonnet': 'anthropic/claude-sonnet-4.5' },
    retryBaseMs: 10,
    ...options,
  });

const ask = (overrides: Partial<CompletionRequest> = {}): CompletionRequest => ({
  model: 'gpt-4.1',
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Say hi' },
  ],
  ...overrides,
});

/** The 502 a call failed with (fails the test if it did not fail that way). */
async function failure(call: Promise<unknown>): Promise<ApiError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  expect((error as ApiError).status).toBe(502);
  return error as ApiError;
}

async function collect(events: AsyncIterable<StreamEvent>) {
  const deltas: string[] = [];
  let done: Completion | undefined;
  for await (const event of events) {
    if (event.type === 'delta') deltas.push(event.content);
    else {
      const { type: _type, ...rest } = event;
      done = rest;
    }
  }
  return { deltas, done };
}

/** Everything the structured logger writes while `run` runs, at DEBUG level. */
async function captureLogs(run: () => Promise<unknown>): Promise<string> {
  const lines: string[] = [];
  const capture = (chunk: unknown) => {
    lines.push(String(chunk));
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  const level = logger.getLevelName();
  logger.setLogLevel('DEBUG');
  try {
    await run().catch(() => undefined);
  } finally {
    logger.setLogLevel(level);
    out.mockRestore();
    err.mockRestore();
  }
  return lines.join('');
}

beforeEach(() => llm.reset());

describe('OpenAI-compatible provider: the request', () => {
  it('posts the mapped model, the messages, the parameters and the bearer key', async () => {
    llm.enqueue({
      body: completion('{"greeting":"hi"}', {
        model: 'gpt-4.1-2025-04-14',
        usage: { prompt_tokens: 21, completion_tokens: 5 },
      }),
    });
    const result = await model().complete(ask({ temperature: 0.2, maxTokens: 50, responseFormat: 'json' }));

    expect(llm.requests).toHaveLength(1);
    const [request] = llm.requests;
    expect(request!.method).toBe('POST');
    expect(request!.path).toBe('/v1/chat/completions');
    expect(request!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.body).toEqual({
      model: 'gpt-4.1-2025-04-14',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Say hi' },
      ],
      temperature: 0.2,
      max_tokens: 50,
      response_format: { type: 'json_object' },
    });
    expect(result).toEqual({
      content: '{"greeting":"hi"}',
      usage: { prompt_tokens: 21, completion_tokens: 5 },
      model: 'gpt-4.1-2025-04-14',
      provider: 'openai-compatible',
      finishReason: 'stop',
    });
  });

  it('sends only what was asked: no optional fields, unmapped ids as they are, no key no header', async () => {
    await model({ apiKey: async () => undefined }).complete(ask({ model: 'gemini-3.5-flash' }));
    const [request] = llm.requests;
    expect(request!.headers.authorization).toBeUndefined();
    expect(request!.body).toEqual({ model: 'gemini-3.5-flash', messages: ask().messages });

    await model({ modelMap: { '*': 'llama3.1' }, baseUrl: `${llm.url}/` }).complete(ask({ model: 'claude-4.5-sonnet' }));
    expect(llm.requests[1]!.path).toBe('/v1/chat/completions');
    expect(llm.requests[1]!.body.model).toBe('llama3.1');
  });

  it('estimates usage when the provider gives none', async () => {
    const body: any = completion('12345678');
    delete body.usage;
    llm.enqueue({ body });
    const result = await model().complete(ask());
    expect(result.usage).toEqual({ prompt_tokens: 6, completion_tokens: 2 });
  });
});

describe('OpenAI-compatible provider: retries', () => {
  it('waits out retry-after on a 429, then succeeds', async () => {
    llm.enqueue({ status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'slow down', code: 'rate_limit_exceeded' } } });
    const result = await model({ retryBaseMs: 5_000 }).complete(ask());
    expect(result.content).toBe('fake reply');
    expect(llm.requests).toHaveLength(2);
    const gap = llm.requests[1]!.receivedAt - llm.requests[0]!.receivedAt;
    expect(gap).toBeGreaterThanOrEqual(950);
    expect(gap).toBeLessThan(3_000);
  });

  it('honours retry-after-ms, and refuses to wait longer than the cap', async () => {
    llm.enqueue({ status: 429, headers: { 'retry-after-ms': '120' } });
    await model({ retryBaseMs: 5_000 }).complete(ask());
    expect(llm.requests[1]!.receivedAt - llm.requests[0]!.receivedAt).toBeGreaterThanOrEqual(100);

    llm.reset();
    llm.enqueue({ status: 429, headers: { 'retry-after': '3600' } });
    const started = Date.now();
    const error = await failure(model().complete(ask()));
    expect(error.message).toBe('Language model provider failed: HTTP 429, asked to retry after 3600 s');
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(llm.requests).toHaveLength(1);
  });

  it('retries 5xx twice with back-off, then gives up with a 502', async () => {
    llm.enqueue({ status: 500 }, { status: 503 });
    expect((await model().complete(ask())).content).toBe('fake reply');
    expect(llm.requests).toHaveLength(3);

    llm.reset();
    llm.setDefault({ status: 500, body: { error: { message: 'boom', type: 'server_error' } } });
    const error = await failure(model().complete(ask()));
    expect(error.message).toBe('Language model provider failed: HTTP 500 after 3 attempts');
    expect(llm.requests).toHaveLength(3);
  });

  it('does not retry other errors, and names the provider error code but not its message', async () => {
    llm.enqueue({
      status: 400,
      body: { error: { message: 'This model maximum context length is 8192 tokens in organization org-123', code: 'context_length_exceeded' } },
    });
    const error = await failure(model().complete(ask()));
    expect(error.message).toBe('Language model provider failed: HTTP 400 context_length_exceeded');
    expect(llm.requests).toHaveLength(1);
  });

  it('retries a refused connection, then reports it', async () => {
    const closed = await startFakeOpenAi();
    const url = closed.url;
    await closed.close();
    const error = await failure(model({ baseUrl: url }).complete(ask()));
    expect(error.message).toBe('Language model provider failed: could not reach the provider (ECONNREFUSED) after 3 attempts');
  });
});

describe('OpenAI-compatible provider: failures', () => {
  it('times out a slow provider with a clear 502, without retrying', async () => {
    llm.enqueue({ delayMs: 2_000, body: completion('late') });
    const started = Date.now();
    const error = await failure(model({ timeoutMs: 200 }).complete(ask()));
    expect(error.message).toBe('Language model provider failed: no response within 200 ms');
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(llm.requests).toHaveLength(1);
  });

  it('applies a per-request timeout over the default one', async () => {
    llm.enqueue({ delayMs: 2_000 });
    const error = await failure(model({ timeoutMs: 60_000 }).complete(ask({ timeoutMs: 1_000 })));
    expect(error.message).toBe('Language model provider failed: no response within 1 s');
  });

  it('turns garbled or incomplete responses into 502s', async () => {
    llm.enqueue({ body: '<html>Bad gateway</html>' });
    expect((await failure(model().complete(ask()))).message).toBe('Language model provider failed: response was not valid JSON');

    llm.enqueue({ body: { id: 'x', choices: [] } });
    expect((await failure(model().complete(ask()))).message).toBe('Language model provider failed: response had no message content');

    llm.enqueue({ body: completion(null) });
    expect((await failure(model().complete(ask()))).message).toBe('Language model provider failed: response had no message content');

    llm.enqueue({ hangUp: true }, { hangUp: true }, { hangUp: true });
    expect((await failure(model().complete(ask()))).message).toMatch(
      /^Language model provider failed: could not reach the provider \(\w+\) after 3 attempts$/,
    );
  });

  it('checks JSON mode: invalid JSON is a 502, a Markdown fence around JSON is removed', async () => {
    llm.enqueue({ body: completion('Sure! Here it is: {"a":', { finish_reason: 'length' }) });
    expect((await failure(model().complete(ask({ responseFormat: 'json' })))).message).toBe(
      'Language model provider failed: the model did not return valid JSON (cut off at the token limit)',
    );

    llm.enqueue({ body: completion('```json\n{"a": 1}\n```') });
    expect((await model().complete(ask({ responseFormat: 'json' }))).content).toBe('{"a": 1}');

    llm.enqueue({ body: completion('not json, and not asked to be') });
    expect((await model().complete(ask())).content).toBe('not json, and not asked to be');
  });

  it("throws the caller's abort reason, not a 502, and stops retrying", async () => {
    llm.setDefault({ status: 503 });
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    setTimeout(() => controller.abort(reason), 150);
    const error = await model({ retryBaseMs: 10_000 }).complete(ask({ signal: controller.signal })).catch((e: unknown) => e);
    expect(error).toBe(reason);
    expect(llm.requests).toHaveLength(1);
  });
});

describe('OpenAI-compatible provider: the key stays secret', () => {
  it('never appears in thrown messages or logs, even when the provider quotes it', async () => {
    const calls: Array<() => Promise<unknown>> = [
      () => {
        llm.enqueue({ status: 401, body: { error: { message: `Incorrect API key provided: ${KEY}.`, code: 'invalid_api_key' } } });
        return model().complete(ask());
      },
      () => {
        llm.enqueue({ body: `{"error": "bad key ${KEY}"` });
        return model().complete(ask());
      },
      () => {
        llm.enqueue({ events: [{ error: { message: `key ${KEY} revoked`, code: 'invalid_api_key' } }] });
        return collect(model().stream(ask()));
      },
      // undici quotes an invalid header value in its error message.
      () => model({ apiKey: async () => `${KEY}\u0000` }).complete(ask()),
      () => {
        llm.enqueue({ status: 500 }, { status: 500 }, { status: 500 });
        return model().complete(ask());
      },
    ];
    for (const call of calls) {
      let thrown: unknown;
      const logs = await captureLogs(() => call().catch((e: unknown) => (thrown = e)));
      expect(thrown).toBeInstanceOf(ApiError);
      expect((thrown as Error).message).not.toContain(KEY);
      expect((thrown as Error).message).not.toContain(KEY.slice(3));
      expect(logs).toContain('Language model');
      expect(logs).not.toContain(KEY.slice(3));
    }
    expect(llm.requests.length).toBeGreaterThan(0);
  });

  it('logs a successful call without the key or the conversation', async () => {
    const logs = await captureLogs(() => model().complete(ask()));
    expect(logs).toContain('Language model call');
    expect(logs).not.toContain(KEY.slice(3));
    expect(logs).not.toContain('Say hi');
  });
});

describe('OpenAI-compatible provider: streaming', () => {
  it('yields the deltas in order, then the totals', async () => {
    llm.enqueue({ events: streamChunks(['Hel', 'lo', ' there'], { model: 'gpt-4.1-2025-04-14', usage: { prompt_tokens: 9, completion_tokens: 3 } }) });
    const { deltas, done } = await collect(model().stream(ask()));
    expect(deltas).toEqual(['Hel', 'lo', ' there']);
    expect(done).toEqual({
      content: 'Hello there',
      usage: { prompt_tokens: 9, completion_tokens: 3 },
      model: 'gpt-4.1-2025-04-14',
      provider: 'openai-compatible',
      finishReason: 'stop',
    });
    expect(llm.requests[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true }, model: 'gpt-4.1-2025-04-14' });
    expect(llm.requests[0]!.headers.accept).toBe('text/event-stream');
  });

  it('retries before the first byte and times out a stalled stream', async () => {
    llm.enqueue({ status: 502 });
    expect((await collect(model().stream(ask()))).deltas).toEqual(['fake ', 'reply']);
    expect(llm.requests).toHaveLength(2);

    // Margins wide enough for a loaded machine: each event comes well inside the timeout, the stall well past it.
    llm.enqueue({ events: streamChunks(['a', 'b', 'c']), eventDelayMs: 100 });
    const slowButSteady = await collect(model({ timeoutMs: 2000 }).stream(ask()));
    expect(slowButSteady.done?.content).toBe('abc');

    llm.enqueue({ events: [...streamChunks(['a']).slice(0, 1), ...streamChunks(['b'])], eventDelayMs: 3000 });
    const seen: string[] = [];
    const error = await failure(
      (async () => {
        for await (const event of model({ timeoutMs: 900 }).stream(ask())) if (event.type === 'delta') seen.push(event.content);
      })(),
    );
    expect(error.message).toBe('Language model provider failed: no data within 900 ms');
  });

  it('fails on a garbled event and checks JSON mode on the joined text', async () => {
    llm.enqueue({ events: ['{not json'] });
    expect((await failure(collect(model().stream(ask())))).message).toBe(
      'Language model provider failed: stream carried an event that is not valid JSON',
    );

    llm.enqueue({ events: streamChunks(['{"a"', ': 1}']) });
    expect((await collect(model().stream(ask({ responseFormat: 'json' })))).done?.content).toBe('{"a": 1}');

    llm.enqueue({ events: streamChunks(['{"a"', ': ']) });
    await failure(collect(model().stream(ask({ responseFormat: 'json' }))));
  });

  it('releases the connection when the consumer stops early', async () => {
    llm.enqueue({ events: streamChunks(['one ', 'two ', 'three']), eventDelayMs: 50 });
    for await (const event of model().stream(ask())) {
      expect(event).toEqual({ type: 'delta', content: 'one ' });
      break;
    }
    // The next call still works (nothing left hanging on the fake).
    expect((await model().complete(ask())).content).toBe('fake reply');
  });
});

describe('offline model', () => {
  const offline = new OfflineModel();

  it('answers the same request the same way, with estimated usage', async () => {
    const first = await offline.complete(ask());
    const second = await new OfflineModel().complete(ask());
    expect(second).toEqual(first);
    expect(first.provider).toBe('offline');
    expect(first.model).toBe('gpt-4.1');
    expect(first.content).toContain('Say hi');
    expect(first.usage).toEqual({ prompt_tokens: Math.ceil(14 / 4) + Math.ceil(6 / 4), completion_tokens: Math.ceil(first.content.length / 4) });

    const other = await offline.complete(ask({ messages: [{ role: 'user', content: 'Something else' }] }));
    expect(other.content).not.toBe(first.content);
    expect((await offline.complete(ask({ maxTokens: 3 }))).content).toHaveLength(12);
  });

  it('returns valid JSON in JSON mode, shaped by the hint', async () => {
    const plain = await offline.complete(ask({ responseFormat: 'json' }));
    expect(Object.keys(JSON.parse(plain.content))).toEqual(['reply']);

    const request = ask({
      responseFormat: 'json',
      offlineHint: 'agent_definition',
      messages: [
        { role: 'system', content: 'Write an agent definition as JSON for the description the user gives.' },
        { role: 'user', content: "A friendly receptionist for Bella's Dental who books cleanings and answers insurance questions." },
      ],
    });
    const agent = JSON.parse((await offline.complete(request)).content);
    expect(agent).toEqual({
      agent_name: "Bella's Dental Receptionist",
      general_prompt: expect.stringContaining('books cleanings and answers insurance questions'),
      begin_message: "Hello, thanks for calling Bella's Dental! How can I help you today?",
      language: 'en-US',
    });
    expect((await offline.complete(request)).content).toBe(JSON.stringify(agent));

    const generic = JSON.parse(
      (await offline.complete({ ...request, messages: [{ role: 'user', content: 'Customer support agent that handles refunds' }] })).content,
    );
    expect(generic.agent_name).toBe('Customer Support Agent');
    expect(generic.begin_message).toBe('Hello! How can I help you today?');
  });

  it('builds registered shapes and refuses unknown ones', async () => {
    defineOfflineShape('test_summary', ({ user }) => ({ summary: user.slice(0, 5), words: user.split(' ').length }));
    const result = await offline.complete(ask({ responseFormat: 'json', offlineHint: 'test_summary' }));
    expect(JSON.parse(result.content)).toEqual({ summary: 'Say h', words: 2 });
    await expect(offline.complete(ask({ responseFormat: 'json', offlineHint: 'nope' }))).rejects.toThrow(
      'The offline model has no shape "nope"',
    );
  });

  it('streams the same content in pieces', async () => {
    const { deltas, done } = await collect(offline.stream(ask()));
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe(done!.content);
    expect(done).toEqual(await offline.complete(ask()));
  });
});

describe('choosing the provider', () => {
  const settings = (values: Record<string, string>) => async (name: string) => values[name];

  it('is the offline model without LLM_BASE_URL', async () => {
    const result = await languageModel().complete(ask());
    expect(result.provider).toBe('offline');
    expect((await createLanguageModel(settings({}))) instanceof OfflineModel).toBe(true);
  });

  it('is the OpenAI-compatible provider with LLM_BASE_URL, key and model map from the settings', async () => {
    const chosen: LanguageModel = await createLanguageModel(
      settings({ LLM_BASE_URL: llm.url, LLM_API_KEY: KEY, LLM_MODEL_MAP: '{"gpt-4.1":"mapped-4.1"}' }),
    );
    const result = await chosen.complete(ask());
    expect(result.provider).toBe('openai-compatible');
    expect(llm.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(llm.requests[0]!.body.model).toBe('mapped-4.1');
  });

  it('refuses bad settings, naming the setting but not the value', async () => {
    await expect(readLlmSettings(settings({ LLM_BASE_URL: 'ftp://example.com' }))).rejects.toThrow(
      'Invalid Parley settings: LLM_BASE_URL: must be an http(s) URL',
    );
    const error = await readLlmSettings(settings({ LLM_MODEL_MAP: '{"gpt-4.1": 5, "sk-secret-ish": ""}' })).catch((e: Error) => e);
    expect((error as Error).message).toMatch(/^Invalid Parley settings: LLM_MODEL_MAP: /);
    expect((error as Error).message).not.toContain('sk-secret-ish');
    expect(await readLlmSettings(settings({ LLM_BASE_URL: ' ', LLM_MODEL_MAP: '' }))).toEqual({
      baseUrl: undefined,
      modelMap: undefined,
    });
  });

  describe('from the environment, once per process', () => {
    afterEach(() => {
      delete process.env.LLM_BASE_URL;
      delete process.env.LLM_API_KEY;
      delete process.env.LLM_MODEL_MAP;
      vi.resetModules();
    });

    it('reads the settings on first use and keeps the provider', async () => {
      process.env.LLM_BASE_URL = llm.url;
      process.env.LLM_API_KEY = KEY;
      process.env.LLM_MODEL_MAP = JSON.stringify({ 'claude-4.5-sonnet': 'anthropic/claude-sonnet-4.5' });
      vi.resetModules();
      const fresh = await import('../../shared/vendors/llm/index.ts');

      const first = await fresh.languageModel().complete(ask({ model: 'claude-4.5-sonnet' }));
      expect(first.provider).toBe('openai-compatible');
      expect(llm.requests[0]!.body.model).toBe('anthropic/claude-sonnet-4.5');
      expect(llm.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);

      // The provider stays; the key is read per call, so a rotated one is used.
      delete process.env.LLM_BASE_URL;
      process.env.LLM_API_KEY = 'sk-rotated-key-0001';
      expect((await fresh.languageModel().complete(ask())).provider).toBe('openai-compatible');
      expect(llm.requests[1]!.headers.authorization).toBe('Bearer sk-rotated-key-0001');

      const { deltas } = await collect(fresh.languageModel().stream(ask()));
      expect(deltas).toEqual(['fake ', 'reply']);

      fresh.useLanguageModel(new OfflineModel());
      expect((await fresh.languageModel().complete(ask())).provider).toBe('offline');
    });

    it('tries again after a bad setting is fixed', async () => {
      process.env.LLM_BASE_URL = 'not a url';
      vi.resetModules();
      const fresh = await import('../../shared/vendors/llm/index.ts');
      await expect(fresh.languageModel().complete(ask())).rejects.toThrow('LLM_BASE_URL');
      process.env.LLM_BASE_URL = llm.url;
      expect((await fresh.languageModel().complete(ask())).provider).toBe('openai-compatible');
    });
  });
});
