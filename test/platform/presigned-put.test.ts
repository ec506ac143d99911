import { describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../shared/platform/aws/object-store.ts';
import { useOfflineAwsCredentials } from '../support/offline-aws-credentials.ts';

/*
 * The S3 side of presigned uploads, signed offline (SigV4 query signing needs only
 * credentials, no request): what a client must send is signed, and nothing in the URL makes
 * S3 refuse a correct body. No real bucket is reached.
 */

useOfflineAwsCredentials();

describe('S3 presigned PUT', () => {
  it('signs the type, the exact length, the retention tag and the checksum as headers, and carries no checksum of an empty body', async () => {
    const checksum = 'n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=';
    const signed = await new S3ObjectStore('parley-test-bucket').signedPutUrl('uploads/ws_1/upload_1', {
      contentType: 'audio/wav',
      contentLength: 7_000_000,
      expiresAt: Date.now() + 15 * 60_000,
      retentionDays: 1,
      checksumSha256: checksum,
    });
    const url = new URL(signed.url);
    expect(url.pathname).toMatch(/uploads\/ws_1\/upload_1$/);
    expect(url.searchParams.get('X-Amz-SignedHeaders')?.split(';')).toEqual(['content-length', 'content-type', 'host', 'x-amz-checksum-sha256', 'x-amz-tagging']);
    expect(Number(url.searchParams.get('X-Amz-Expires'))).toBeGreaterThan(890);
    // The SDK's default flexible checksums would put the CRC32 of the empty body here, and S3 would refuse every real upload.
    expect([...url.searchParams.keys()].filter((name) => /checksum|x-amz-sdk/i.test(name))).toEqual([]);
    expect(signed.headers).toEqual({ 'content-type': 'audio/wav', 'content-length': '7000000', 'x-amz-tagging': 'retention_days=1', 'x-amz-checksum-sha256': checksum });
  });

  it('without a checksum or a retention tag signs type and length only', async () => {
    const signed = await new S3ObjectStore('parley-test-bucket').signedPutUrl('uploads/ws_1/kb_upload_1', {
      contentType: 'application/pdf',
      contentLength: 12,
      expiresAt: Date.now() + 60_000,
    });
    const url = new URL(signed.url);
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;content-type;host');
    expect([...url.searchParams.keys()].filter((name) => /checksum|x-amz-sdk/i.test(name))).toEqual([]);
    expect(signed.headers).toEqual({ 'content-type': 'application/pdf', 'content-length': '12' });
  });
});
