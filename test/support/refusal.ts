import type { ApiError } from '../../shared/platform/errors.ts';

/** What `promise` was refused with; fails the test when it was not refused. */
export async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (error) {
    return error as ApiError;
  }
  throw new Error('expected a refusal');
}
