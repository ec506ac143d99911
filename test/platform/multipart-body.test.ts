import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { domainHandler } from '../../shared/platform/http/handler.ts';
import { parseMultipart } from '../../shared/platform/http/multipart.ts';
import { isUploadedFile, type UploadedFile } from '../../shared/platform/http/multipart.ts';
import { defineRoutes } from '../../shared/platform/http/route.ts';
import { apiGatewayEvent, lambdaContext } from '../support/events.ts';

/** A multipart route invoked as Lambda is: the handler hands the raw bytes to the parser. */
const routes = defineRoutes({ domain: 'meta', access: 'public' }, {
  upload: {
    method: 'POST', path: '/upload', status: 201, summary: 'upload',
    bodyType: 'multipart', uploadLimits: { maxFileBytes: 1024, maxFiles: 2 },
    body: z.object({
      title: z.string(),
      files: z.array(z.custom<UploadedFile>(isUploadedFile)),
    }),
  },
  json: {
    method: 'POST', path: '/json', status: 201, summary: 'json',
    body: z.object({ n: z.number() }),
  },
});
const handler = domainHandler(routes, {
  upload: ({ body }) => ({
    title: body.title,
    files: body.files.map((f) => ({ filename: f.filename, contentType: f.contentType, size: f.size, text: f.data.toString('latin1') })),
  }),
  json: ({ body }) => body,
}, { multipart: parseMultipart });

async function formBody(parts: [string, string | Blob, string?][]) {
  const form = new FormData();
  for (const [name, value, filename] of parts) {
    if (typeof value === 'string') form.append(name, value);
    else form.append(name, value, filename);
  }
  const request = new Request('http://local/upload', { method: 'POST', body: form });
  return { bytes: Buffer.from(await request.arrayBuffer()), contentType: request.headers.get('content-type')! };
}

async function invoke(routeKey: string, body: Buffer | string, contentType: string, base64 = true) {
  const event = apiGatewayEvent({ routeKey, headers: { 'content-type': contentType } });
  event.body = typeof body === 'string' ? body : base64 ? body.toString('base64') : body.toString('utf8');
  event.isBase64Encoded = typeof body !== 'string' && base64;
  const result = await handler(event, lambdaContext(), { signal: new AbortController().signal });
  if (!result) throw new Error('the handler returned no response');
  return { status: result.statusCode, body: JSON.parse(result.body!) };
}

describe('multipart routes', () => {
  const binary = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 13, 10, 45, 45]);

  it('parses text fields and files from a base64-encoded body (as API Gateway sends binary)', async () => {
    const { bytes, contentType } = await formBody([
      ['title', 'hello'],
      ['files', new Blob([binary], { type: 'audio/wav' }), 'a.wav'],
      ['files', new Blob(['x'], { type: 'text/plain' }), 'dir/b.txt'],
    ]);
    const res = await invoke('POST /upload', bytes, contentType);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      title: 'hello',
      files: [
        { filename: 'a.wav', contentType: 'audio/wav', size: binary.length, text: binary.toString('latin1') },
        { filename: 'b.txt', contentType: 'text/plain', size: 1, text: 'x' },
      ],
    });
  });

  it('also reads a body API Gateway passed as text, and `files[]` field names', async () => {
    const { bytes, contentType } = await formBody([['title', 'plain'], ['files[]', new Blob(['abc']), 'c.mp3']]);
    const res = await invoke('POST /upload', bytes, contentType, false);
    expect(res.status).toBe(201);
    expect(res.body.files).toEqual([{ filename: 'c.mp3', contentType: 'application/octet-stream', size: 3, text: 'abc' }]);
  });

  it('refuses a body that is not multipart/form-data with 400', async () => {
    const res = await invoke('POST /upload', '{"title":"x"}', 'application/json');
    expect(res).toEqual({ status: 400, body: { status: 400, message: 'Expected a multipart/form-data body (got application/json)' } });
  });

  it('refuses a malformed multipart body with 400', async () => {
    const res = await invoke('POST /upload', Buffer.from('--zzz\r\nContent-Disposition: form-data; name="title"\r\n\r\nx'), 'multipart/form-data; boundary=zzz');
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^Invalid multipart body: /);
  });

  it('refuses a file over the per-file limit with 413 and too many files with 400', async () => {
    const big = await formBody([['title', 't'], ['files', new Blob([Buffer.alloc(1025)], { type: 'audio/wav' }), 'big.wav']]);
    expect(await invoke('POST /upload', big.bytes, big.contentType)).toEqual({
      status: 413,
      body: { status: 413, message: 'File "big.wav" exceeds the 1 KB limit per file' },
    });
    const many = await formBody([
      ['title', 't'],
      ...[1, 2, 3].map((i): [string, Blob, string] => ['files', new Blob(['a'], { type: 'audio/wav' }), `${i}.wav`]),
    ]);
    expect(await invoke('POST /upload', many.bytes, many.contentType)).toEqual({
      status: 400,
      body: { status: 400, message: 'Too many files: at most 2 per request' },
    });
  });

  it('validates the parsed fields with the route schema, `path: issue`', async () => {
    const { bytes, contentType } = await formBody([['files', new Blob(['a']), 'a.wav']]);
    const res = await invoke('POST /upload', bytes, contentType);
    expect(res).toEqual({ status: 400, body: { status: 400, message: 'title: Required' } });
  });

  it('leaves JSON routes as they were', async () => {
    expect(await invoke('POST /json', '{"n":2}', 'application/json')).toEqual({ status: 201, body: { n: 2 } });
  });
});

describe('a multipart route without the parser', () => {
  it('fails when the handler is built, not on the first upload', () => {
    expect(() => domainHandler(routes, { upload: () => ({}), json: () => ({}) } as never)).toThrow(
      'Route upload takes multipart bodies: pass the multipart parser to domainHandler',
    );
  });
});
