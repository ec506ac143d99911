import type * as S3 from '@aws-sdk/client-s3';
import type { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { config } from '../config.ts';
import { attachmentDisposition, keyFileName } from '../http/download.ts';
import { awsClientOptions } from './client-options.ts';
import { tagAwsClient } from './unavailable.ts';

/**
 * Where large artifacts live (call recordings, their unscrubbed originals): S3 in AWS (the
 * bucket CDK creates, `RECORDINGS_BUCKET`, encrypted with the stack's KMS key), a folder
 * under DATA_DIR locally (local/object-store.ts, injected with setLocalObjectStore, never
 * bundled). Keys are built by the domain's store module; this layer only moves bytes.
 */
export interface StoredObject {
  body: Buffer;
  contentType: string;
}

/**
 * Retention is the bucket's lifecycle, by tag: an object tagged `retention_days=<n>` expires
 * n days after it was written. S3 allows 1,000 lifecycle rules, so not every day from 1 to
 * 3,650 has one: every day up to 31, every week up to a year, every 30 days after. An
 * object is tagged with the largest rule at or below what was asked (deleted no later than
 * asked, at most 29 days early beyond a year); CDK creates one rule per value.
 */
export const RETENTION_RULE_DAYS: readonly number[] = [
  ...Array.from({ length: 31 }, (_, i) => i + 1),
  ...Array.from({ length: 48 }, (_, i) => 35 + i * 7),
  ...Array.from({ length: 110 }, (_, i) => 390 + i * 30),
].filter((days) => days <= 3650);

function retentionRuleDays(days: number): number {
  let chosen = RETENTION_RULE_DAYS[0]!;
  for (const rule of RETENTION_RULE_DAYS) if (rule <= days) chosen = rule;
  return chosen;
}

/** The object tag set that puts an object under the retention rule for `days` (S3's URL-encoded Tagging). */
export const retentionTagging = (days: number): string => `retention_days=${retentionRuleDays(days)}`;

export interface PutOptions {
  /** Delete after this many days (the bucket's lifecycle; the local stand-in keeps objects). */
  retentionDays?: number;
}

/**
 * An object written piece by piece (exports): bytes are appended with `write`, the object
 * appears whole on `complete` (never half of it), `abort` drops what was written. In S3 a
 * multipart upload of parts of at least UPLOAD_PART_BYTES (S3's 5 MiB floor for every part
 * but the last), so a writer holds at most about one part in memory.
 */
export interface ObjectUpload {
  write(chunk: Buffer): Promise<void>;
  /** Finishes the object; answers its size in bytes. */
  complete(): Promise<number>;
  abort(): Promise<void>;
  /**
   * The upload as durably written so far, when nothing written is held only in memory (S3:
   * right after a part went up; the local file: after every write), else undefined. Kept by
   * the caller, it lets another process go on with the same upload (ObjectStore.upload's
   * `resume`), from exactly these bytes.
   */
  checkpoint(): UploadCheckpoint | undefined;
}

/** Where a piece-by-piece upload stands (JSON, kept on the caller's record). */
export interface UploadCheckpoint {
  /** S3's UploadId (locally the file written aside). */
  upload_id: string;
  /** The parts S3 holds (none locally). */
  parts: { ETag: string; PartNumber: number }[];
  /** Bytes durably written. */
  size: number;
}

/** S3's smallest part (except the last). */
const UPLOAD_PART_BYTES = 5 * 1024 * 1024;

export interface ObjectStore {
  /**
   * Starts an object written in pieces (see ObjectUpload), or with `resume` goes on with one
   * started earlier (perhaps by a process that died) from that checkpoint: bytes written
   * after it are dropped. Throws when that upload no longer exists.
   */
  upload(key: string, contentType: string, options?: PutOptions, resume?: UploadCheckpoint): Promise<ObjectUpload>;
  put(key: string, body: Buffer, contentType: string, options?: PutOptions): Promise<void>;
  /** The object, or undefined when there is none. */
  get(key: string): Promise<StoredObject | undefined>;
  /** Removes the object; an absent one is fine. */
  delete(key: string): Promise<void>;
  /**
   * Removes up to `limit` objects whose keys start with `prefix` (a folder's worth: it ends
   * with `/`); `more` when some may remain (the workspace purge calls it until none do).
   */
  deletePrefix(prefix: string, limit?: number): Promise<{ deleted: number; more: boolean }>;
  /**
   * A URL anyone holding it may GET the object with until `expiresAt` (epoch ms): S3's
   * presigned URL (SigV4 query signing), locally an HMAC-signed URL the local server checks.
   * Either answers the object as an attachment named `downloadName` (else its key's last segment).
   */
  signedUrl(key: string, expiresAt: number, options?: { downloadName?: string }): Promise<string>;
  /**
   * A URL anyone holding it may PUT exactly one object to until `expiresAt` (presigned
   * uploads past API Gateway's request limit): the content type and the exact length are
   * part of the signature, so a body of another size or type is refused by the store (S3:
   * 403 SignatureDoesNotMatch; locally the same check). `headers` are the ones the PUT must send.
   */
  signedPutUrl(key: string, upload: SignedPut): Promise<{ url: string; headers: Record<string, string> }>;
}

export interface SignedPut {
  contentType: string;
  contentLength: number;
  /** Epoch ms. */
  expiresAt: number;
  /**
   * The object is tagged for the retention rule of this many days (`x-amz-tagging`, a signed
   * header the PUT must send), so an upload never used is deleted by the bucket's lifecycle.
   */
  retentionDays?: number;
  /** The body's SHA-256 (base64), signed: the store refuses a body with another digest (S3: `x-amz-checksum-sha256`). */
  checksumSha256?: string;
}

/** The headers a presigned PUT must send (each is signed). */
export function signedPutHeaders(upload: SignedPut): Record<string, string> {
  return {
    'content-type': upload.contentType,
    'content-length': String(upload.contentLength),
    ...(upload.retentionDays ? { 'x-amz-tagging': retentionTagging(upload.retentionDays) } : {}),
    ...(upload.checksumSha256 ? { 'x-amz-checksum-sha256': upload.checksumSha256 } : {}),
  };
}

/** S3 caps a presigned URL at seven days (SigV4 query signing). */
const MAX_SIGNED_URL_SECONDS = 7 * 86_400;

let s3: Promise<{ client: S3.S3Client; sdk: typeof S3; presign: typeof getSignedUrl }> | undefined;
/** One client per process, loaded on first use so functions that never touch recordings do not load the S3 SDK. */
const s3Client = () =>
  (s3 ??= Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/s3-request-presigner')]).then(([sdk, presigner]) => ({
    client: tagAwsClient(new sdk.S3Client({ region: config.AWS_REGION, ...awsClientOptions() }), 'S3'),
    sdk,
    presign: presigner.getSignedUrl,
  })));

let presigner: Promise<S3.S3Client> | undefined;
/**
 * The client presigned PUTs are signed with. The S3 client's default (`requestChecksumCalculation:
 * WHEN_SUPPORTED`) puts the CRC32 of the empty body it was given (`x-amz-checksum-crc32=AAAAAA==`)
 * into a presigned PutObject URL, and S3 then refuses every real body (BadDigest); this one
 * adds a checksum only when asked (the caller's signed SHA-256).
 */
const presigningClient = () =>
  (presigner ??= s3Client().then(({ sdk }) => tagAwsClient(new sdk.S3Client({ region: config.AWS_REGION, requestChecksumCalculation: 'WHEN_REQUIRED', ...awsClientOptions() }), 'S3')));

const isMissing = (error: unknown) => ['NoSuchKey', 'NotFound'].includes((error as { name?: string }).name ?? '');

/** An S3-compatible store other than AWS's own (tests' fake S3, MinIO): its endpoint, path-style addressing. */
export interface S3StoreOptions {
  /** e.g. `http://127.0.0.1:9000`: a client of its own for this store, path-style, with these credentials. */
  endpoint?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** The multipart upload's part size (default UPLOAD_PART_BYTES; AWS refuses smaller parts but the last). */
  partBytes?: number;
}

export class S3ObjectStore implements ObjectStore {
  private readonly partBytes: number;
  private ownClient?: ReturnType<typeof s3Client>;

  constructor(
    private readonly bucket: string,
    private readonly options: S3StoreOptions = {},
  ) {
    this.partBytes = options.partBytes ?? UPLOAD_PART_BYTES;
  }

  /** The process's S3 client, or this store's own for another endpoint. */
  private client(): ReturnType<typeof s3Client> {
    const { endpoint, credentials } = this.options;
    if (!endpoint) return s3Client();
    return (this.ownClient ??= Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/s3-request-presigner')]).then(([sdk, presigner]) => ({
      client: tagAwsClient(
        new sdk.S3Client({ region: config.AWS_REGION, ...awsClientOptions(), endpoint, forcePathStyle: true, ...(credentials ? { credentials } : {}) }),
        'S3',
      ),
      sdk,
      presign: presigner.getSignedUrl,
    })));
  }

  async put(key: string, body: Buffer, contentType: string, options: PutOptions = {}): Promise<void> {
    const { client, sdk } = await this.client();
    const tagging = options.retentionDays ? retentionTagging(options.retentionDays) : undefined;
    // The bucket's default encryption is the stack's KMS key (aws:kms); named here too so a
    // bucket reconfigured by hand cannot silently store recordings with S3-managed keys.
    await client.send(new sdk.PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType, ServerSideEncryption: 'aws:kms', Tagging: tagging }));
  }

  async upload(key: string, contentType: string, options: PutOptions = {}, resume?: UploadCheckpoint): Promise<ObjectUpload> {
    const { client, sdk } = await this.client();
    const tagging = options.retentionDays ? `retention_days=${retentionRuleDays(options.retentionDays)}` : undefined;
    let uploadId: string;
    if (resume) {
      // Fails (NoSuchUpload) once the upload was aborted (the bucket's rule drops those after a day).
      await client.send(new sdk.ListPartsCommand({ Bucket: this.bucket, Key: key, UploadId: resume.upload_id, MaxParts: 1 }));
      uploadId = resume.upload_id;
    } else {
      const started = await client.send(
        new sdk.CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: contentType, ServerSideEncryption: 'aws:kms', Tagging: tagging }),
      );
      uploadId = started.UploadId!;
    }
    // Parts after the checkpoint's are overwritten by number as the upload goes on again.
    const parts: { ETag: string; PartNumber: number }[] = resume ? [...resume.parts] : [];
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let size = resume?.size ?? 0;
    const flush = async () => {
      if (pendingBytes === 0 && parts.length > 0) return;
      const body = Buffer.concat(pending);
      pending = [];
      pendingBytes = 0;
      const partNumber = parts.length + 1;
      const answer = await client.send(new sdk.UploadPartCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: body }));
      parts.push({ ETag: answer.ETag!, PartNumber: partNumber });
    };
    const bucket = this.bucket;
    const partBytes = this.partBytes;
    const abort = async () => {
      await client.send(new sdk.AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId })).catch(() => undefined);
    };
    return {
      async write(chunk) {
        pending.push(chunk);
        pendingBytes += chunk.length;
        size += chunk.length;
        if (pendingBytes >= partBytes) await flush();
      },
      async complete() {
        try {
          await flush();
          await client.send(
            new sdk.CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } }),
          );
        } catch (error) {
          await abort();
          throw error;
        }
        return size;
      },
      abort,
      checkpoint: () => (pendingBytes === 0 ? { upload_id: uploadId, parts: [...parts], size } : undefined),
    };
  }

  async get(key: string): Promise<StoredObject | undefined> {
    const { client, sdk } = await this.client();
    try {
      const answer = await client.send(new sdk.GetObjectCommand({ Bucket: this.bucket, Key: key }));
      const bytes = await answer.Body!.transformToByteArray();
      return { body: Buffer.from(bytes), contentType: answer.ContentType ?? 'application/octet-stream' };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    const { client, sdk } = await this.client();
    await client.send(new sdk.DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async deletePrefix(prefix: string, limit = 1000): Promise<{ deleted: number; more: boolean }> {
    const { client, sdk } = await this.client();
    const listed = await client.send(new sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, MaxKeys: Math.min(1000, limit) }));
    const objects = (listed.Contents ?? []).flatMap((object) => (object.Key ? [{ Key: object.Key }] : []));
    if (objects.length > 0) {
      const answer = await client.send(new sdk.DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: objects, Quiet: true } }));
      const failed = answer.Errors ?? [];
      if (failed.length > 0) throw new Error(`S3 refused to delete ${failed.length} objects under ${prefix}: ${failed[0]?.Code ?? 'unknown'}`);
    }
    return { deleted: objects.length, more: listed.IsTruncated === true };
  }

  async signedUrl(key: string, expiresAt: number, options: { downloadName?: string } = {}): Promise<string> {
    const { client, sdk, presign } = await this.client();
    const seconds = Math.min(MAX_SIGNED_URL_SECONDS, Math.max(1, Math.ceil((expiresAt - Date.now()) / 1000)));
    // S3 answers a presigned GET with the object's stored type, inline, unless told
    // otherwise: every stored file goes as an attachment under its name (or its key's last
    // segment), as the local stand-in sends it (shared/platform/http/download.ts).
    const command = new sdk.GetObjectCommand({
      Bucket: this.bucket,
      Key: key,
      ResponseContentDisposition: attachmentDisposition(options.downloadName ?? keyFileName(key)),
    });
    return presign(client, command, { expiresIn: seconds });
  }

  async signedPutUrl(key: string, upload: SignedPut): Promise<{ url: string; headers: Record<string, string> }> {
    const { sdk, presign } = await this.client();
    const seconds = Math.min(MAX_SIGNED_URL_SECONDS, Math.max(1, Math.ceil((upload.expiresAt - Date.now()) / 1000)));
    // ContentLength and ContentType are signed headers: S3 refuses a PUT of any other size or
    // type. The tagging and the checksum stay headers too (signed, not hoisted into the query).
    const command = new sdk.PutObjectCommand({
      Bucket: this.bucket,
      Key: key,
      ContentType: upload.contentType,
      ContentLength: upload.contentLength,
      ...(upload.retentionDays ? { Tagging: retentionTagging(upload.retentionDays) } : {}),
      ...(upload.checksumSha256 ? { ChecksumSHA256: upload.checksumSha256 } : {}),
    });
    const url = await presign(await presigningClient(), command, {
      expiresIn: seconds,
      signableHeaders: new Set(['content-type', 'content-length']),
      unhoistableHeaders: new Set(['x-amz-tagging', 'x-amz-checksum-sha256']),
    });
    return { url, headers: signedPutHeaders(upload) };
  }
}

let localStore: ObjectStore | undefined;
let bucketStore: S3ObjectStore | undefined;

/** The local runtime installs its folder-backed stand-in (local/object-store.ts). */
export function setLocalObjectStore(store: ObjectStore): void {
  localStore = store;
}

let knowledgeBaseStore: S3ObjectStore | undefined;

/** The knowledge-base bucket when KNOWLEDGE_BASE_BUCKET is set, else the local stand-in (keys under knowledge-bases/). */
export function knowledgeBaseObjectStore(): ObjectStore {
  const bucket = config.KNOWLEDGE_BASE_BUCKET;
  if (bucket) return (knowledgeBaseStore ??= new S3ObjectStore(bucket));
  if (!localStore) throw new Error('KNOWLEDGE_BASE_BUCKET is not set and no local object store is installed');
  return localStore;
}

/** The recordings bucket when RECORDINGS_BUCKET is set, else the local stand-in. */
export function objectStore(): ObjectStore {
  const bucket = config.RECORDINGS_BUCKET;
  if (bucket) return (bucketStore ??= new S3ObjectStore(bucket));
  if (!localStore) throw new Error('RECORDINGS_BUCKET is not set and no local object store is installed');
  return localStore;
}
