import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';

/** An API Gateway HTTP API (payload v2) event, as API Gateway hands it to a Lambda. */
export function apiGatewayEvent(overrides: {
  routeKey: string;
  /** Defaults to the route key's method; give it for `$default`. */
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  pathParameters?: Record<string, string>;
  queryStringParameters?: Record<string, string>;
  sourceIp?: string;
}): APIGatewayProxyEventV2 {
  const [keyMethod, routePath] = overrides.routeKey.split(' ') as [string, string];
  const method = overrides.method ?? keyMethod;
  const path = overrides.path ?? routePath ?? '/';
  const now = Date.now();
  return {
    version: '2.0',
    routeKey: overrides.routeKey,
    rawPath: path,
    rawQueryString: '',
    headers: overrides.headers ?? {},
    body: overrides.body,
    isBase64Encoded: false,
    pathParameters: overrides.pathParameters,
    queryStringParameters: overrides.queryStringParameters,
    requestContext: {
      accountId: '123456789012',
      apiId: 'api',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      requestId: randomUUID(),
      routeKey: overrides.routeKey,
      stage: '$default',
      time: new Date(now).toISOString(),
      timeEpoch: now,
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: overrides.sourceIp ?? '198.51.100.7', userAgent: 'test' },
    },
  };
}

export function lambdaContext(): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: 'parley-test',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:parley-test',
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: '/aws/lambda/parley-test',
    logStreamName: 'test',
    getRemainingTimeInMillis: () => 29_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
