import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { appendFile, mkdir, readdir, readFile, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { config } from '../shared/platform/config.ts';
import { keyFileName, storedFileHeaders } from '../shared/platform/http/download.ts';
import { setLocalObjectStore, signedPutHeaders, type ObjectStore, type ObjectUpload, type SignedPut, type StoredObject, type UploadCheckpoint } from '../shared/platform/aws/object-store.ts';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './private-files.ts';

/*
 * The local stand-in for the recordings bucket: one file per object under
 * `DATA_DIR/objects/` (its content type in a `.type` file beside it), and signed URLs the
 * local server answers itself (`GET /local-objects/<key>?expires=<epoch ms>[&name=…]&signature=…`,
 * an HMAC-SHA256 over the key, the expiry and the download name with a key kept in
 * `DATA_DIR/object-url.key`). They are answered on the API's own origin, so as S3's
 * presigned GETs are (shared/platform/aws/object-store.ts), and more: as an attachment
 * under the download name, with `nosniff` and a sandbox CSP (shared/platform/http/download.ts).
 * Installed by the local server (injected into shared/platform/aws/object-store.ts, never
 * bundled), so it is the same adapter the domain code sees in AWS.
 */

export const LOCAL_OBJECTS_PATH = '/local-objects/';
/** A key as the domains build them: path segments of safe characters, no `.`/`..` segments. */
const SAFE_KEY = /^[\w-][\w.-]*(?:\/[\w-][\w.-]*)*$/;

function signingKey(dataDir: string): Buffer {
  const file = join(dataDir, 'object-url.key');
  try {
    return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const key = randomBytes(32);
  try {
    writeFileSync(file, key.toString('base64'), { mode: PRIVATE_FILE_MODE, flag: 'wx' });
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  }
}

export class FolderObjectStore implements ObjectStore {
  private readonly root: string;
  private readonly secret: Buffer;

  constructor(
    dataDir: string,
    private readonly baseUrl: string,
  ) {
    this.root = resolve(dataDir, 'objects');
    this.secret = signingKey(dataDir);
  }

  private pathOf(key: string): string {
    if (!SAFE_KEY.test(key) || key.length > 512) throw new Error(`Invalid object key ${JSON.stringify(key.slice(0, 100))}`);
    const path = resolve(this.root, key);
    if (!path.startsWith(this.root + sep)) throw new Error('Object key escapes the object folder');
    return path;
  }

  async put(key: string, body: Buffer, contentType: string): Promise<void> {
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true, mode: PRIVATE_DIR_MODE });
    // Written aside and renamed, so a reader never sees half an object (as S3 never shows one).
    const temporary = `${path}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(temporary, body, { mode: PRIVATE_FILE_MODE });
    await writeFile(`${path}.type`, contentType, { mode: PRIVATE_FILE_MODE });
    await rename(temporary, path);
  }

  /**
   * Appends to a file aside, renamed into place on complete (as S3 shows a multipart object
   * only once completed). Every write is durable, so every write is a checkpoint; resuming
   * cuts the file back to the checkpoint's size.
   */
  async upload(key: string, contentType: string, _options?: unknown, resume?: UploadCheckpoint): Promise<ObjectUpload> {
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true, mode: PRIVATE_DIR_MODE });
    const uploadId = resume?.upload_id ?? randomBytes(4).toString('hex');
    if (!/^[0-9a-f]{8}$/.test(uploadId)) throw new Error('Invalid upload ID');
    const temporary = `${path}.${uploadId}.part`;
    let size = 0;
    if (resume) {
      // Throws ENOENT when the upload is gone (completed or aborted), as S3's NoSuchUpload.
      if ((await stat(temporary)).size < resume.size) throw new Error('The upload is shorter than its checkpoint');
      await truncate(temporary, resume.size);
      size = resume.size;
    } else await writeFile(temporary, '', { mode: PRIVATE_FILE_MODE });
    return {
      checkpoint: () => ({ upload_id: uploadId, parts: [], size }),
      async write(chunk) {
        size += chunk.length;
        await appendFile(temporary, chunk);
      },
      async complete() {
        await writeFile(`${path}.type`, contentType, { mode: PRIVATE_FILE_MODE });
        await rename(temporary, path);
        return size;
      },
      async abort() {
        await rm(temporary, { force: true });
      },
    };
  }

  async get(key: string): Promise<StoredObject | undefined> {
    const path = this.pathOf(key);
    try {
      const [body, contentType] = await Promise.all([readFile(path), readFile(`${path}.type`, 'utf8').catch(() => 'application/octet-stream')]);
      return { body, contentType };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    const path = this.pathOf(key);
    await Promise.all([rm(path, { force: true }), rm(`${path}.type`, { force: true })]);
  }

  /** Removes the prefix's folder whole (a local folder has no page limit). */
  async deletePrefix(prefix: string): Promise<{ deleted: number; more: boolean }> {
    const folder = this.pathOf(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix);
    const files = await readdir(folder, { recursive: true }).catch(() => [] as string[]);
    await rm(folder, { recursive: true, force: true });
    return { deleted: files.filter((name) => !name.endsWith('.type')).length, more: false };
  }

  private signature(key: string, expiresAt: number, downloadName: string): Buffer {
    return createHmac('sha256', this.secret).update(`${key}\n${expiresAt}\n${downloadName}`).digest();
  }

  async signedUrl(key: string, expiresAt: number, options: { downloadName?: string } = {}): Promise<string> {
    this.pathOf(key);
    const name = options.downloadName ?? '';
    const signature = this.signature(key, expiresAt, name).toString('base64url');
    const query = new URLSearchParams({ expires: String(expiresAt), ...(name ? { name } : {}), signature });
    return `${this.baseUrl}${LOCAL_OBJECTS_PATH}${key}?${query.toString()}`;
  }

  private putSignature(key: string, upload: SignedPut): Buffer {
    const signed = `PUT\n${key}\n${upload.expiresAt}\n${upload.contentLength}\n${upload.contentType}\n${upload.retentionDays ?? ''}\n${upload.checksumSha256 ?? ''}`;
    return createHmac('sha256', this.secret).update(signed).digest();
  }

  /** A presigned PUT as S3 signs it: the key, the expiry, the exact length and the content type are signed. */
  async signedPutUrl(key: string, upload: SignedPut): Promise<{ url: string; headers: Record<string, string> }> {
    this.pathOf(key);
    const signature = this.putSignature(key, upload).toString('base64url');
    const query = new URLSearchParams({
      expires: String(upload.expiresAt),
      length: String(upload.contentLength),
      type: upload.contentType,
      ...(upload.retentionDays ? { retention: String(upload.retentionDays) } : {}),
      ...(upload.checksumSha256 ? { sha256: upload.checksumSha256 } : {}),
      signature,
    });
    return { url: `${this.baseUrl}${LOCAL_OBJECTS_PATH}${key}?${query.toString()}`, headers: signedPutHeaders(upload) };
  }

  /**
   * Answers a presigned PUT: 403 unless the signature matches the key, expiry, length and
   * type, the request's content-type is the signed one, and it has not expired; a body of
   * another length than signed is refused (400) and nothing is stored, as S3 does.
   */
  async receive(path: string, query: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const key = path.slice(LOCAL_OBJECTS_PATH.length);
    const params = new URLSearchParams(query);
    const upload: SignedPut = {
      expiresAt: Number(params.get('expires')),
      contentLength: Number(params.get('length')),
      contentType: params.get('type') ?? '',
      ...(params.get('retention') ? { retentionDays: Number(params.get('retention')) } : {}),
      ...(params.get('sha256') ? { checksumSha256: params.get('sha256')! } : {}),
    };
    const given = Buffer.from(params.get('signature') ?? '', 'base64url');
    const refuse = (status: number, message: string) => {
      req.resume();
      res.writeHead(status, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify({ status, message }));
    };
    if (!SAFE_KEY.test(key) || !Number.isSafeInteger(upload.expiresAt) || !Number.isSafeInteger(upload.contentLength)) return void refuse(403, 'Invalid signed URL');
    const expected = this.putSignature(key, upload);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return void refuse(403, 'Signature does not match');
    if (Date.now() >= upload.expiresAt) return void refuse(403, 'Signed URL expired');
    if ((req.headers['content-type'] ?? '') !== upload.contentType) return void refuse(403, 'Signature does not match (content-type)');
    // Signed headers, as S3 checks them: the tagging and the checksum must be sent as signed.
    for (const [name, value] of Object.entries(signedPutHeaders(upload))) {
      if (name.startsWith('x-amz-') && req.headers[name] !== value) return void refuse(403, `Signature does not match (${name})`);
    }
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) !== upload.contentLength) return void refuse(403, 'Signature does not match (content-length)');
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLong = false;
    await new Promise<void>((resolveBody, reject) => {
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > upload.contentLength) {
          tooLong = true;
          return;
        }
        chunks.push(chunk);
      });
      req.on('end', () => resolveBody());
      req.on('error', reject);
    });
    if (tooLong || size !== upload.contentLength) return void refuse(400, 'The body is not the signed content-length');
    const body = Buffer.concat(chunks);
    if (upload.checksumSha256 && createHash('sha256').update(body).digest('base64') !== upload.checksumSha256) {
      return void refuse(400, 'The body does not match the signed x-amz-checksum-sha256 (BadDigest)');
    }
    await this.put(key, body, upload.contentType);
    res.writeHead(200, { 'content-length': '0' }).end();
  }

  /**
   * Answers a signed URL's GET: 403 unless the signature matches and has not expired, 404
   * without the object; the object as an attachment under its signed download name (else
   * its key's last segment), never rendered on this origin.
   */
  async serve(path: string, query: string, res: ServerResponse): Promise<void> {
    const key = path.slice(LOCAL_OBJECTS_PATH.length);
    const params = new URLSearchParams(query);
    const expires = Number(params.get('expires'));
    const name = params.get('name') ?? '';
    const given = Buffer.from(params.get('signature') ?? '', 'base64url');
    const refuse = (status: number, message: string) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ status, message }));
    if (!SAFE_KEY.test(key) || !Number.isSafeInteger(expires)) return void refuse(403, 'Invalid signed URL');
    const expected = this.signature(key, expires, name);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return void refuse(403, 'Signature does not match');
    if (Date.now() >= expires) return void refuse(403, 'Signed URL expired');
    const object = await this.get(key);
    if (!object) return void refuse(404, 'Object not found');
    res.writeHead(200, {
      'content-type': object.contentType,
      'content-length': String(object.body.length),
      'cache-control': 'private, no-store',
      ...storedFileHeaders(name || keyFileName(key)),
    });
    res.end(object.body);
  }
}

let installed: FolderObjectStore | undefined;

function trimSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url[end - 1] === '/') end--;
  return url.slice(0, end);
}

/** Installs the folder store as the platform's object store, its URLs on `baseUrl` (the local server's). */
export function installLocalObjectStore(baseUrl: string): FolderObjectStore {
  installed = new FolderObjectStore(config.DATA_DIR, trimSlashes(config.PUBLIC_BASE_URL ?? baseUrl));
  setLocalObjectStore(installed);
  return installed;
}

export const localObjectStore = (): FolderObjectStore | undefined => installed;
