import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { VendorSettings } from '../../shared/platform/aws/secrets.ts';

interface SeenRequest {
  target: string | undefined;
  body: { SecretId?: string };
}

/** Speaks the slice of the Secrets Manager JSON protocol GetSecretValue uses. */
let secretString = JSON.stringify({ TWILIO_AUTH_TOKEN: 'from-secret', PORT_LIMIT: 7, EMPTY: null });
let failNext = false;
const seen: SeenRequest[] = [];
let server: Server;
let endpoint: string;

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}')));
    req.on('error', reject);
  });
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const body = (await readJson(req)) as SeenRequest['body'];
    seen.push({ target: req.headers['x-amz-target'] as string | undefined, body });
    res.setHeader('content-type', 'application/x-amz-json-1.1');
    if (failNext) {
      failNext = false;
      res.writeHead(400).end(JSON.stringify({ __type: 'ResourceNotFoundException', message: 'no such secret' }));
      return;
    }
    res.writeHead(200).end(
      JSON.stringify({ ARN: `arn:aws:secretsmanager:us-east-1:000000000000:secret:${body.SecretId}`, Name: body.SecretId, SecretString: secretString }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  seen.length = 0;
  failNext = false;
  secretString = JSON.stringify({ TWILIO_AUTH_TOKEN: 'from-secret', PORT_LIMIT: 7, EMPTY: null });
});

describe('vendor settings from Secrets Manager', () => {
  it('reads JSON keys from one GetSecretValue and reuses it within the TTL', async () => {
    let now = 1_000_000;
    const settings = new VendorSettings({ secretId: 'parley/vendor', endpoint, ttlMs: 60_000, now: () => now });

    expect(await settings.get('TWILIO_AUTH_TOKEN')).toBe('from-secret');
    expect(await settings.get('PORT_LIMIT')).toBe('7');
    expect(await settings.get('EMPTY')).toBeUndefined();
    expect(await settings.get('MISSING')).toBeUndefined();
    expect(seen).toEqual([{ target: 'secretsmanager.GetSecretValue', body: { SecretId: 'parley/vendor' } }]);

    secretString = JSON.stringify({ TWILIO_AUTH_TOKEN: 'rotated' });
    now += 59_999;
    expect(await settings.get('TWILIO_AUTH_TOKEN')).toBe('from-secret');
    expect(seen).toHaveLength(1);
    now += 1;
    expect(await settings.get('TWILIO_AUTH_TOKEN')).toBe('rotated');
    expect(seen).toHaveLength(2);
  });

  it('shares one in-flight read between concurrent callers', async () => {
    const settings = new VendorSettings({ secretId: 'parley/vendor', endpoint });
    const values = await Promise.all([settings.get('TWILIO_AUTH_TOKEN'), settings.get('PORT_LIMIT')]);
    expect(values).toEqual(['from-secret', '7']);
    expect(seen).toHaveLength(1);
  });

  it('does not cache a failed read', async () => {
    const settings = new VendorSettings({ secretId: 'parley/vendor', endpoint });
    failNext = true;
    await expect(settings.get('TWILIO_AUTH_TOKEN')).rejects.toMatchObject({ name: 'ResourceNotFoundException' });
    expect(await settings.get('TWILIO_AUTH_TOKEN')).toBe('from-secret');
    expect(seen).toHaveLength(2);
  });

  it('rejects a secret that is not a JSON object without echoing its contents', async () => {
    secretString = 'sk_live_not_json';
    const settings = new VendorSettings({ secretId: 'parley/vendor', endpoint });
    const error = await settings.get('TWILIO_AUTH_TOKEN').catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe('Secret parley/vendor is not a JSON object');
  });

  it('vendorSetting reads the secret named by VENDOR_SECRET_ID', async () => {
    process.env.VENDOR_SECRET_ID = 'parley/prod-vendor';
    try {
      vi.resetModules();
      const secrets = await import('../../shared/platform/aws/secrets.ts');
      secrets.useSecretsManagerEndpoint(endpoint);
      expect(await secrets.vendorSetting('TWILIO_AUTH_TOKEN')).toBe('from-secret');
      expect(seen.map((s) => s.body.SecretId)).toEqual(['parley/prod-vendor']);
    } finally {
      delete process.env.VENDOR_SECRET_ID;
      vi.resetModules();
    }
  });
});

describe('vendor settings from the environment', () => {
  it('vendorSetting reads process.env when VENDOR_SECRET_ID is absent', async () => {
    vi.resetModules();
    const { vendorSetting } = await import('../../shared/platform/aws/secrets.ts');
    process.env.PARLEY_TEST_VENDOR_SETTING = 'from-env';
    try {
      expect(await vendorSetting('PARLEY_TEST_VENDOR_SETTING')).toBe('from-env');
      expect(await vendorSetting('PARLEY_TEST_UNSET_SETTING')).toBeUndefined();
      expect(seen).toEqual([]);
    } finally {
      delete process.env.PARLEY_TEST_VENDOR_SETTING;
    }
  });

  it('reads the given env when no secret is configured', async () => {
    const settings = new VendorSettings({ env: { STRIPE_KEY: 'from-given-env' } });
    expect(await settings.get('STRIPE_KEY')).toBe('from-given-env');
    expect(await settings.get('TWILIO_AUTH_TOKEN')).toBeUndefined();
  });
});
