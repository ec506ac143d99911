import { describe, expect, it } from 'vitest';
import { useProductionSettings } from '../support/production-settings.ts';

useProductionSettings();
const { errorResponse } = await import('../../shared/platform/http/respond.ts');
const errors = await import('../../shared/platform/errors.ts');
const { ApiError, paymentRequired, badGateway, tooManyRequests } = errors;
const { TransactionCancelled } = await import('../../shared/platform/store/table.ts');

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

  it('answers a transaction another write conflicted with as 503 with retry-after, a failed condition left to the domain as 500', () => {
    const conflicted = parsed(errorResponse(new TransactionCancelled([], true)));
    expect(conflicted.status).toBe(503);
    expect(conflicted.headers?.['retry-after']).toBe('1');
    expect(conflicted.body).toEqual({ status: 503, message: 'A conflicting write was in progress; retry the request' });
    // A condition that failed is the domain's to explain (a 409, a 404): unexplained, it is a fault.
    expect(parsed(errorResponse(new TransactionCancelled([0], false))).status).toBe(500);
  });

  it("answers middy's early timeout as 504, not as a fault of its own", () => {
    const timeout = Object.assign(new Error('[AbortError]: The operation was aborted.', { cause: { package: '@middy/core' } }), { name: 'TimeoutError' });
    expect(parsed(errorResponse(timeout))).toMatchObject({
      status: 504,
      body: { status: 504, message: 'The request did not finish within the time allowed; retry it, or split the work' },
    });
    // An SDK's own TimeoutError is not middy's: untagged by a client, it stays a fault.
    expect(parsed(errorResponse(Object.assign(new Error('socket'), { name: 'TimeoutError' }))).status).toBe(500);
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

  it.each([
    [() => new errors.Invalid('bad'), 400],
    [() => new errors.Unauthorized(), 401],
    [() => new errors.PaymentRequired('pay', 'credit_exhausted'), 402],
    [() => new errors.Forbidden('no'), 403],
    [() => new errors.NotFound('gone'), 404],
    [() => new errors.VersionNotFound('no version'), 404],
    [() => new errors.Conflict('taken'), 409],
    [() => new errors.TooLarge('big'), 413],
    [() => new errors.Unprocessable('cannot'), 422],
    [() => new errors.TooManyRequests('slow', 3), 429],
    [() => new errors.VendorFailed('vendor'), 502],
    [() => new errors.Unavailable('down', 2), 503],
  ])('maps each kind of error to its status in one place (%#)', (make, status) => {
    const error = make();
    expect(error).toBeInstanceOf(ApiError);
    expect(parsed(errorResponse(error)).status).toBe(status);
    expect(parsed(errorResponse(error)).body.status).toBe(status);
  });

  it('lets code tell a missing version from a missing resource by kind', () => {
    expect(new errors.VersionNotFound('Agent a has no version 3')).toBeInstanceOf(errors.NotFound);
    expect(new errors.NotFound('Agent a not found')).not.toBeInstanceOf(errors.VersionNotFound);
    expect(new errors.Conflict().name).toBe('Conflict');
    expect(parsed(errorResponse(new errors.Unavailable('The store is unavailable', 2))).headers).toMatchObject({ 'retry-after': '2' });
  });
});
