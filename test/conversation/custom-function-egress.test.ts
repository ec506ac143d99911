import { afterAll, describe, expect, it, vi } from 'vitest';
import { startFunctionReceiver } from '../support/function-receiver.ts';
import { useProductionSettings } from '../support/production-settings.ts';

/*
 * SSRF: a custom function's URL goes through the egress guard. In production
 * (PARLEY_ENV=production, settings read at load, so the module is loaded fresh under them)
 * a URL whose host resolves to loopback or a private address is refused before anything
 * is sent, and the refusal is the tool result; in development loopback is allowed, so the
 * sandbox can call a local receiver.
 */
const receiver = await startFunctionReceiver();
const port = new URL(receiver.url).port;
const call = { call_id: 'call_0123456789abcdef01234567' };
const tool = (url: string) => ({ name: 'lookup', url });

const development = await import('../../shared/conversation/tools/custom-functions.ts');
const restore = useProductionSettings();
vi.resetModules();
const production = await import('../../shared/conversation/tools/custom-functions.ts');
restore();
afterAll(() => vi.resetModules());

describe('custom function URLs in production', () => {
  it.each([
    [`http://localhost:${port}/fn`, undefined, 'Error: Destination not allowed: localhost resolves to a loopback address'],
    [`http://127.0.0.1:${port}/fn`, undefined, 'Error: Destination not allowed: 127.0.0.1 is a loopback address'],
    ['http://functions.example.test/fn', '10.0.0.8', 'Error: Destination not allowed: functions.example.test resolves to a private address'],
    ['http://metadata.example.test/latest', '169.254.169.254', 'Error: Destination not allowed: metadata.example.test resolves to a link-local address'],
  ])('refuses %s (resolving to %s) and sends nothing', async (url, address, message) => {
    receiver.requests.length = 0;
    const resolver = address ? async () => [{ address, family: 4 as const }] : undefined;
    const outcome = await production.callCustomFunction({ tool: tool(url), args: { q: 1 }, call, secret: 'secret', ...(resolver ? { resolver } : {}) });
    expect(outcome).toEqual({ content: message, successful: false, variables: {} });
    expect(receiver.requests).toHaveLength(0);
  });

});

describe('custom function URLs in development', () => {
  it('reach a loopback receiver (the sandbox needs one), and response_variables are collected', async () => {
    receiver.requests.length = 0;
    receiver.answer = () => ({ body: '{"slot":{"day":"Tuesday"},"count":2}' });
    const outcome = await development.callCustomFunction({
      tool: { ...tool(`http://localhost:${port}/fn`), response_variables: { day: 'slot.day', count: 'count', missing: 'nope.no' } },
      args: { q: 1 },
      call,
      secret: 'secret',
    });
    expect(outcome).toEqual({ content: '{"slot":{"day":"Tuesday"},"count":2}', successful: true, variables: { day: 'Tuesday', count: '2' } });
    expect(receiver.requests).toHaveLength(1);
  });
});
