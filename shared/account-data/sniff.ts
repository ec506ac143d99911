/*
 * What an uploaded asset is, decided from its bytes (magic numbers), never from its name or
 * the type the client declared. Images: PNG, JPEG, GIF, WebP, SVG; audio: MP3, WAV, WebM,
 * OGG, M4A, AAC (ADTS), FLAC. An SVG is text, so it is read as XML text and refused when it
 * could run or fetch anything (scripts, event handlers, external references).
 */

export interface Sniffed {
  kind: 'image' | 'audio';
  contentType: string;
  extension: string;
  /** Audio whose header gives its length (WAV, FLAC). */
  durationMs?: number;
}

const ascii = (bytes: Buffer, start: number, end: number) => bytes.subarray(start, end).toString('latin1');

function wavDurationMs(bytes: Buffer): number | undefined {
  // RIFF chunks after the 12-byte header: `fmt ` gives the byte rate, `data` the length.
  let offset = 12;
  let byteRate: number | undefined;
  while (offset + 8 <= bytes.length) {
    const id = ascii(bytes, offset, offset + 4);
    const size = bytes.readUInt32LE(offset + 4);
    if (id === 'fmt ' && offset + 16 <= bytes.length) byteRate = bytes.readUInt32LE(offset + 16);
    if (id === 'data') {
      if (!byteRate) return undefined;
      return Math.round((size / byteRate) * 1000);
    }
    offset += 8 + size + (size % 2);
  }
  return undefined;
}

function flacDurationMs(bytes: Buffer): number | undefined {
  // STREAMINFO is the first metadata block: sample rate (20 bits) and total samples (36 bits).
  if (bytes.length < 8 + 18 || (bytes[4]! & 0x7f) !== 0) return undefined;
  const info = bytes.subarray(8, 8 + 34);
  const sampleRate = (info[10]! << 12) | (info[11]! << 4) | (info[12]! >> 4);
  const totalSamples = (info[13]! & 0x0f) * 2 ** 32 + info.readUInt32BE(14);
  if (!sampleRate || !totalSamples) return undefined;
  return Math.round((totalSamples / sampleRate) * 1000);
}

/** The SVG's problem, if it has one: anything that runs code or loads from elsewhere. */
function svgProblem(text: string): string | undefined {
  const lower = text.toLowerCase();
  if (/<script[\s>/]/.test(lower)) return 'it contains a script';
  if (/<foreignobject[\s>/]/.test(lower)) return 'it contains a foreignObject';
  if (/<!entity/.test(lower) || /<!doctype[^>]*\[/.test(lower)) return 'it declares entities';
  if (/[\s/"']on[a-z]+\s*=/.test(lower)) return 'it has an event handler attribute';
  if (/javascript\s*:/.test(lower) || /data\s*:\s*text\/html/.test(lower)) return 'it has a script URL';
  // href / xlink:href / src may only point inside the document (#id).
  for (const match of lower.matchAll(/(?:xlink:href|href|src)\s*=\s*(["'])(.*?)\1/g)) {
    if (!match[2]!.trim().startsWith('#')) return 'it references an external resource';
  }
  for (const match of lower.matchAll(/url\(([^)]*)\)/g)) {
    if (!match[1]!.trim().replace(/^["']/, '').startsWith('#')) return 'it references an external resource';
  }
  if (/@import/.test(lower)) return 'it references an external resource';
  return undefined;
}

/** Whether the text looks like an SVG document (after a BOM, an XML declaration, comments, a doctype). */
function looksLikeSvg(bytes: Buffer): string | undefined {
  const head = bytes.subarray(0, Math.min(bytes.length, 4096)).toString('utf8').replace(/^\uFEFF/, '');
  const stripped = head.replace(/^\s*(<\?xml[^>]*\?>\s*)?((<!--[\s\S]*?-->|<!doctype[^>]*>)\s*)*/i, '');
  if (!/^<svg[\s>]/i.test(stripped)) return undefined;
  const text = bytes.toString('utf8');
  // Text only: a NUL byte is not an SVG.
  return text.includes('\u0000') ? undefined : text;
}

export type SniffResult = { ok: Sniffed } | { refused: string; unsafe?: true };

export function sniffAsset(bytes: Buffer): SniffResult {
  const b = bytes;
  const has = (offset: number, text: string) => b.length >= offset + text.length && ascii(b, offset, offset + text.length) === text;
  if (b.length >= 8 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) {
    return { ok: { kind: 'image', contentType: 'image/png', extension: 'png' } };
  }
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return { ok: { kind: 'image', contentType: 'image/jpeg', extension: 'jpg' } };
  if (has(0, 'GIF87a') || has(0, 'GIF89a')) return { ok: { kind: 'image', contentType: 'image/gif', extension: 'gif' } };
  if (has(0, 'RIFF') && has(8, 'WEBP')) return { ok: { kind: 'image', contentType: 'image/webp', extension: 'webp' } };
  if (has(0, 'RIFF') && has(8, 'WAVE')) {
    const durationMs = wavDurationMs(b);
    return { ok: { kind: 'audio', contentType: 'audio/wav', extension: 'wav', ...(durationMs !== undefined ? { durationMs } : {}) } };
  }
  if (has(0, 'fLaC')) {
    const durationMs = flacDurationMs(b);
    return { ok: { kind: 'audio', contentType: 'audio/flac', extension: 'flac', ...(durationMs !== undefined ? { durationMs } : {}) } };
  }
  if (has(0, 'OggS')) return { ok: { kind: 'audio', contentType: 'audio/ogg', extension: 'ogg' } };
  if (b.length >= 4 && b.readUInt32BE(0) === 0x1a45dfa3) return { ok: { kind: 'audio', contentType: 'audio/webm', extension: 'webm' } };
  if (has(4, 'ftyp')) {
    const brand = ascii(b, 8, 12);
    if (['M4A ', 'M4B ', 'mp42', 'isom', 'dash'].includes(brand)) return { ok: { kind: 'audio', contentType: 'audio/mp4', extension: 'm4a' } };
  }
  if (has(0, 'ID3')) return { ok: { kind: 'audio', contentType: 'audio/mpeg', extension: 'mp3' } };
  if (b.length >= 2 && b[0] === 0xff && (b[1]! & 0xf6) === 0xf0) return { ok: { kind: 'audio', contentType: 'audio/aac', extension: 'aac' } };
  if (b.length >= 2 && b[0] === 0xff && (b[1]! & 0xe0) === 0xe0) return { ok: { kind: 'audio', contentType: 'audio/mpeg', extension: 'mp3' } };
  const svg = looksLikeSvg(b);
  if (svg !== undefined) {
    const problem = svgProblem(svg);
    if (problem) return { refused: `file: This SVG is refused: ${problem}`, unsafe: true };
    return { ok: { kind: 'image', contentType: 'image/svg+xml', extension: 'svg' } };
  }
  return {
    refused: 'file: Not a supported image (PNG, JPEG, GIF, WebP, SVG) or audio file (MP3, WAV, WebM, OGG, M4A, AAC, FLAC); the type is read from the content, not the name',
  };
}
