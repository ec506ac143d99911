import { describe, expect, it } from 'vitest';
import { unavailableService } from '../../shared/platform/aws/unavailable.ts';
import { awsFailure, named } from '../support/aws-failures.ts';

describe('which AWS failures are "unavailable" (503) rather than a fault of ours (500)', () => {
  it('maps the SDK request timeout, whichever name the handler gives it, and throttling', async () => {
    for (const name of ['TimeoutError', 'AbortError', 'ThrottlingException']) {
      const error = await awsFailure(named(name));
      expect(unavailableService(error), name).toBe('DynamoDB');
    }
  });

  it('leaves a request error of the service, and an abort that did not come from an AWS client, alone', async () => {
    const validation = await awsFailure(named('ValidationException'));
    expect(unavailableService(validation)).toBeUndefined();
    expect(unavailableService(named('AbortError'))).toBeUndefined();
  });
});
