import type { ZipLimits } from './zip.ts';
import type { ParsedKind } from './extract.ts';
import { htmlText } from './html-text.ts';

/*
 * The parsers: text out of a document's bytes, by its kind. They run in the extraction
 * worker (extract-worker.ts, started by extract.ts's extractText with its memory and time
 * caps) and are built into its bundle alone, never into a function's; the crawler calls
 * htmlText in its own process, on pages it has already cut to 2 MB (crawl.ts). Each library
 * is loaded on first use.
 */

const MB = 1024 * 1024;

/**
 * What a DOCX (a zip of XML parts) may hold, checked before mammoth sees it
 * (shared/knowledge-bases/zip.ts; docs/security.md, "Input that costs time"): 10,000 entries, its
 * XML parts expanding to 32 MB in all, and none of them over 1 MB expanding more than 100
 * times its compressed size. Word's own files compress about 5 to 20 times.
 */
export const DOCX_LIMITS: ZipLimits = { maxEntries: 10_000, maxExpandedBytes: 32 * MB, maxRatio: 100, ratioFloorBytes: MB };

/**
 * The parts of a DOCX that hold its text or say how to read it: the XML parts and their
 * relationships. Images, fonts and embedded objects are never inflated: mammoth's raw text
 * does not read them.
 */
const isTextPart = (name: string) => /\.(xml|rels)$/i.test(name);

/** The document's text. Throws with a message for the user when the file cannot be read. */
export async function documentText(kind: ParsedKind, data: Buffer): Promise<string> {
  switch (kind) {
    case 'pdf':
      return pdfText(data);
    case 'docx':
      return docxText(data);
    case 'html':
      return (await htmlText(data.toString('utf8'))).text;
    case 'csv':
      return csvText(data.toString('utf8'));
  }
}

async function pdfText(data: Buffer): Promise<string> {
  const { extractText, getDocumentProxy } = await import('unpdf');
  const document = await getDocumentProxy(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  try {
    const { text } = await extractText(document, { mergePages: false });
    return (text as string[]).map((page) => page.trim()).join('\n\n').trim();
  } finally {
    // The worker reads the next file too: the document's pages and fonts go now.
    await document.destroy();
  }
}

/**
 * The XML parts are read within DOCX_LIMITS and handed to mammoth as a new, uncompressed
 * zip of those parts alone: mammoth (through JSZip) never inflates a byte of the upload, so
 * no difference between how yauzl and JSZip read a crafted zip can get past the limits.
 */
async function docxText(data: Buffer): Promise<string> {
  const { readZipEntries } = await import('./zip.ts');
  const parts = await readZipEntries(data, DOCX_LIMITS, isTextPart);
  const { default: JSZip } = await import('jszip');
  const zip = new JSZip();
  for (const [name, bytes] of parts) zip.file(name, bytes);
  const buffer = await zip.generateAsync({ type: 'nodebuffer', compression: 'STORE' });
  parts.clear();
  const mammoth = await import('mammoth');
  const { value } = await (mammoth.default ?? mammoth).extractRawText({ buffer });
  return value.trim();
}

/** A CSV as one paragraph per row, `header: value` per cell, so each row reads whole in a chunk. */
async function csvText(text: string): Promise<string> {
  const { parseCsvRecords } = await import('../platform/text/csv.ts');
  const { header, records } = parseCsvRecords(text, { maxRows: 200_000, field: 'knowledge_base_files' });
  return records
    .map(({ cells }) =>
      cells
        .map((cell, i) => (cell.trim() ? `${header[i]?.trim() || `column ${i + 1}`}: ${cell.trim()}` : ''))
        .filter(Boolean)
        .join('\n'),
    )
    .filter(Boolean)
    .join('\n\n');
}
