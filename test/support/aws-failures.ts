import { tagAwsClient, type AwsService } from '../../shared/platform/aws/unavailable.ts';

/**
 * What an AWS client throws when the call failed as `error` (after the SDK's retries):
 * the same error, tagged with the client's service by the middleware every real client
 * has (tagAwsClient), so the HTTP layer maps it as it maps a real timeout or throttle.
 */
export async function awsFailure(error: Error, service: AwsService = 'DynamoDB'): Promise<Error> {
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
  tagAwsClient(client, service);
  return wrapped!(undefined as never).then(
    () => {
      throw new Error('unreachable: the stand-in client always fails');
    },
    (thrown: Error) => thrown,
  );
}

/** An error by name, as the SDK names its failures (`TimeoutError`, `ThrottlingException`, ...). */
export const named = (name: string, message = name) => Object.assign(new Error(message), { name });
