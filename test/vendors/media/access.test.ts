import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AccessToken, TokenVerifier } from 'livekit-server-sdk';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_ICE_SERVERS, loadConfig } from '../../../shared/platform/config.ts';
import { ApiError, Unauthorized, VendorFailed } from '../../../shared/platform/errors.ts';
import {
  readLiveKitCredentials,
  verifyMediaWebhook,
  verifyWorkerReportToken,
  webCallAccess,
  workerReportToken,
  workerReportUrl,
} from '../../../shared/vendors/media/index.ts';
import { FAKE_API_KEY, FAKE_API_SECRET, signedWebhook } from '../../support/fake-livekit.ts';
import { useProductionSettings } from '../../support/production-settings.ts';

const CALL_ID = 'call_5d4c3b2a1f0e9d8c7b6a5f4e';
const fakeSettings = async (name: string) =>
  ({ LIVEKIT_API_KEY: FAKE_API_KEY, LIVEKIT_API_SECRET: FAKE_API_SECRET })[name];
const settingsOf = (values: Record<string, string>) => async (name: string) => values[name];

/** The error a promise failed with (fails the test if it did not fail). */
async function failure(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

describe('web call access', () => {
  it('is a LiveKit token for the call’s room only, valid one hour, with the local server and one STUN server', async () => {
    const before = Math.floor(Date.now() / 1000);
    const access = await webCallAccess(CALL_ID, 'web-caller');
    const after = Math.floor(Date.now() / 1000);

    // Signed with livekit-server --dev's key and secret, the local defaults.
    const claims = await new TokenVerifier('devkey', 'secret').verify(access.access_token);
    expect(claims.video).toEqual({ room: CALL_ID, roomJoin: true, canPublish: true, canSubscribe: true, canPublishData: true });
    expect(claims.sub).toBe('web-caller');
    expect(claims.iss).toBe('devkey');
    expect(claims.exp! - claims.nbf!).toBe(3600);
    expect(claims.exp).toBeGreaterThanOrEqual(before + 3600);
    expect(claims.exp).toBeLessThanOrEqual(after + 3600);
    expect(access).toEqual({
      access_token: access.access_token,
      expires_at: claims.exp! * 1000,
      livekit_url: 'ws://127.0.0.1:7880',
      transport: 'livekit',
      ice_servers: [{ urls: ['stun:stun.l.google.com:19302'] }],
    });
    expect(DEFAULT_ICE_SERVERS).toEqual([{ urls: ['stun:stun.l.google.com:19302'] }]);
  });

  it('is signed with the configured key and secret, and names the participant when asked', async () => {
    const access = await webCallAccess(CALL_ID, 'caller-7', { read: fakeSettings, name: 'Ada' });
    const claims = await new TokenVerifier(FAKE_API_KEY, FAKE_API_SECRET).verify(access.access_token);
    expect([claims.iss, claims.sub, claims.name]).toEqual([FAKE_API_KEY, 'caller-7', 'Ada']);
    await expect(new TokenVerifier('devkey', 'secret').verify(access.access_token)).rejects.toThrow();
  });

  it('uses LIVEKIT_URL and WEB_CALL_ICE_SERVERS when set', async () => {
    const iceServers = [
      { urls: 'stun:stun.example.net:3478' },
      { urls: ['turn:turn.example.net:3478?transport=udp', 'turns:turn.example.net:5349'], username: 'u', credential: 'c' },
    ];
    vi.resetModules();
    vi.stubEnv('LIVEKIT_URL', 'wss://media.example.net');
    vi.stubEnv('WEB_CALL_ICE_SERVERS', JSON.stringify(iceServers));
    try {
      const { webCallAccess: fresh } = await import('../../../shared/vendors/media/web-call.ts');
      const access = await fresh(CALL_ID, 'web-caller');
      expect([access.livekit_url, access.ice_servers]).toEqual(['wss://media.example.net', iceServers]);
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });
});

describe('media settings', () => {
  it('parse WEB_CALL_ICE_SERVERS and default it', () => {
    expect(loadConfig({}).WEB_CALL_ICE_SERVERS).toEqual([{ urls: ['stun:stun.l.google.com:19302'] }]);
    expect(loadConfig({ WEB_CALL_ICE_SERVERS: ' ' }).WEB_CALL_ICE_SERVERS).toEqual([{ urls: ['stun:stun.l.google.com:19302'] }]);
    expect(loadConfig({ WEB_CALL_ICE_SERVERS: '[{"urls":"stun:a.example.net"}]' }).WEB_CALL_ICE_SERVERS).toEqual([
      { urls: 'stun:a.example.net' },
    ]);
    expect(loadConfig({ WEB_CALL_ICE_SERVERS: '[]' }).WEB_CALL_ICE_SERVERS).toEqual([]);
  });

  it.each([
    ['[{"urls": "stun:a.example.net"', 'WEB_CALL_ICE_SERVERS: Must be JSON: an array of {urls, username?, credential?}'],
    [
      '{"urls": "stun:a.example.net"}',
      'WEB_CALL_ICE_SERVERS: Must be an array of {urls: string | string[], username?, credential?} (value: Invalid input: expected array, received object)',
    ],
    [
      '[{"urls": []}]',
      'WEB_CALL_ICE_SERVERS: Must be an array of {urls: string | string[], username?, credential?} (0.urls: Too small: expected array to have >=1 items)',
    ],
    [
      '[{"url": "stun:a.example.net"}]',
      'WEB_CALL_ICE_SERVERS: Must be an array of {urls: string | string[], username?, credential?} (0.urls: Invalid input)',
    ],
  ])('refuse WEB_CALL_ICE_SERVERS %s at load', (value, message) => {
    expect(() => loadConfig({ WEB_CALL_ICE_SERVERS: value })).toThrow(new Error(`Invalid Parley settings: ${message}`));
  });

  it('check LIVEKIT_URL and default LIVEKIT_AGENT_NAME', () => {
    expect(loadConfig({}).LIVEKIT_URL).toBeUndefined();
    expect(loadConfig({ LIVEKIT_URL: ' wss://media.example.net ' }).LIVEKIT_URL).toBe('wss://media.example.net');
    expect(loadConfig({ LIVEKIT_URL: 'http://127.0.0.1:7880' }).LIVEKIT_URL).toBe('http://127.0.0.1:7880');
    expect(() => loadConfig({ LIVEKIT_URL: 'media.example.net' })).toThrow(
      new Error('Invalid Parley settings: LIVEKIT_URL: Must be a ws://, wss://, http:// or https:// URL'),
    );
    expect(loadConfig({}).LIVEKIT_AGENT_NAME).toBe('parley-agent');
    expect(loadConfig({ LIVEKIT_AGENT_NAME: 'front-desk' }).LIVEKIT_AGENT_NAME).toBe('front-desk');
  });
});

describe('LiveKit credentials', () => {
  it('default to livekit-server --dev’s outside production', async () => {
    expect(await readLiveKitCredentials({ read: settingsOf({}), production: false })).toEqual({ apiKey: 'devkey', apiSecret: 'secret' });
    expect(await readLiveKitCredentials({ read: fakeSettings, production: false })).toEqual({
      apiKey: FAKE_API_KEY,
      apiSecret: FAKE_API_SECRET,
    });
  });

  it.each([
    [{}, 'LIVEKIT_API_KEY not set, LIVEKIT_API_SECRET not set'],
    [{ LIVEKIT_API_KEY: 'APIprod1' }, 'LIVEKIT_API_SECRET not set'],
    [{ LIVEKIT_API_KEY: 'devkey', LIVEKIT_API_SECRET: 'secret' }, 'LIVEKIT_API_KEY is the development key, LIVEKIT_API_SECRET is the development secret'],
    [{ LIVEKIT_API_KEY: 'APIprod1', LIVEKIT_API_SECRET: 'secret' }, 'LIVEKIT_API_SECRET is the development secret'],
  ])('in production refuse %j', async (values, problems) => {
    const error = await failure(readLiveKitCredentials({ read: settingsOf(values), production: true }));
    expect(error).toBeInstanceOf(VendorFailed);
    expect(error.message).toBe(`LiveKit is not configured for production: ${problems} (vendor secret)`);
  });

  describe('with PARLEY_ENV=production, from the vendor secret', () => {
    let secret: Record<string, string> = {};
    let server: Server;
    let endpoint: string;
    beforeAll(async () => {
      server = createServer((_req, res) => {
        res.setHeader('content-type', 'application/x-amz-json-1.1');
        res.end(JSON.stringify({ Name: 'parley-vendor', SecretString: JSON.stringify(secret) }));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    /** webCallAccess as a production process loads it, reading the secret from the fake Secrets Manager. */
    async function productionAccess(values: Record<string, string>) {
      secret = values;
      const restore = useProductionSettings({ LIVEKIT_API_KEY: 'devkey', LIVEKIT_API_SECRET: 'secret' });
      vi.resetModules();
      try {
        const secrets = await import('../../../shared/platform/aws/secrets.ts');
        secrets.useSecretsManagerEndpoint(endpoint);
        const { webCallAccess: fresh } = await import('../../../shared/vendors/media/web-call.ts');
        return await fresh(CALL_ID, 'web-caller');
      } finally {
        restore();
        vi.resetModules();
      }
    }

    /** The error productionAccess failed with: from a fresh module graph, so compared by name, not class. */
    const productionFailure = (values: Record<string, string>) =>
      productionAccess(values).then(
        () => expect.fail('expected a refusal'),
        (error: ApiError) => error,
      );

    it('refuses the development defaults, even when the environment holds them', async () => {
      const error = await productionFailure({});
      expect([error.name, error.status, error.message]).toEqual([
        'VendorFailed',
        502,
        'LiveKit is not configured for production: LIVEKIT_API_KEY not set, LIVEKIT_API_SECRET not set (vendor secret)',
      ]);
      const dev = await productionFailure({ LIVEKIT_API_KEY: 'devkey', LIVEKIT_API_SECRET: 'secret' });
      expect(dev.message).toBe(
        'LiveKit is not configured for production: LIVEKIT_API_KEY is the development key, LIVEKIT_API_SECRET is the development secret (vendor secret)',
      );
    });

    it('signs with the secret’s key and secret', async () => {
      const access = await productionAccess({ LIVEKIT_API_KEY: 'APIprod7', LIVEKIT_API_SECRET: 'prod-secret-3c2b1a' });
      const claims = await new TokenVerifier('APIprod7', 'prod-secret-3c2b1a').verify(access.access_token);
      expect(claims.video?.room).toBe(CALL_ID);
    });
  });
});

describe('LiveKit webhooks', () => {
  const roomStarted = {
    event: 'room_started',
    id: 'EV_started1',
    createdAt: '1700000000',
    room: { sid: 'RM_abc', name: CALL_ID, metadata: '{"call_id":"x"}' },
  };

  it('accepts a body signed as LiveKit signs it, and answers the event', async () => {
    const { body, authorization } = await signedWebhook(roomStarted);
    expect(await verifyMediaWebhook(body, authorization, { read: fakeSettings })).toEqual({
      id: 'EV_started1',
      event: 'room_started',
      created_at: 1_700_000_000_000,
      room: { name: CALL_ID, sid: 'RM_abc', metadata: '{"call_id":"x"}' },
    });
  });

  it('reads the participant of participant events, its kind in lower case', async () => {
    const { body, authorization } = await signedWebhook({
      event: 'participant_left',
      id: 'EV_left1',
      createdAt: '1700000042',
      room: { sid: 'RM_abc', name: CALL_ID },
      participant: {
        sid: 'PA_1',
        identity: 'callee',
        kind: 'SIP',
        attributes: { 'sip.callStatus': 'hangup' },
        disconnectReason: 'CLIENT_INITIATED',
      },
    });
    expect(await verifyMediaWebhook(body, `Bearer ${authorization}`, { read: fakeSettings })).toEqual({
      id: 'EV_left1',
      event: 'participant_left',
      created_at: 1_700_000_042_000,
      room: { name: CALL_ID, sid: 'RM_abc', metadata: '' },
      participant: {
        identity: 'callee',
        sid: 'PA_1',
        kind: 'sip',
        attributes: { 'sip.callStatus': 'hangup' },
        disconnect_reason: 'CLIENT_INITIATED',
      },
    });
  });

  it('refuses a missing, tampered, foreign or expired signature with 401', async () => {
    const { body, authorization } = await signedWebhook(roomStarted);
    const tampered = body.replace(CALL_ID, 'call_ffffffffffffffffffffffff');
    const foreign = await signedWebhook(roomStarted, { apiSecret: 'another-secret-entirely-0000' });
    const expired = await signedWebhook(roomStarted, { ttlSeconds: -600 });
    const cases: [string, string | undefined][] = [
      [body, undefined],
      [body, ''],
      [body, 'Bearer '],
      [tampered, authorization],
      [body, 'not.a.jwt'],
      [foreign.body, foreign.authorization],
      [expired.body, expired.authorization],
    ];
    for (const [text, header] of cases) {
      const error = await failure(verifyMediaWebhook(text, header, { read: fakeSettings }));
      expect(error).toBeInstanceOf(Unauthorized);
      expect([error.status, error.message]).toEqual([401, 'Missing or invalid API key / session']);
    }
  });

  it('refuses a token LiveKit would accept for its API but that does not sign this body', async () => {
    const token = new AccessToken(FAKE_API_KEY, FAKE_API_SECRET, { ttl: 300 });
    token.addGrant({ roomAdmin: true, room: CALL_ID });
    const error = await failure(verifyMediaWebhook(JSON.stringify(roomStarted), await token.toJwt(), { read: fakeSettings }));
    expect(error.status).toBe(401);
  });
});

describe('worker report tokens', () => {
  it('open one call’s report route, compared exactly', async () => {
    const token = await workerReportToken(CALL_ID, { read: fakeSettings });
    expect(token).toMatch(/^wrt_[A-Za-z0-9_-]{43}$/);
    expect(await workerReportToken(CALL_ID, { read: fakeSettings })).toBe(token);
    expect(await verifyWorkerReportToken(CALL_ID, token, { read: fakeSettings })).toBe(true);

    const last = token.at(-1) === 'A' ? 'B' : 'A';
    const refused = [
      undefined,
      '',
      token.slice(0, -1),
      token.slice(0, -1) + last,
      `${token}=`,
      `${token}!`,
      token.slice(4),
      `Bearer ${token}`,
    ];
    for (const candidate of refused) {
      expect(await verifyWorkerReportToken(CALL_ID, candidate, { read: fakeSettings })).toBe(false);
    }
    expect(await verifyWorkerReportToken('call_000000000000000000000000', token, { read: fakeSettings })).toBe(false);
  });

  it('depend on the LiveKit secret, and are not the secret’s own HMAC', async () => {
    const token = await workerReportToken(CALL_ID, { read: fakeSettings });
    const rotated = settingsOf({ LIVEKIT_API_KEY: FAKE_API_KEY, LIVEKIT_API_SECRET: 'rotated-secret-1111' });
    expect(await verifyWorkerReportToken(CALL_ID, token, { read: rotated })).toBe(false);
    const { createHmac } = await import('node:crypto');
    const direct = createHmac('sha256', FAKE_API_SECRET).update(CALL_ID).digest('base64url');
    expect(token).not.toBe(`wrt_${direct}`);
  });

  it('are posted to the call’s report URL on the local server', () => {
    expect(workerReportUrl(CALL_ID)).toBe(`http://127.0.0.1:8080/internal/calls/${CALL_ID}/events`);
  });
});
