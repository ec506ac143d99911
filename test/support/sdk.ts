import Retell from 'retell-sdk';

/** The compatible client pointed at the local server (no retries: each call is one request). */
export function retellClient(baseUrl: string, apiKey: string): Retell {
  return new Retell({ apiKey, baseURL: baseUrl, maxRetries: 0 });
}

/** The status and error body of a client call that is expected to fail. */
export async function sdkFailure(request: Promise<unknown>): Promise<{ status: number; body: { status: number; message: string } }> {
  try {
    await request;
  } catch (error) {
    const apiError = error as { status: number; error: { status: number; message: string } };
    return { status: apiError.status, body: apiError.error };
  }
  throw new Error('expected the request to fail');
}
