import { afterAll } from 'vitest';
import { startS3Server, type FakeS3 } from './s3-server.ts';

export type { FakeS3,   } from './s3-server.ts';

/**
 * The small S3 of ./s3-server.ts, closed after the file's tests. Scripts outside vitest
 * (scripts/measure-functions.ts) start the server itself with startS3Server.
 */
export async function startFakeS3(): Promise<FakeS3> {
  const fake = await startS3Server();
  afterAll(() => fake.close());
  return fake;
}
