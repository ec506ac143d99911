import { describe, expect, it } from 'vitest';
import { signRequest } from '../../shared/platform/aws/lambda-invoke.ts';

/*
 * The assistant's Lambda invocations are signed by hand (shared/platform/aws/lambda-invoke.ts):
 * the signature must be Signature Version 4's, checked here against AWS's published test
 * vector `get-vanilla` (the SigV4 test suite's credentials, date, region and service).
 */
describe('SigV4 signing', () => {
  it("answers AWS's get-vanilla signature", () => {
    const headers = signRequest({
      method: 'GET',
      host: 'example.amazonaws.com',
      path: '/',
      headers: {},
      body: '',
      region: 'us-east-1',
      service: 'service',
      amzDate: '20150830T123600Z',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
    });
    expect(headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    );
  });

  it('signs the session token with the rest', () => {
    const headers = signRequest({
      method: 'POST',
      host: 'lambda.us-east-1.amazonaws.com',
      path: '/2015-03-31/functions/parley-qa/invocations',
      headers: { 'content-type': 'application/json' },
      body: '{}',
      region: 'us-east-1',
      service: 'lambda',
      amzDate: '20150830T123600Z',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', sessionToken: 'token' },
    });
    expect(headers['x-amz-security-token']).toBe('token');
    expect(headers.authorization).toMatch(/SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature=[0-9a-f]{64}$/);
  });
});
