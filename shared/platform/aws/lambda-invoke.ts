import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { createHash, createHmac } from 'node:crypto';
import { config } from '../config.ts';

/*
 * Lambda's Invoke API (RequestResponse) as one signed HTTPS request: the assistant's tools
 * invoke the domain functions with an API Gateway-shaped event (./route-invoke.ts). Signed
 * here with Signature Version 4 rather than through @aws-sdk/client-lambda: the one call
 * needs neither the client's retries nor its 200 KiB, and the signature is the documented
 * algorithm, checked against AWS's own test vector (test/platform/lambda-invoke.test.ts).
 * Credentials are the function role's, from the environment Lambda sets.
 */

const INVOKE_TIMEOUT_MS = 20_000;

interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface SignInput {
  method: string;
  host: string;
  path: string;
  /** The query string, its parameters already encoded and sorted by name. */
  query?: string;
  headers: Record<string, string>;
  body: string;
  region: string;
  service: string;
  /** `YYYYMMDDTHHMMSSZ` */
  amzDate: string;
  credentials: Credentials;
}

const hex = (data: string) => createHash('sha256').update(data, 'utf8').digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

/** The request's headers with `x-amz-date`, the session token and `authorization` added (SigV4). */
export function signRequest(input: SignInput): Record<string, string> {
  const headers: Record<string, string> = { ...input.headers, host: input.host, 'x-amz-date': input.amzDate };
  if (input.credentials.sessionToken) headers['x-amz-security-token'] = input.credentials.sessionToken;
  const names = Object.keys(headers).map((name) => name.toLowerCase()).sort();
  const lower = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value.trim().replace(/\s+/g, ' ')]));
  const canonicalHeaders = names.map((name) => `${name}:${lower[name]}\n`).join('');
  const signedHeaders = names.join(';');
  const canonicalRequest = [input.method, input.path, input.query ?? '', canonicalHeaders, signedHeaders, hex(input.body)].join('\n');
  const day = input.amzDate.slice(0, 8);
  const scope = `${day}/${input.region}/${input.service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', input.amzDate, scope, hex(canonicalRequest)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${input.credentials.secretAccessKey}`, day), input.region), input.service), 'aws4_request');
  const signature = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
  return {
    ...headers,
    authorization: `AWS4-HMAC-SHA256 Credential=${input.credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
  };
}

function roleCredentials(): Credentials {
  const accessKeyId = process.env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = process.env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) throw new Error('No AWS credentials in the environment to invoke a function with');
  return { accessKeyId, secretAccessKey, sessionToken: process.env.AWS_SESSION_TOKEN };
}

/**
 * Invokes `target` (`<function name>[:<alias>]`) with `event` and answers its result; a
 * function error or a refused invocation throws.
 */
export async function invokeLambda(target: string, event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  const [functionName = '', qualifier] = target.split(':');
  const region = config.AWS_REGION;
  const host = `lambda.${region}.amazonaws.com`;
  const path = `/2015-03-31/functions/${encodeURIComponent(functionName)}/invocations`;
  const query = qualifier ? `Qualifier=${encodeURIComponent(qualifier)}` : '';
  const body = JSON.stringify(event);
  const amzDate = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  const headers = signRequest({
    method: 'POST',
    host,
    path,
    query,
    headers: { 'content-type': 'application/json' },
    body,
    region,
    service: 'lambda',
    amzDate,
    credentials: roleCredentials(),
  });
  delete headers.host;
  const response = await fetch(`https://${host}${path}${query ? `?${query}` : ''}`, { method: 'POST', headers, body, signal: AbortSignal.timeout(INVOKE_TIMEOUT_MS) });
  const text = await response.text();
  if (!response.ok) throw new Error(`Invoking ${functionName} was refused: ${response.status} ${text.slice(0, 200)}`);
  if (response.headers.get('x-amz-function-error')) throw new Error(`${functionName} failed: ${text.slice(0, 200)}`);
  return JSON.parse(text) as APIGatewayProxyStructuredResultV2;
}
