import { describe, expect, it } from 'vitest';
import { tagAwsClient, unavailableService } from '../../shared/platform/aws/unavailable.ts';

/** A client whose only middleware throws `error`, tagged as the real clients are. */
function clientThrowing(error: Error) {
  let wrapped: ((args: never) => Promise<unknown>) | undefined;
  const client = {
    middlewareStack: {
      add(middleware: (next: (args: never) => Promise<unknown>) => (args: never) => Promise<unknown>) {
        wrapped = middleware(async () => {
          throw error;
        });
      },
    },
  };
  tagAwsClient(client, 'DynamoDB');
  return () => wrapped!(undefined as never);
}

const named = (name: string) => Object.assign(new Error(name), { name });

describe('which AWS failures are "unavailable" (503) rather than a fault of ours (500)', () => {
  it('maps the SDK request timeout, whichever name the handler gives it, and throttling', async () => {
    for (const name of ['TimeoutError', 'AbortError', 'ThrottlingException']) {
      const error = await clientThrowing(named(name))().catch((thrown: unknown) => thrown);
      expect(unavailableService(error), name).toBe('DynamoDB');
    }
  });

  it('leaves a request error of the service, and an abort that did not come from an AWS client, alone', async () => {
    const validation = await clientThrowing(named('ValidationException'))().catch((thrown: unknown) => thrown);
    expect(unavailableService(validation)).toBeUndefined();
    expect(unavailableService(named('AbortError'))).toBeUndefined();
  });
});
