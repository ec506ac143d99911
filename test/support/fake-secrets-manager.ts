import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';

export interface FakeSecretsManager {
  url: string;
  /** The vendor secret's JSON keys, as GetSecretValue answers them (change them between tests). */
  values: Record<string, string>;
}

/**
 * A Secrets Manager on 127.0.0.1 answering every GetSecretValue with `values`, for modules
 * loaded with production settings (which read vendor settings from the secret, never the
 * environment): point them at it with useSecretsManagerEndpoint. Closed after the file's tests.
 */
export async function fakeSecretsManager(): Promise<FakeSecretsManager> {
  const fake: FakeSecretsManager = { url: '', values: {} };
  const server = createServer((req, res) => {
    req.resume();
    res.setHeader('content-type', 'application/x-amz-json-1.1');
    res.end(JSON.stringify({ Name: 'parley-vendor', SecretString: JSON.stringify(fake.values) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return fake;
}
