import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small S3 on 127.0.0.1 for tests, path-style (`/<bucket>/<key>`), enough for the real
 * `@aws-sdk/client-s3` adapter (shared/platform/aws/object-store.ts, `S3ObjectStore` with
 * `endpoint`): PutObject, GetObject (and presigned GETs: the signature is not checked),
 * DeleteObject, CreateMultipartUpload, UploadPart, ListParts, CompleteMultipartUpload and
 * AbortMultipartUpload, with S3's XML answers and errors (NoSuchKey, NoSuchUpload,
 * InvalidPart). Part sizes are not checked (AWS wants 5 MiB but the last), so a test can use
 * small parts. Every request is recorded as `{op, key, partNumber?, uploadId?}`.
 *
 *   const s3 = await startFakeS3();          // closed after the file's tests (./fake-s3.ts)
 *   setLocalObjectStore(new S3ObjectStore('bucket', { endpoint: s3.url, credentials: s3.credentials, partBytes: 1024 }));
 */
type S3Op =
  | 'PutObject'
  | 'GetObject'
  | 'DeleteObject'
  | 'CreateMultipartUpload'
  | 'UploadPart'
  | 'ListParts'
  | 'CompleteMultipartUpload'
  | 'AbortMultipartUpload';

interface S3Request {
  op: S3Op;
  bucket: string;
  key: string;
  uploadId?: string;
  partNumber?: number;
}

interface Upload {
  bucket: string;
  key: string;
  contentType: string;
  parts: Map<number, { body: Buffer; etag: string }>;
}

export interface FakeS3 {
  url: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  requests: S3Request[];
  /** Objects by `<bucket>/<key>`. */
  objects: Map<string, { body: Buffer; contentType: string }>;
  /** Multipart uploads in progress, by UploadId. */
  uploads: Map<string, Upload>;
  close(): Promise<void>;
}

const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const etagOf = (body: Buffer) => `"${createHash('md5').update(body).digest('hex')}"`;

/** The payload of an `aws-chunked` body (`<hex size>[;chunk-signature=…]\r\n<bytes>\r\n … 0\r\n<trailers>\r\n\r\n`). */
function decodeAwsChunked(raw: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = parseInt(raw.subarray(at, lineEnd).toString('latin1').split(';')[0]!, 16);
    if (!Number.isFinite(size) || size === 0) break;
    out.push(raw.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(out);
}

export async function startS3Server(): Promise<FakeS3> {
  const requests: S3Request[] = [];
  const objects = new Map<string, { body: Buffer; contentType: string }>();
  const uploads = new Map<string, Upload>();

  const error = (res: ServerResponse, status: number, code: string, message: string) => {
    res.writeHead(status, { 'content-type': 'application/xml' });
    res.end(xml(`<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message><RequestId>fake</RequestId></Error>`));
  };

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const chunked = String(req.headers['content-encoding'] ?? '').includes('aws-chunked') || String(req.headers['x-amz-content-sha256'] ?? '').startsWith('STREAMING-');
    const body = chunked ? decodeAwsChunked(raw) : raw;
    const url = new URL(req.url ?? '/', 'http://fake-s3');
    const [, bucket = '', ...rest] = url.pathname.split('/');
    const key = rest.map(decodeURIComponent).join('/');
    const query = url.searchParams;
    const uploadId = query.get('uploadId') ?? undefined;
    const partNumber = query.has('partNumber') ? Number(query.get('partNumber')) : undefined;
    const method = req.method ?? 'GET';
    const op: S3Op =
      method === 'POST' && query.has('uploads') ? 'CreateMultipartUpload'
      : method === 'POST' && uploadId ? 'CompleteMultipartUpload'
      : method === 'PUT' && uploadId ? 'UploadPart'
      : method === 'PUT' ? 'PutObject'
      : method === 'GET' && uploadId ? 'ListParts'
      : method === 'DELETE' && uploadId ? 'AbortMultipartUpload'
      : method === 'DELETE' ? 'DeleteObject'
      : 'GetObject';
    requests.push({ op, bucket, key, ...(uploadId ? { uploadId } : {}), ...(partNumber !== undefined ? { partNumber } : {}) });
    const upload = uploadId ? uploads.get(uploadId) : undefined;
    if (uploadId && op !== 'CreateMultipartUpload' && (!upload || upload.bucket !== bucket || upload.key !== key)) {
      return error(res, 404, 'NoSuchUpload', 'The specified upload does not exist.');
    }

    switch (op) {
      case 'PutObject': {
        objects.set(`${bucket}/${key}`, { body, contentType: String(req.headers['content-type'] ?? 'binary/octet-stream') });
        res.writeHead(200, { etag: etagOf(body) });
        return res.end();
      }
      case 'GetObject': {
        const object = objects.get(`${bucket}/${key}`);
        if (!object) return error(res, 404, 'NoSuchKey', 'The specified key does not exist.');
        res.writeHead(200, { 'content-type': object.contentType, 'content-length': String(object.body.length), etag: etagOf(object.body) });
        return res.end(method === 'HEAD' ? undefined : object.body);
      }
      case 'DeleteObject':
        objects.delete(`${bucket}/${key}`);
        res.writeHead(204);
        return res.end();
      case 'CreateMultipartUpload': {
        const id = randomBytes(12).toString('hex');
        uploads.set(id, { bucket, key, contentType: String(req.headers['content-type'] ?? 'binary/octet-stream'), parts: new Map() });
        res.writeHead(200, { 'content-type': 'application/xml' });
        return res.end(
          xml(`<InitiateMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${escapeXml(key)}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`),
        );
      }
      case 'UploadPart': {
        if (!partNumber || partNumber < 1 || partNumber > 10_000) return error(res, 400, 'InvalidArgument', 'Part number must be an integer between 1 and 10000');
        const etag = etagOf(body);
        upload!.parts.set(partNumber, { body, etag });
        res.writeHead(200, { etag });
        return res.end();
      }
      case 'ListParts': {
        const parts = [...upload!.parts.entries()].sort(([a], [b]) => a - b);
        const maxParts = Number(query.get('max-parts') ?? 1000);
        const shown = parts.slice(0, maxParts);
        res.writeHead(200, { 'content-type': 'application/xml' });
        return res.end(
          xml(
            `<ListPartsResult><Bucket>${bucket}</Bucket><Key>${escapeXml(key)}</Key><UploadId>${uploadId}</UploadId>` +
              `<MaxParts>${maxParts}</MaxParts><IsTruncated>${parts.length > shown.length}</IsTruncated>` +
              shown.map(([n, part]) => `<Part><PartNumber>${n}</PartNumber><ETag>${part.etag}</ETag><Size>${part.body.length}</Size></Part>`).join('') +
              `</ListPartsResult>`,
          ),
        );
      }
      case 'CompleteMultipartUpload': {
        const text = body.toString('utf8');
        const listed = [...text.matchAll(/<Part>([\s\S]*?)<\/Part>/g)].map((match) => ({
          number: Number(/<PartNumber>(\d+)<\/PartNumber>/.exec(match[1]!)?.[1]),
          etag: /<ETag>([^<]*)<\/ETag>/.exec(match[1]!)?.[1]?.replace(/&quot;/g, '"'),
        }));
        let previous = 0;
        const bodies: Buffer[] = [];
        for (const part of listed) {
          const stored = upload!.parts.get(part.number);
          if (!stored || stored.etag !== part.etag) return error(res, 400, 'InvalidPart', `Part ${part.number} was not uploaded, or its ETag does not match`);
          if (part.number <= previous) return error(res, 400, 'InvalidPartOrder', 'The parts were not listed in ascending order');
          previous = part.number;
          bodies.push(stored.body);
        }
        if (!listed.length) return error(res, 400, 'MalformedXML', 'No parts listed');
        const whole = Buffer.concat(bodies);
        objects.set(`${bucket}/${key}`, { body: whole, contentType: upload!.contentType });
        uploads.delete(uploadId!);
        res.writeHead(200, { 'content-type': 'application/xml' });
        return res.end(
          xml(`<CompleteMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${escapeXml(key)}</Key><ETag>${etagOf(whole)}</ETag></CompleteMultipartUploadResult>`),
        );
      }
      case 'AbortMultipartUpload':
        uploads.delete(uploadId!);
        res.writeHead(204);
        return res.end();
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((failure: unknown) => error(res, 500, 'InternalError', String(failure)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const fake: FakeS3 = {
    url: `http://127.0.0.1:${port}`,
    credentials: { accessKeyId: 'fake', secretAccessKey: 'fake' },
    requests,
    objects,
    uploads,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}
