import { describe, expect, it } from 'vitest';
import { chunkText } from '../../shared/knowledge-bases/chunking.ts';
import { extractText, fileKind } from '../../shared/knowledge-bases/extract.ts';
import { docxOf, pdfOf } from '../support/kb-fixtures.ts';

/*
 * The extractors on small documents built here, and the chunker's rules (sizes, merging of
 * small pieces, overlap). The HTTP path of each file type is in knowledge-bases.test.ts.
 */

describe('extraction', () => {
  it('reads each supported file type', async () => {
    expect(await extractText('pdf', pdfOf(['The warranty lasts two years.', 'Keep the receipt (original).']))).toBe(
      'The warranty lasts two years.\nKeep the receipt (original).',
    );
    expect(await extractText('docx', await docxOf(['Returns are accepted within 30 days.', 'Bring the box.']))).toBe(
      'Returns are accepted within 30 days.\n\nBring the box.',
    );
    const page = '<html><head><title>T</title></head><body><nav>Menu</nav><h1>Hours</h1><p>Open 9 to 5.</p><script>bad()</script></body></html>';
    expect(await extractText('html', Buffer.from(page))).toBe('Hours\nOpen 9 to 5.');
    expect(await extractText('markdown', Buffer.from('\uFEFF# Title\n\nBody text.\n'))).toBe('# Title\n\nBody text.');
    expect(await extractText('csv', Buffer.from('city,hours\nParis,9-5\nLyon,\n'))).toBe('city: Paris\nhours: 9-5\n\ncity: Lyon');
  });

  it('knows file kinds by extension, then by declared type', () => {
    expect(fileKind('a.PDF', 'application/octet-stream')).toBe('pdf');
    expect(fileKind('notes', 'text/markdown')).toBe('markdown');
    expect(fileKind('a.htm', '')).toBe('html');
    expect(fileKind('image.png', 'image/png')).toBeUndefined();
  });
});

describe('chunking', () => {
  it('packs paragraphs up to the maximum, merges small pieces and overlaps by the last sentence', () => {
    const paragraphs = Array.from({ length: 12 }, (_, i) => `Paragraph ${i} starts here. It has a second sentence number ${i}.`);
    const chunks = chunkText(paragraphs.join('\n\n'), { max: 200, min: 50, idPrefix: 'source_x' });
    expect(chunks.map((chunk) => chunk.chunk_id)).toEqual(chunks.map((_, i) => `source_x_${i}`));
    for (const chunk of chunks) expect(chunk.content.length).toBeLessThanOrEqual(200 + 40);
    // Every paragraph is in some chunk, and each chunk after the first starts with the previous one's last sentence.
    for (const paragraph of paragraphs) expect(chunks.some((chunk) => chunk.content.includes(paragraph))).toBe(true);
    for (let i = 1; i < chunks.length; i++) {
      const previousLast = chunks[i - 1]!.content.split(/(?<=[.!?])\s+/).pop()!;
      expect(chunks[i]!.content.startsWith(previousLast)).toBe(true);
    }
  });

  it('splits one long paragraph at sentences, and a run without spaces hard', () => {
    const long = Array.from({ length: 40 }, (_, i) => `Sentence ${i} is here.`).join(' ');
    const chunks = chunkText(long, { max: 120, min: 10, idPrefix: 's' });
    expect(chunks.length).toBeGreaterThan(5);
    expect(chunkText('x'.repeat(1000), { max: 300, min: 10, idPrefix: 's' }).map((chunk) => chunk.content.length)).toEqual([300, 300, 300, 100]);
    expect(chunkText('  \n\n ', { max: 300, min: 10, idPrefix: 's' })).toEqual([]);
  });
});
