import { describe, expect, it } from 'vitest';
import { useProductionSettings } from '../support/production-settings.ts';

useProductionSettings();
const { errorResponse } = await import('../../shared/platform/http/respond.ts');
const { ApiError, paymentRequired, badGateway, tooManyRequests } = await import('../../shared/platform/errors.ts');

const parsed = (result: ReturnType<typeof errorResponse>) => ({
  status: result.statusCode,
  headers: result.headers,
  body: JSON.parse(result.body ?? 'null'),
});

describe('error mapping', () => {
  it('hides unexpected failures behind "Internal server error" in production', () => {
    const result = parsed(errorResponse(new Error('connection string postgres://user:pw@db')));
    expect(result.status).toBe(500);
    expect(result.body).toEqual({ status: 500, message: 'Internal server error' });
  });

  it('adds error_code where the spec gives one', () => {
    expect(parsed(errorResponse(paymentRequired('Credit exhausted', 'credit_exhausted'))).body).toEqual({
      status: 402,
      message: 'Credit exhausted',
      error_code: 'credit_exhausted',
    });
    expect(parsed(errorResponse(badGateway('Carrier refused', 'provisioning_failed'))).body.error_code).toBe(
      'provisioning_failed',
    );
    expect(parsed(errorResponse(new ApiError(404, 'Not found'))).body).toEqual({ status: 404, message: 'Not found' });
  });

  it('keeps the headers an error carries, over the rate-limit headers', () => {
    const result = parsed(errorResponse(tooManyRequests('slow down', 7), { 'x-ratelimit-limit': '5' }));
    expect(result.headers).toMatchObject({ 'retry-after': '7', 'x-ratelimit-limit': '5', 'content-type': 'application/json' });
  });
});
