import { toFile } from 'retell-sdk';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { JOBS } from '../../shared/jobs.ts';
import { DOCX_LIMITS, documentText } from '../../shared/knowledge-bases/document-text.ts';
import { ExtractionFailed, extractText } from '../../shared/knowledge-bases/extract.ts';
import { config } from '../../shared/platform/config.ts';
import { startTestApp } from '../support/app.ts';
import { bombDocx, deflatedPart, docxOf, docxParts, pdfOf, pdfOfPages, pdfWithContent, repeatedDeflate, zipOf } from '../support/kb-fixtures.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * Uploaded documents that cost far more to read than they weigh (docs/security.md, "Input
 * that costs time"): a DOCX is refused on its zip's directory and on the bytes that actually
 * come out of it, before mammoth sees it; every parser runs in a worker thread capped in
 * memory and time. Each bad file fails its own source with the reason, the other sources of
 * its knowledge base are indexed, and this process (which is the local server, and runs the
 * ingestion) goes on. The bombs are built here with a streaming deflate: a few hundred
 * kilobytes and milliseconds each.
 */

const app = await startTestApp();
const background = startBackgroundWork(JOBS.filter((job) => job.name === 'kb-jobs'));
afterAll(() => background.stop());

const MB = 1024 * 1024;
const defaults = { memoryMb: config.KB_EXTRACTION_MEMORY_MB, timeoutMs: config.KB_EXTRACTION_TIMEOUT_MS };
afterEach(() => {
  config.KB_EXTRACTION_MEMORY_MB = defaults.memoryMb;
  config.KB_EXTRACTION_TIMEOUT_MS = defaults.timeoutMs;
});

const settled = (ws: { api: any }, id: string) =>
  eventually(
    async () => (await ws.api.get(`/get-knowledge-base/${id}`)).body,
    (kb: any) => kb.status === 'complete' || kb.status === 'error',
    30_000,
  );

/** What extractText refused the file with (ExtractionFailed's message). */
const refusal = async (text: Promise<string>) => {
  const error = await text.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ExtractionFailed);
  return (error as Error).message;
};

describe('DOCX containers', () => {
  it('fails a DOCX whose document.xml expands to 350 MB with the limit, and indexes the other file of the request', async () => {
    const ws = await app.newWorkspace();
    const bomb = await bombDocx(350);
    expect(bomb.length).toBeLessThan(2 * MB);
    const created = await retellClient(app.url, ws.api_key).knowledgeBase.create({
      knowledge_base_name: 'Bombed',
      knowledge_base_files: [await toFile(bomb, 'bomb.docx'), await toFile(await docxOf(['Returns are accepted within 30 days.']), 'returns.docx')],
    });
    const kb = await settled(ws, created.knowledge_base_id);
    const sources = kb.knowledge_base_sources as any[];
    expect(sources.find((source) => source.filename === 'bomb.docx')).toMatchObject({
      status: 'error',
      error_message: "Could not read bomb.docx: the file's contents expand beyond the 32 MB limit",
    });
    const good = sources.find((source) => source.filename === 'returns.docx');
    expect(good).toMatchObject({ status: 'complete', chunk_count: 1 });
    expect(kb).toMatchObject({ status: 'complete', chunk_count: 1, error_messages: ["bomb.docx: Could not read bomb.docx: the file's contents expand beyond the 32 MB limit"] });
    const content = await ws.api.get(`/get-knowledge-base-source-content/${kb.knowledge_base_id}/${good.source_id}`);
    expect(content.body.content).toBe('Returns are accepted within 30 days.');
  });

  it('stops an entry at the bytes that come out when the zip directory understates it', async () => {
    // 300 MB of document.xml declared as 1 KB: the directory passes every check, the inflating does not.
    const lying = await bombDocx(300, { declaredBytes: 1024 });
    expect(await refusal(extractText('docx', lying))).toBe('word/document.xml expands beyond the 1024 bytes the file declares for it');
  });

  it('refuses, on the directory alone, an entry compressed more than 100 to 1, too many entries and a file that is no zip', async () => {
    expect(DOCX_LIMITS).toEqual({ maxEntries: 10_000, maxExpandedBytes: 32 * MB, maxRatio: 100, ratioFloorBytes: MB });
    // 5 MB, within the 32 MB, but about a thousand times its compressed size.
    await expect(documentText('docx', await bombDocx(5))).rejects.toThrow(/^word\/document\.xml expands more than 100 times its compressed size$/);
    const crowded = zipOf([...docxParts(['Hello.']), ...Array.from({ length: 10_000 }, (_, i) => deflatedPart(`customXml/item${i}.bin`, 'x'))]);
    await expect(documentText('docx', crowded)).rejects.toThrow(/^the file holds more than 10000 entries$/);
    await expect(documentText('docx', Buffer.from('PK but not a zip'))).rejects.toThrow(/^the file is not a readable zip container \(/);
    // A small part of repeated markup may compress as well as it likes.
    const repetitive = zipOf(docxParts([`${'Row. '.repeat(20_000)}`]));
    expect(await documentText('docx', repetitive)).toBe('Row. '.repeat(20_000).trim());
  });

  it('never inflates images and other binary parts, whatever they declare', async () => {
    const image = { ...deflatedPart('word/media/image1.png', ''), data: await repeatedDeflate(Buffer.alloc(MB), 500), size: 500 * MB };
    expect(await extractText('docx', zipOf([...docxParts(['Text beside a 500 MB image.']), image]))).toBe('Text beside a 500 MB image.');
  });
});

describe('caps on reading a document', () => {
  it('fails a PDF whose content stream fills memory (outside the JS heap) with the memory cap, and indexes the text beside it', async () => {
    config.KB_EXTRACTION_MEMORY_MB = 128;
    const ws = await app.newWorkspace();
    // One page whose content stream inflates to 1 GB of spaces: PDF.js decodes it into a typed array.
    const bomb = pdfWithContent(await repeatedDeflate(Buffer.alloc(MB, ' '), 1024, { zlib: true }), { deflated: true });
    expect(bomb.length).toBeLessThan(2 * MB);
    const created = await retellClient(app.url, ws.api_key).knowledgeBase.create({
      knowledge_base_name: 'PDF bomb',
      knowledge_base_texts: [{ title: 'Hours', text: 'The shop opens at nine.' }],
      knowledge_base_files: [await toFile(bomb, 'bomb.pdf', { type: 'application/pdf' })],
    });
    const kb = await settled(ws, created.knowledge_base_id);
    const sources = kb.knowledge_base_sources as any[];
    expect(sources.find((source) => source.filename === 'bomb.pdf')).toMatchObject({ status: 'error', error_message: 'Could not read bomb.pdf: reading it needs more than 128 MB of memory' });
    expect(sources.find((source) => source.type === 'text')).toMatchObject({ status: 'complete', chunk_count: 1 });
    expect(kb).toMatchObject({ status: 'complete', chunk_count: 1 });
  });

  it('fails a PDF that takes longer than the time cap, and reads the next document as usual', async () => {
    config.KB_EXTRACTION_TIMEOUT_MS = 500;
    expect(await refusal(extractText('pdf', pdfOfPages(2000)))).toBe('reading it takes longer than 500 ms');
    config.KB_EXTRACTION_TIMEOUT_MS = defaults.timeoutMs;
    expect(await extractText('pdf', pdfOf(['Still reading.']))).toBe('Still reading.');
  });
});
