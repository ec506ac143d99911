import type busboy from 'busboy';
import { badRequest, payloadTooLarge, type ApiError } from '../errors.ts';

/** One uploaded file of a multipart body, held in memory (bodies are capped at 25 MB). */
export interface UploadedFile {
  /** The client's file name without any directory part ('' when the part named none). */
  filename: string;
  /** The part's declared type, lower-cased without parameters ('application/octet-stream' when absent). */
  contentType: string;
  size: number;
  data: Buffer;
}

export interface MultipartLimits {
  maxFileBytes: number;
  maxFiles: number;
}

export const MULTIPART_DEFAULT_LIMITS: MultipartLimits = { maxFileBytes: 10 * 1024 * 1024, maxFiles: 25 };
/** Text fields are names and options, never documents. */
const MAX_FIELDS = 100;
const MAX_FIELD_BYTES = 64 * 1024;

/** What a multipart body becomes before the route's schema validates it. */
export type MultipartBody = Record<string, string | string[] | (string | UploadedFile)[]>;

export function isUploadedFile(value: unknown): value is UploadedFile {
  return (
    typeof value === 'object' &&
    value !== null &&
    Buffer.isBuffer((value as UploadedFile).data) &&
    typeof (value as UploadedFile).filename === 'string' &&
    typeof (value as UploadedFile).contentType === 'string'
  );
}

function sizeText(bytes: number): string {
  const round = (n: number) => Math.round(n * 10) / 10;
  if (bytes >= 1024 * 1024) return `${round(bytes / (1024 * 1024))} MB`;
  return bytes >= 1024 ? `${round(bytes / 1024)} KB` : `${bytes} bytes`;
}

/**
 * Parses a whole `multipart/form-data` body. Text fields become strings (a repeated field
 * an array of them); files are grouped by field name into arrays, always arrays, so a
 * schema reads `files: [...]` whether one file or many was sent. A trailing `[]` on a
 * field name (`files[]`, as some clients send) is dropped. Refusals: not multipart or
 * malformed → 400; a file over `maxFileBytes`, or the body over `maxBodyBytes` → 413;
 * more than `maxFiles` files or oversized text fields → 400.
 */
export async function parseMultipart(
  body: Buffer,
  contentType: string | undefined,
  given: Partial<MultipartLimits> & { maxBodyBytes: number },
): Promise<MultipartBody> {
  const limits = { ...MULTIPART_DEFAULT_LIMITS, ...given };
  if (!contentType || !/^multipart\/form-data\s*(;|$)/i.test(contentType.trim())) {
    throw badRequest(`Expected a multipart/form-data body${contentType ? ` (got ${contentType.split(';')[0]!.trim()})` : ''}`);
  }
  if (body.length > limits.maxBodyBytes) {
    throw payloadTooLarge(`Request body exceeds the ${sizeText(limits.maxBodyBytes)} limit`);
  }
  // Loaded on the first upload, not at the cold start of the functions that take uploads.
  const { default: createParser } = await import('busboy');
  let parser: busboy.Busboy;
  try {
    parser = createParser({
      headers: { 'content-type': contentType },
      // Browsers, undici's FormData and curl send a file name's UTF-8 bytes as they are in
      // `filename="…"`; busboy would read them as latin1 ('été' became 'Ã©tÃ©').
      defParamCharset: 'utf8',
      limits: {
        fileSize: limits.maxFileBytes,
        files: limits.maxFiles,
        fields: MAX_FIELDS,
        fieldSize: MAX_FIELD_BYTES,
        parts: limits.maxFiles + MAX_FIELDS,
      },
    });
  } catch (error) {
    throw badRequest(`Invalid multipart body: ${(error as Error).message}`);
  }

  return new Promise((resolve, reject) => {
    const fields = new Map<string, string[]>();
    const files = new Map<string, UploadedFile[]>();
    let failure: ApiError | undefined;
    const fail = (error: ApiError) => {
      failure ??= error;
    };
    const nameOf = (raw: string) => (raw.endsWith('[]') ? raw.slice(0, -2) : raw);

    parser.on('field', (rawName, value, info) => {
      const name = nameOf(rawName);
      if (info.nameTruncated || info.valueTruncated) {
        fail(badRequest(`${name}: Must be at most ${MAX_FIELD_BYTES} bytes`));
        return;
      }
      fields.set(name, [...(fields.get(name) ?? []), value]);
    });
    parser.on('file', (rawName, stream, info) => {
      const name = nameOf(rawName);
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
      });
      stream.on('limit', () => {
        fail(
          payloadTooLarge(
            `File "${(info.filename ?? name).slice(0, 200)}" exceeds the ${sizeText(limits.maxFileBytes)} limit per file`,
          ),
        );
      });
      stream.on('end', () => {
        const uploaded: UploadedFile = {
          filename: (info.filename ?? '').slice(0, 255),
          contentType: (info.mimeType || 'application/octet-stream').split(';')[0]!.trim().toLowerCase(),
          size,
          data: Buffer.concat(chunks),
        };
        files.set(name, [...(files.get(name) ?? []), uploaded]);
      });
    });
    parser.on('filesLimit', () => fail(badRequest(`Too many files: at most ${limits.maxFiles} per request`)));
    parser.on('fieldsLimit', () => fail(badRequest(`Too many fields: at most ${MAX_FIELDS} per request`)));
    parser.on('partsLimit', () => fail(badRequest('Too many parts in the multipart body')));
    parser.on('error', (error: Error) => reject(failure ?? badRequest(`Invalid multipart body: ${error.message}`)));
    parser.on('close', () => {
      if (failure) {
        reject(failure);
        return;
      }
      const result: MultipartBody = {};
      for (const [name, values] of fields) result[name] = values.length === 1 && !files.has(name) ? values[0]! : values;
      for (const [name, uploaded] of files) result[name] = [...(fields.get(name) ?? []), ...uploaded];
      resolve(result);
    });
    parser.end(body);
  });
}
