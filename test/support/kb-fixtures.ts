import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { constants, crc32, createDeflate, createDeflateRaw, deflateRawSync } from 'node:zlib';
import JSZip from 'jszip';
import { afterAll } from 'vitest';

/**
 * Small documents built in the tests (no binary fixtures checked in) and a website on
 * 127.0.0.1 for crawls: knowledge-base extraction and crawling read real bytes.
 */

/** A PDF of these objects (numbered from 1, the first the catalog), with its cross-reference table. */
function pdfFromObjects(objects: readonly (string | Buffer)[]): Buffer {
  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n', 'latin1')];
  let length = parts[0]!.length;
  const offsets: number[] = [];
  objects.forEach((object, i) => {
    offsets.push(length);
    const part = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`, 'latin1'), typeof object === 'string' ? Buffer.from(object, 'latin1') : object, Buffer.from('\nendobj\n', 'latin1')]);
    parts.push(part);
    length += part.length;
  });
  const xref = `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  parts.push(Buffer.from(`${xref}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`, 'latin1'));
  return Buffer.concat(parts);
}

const HELVETICA = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>';
const stream = (dictionary: string, bytes: Buffer) =>
  Buffer.concat([Buffer.from(`<< ${dictionary} /Length ${bytes.length} >>\nstream\n`, 'latin1'), bytes, Buffer.from('\nendstream', 'latin1')]);

/** A one-page PDF whose page shows `lines` (Helvetica, one text object a line). */
export function pdfOf(lines: readonly string[]): Buffer {
  const escape = (text: string) => text.replace(/[\\()]/g, (c) => `\\${c}`);
  const content = `BT /F1 12 Tf 72 720 Td 14 TL ${lines.map((line) => `(${escape(line)}) Tj T*`).join(' ')} ET`;
  return pdfWithContent(Buffer.from(content, 'latin1'));
}

/** A one-page PDF whose page's content stream is `content`, compressed (FlateDecode, zlib format) when `deflated`. */
export function pdfWithContent(content: Buffer, { deflated = false } = {}): Buffer {
  return pdfFromObjects([
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    stream(deflated ? '/Filter /FlateDecode' : '', content),
    HELVETICA,
  ]);
}

/** A PDF of `pages` pages, each showing one line (one content stream they all share): cheap to build, slow to read. */
export function pdfOfPages(pages: number): Buffer {
  const firstPage = 5;
  return pdfFromObjects([
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${Array.from({ length: pages }, (_, i) => `${firstPage + i} 0 R`).join(' ')}] /Count ${pages} >>`,
    stream('', Buffer.from('BT /F1 12 Tf 72 720 Td (A page of many.) Tj ET', 'latin1')),
    HELVETICA,
    ...Array.from({ length: pages }, () => '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources << /Font << /F1 4 0 R >> >> >>'),
  ]);
}

/**
 * `unit` repeated `times` times, deflated as one raw deflate stream (zlib's format with
 * `zlib: true`) without ever holding or compressing the whole: the unit is compressed once,
 * and after a full flush (which resets the compressor) the same unit always gives the same
 * bytes, repeated. Hundreds of megabytes cost a few hundred kilobytes and milliseconds.
 * The zlib format's trailing checksum is the first two units' (PDF.js does not check it).
 */
export async function repeatedDeflate(unit: Buffer, times: number, { zlib = false } = {}): Promise<Buffer> {
  const deflate = zlib ? createDeflate() : createDeflateRaw();
  const out: Buffer[] = [];
  deflate.on('data', (chunk: Buffer) => out.push(chunk));
  const take = () => Buffer.concat(out.splice(0));
  const segment = async () => {
    deflate.write(unit);
    await new Promise<void>((resolve) => deflate.flush(constants.Z_FULL_FLUSH, () => resolve()));
    return take();
  };
  const first = await segment();
  const next = await segment();
  const ended = new Promise((resolve) => deflate.on('end', resolve));
  deflate.end();
  await ended;
  return Buffer.concat([first, ...Array<Buffer>(Math.max(0, times - 2)).fill(next), times > 1 ? next : Buffer.alloc(0), take()]);
}

/** An entry of a zip written by zipOf: its bytes as stored, how (0 stored, 8 deflated), and what its headers declare. */
export interface ZipPart {
  name: string;
  data: Buffer;
  method: 0 | 8;
  /** The uncompressed size the headers declare (the truth, or not). */
  size: number;
  crc: number;
}

/** A part deflated from its whole content, declaring its true size. */
export const deflatedPart = (name: string, content: string | Buffer): ZipPart => {
  const bytes = Buffer.from(content);
  return { name, data: deflateRawSync(bytes), method: 8, size: bytes.length, crc: crc32(bytes) };
};

/** A zip of these parts, written by hand so that its headers may say what a test wants them to. */
export function zipOf(parts: readonly ZipPart[]): Buffer {
  const local: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const part of parts) {
    const name = Buffer.from(part.name, 'utf8');
    const header = Buffer.alloc(30);
    header.writeUInt32LE(0x04034b50, 0);
    header.writeUInt16LE(20, 4);
    header.writeUInt16LE(0x0800, 6); // UTF-8 names
    header.writeUInt16LE(part.method, 8);
    header.writeUInt32LE(part.crc >>> 0, 14);
    header.writeUInt32LE(part.data.length, 18);
    header.writeUInt32LE(part.size, 22);
    header.writeUInt16LE(name.length, 26);
    local.push(header, name, part.data);
    const entry = Buffer.alloc(46);
    entry.writeUInt32LE(0x02014b50, 0);
    entry.writeUInt16LE(20, 4);
    entry.writeUInt16LE(20, 6);
    entry.writeUInt16LE(0x0800, 8);
    entry.writeUInt16LE(part.method, 10);
    entry.writeUInt32LE(part.crc >>> 0, 16);
    entry.writeUInt32LE(part.data.length, 20);
    entry.writeUInt32LE(part.size, 24);
    entry.writeUInt16LE(name.length, 28);
    entry.writeUInt32LE(offset, 42);
    central.push(entry, name);
    offset += header.length + name.length + part.data.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(parts.length, 8);
  end.writeUInt16LE(parts.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...local, directory, end]);
}

const CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>';
const PACKAGE_RELS =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>';
const xmlEscape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const documentXml = (body: string) =>
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`;
const paragraphsXml = (paragraphs: readonly string[]) => paragraphs.map((text) => `<w:p><w:r><w:t xml:space="preserve">${xmlEscape(text)}</w:t></w:r></w:p>`).join('');

/**
 * A DOCX whose word/document.xml is `mb` megabytes of one repeated paragraph (a zip bomb:
 * a few hundred kilobytes for hundreds of megabytes), its headers declaring
 * `declaredBytes` (its true size unless told), and `extra` parts beside it.
 */
export async function bombDocx(mb: number, { declaredBytes, extra = [] }: { declaredBytes?: number; extra?: ZipPart[] } = {}): Promise<Buffer> {
  const unit = Buffer.from(paragraphsXml(['Again.']).repeat(Math.ceil((1024 * 1024) / 52))).subarray(0, 1024 * 1024);
  let crc = 0;
  for (let i = 0; i < mb; i++) crc = crc32(unit, crc);
  const document: ZipPart = { name: 'word/document.xml', data: await repeatedDeflate(unit, mb), method: 8, size: declaredBytes ?? mb * 1024 * 1024, crc };
  return zipOf([deflatedPart('[Content_Types].xml', CONTENT_TYPES), deflatedPart('_rels/.rels', PACKAGE_RELS), document, ...extra]);
}

/** The parts of a minimal DOCX with one paragraph per entry (for zipOf, beside parts of a test's own). */
export const docxParts = (paragraphs: readonly string[]): ZipPart[] => [
  deflatedPart('[Content_Types].xml', CONTENT_TYPES),
  deflatedPart('_rels/.rels', PACKAGE_RELS),
  deflatedPart('word/document.xml', documentXml(paragraphsXml(paragraphs))),
];

/** A minimal DOCX (Office Open XML) with one paragraph per entry. */
export async function docxOf(paragraphs: readonly string[]): Promise<Buffer> {
  const zip = new JSZip();
  zip.file('[Content_Types].xml', CONTENT_TYPES);
  zip.file('_rels/.rels', PACKAGE_RELS);
  zip.file('word/document.xml', documentXml(paragraphsXml(paragraphs)));
  return zip.generateAsync({ type: 'nodebuffer' });
}

export interface Site {
  url: string;
  /** Replaces (or adds) a page: path → [content type, body]. */
  pages: Map<string, [string, string]>;
  /** Every path asked for, in order (robots.txt included). */
  hits: string[];
  close(): Promise<void>;
}

/** A website on 127.0.0.1; `pages` can change between crawls (refresh tests). Closed after the file. */
export async function startSite(pages: Record<string, [string, string]>): Promise<Site> {
  const map = new Map(Object.entries(pages));
  const hits: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.push(path);
    const page = map.get(path);
    if (!page) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (page[0] === 'redirect') {
      res.writeHead(302, { location: page[1] }).end();
      return;
    }
    res.writeHead(200, { 'content-type': page[0] }).end(page[1]);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  afterAll(close);
  return { url, pages: map, hits, close };
}

export const html = (title: string, body: string) => `<!doctype html><html><head><title>${title}</title><style>p{}</style></head><body><nav>Menu Home</nav>${body}<script>var x = 1;</script></body></html>`;
