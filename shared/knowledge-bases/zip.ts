import type { Entry, ZipFile } from 'yauzl';

/*
 * Entries of an uploaded zip container (a DOCX), read within limits, so a small file that
 * expands to hundreds of megabytes (a zip bomb) is refused before it costs memory. yauzl
 * reads the central directory and each entry's local header strictly (docs/architecture.md,
 * Libraries); the limits are checked here, in two places:
 *
 * 1. on the central directory, before anything is inflated: the number of entries, the
 *    declared uncompressed size of the entries wanted (in all), and each one's ratio of
 *    declared uncompressed to compressed size;
 * 2. while inflating, on the bytes that actually come out, since the declared sizes are the
 *    file's word: an entry may not give more than it declared (the inflating stops at the
 *    first chunk past it), nor fewer, and the wanted entries together not more than the
 *    limit.
 *
 * Entries not wanted are never inflated. Runs where the parser runs (in the extraction
 * worker, shared/knowledge-bases/extract-worker.ts), not at a cold start.
 */

export interface ZipLimits {
  /** Entries the central directory may list, wanted or not. */
  maxEntries: number;
  /** Bytes the wanted entries may expand to in all, declared and actual. */
  maxExpandedBytes: number;
  /** Uncompressed bytes per compressed byte a wanted entry may declare... */
  maxRatio: number;
  /** ...once it expands to more than this (small entries of repeated markup compress well and cost nothing). */
  ratioFloorBytes: number;
}

/** The container breaks a limit or is malformed; the message says which, for the user. */
class ZipRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ZipRefused';
  }
}

const STORED = 0;
const DEFLATED = 8;

const formatMb = (bytes: number) => `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB`;

/** The contents of the entries `wanted` selects, by name, read within `limits`; throws ZipRefused. */
export async function readZipEntries(data: Buffer, limits: ZipLimits, wanted: (name: string) => boolean): Promise<Map<string, Buffer>> {
  // The module's default export: a split bundle's chunk of a CommonJS package has no other (lib/bundling.ts).
  const { default: yauzl } = await import('yauzl');
  let zip: ZipFile;
  try {
    // Sizes are checked below as the bytes come (with a message of ours); yauzl's own check would stop the same entries.
    zip = await yauzl.fromBufferPromise(data, { lazyEntries: true, autoClose: false, validateEntrySizes: false });
  } catch (error) {
    throw new ZipRefused(`the file is not a readable zip container (${(error as Error).message})`);
  }
  try {
    if (zip.entryCount > limits.maxEntries) throw new ZipRefused(`the file holds more than ${limits.maxEntries} entries`);
    const entries: Entry[] = [];
    let declared = 0;
    try {
      for await (const entry of zip.eachEntry()) {
        const name = entry.fileName;
        if (name.endsWith('/') || !wanted(name)) continue;
        if (entries.some((seen) => seen.fileName === name)) throw new ZipRefused(`the file holds ${name} twice`);
        if (entry.isEncrypted()) throw new ZipRefused(`${name} is encrypted`);
        if (entry.compressionMethod !== STORED && entry.compressionMethod !== DEFLATED) {
          throw new ZipRefused(`${name} uses a compression method Parley does not read (${entry.compressionMethod})`);
        }
        declared += entry.uncompressedSize;
        if (declared > limits.maxExpandedBytes) throw expandsTooMuch(limits);
        if (entry.uncompressedSize > limits.ratioFloorBytes && entry.uncompressedSize > limits.maxRatio * entry.compressedSize) {
          throw new ZipRefused(`${name} expands more than ${limits.maxRatio} times its compressed size`);
        }
        entries.push(entry);
      }
    } catch (error) {
      if (error instanceof ZipRefused) throw error;
      throw new ZipRefused(`the file's zip directory is damaged (${(error as Error).message})`);
    }
    const contents = new Map<string, Buffer>();
    let expanded = 0;
    for (const entry of entries) {
      const chunks: Buffer[] = [];
      let bytes = 0;
      await new Promise<void>((resolve, reject) => {
        zip.openReadStream(entry, (error, stream) => {
          if (error) {
            reject(new ZipRefused(`${entry.fileName} could not be read (${error.message})`));
            return;
          }
          const refuse = (refusal: ZipRefused) => {
            stream.removeAllListeners('data');
            stream.destroy();
            reject(refusal);
          };
          stream.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
            expanded += chunk.length;
            if (bytes > entry.uncompressedSize) refuse(new ZipRefused(`${entry.fileName} expands beyond the ${entry.uncompressedSize} bytes the file declares for it`));
            else if (expanded > limits.maxExpandedBytes) refuse(expandsTooMuch(limits));
            else chunks.push(chunk);
          });
          stream.on('error', (streamError: Error) => reject(new ZipRefused(`${entry.fileName} could not be read (${streamError.message})`)));
          stream.on('end', () => {
            if (bytes !== entry.uncompressedSize) reject(new ZipRefused(`${entry.fileName} expands to ${bytes} bytes, not the ${entry.uncompressedSize} the file declares for it`));
            else resolve();
          });
        });
      });
      contents.set(entry.fileName, Buffer.concat(chunks, bytes));
    }
    return contents;
  } finally {
    zip.close();
  }
}

const expandsTooMuch = (limits: ZipLimits) => new ZipRefused(`the file's contents expand beyond the ${formatMb(limits.maxExpandedBytes)} limit`);
