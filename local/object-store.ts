import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { appendFile, mkdir, readFile, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { ServerResponse } from 'node:http';
import { config } from '../shared/platform/config.ts';
import { setLocalObjectStore, type ObjectStore, type ObjectUpload, type StoredObject, type UploadCheckpoint } from '../shared/platform/aws/object-store.ts';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './private-files.ts';

/*
 * The local stand-in for the recordings bucket: one file per object under
 * `DATA_DIR/objects/` (its content type in a `.type` file beside it), and signed URLs the
 * local server answers itself (`GET /local-objects/<key>?expires=<epoch ms>&signature=…`,
 * an HMAC-SHA256 over the key and the expiry with a key kept in `DATA_DIR/object-url.key`).
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

  private signature(key: string, expiresAt: number): Buffer {
    return createHmac('sha256', this.secret).update(`${key}\n${expiresAt}`).digest();
  }

  async signedUrl(key: string, expiresAt: number): Promise<string> {
    this.pathOf(key);
    const signature = this.signature(key, expiresAt).toString('base64url');
    return `${this.baseUrl}${LOCAL_OBJECTS_PATH}${key}?expires=${expiresAt}&signature=${signature}`;
  }

  /** Answers a signed URL's GET: 403 unless the signature matches and has not expired, 404 without the object. */
  async serve(path: string, query: string, res: ServerResponse): Promise<void> {
    const key = path.slice(LOCAL_OBJECTS_PATH.length);
    const params = new URLSearchParams(query);
    const expires = Number(params.get('expires'));
    const given = Buffer.from(params.get('signature') ?? '', 'base64url');
    const refuse = (status: number, message: string) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ status, message }));
    if (!SAFE_KEY.test(key) || !Number.isSafeInteger(expires)) return void refuse(403, 'Invalid signed URL');
    const expected = this.signature(key, expires);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return void refuse(403, 'Signature does not match');
    if (Date.now() >= expires) return void refuse(403, 'Signed URL expired');
    const object = await this.get(key);
    if (!object) return void refuse(404, 'Object not found');
    res.writeHead(200, { 'content-type': object.contentType, 'content-length': String(object.body.length), 'cache-control': 'private, no-store' });
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
