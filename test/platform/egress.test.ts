import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { TEST_TLS } from '../support/tls.ts';
import {
  EgressNetworkError,
  EgressRefused,
  EgressResponseTooLarge,
  addressRefusal,
  checkDestination,
  checkUrl,
  destinationUrlRefusal,
  egressFetch,
  egressPolicy,
  egressPolicyFor,
  HTTP_SCHEMES,
  resolveDestination,
  WEBSOCKET_SCHEMES,
  type Resolver,
} from '../../shared/platform/egress/egress.ts';

/*
 * The egress guard on its own: the address policy in production and development, URL
 * forms, DNS answers (injected), pinning, redirects, the response cap and the time limit.
 * The callers (workflow steps, webhooks, MCP, custom LLM, SIP) are tested through the API
 * in egress-callers.test.ts.
 */

const production = egressPolicyFor({ PARLEY_ENV: 'production', DYNAMODB_ENDPOINT: undefined, PORT: 8080 });
const development = egressPolicyFor({ PARLEY_ENV: 'development', DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000', PORT: 8080 });

const OK = undefined;
const loopback = 'a loopback address';
const ownDynamo = "the local runtime's own DynamoDB Local";
const ownApi = "the local runtime's own API";

describe('address policy', () => {
  it.each([
    // address, port, production, development
    ['8.8.8.8', 443, OK, OK],
    ['2606:4700:4700::1111', 443, OK, OK],
    ['127.0.0.1', 3000, loopback, OK],
    ['127.0.0.1', 8000, loopback, ownDynamo],
    ['127.1.2.3', 8000, loopback, ownDynamo],
    ['127.0.0.1', 8080, loopback, ownApi],
    ['::1', 3000, loopback, OK],
    ['::1', 8000, loopback, ownDynamo],
    ['::ffff:127.0.0.1', 8000, loopback, ownDynamo],
    ['::ffff:7f00:1', 3000, loopback, OK],
    ['0.0.0.0', 3000, 'an unspecified address', 'an unspecified address'],
    ['0.0.0.0', 8000, 'an unspecified address', 'an unspecified address'],
    ['0.1.2.3', 80, 'an unspecified address', 'an unspecified address'],
    ['::', 8000, 'an unspecified address', 'an unspecified address'],
    ['10.0.0.1', 80, 'a private address', 'a private address'],
    ['172.16.5.4', 80, 'a private address', 'a private address'],
    ['172.31.255.255', 80, 'a private address', 'a private address'],
    ['192.168.1.1', 80, 'a private address', 'a private address'],
    ['169.254.169.254', 80, 'a link-local address', 'a link-local address'],
    ['169.254.170.2', 80, 'a link-local address', 'a link-local address'],
    ['fd00:ec2::254', 80, 'a unique-local address', 'a unique-local address'],
    ['fc00::1', 80, 'a unique-local address', 'a unique-local address'],
    ['fe80::1', 80, 'a link-local address', 'a link-local address'],
    ['100.64.0.1', 80, 'a carrier-grade NAT (shared) address', 'a carrier-grade NAT (shared) address'],
    ['100.127.255.254', 80, 'a carrier-grade NAT (shared) address', 'a carrier-grade NAT (shared) address'],
    ['224.0.0.1', 80, 'a multicast address', 'a multicast address'],
    ['ff02::1', 80, 'a multicast address', 'a multicast address'],
    ['255.255.255.255', 80, 'a broadcast address', 'a broadcast address'],
    ['192.0.0.1', 80, 'a reserved address', 'a reserved address'],
    ['192.0.2.1', 80, 'a reserved address', 'a reserved address'],
    ['198.18.0.1', 80, 'a reserved address', 'a reserved address'],
    ['240.0.0.1', 80, 'a reserved address', 'a reserved address'],
    ['2001:db8::1', 80, 'a reserved address', 'a reserved address'],
    ['fec0::1', 80, 'a reserved address', 'a reserved address'],
    ['100::1', 80, 'a reserved address', 'a reserved address'],
    // IPv4-compatible (deprecated) and anything else outside 2000::/3
    ['::7f00:1', 80, 'a reserved address', 'a reserved address'],
    ['4000::1', 80, 'a reserved address', 'a reserved address'],
    // IPv4 inside IPv6 is judged as the IPv4 address
    ['::ffff:10.0.0.1', 80, 'a private address', 'a private address'],
    ['::ffff:169.254.169.254', 80, 'a link-local address', 'a link-local address'],
    ['::ffff:0:a9fe:a9fe', 80, 'a link-local address', 'a link-local address'],
    ['::ffff:8.8.8.8', 443, OK, OK],
    ['64:ff9b::a9fe:a9fe', 80, 'a link-local address', 'a link-local address'],
    ['64:ff9b::7f00:1', 8000, loopback, ownDynamo],
    ['64:ff9b::808:808', 443, OK, OK],
    ['64:ff9b:1::a00:1', 80, 'a reserved address', 'a reserved address'],
    ['2002:a00:1::1', 80, 'a private address', 'a private address'],
    ['2002:a9fe:a9fe::1', 80, 'a link-local address', 'a link-local address'],
    ['2002:808:808::1', 443, OK, OK],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 80, 'a reserved address', 'a reserved address'], // Teredo
    ['not-an-ip', 80, 'an invalid address', 'an invalid address'],
  ])('%s port %i: production %s, development %s', (address, port, inProduction, inDevelopment) => {
    expect(addressRefusal(address, port, production)).toBe(inProduction);
    expect(addressRefusal(address, port, development)).toBe(inDevelopment);
  });

  it('refuses loopback in production and protects no port there; protects DynamoDB Local and the API port elsewhere', () => {
    expect(production).toEqual({ allowLoopback: false, protectedLocalPorts: new Map() });
    expect(development).toEqual({
      allowLoopback: true,
      protectedLocalPorts: new Map([
        [8000, 'DynamoDB Local'],
        [8080, 'API'],
      ]),
    });
    expect(
      egressPolicyFor({ PARLEY_ENV: 'test', DYNAMODB_ENDPOINT: 'https://localhost', PORT: 0 }).protectedLocalPorts,
    ).toEqual(new Map([[443, 'DynamoDB Local']]));
  });

  it("this process's policy protects the test run's own DynamoDB Local", () => {
    const port = Number(new URL(process.env.DYNAMODB_ENDPOINT!).port);
    expect(egressPolicy.allowLoopback).toBe(true);
    expect(egressPolicy.protectedLocalPorts.get(port)).toBe('DynamoDB Local');
  });

  describe('read from the settings at load', () => {
    afterEach(() => {
      vi.unstubAllEnvs();
      vi.resetModules();
    });

    it('development: the configured DynamoDB endpoint and API port', async () => {
      vi.stubEnv('PARLEY_ENV', 'development');
      vi.stubEnv('DYNAMODB_ENDPOINT', 'http://localhost:8123');
      vi.stubEnv('PORT', '9191');
      vi.resetModules();
      const fresh = await import('../../shared/platform/egress/egress.ts');
      expect(fresh.egressPolicy).toEqual({
        allowLoopback: true,
        protectedLocalPorts: new Map([
          [8123, 'DynamoDB Local'],
          [9191, 'API'],
        ]),
      });
      expect(fresh.addressRefusal('127.0.0.1', 9191)).toBe(ownApi);
    });
  });
});

describe('URLs', () => {
  it.each([
    ['http://2130706433:8000/', '127.0.0.1'],
    ['http://0x7f.1:8000/', '127.0.0.1'],
    ['http://0x7f000001:8000/', '127.0.0.1'],
    ['http://017700000001:8000/', '127.0.0.1'],
    ['http://127.1:8000/', '127.0.0.1'],
    ['http://[::ffff:127.0.0.1]:8000/', '[::ffff:7f00:1]'],
    ['http://[::1]:8000/', '[::1]'],
    ['http://0:8000/', '0.0.0.0'],
  ])('reads the odd literal %s as %s and refuses it on a protected port', async (url, host) => {
    expect(checkUrl(url).hostname).toBe(host);
    const refusal = (policy: typeof production) => checkDestination(url, { policy, resolver: neverAsked });
    await expect(refusal(development)).rejects.toThrow(EgressRefused);
    await expect(refusal(production)).rejects.toThrow(/^Destination not allowed: .* is an? (loopback|unspecified) address$/);
  });

  it.each([
    ['ftp://example.com/', 'Destination not allowed: ftp: URLs are not allowed (http: or https: only)'],
    ['file:///etc/passwd', 'Destination not allowed: file: URLs are not allowed (http: or https: only)'],
    ['gopher://example.com/', 'Destination not allowed: gopher: URLs are not allowed (http: or https: only)'],
    ['ws://example.com/', 'Destination not allowed: ws: URLs are not allowed (http: or https: only)'],
    ['http://user:pass@example.com/', 'Destination not allowed: URLs with credentials are not allowed; send them in a header'],
    ['https://token@example.com/', 'Destination not allowed: URLs with credentials are not allowed; send them in a header'],
    ['http://example.com:25/', 'Destination not allowed: port 25 is not allowed'],
    ['https://example.com:6667/', 'Destination not allowed: port 6667 is not allowed'],
    ['not a url', 'Destination not allowed: not a valid URL'],
  ])('refuses %s', (url, message) => {
    expect(() => checkUrl(url)).toThrow(message);
  });

  it('takes ws: and wss: only where asked (the WebSocket handshake)', () => {
    expect(checkUrl('wss://llm.example.com/ws', ['ws:', 'wss:']).hostname).toBe('llm.example.com');
    expect(() => checkUrl('https://llm.example.com/ws', ['ws:', 'wss:'])).toThrow('https: URLs are not allowed (ws: or wss: only)');
  });
});

const neverAsked: Resolver = async (host) => {
  throw new Error(`resolver asked for ${host}`);
};
const answers =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

describe('DNS answers', () => {
  it('refuses a host when ANY of its addresses is not allowed, naming the host, not the address', async () => {
    for (const policy of [production, development]) {
      await expect(
        resolveDestination('mixed.parley.test', 443, { policy, resolver: answers('8.8.8.8', '10.1.2.3') }),
      ).rejects.toThrow(new EgressRefused('mixed.parley.test resolves to a private address'));
      await expect(
        resolveDestination('meta.parley.test', 80, { policy, resolver: answers('2606:4700:4700::1111', 'fd00:ec2::254') }),
      ).rejects.toThrow('Destination not allowed: meta.parley.test resolves to a unique-local address');
    }
    await expect(resolveDestination('localhost', 8000, { policy: development, resolver: answers('::1', '127.0.0.1') })).rejects.toThrow(
      "Destination not allowed: localhost:8000 resolves to the local runtime's own DynamoDB Local",
    );
    await expect(resolveDestination('localhost', 3000, { policy: production, resolver: answers('127.0.0.1') })).rejects.toThrow(
      'Destination not allowed: localhost resolves to a loopback address',
    );
  });

  it('judges localhost and private-network names without asking DNS, on a request as when a URL is saved', async () => {
    // A resolver that calls `localhost` public does not make it so (RFC 6761).
    await expect(resolveDestination('app.localhost', 3000, { policy: production, resolver: answers('8.8.8.8') })).rejects.toThrow(
      'Destination not allowed: app.localhost resolves to a loopback address',
    );
    await expect(resolveDestination('LOCALHOST.', 8080, { policy: development, resolver: neverAsked })).rejects.toThrow(
      "Destination not allowed: LOCALHOST.:8080 resolves to the local runtime's own API",
    );
    for (const policy of [production, development]) {
      for (const name of ['metadata.google.internal', 'ip-10-0-0-1.ec2.internal', 'nas.local', 'router.home.arpa', 'instance-data']) {
        await expect(resolveDestination(name, 80, { policy, resolver: neverAsked }), name).rejects.toThrow(
          `Destination not allowed: ${name} is a private-network name`,
        );
      }
    }
    // Loopback on another port stays allowed in development, through DNS as before.
    expect(await resolveDestination('localhost', 3000, { policy: development, resolver: answers('127.0.0.1') })).toMatchObject({ address: '127.0.0.1' });
  });

  it('destinationUrlRefusal: what a saved URL is refused for, without DNS', () => {
    expect(destinationUrlRefusal('http://0xa9fea9fe/', HTTP_SCHEMES, production)).toBe('Destination not allowed: 169.254.169.254 is a link-local address');
    expect(destinationUrlRefusal('http://127.0.0.1:3000/', HTTP_SCHEMES, production)).toBe('Destination not allowed: 127.0.0.1 is a loopback address');
    expect(destinationUrlRefusal('http://127.0.0.1:3000/', HTTP_SCHEMES, development)).toBeUndefined();
    expect(destinationUrlRefusal('http://[::1]:8000/', HTTP_SCHEMES, development)).toBe(`Destination not allowed: [::1]:8000 is ${ownDynamo}`);
    expect(destinationUrlRefusal('wss://10.1.2.3/llm', WEBSOCKET_SCHEMES, production)).toBe('Destination not allowed: 10.1.2.3 is a private address');
    expect(destinationUrlRefusal('https://x.example:22/', HTTP_SCHEMES, production)).toBe('Destination not allowed: port 22 is not allowed');
    // A public-looking name is for the guard to resolve on every request.
    expect(destinationUrlRefusal('https://hooks.example.com/x', HTTP_SCHEMES, production)).toBeUndefined();
  });

  it('pins to the first checked address', async () => {
    const checked = await resolveDestination('public.parley.test', 443, { policy: production, resolver: answers('8.8.4.4', '8.8.8.8') });
    expect(checked).toMatchObject({ host: 'public.parley.test', port: 443, address: '8.8.4.4', family: 4 });
    const asked: unknown[] = [];
    checked.lookup('anything.example', { all: true }, (...args: unknown[]) => asked.push(args));
    checked.lookup('anything.example', {}, (...args: unknown[]) => asked.push(args));
    expect(asked).toEqual([
      [null, [{ address: '8.8.4.4', family: 4 }]],
      [null, '8.8.4.4', 4],
    ]);
  });

  it('reports a name without addresses and a failing lookup as network errors with their code', async () => {
    const none = resolveDestination('empty.parley.test', 443, { resolver: answers() });
    await expect(none).rejects.toThrow(EgressNetworkError);
    await expect(none).rejects.toThrow('Request failed: ENOTFOUND');
    const real = resolveDestination('nothing.parley-test.invalid', 443);
    await expect(real).rejects.toThrow(EgressNetworkError);
    await expect(real).rejects.toThrow(/^Request failed: (ENOTFOUND|EAI_AGAIN)$/);
  });
});

// ---------------------------------------------------------------------------------------
// Requests against local servers

const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(
    servers.map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void, host = '127.0.0.1', port = 0) {
  const hits: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    hits.push(req);
    handler(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return { port: (server.address() as AddressInfo).port, hits };
}

describe('egressFetch', () => {
  it('connects to the address it checked, never to a second DNS answer (no rebinding)', async () => {
    // The first answer passes the check; a rebinding server would answer 127.0.0.1 next.
    const checked = await listen((_req, res) => res.end('checked'), '127.0.0.2');
    const rebound = await listen((_req, res) => res.end('rebound'), '127.0.0.1', checked.port);
    let calls = 0;
    const resolver: Resolver = async () => [{ address: calls++ === 0 ? '127.0.0.2' : '127.0.0.1', family: 4 }];
    const response = await egressFetch(`http://rebind.parley.test:${checked.port}/x`, { policy: development, resolver });
    expect(await response.text()).toBe('checked');
    expect(calls).toBe(1);
    expect(checked.hits.map((req) => req.headers.host)).toEqual([`rebind.parley.test:${checked.port}`]);
    expect(rebound.hits).toHaveLength(0);
  });

  it('never follows a redirect: the 3xx is answered as it is', async () => {
    const target = await listen((_req, res) => res.end('followed'));
    const redirecting = await listen((_req, res) =>
      res.writeHead(302, { location: `http://127.0.0.1:${target.port}/secret` }).end('moved'),
    );
    const response = await egressFetch(`http://127.0.0.1:${redirecting.port}/`, { method: 'POST', body: 'x' });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe(`http://127.0.0.1:${target.port}/secret`);
    expect(await response.text()).toBe('moved');
    expect(target.hits).toHaveLength(0);
  });

  it('caps the response: by its Content-Length at once, and while streaming one without', async () => {
    const declared = await listen((_req, res) => res.writeHead(200, { 'content-length': '200000' }).end(Buffer.alloc(200_000)));
    await expect(egressFetch(`http://127.0.0.1:${declared.port}/`, { maxResponseBytes: 100_000 })).rejects.toThrow(
      EgressResponseTooLarge,
    );
    const streamed = await listen((_req, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 97);
      let sent = 0;
      const next = () => {
        if (res.destroyed) return;
        if (sent++ < 20) res.write(chunk, next);
        else res.end();
      };
      next();
    });
    const response = await egressFetch(`http://127.0.0.1:${streamed.port}/`, { maxResponseBytes: 100 * 1024 });
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow('Response exceeds 100 KB');
    // Under the cap it reads the whole body.
    const small = await egressFetch(`http://127.0.0.1:${declared.port}/`, { maxResponseBytes: 200_000 });
    expect((await small.arrayBuffer()).byteLength).toBe(200_000);
  });

  it('bounds the whole exchange in time, body included', async () => {
    const slowBody = await listen((_req, res) => {
      res.writeHead(200);
      res.write('start');
    });
    const started = Date.now();
    const response = await egressFetch(`http://127.0.0.1:${slowBody.port}/`, { timeoutMs: 300 });
    await expect(response.text()).rejects.toMatchObject({ name: 'TimeoutError' });
    const silent = await listen(() => undefined);
    await expect(egressFetch(`http://127.0.0.1:${silent.port}/`, { timeoutMs: 300 })).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('refuses before connecting: the protected port of this run, metadata, private names', async () => {
    const dynamo = new URL(process.env.DYNAMODB_ENDPOINT!);
    for (const host of ['127.0.0.1', 'localhost', '[::ffff:127.0.0.1]', '2130706433', '127.0.0.9']) {
      await expect(
        egressFetch(`http://${host}:${dynamo.port}/`, { method: 'POST', headers: { 'x-amz-target': 'DynamoDB_20120810.Scan' }, body: '{}' }),
      ).rejects.toThrow(/^Destination not allowed: .*the local runtime's own DynamoDB Local$/);
    }
    await expect(egressFetch('http://169.254.169.254/latest/meta-data/')).rejects.toThrow(
      'Destination not allowed: 169.254.169.254 is a link-local address',
    );
    await expect(egressFetch('http://[fd00:ec2::254]/latest/meta-data/')).rejects.toThrow(
      'Destination not allowed: [fd00:ec2::254] is a unique-local address',
    );
    await expect(egressFetch('http://0.0.0.0:3000/')).rejects.toThrow('Destination not allowed: 0.0.0.0 is an unspecified address');
    await expect(egressFetch('http://internal.parley.test/', { resolver: answers('10.0.0.8') })).rejects.toThrow(
      'Destination not allowed: internal.parley.test resolves to a private address',
    );
  });

  it('sets framing and host itself, and reports network failures with their code', async () => {
    const echo = await listen((req, res) => res.end(JSON.stringify(req.headers)));
    const response = await egressFetch(`http://127.0.0.1:${echo.port}/`, {
      method: 'POST',
      headers: { host: 'other.example', 'content-length': '1', 'transfer-encoding': 'chunked', 'x-custom': 'yes' },
      body: 'hello',
    });
    expect(await response.json()).toMatchObject({ host: `127.0.0.1:${echo.port}`, 'content-length': '5', 'x-custom': 'yes' });
    const port = echo.port;
    const closing = servers.pop()!;
    closing.closeAllConnections();
    await new Promise<void>((resolve) => closing.close(() => resolve()));
    const refused = egressFetch(`http://127.0.0.1:${port}/`);
    await expect(refused).rejects.toThrow(EgressNetworkError);
    await expect(refused).rejects.toMatchObject({ message: 'Request failed: ECONNREFUSED', cause: { code: 'ECONNREFUSED' } });
  });

  it('speaks TLS to the pinned address with SNI and certificate checks for the host name', async () => {
    const names: string[] = [];
    const server = createHttpsServer(
      {
        ...TEST_TLS,
        SNICallback: (name, done) => {
          names.push(name);
          done(null);
        },
      },
      (_req, res) => res.end('secure'),
    );
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const toLoopback = answers('127.0.0.1');

    // The certificate names localhost and 127.0.0.1: trusted, it verifies for "localhost".
    const ok = await egressFetch(`https://localhost:${port}/`, { resolver: toLoopback, ca: TEST_TLS.cert });
    expect(await ok.text()).toBe('secure');
    // The same address under another name fails verification: it is checked against the name, not the address.
    await expect(egressFetch(`https://tls.parley.test:${port}/`, { resolver: toLoopback, ca: TEST_TLS.cert })).rejects.toMatchObject({
      cause: { code: 'ERR_TLS_CERT_ALTNAME_INVALID' },
    });
    // Without trusting it, verification fails: it is never off.
    await expect(egressFetch(`https://localhost:${port}/`, { resolver: toLoopback })).rejects.toThrow(EgressNetworkError);
    expect(names).toEqual(['localhost', 'tls.parley.test', 'localhost']);
  });
});
