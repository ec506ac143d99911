import { parseCsvRecords } from '../platform/csv.ts';
import { badRequest } from '../platform/errors.ts';

/*
 * Text out of an uploaded document, by its kind: PDF (unpdf, PDF.js built for servers),
 * DOCX (mammoth's raw text), HTML (node-html-parser, without scripts, styles and
 * navigation), Markdown, TXT and CSV (as UTF-8 text). Each library is loaded on first use,
 * in the ingestion job, never at the API's cold start.
 */

export const FILE_KINDS = ['pdf', 'docx', 'html', 'markdown', 'text', 'csv'] as const;
export type FileKind = (typeof FILE_KINDS)[number];

const BY_EXTENSION: Record<string, FileKind> = {
  pdf: 'pdf',
  docx: 'docx',
  html: 'html',
  htm: 'html',
  md: 'markdown',
  markdown: 'markdown',
  txt: 'text',
  text: 'text',
  csv: 'csv',
};

const BY_TYPE: Record<string, FileKind> = {
  'application/pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'text/html': 'html',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/plain': 'text',
  'text/csv': 'csv',
};

/** The file's kind from its name's extension, else its declared type; undefined when unsupported. */
export function fileKind(filename: string, contentType: string): FileKind | undefined {
  const extension = /\.([A-Za-z0-9]+)$/.exec(filename)?.[1]?.toLowerCase();
  return (extension ? BY_EXTENSION[extension] : undefined) ?? BY_TYPE[contentType.split(';')[0]!.trim().toLowerCase()];
}

/** Refuses a file Parley cannot read before anything is stored. */
export function assertSupportedFile(filename: string, contentType: string): FileKind {
  const kind = fileKind(filename, contentType);
  if (!kind) {
    throw badRequest(
      `knowledge_base_files: "${filename.slice(0, 200) || 'unnamed file'}" is not a supported document (PDF, DOCX, HTML, Markdown, TXT or CSV)`,
    );
  }
  return kind;
}

export const CONTENT_TYPE: Record<FileKind, string> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  html: 'text/html',
  markdown: 'text/markdown',
  text: 'text/plain',
  csv: 'text/csv',
};

/** The page's readable text and title; links are the caller's (the crawler) to take. */
export async function htmlText(html: string): Promise<{ title?: string; text: string }> {
  const { parse } = await import('node-html-parser');
  // The doctype and comments are not text (the parser would keep a doctype as a text node).
  const root = parse(html.replace(/<!doctype[^>]*>/gi, '').replace(/<!--[\s\S]*?-->/g, ''), { blockTextElements: { script: false, style: false, noscript: false, pre: true } });
  for (const node of root.querySelectorAll('script, style, noscript, nav, header, footer, template, svg')) node.remove();
  const title = root.querySelector('title')?.text.trim() || undefined;
  root.querySelector('head')?.remove();
  const text = root.structuredText
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { title, text };
}

export async function extractText(kind: FileKind, data: Buffer): Promise<string> {
  switch (kind) {
    case 'pdf': {
      const { extractText: pdfText, getDocumentProxy } = await import('unpdf');
      const document = await getDocumentProxy(new Uint8Array(data));
      const { text } = await pdfText(document, { mergePages: false });
      return (text as string[]).map((page) => page.trim()).join('\n\n').trim();
    }
    case 'docx': {
      const mammoth = await import('mammoth');
      const { value } = await (mammoth.default ?? mammoth).extractRawText({ buffer: data });
      return value.trim();
    }
    case 'html':
      return (await htmlText(data.toString('utf8'))).text;
    case 'csv':
      return csvText(data.toString('utf8'));
    case 'markdown':
    case 'text':
      return data.toString('utf8').replace(/^\uFEFF/, '').trim();
  }
}

/** A CSV as one paragraph per row, `header: value` per cell, so each row reads whole in a chunk. */
function csvText(text: string): string {
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
