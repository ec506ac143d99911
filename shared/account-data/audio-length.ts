import type { Sniffed } from './sniff.ts';

/*
 * The length of an audio asset whose header does not simply state it (MP3, AAC in ADTS,
 * Ogg, WebM, M4A), measured by music-metadata: MP3 and ADTS by their Xing/VBRI header or by
 * counting every frame, Ogg by the last page's granule position, WebM by the Segment's
 * Duration, M4A by the movie header. WAV and FLAC are read by sniff.ts itself. The parser
 * is imported when audio arrives, so an image upload never loads it.
 */

/** The audio's length in ms, or undefined when the file does not tell it (or is not readable as its type). */
export async function measuredAudioMs(bytes: Buffer, sniffed: Pick<Sniffed, 'contentType'>): Promise<number | undefined> {
  const { parseBuffer } = await import('music-metadata');
  try {
    const { format } = await parseBuffer(
      bytes,
      { mimeType: sniffed.contentType, size: bytes.length },
      { duration: true, skipCovers: true, skipPostHeaders: true },
    );
    const seconds = format.duration;
    return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 ? Math.round(seconds * 1000) : undefined;
  } catch {
    // A file that is not what its first bytes say (truncated, corrupt): its length is unknown.
    return undefined;
  }
}
