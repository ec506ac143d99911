/*
 * Splitting a source's text into chunks for the index: paragraphs (blank lines) packed
 * greedily up to `max` characters; a paragraph longer than that is split at sentence ends
 * (then at spaces, then hard); a chunk shorter than `min` is merged into its neighbour.
 * Each chunk after the first starts with the previous chunk's last sentence (up to 20 % of
 * `max`) as overlap, so an answer that straddles a boundary is whole in one chunk.
 */

export interface Chunk {
  chunk_id: string;
  content: string;
}

const SENTENCE_END = /(?<=[.!?])\s+(?=\S)/u;

function splitLong(piece: string, max: number): string[] {
  if (piece.length <= max) return [piece];
  const out: string[] = [];
  let current = '';
  const flush = () => {
    if (current.trim()) out.push(current.trim());
    current = '';
  };
  for (const sentence of piece.split(SENTENCE_END)) {
    if (sentence.length > max) {
      flush();
      // Words, then a hard cut for a run with no space.
      let rest = sentence;
      while (rest.length > max) {
        let cut = rest.lastIndexOf(' ', max);
        if (cut < max / 2) cut = max;
        out.push(rest.slice(0, cut).trim());
        rest = rest.slice(cut).trim();
      }
      current = rest;
      continue;
    }
    if (current && current.length + 1 + sentence.length > max) flush();
    current = current ? `${current} ${sentence}` : sentence;
  }
  flush();
  return out;
}

function lastSentence(text: string, limit: number): string {
  const sentences = text.split(SENTENCE_END);
  const last = sentences[sentences.length - 1] ?? '';
  return last.length <= limit && sentences.length > 1 ? last : '';
}

export function chunkText(text: string, options: { max: number; min: number; idPrefix: string }): Chunk[] {
  const { max, min } = options;
  const paragraphs = text
    .replace(/\r\n?/g, '\n')
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.replace(/[ \t]+/g, ' ').trim())
    .filter((paragraph) => paragraph !== '')
    .flatMap((paragraph) => splitLong(paragraph, max));
  const packed: string[] = [];
  let current = '';
  for (const paragraph of paragraphs) {
    if (current && current.length + 2 + paragraph.length > max) {
      packed.push(current);
      current = '';
    }
    current = current ? `${current}\n\n${paragraph}` : paragraph;
  }
  if (current) packed.push(current);
  // Merge chunks below the minimum into the previous one when it fits, else the next.
  const merged: string[] = [];
  for (const piece of packed) {
    const previous = merged[merged.length - 1];
    if (previous !== undefined && (piece.length < min || previous.length < min) && previous.length + 2 + piece.length <= max * 1.25) {
      merged[merged.length - 1] = `${previous}\n\n${piece}`;
    } else {
      merged.push(piece);
    }
  }
  const overlap = Math.floor(max * 0.2);
  return merged.map((content, index) => {
    const carried = index > 0 ? lastSentence(merged[index - 1]!, overlap) : '';
    return { chunk_id: `${options.idPrefix}_${index}`, content: carried ? `${carried}\n\n${content}` : content };
  });
}
