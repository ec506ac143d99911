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
  const parsed = await parsedMs(bytes, sniffed.contentType);
  // A live recording (a browser's MediaRecorder) has no Duration and elements of unknown size,
  // which music-metadata does not walk: its blocks' times tell the length.
  return parsed ?? (sniffed.contentType === 'audio/webm' ? webmBlocksMs(bytes) : undefined);
}

async function parsedMs(bytes: Buffer, contentType: string): Promise<number | undefined> {
  const { parseBuffer } = await import('music-metadata');
  try {
    const { format } = await parseBuffer(
      bytes,
      { mimeType: contentType, size: bytes.length },
      { duration: true, skipCovers: true, skipPostHeaders: true },
    );
    const seconds = format.duration;
    return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 ? Math.round(seconds * 1000) : undefined;
  } catch {
    // A file that is not what its first bytes say (truncated, corrupt): its length is unknown.
    return undefined;
  }
}

const SEGMENT = 0x18538067;
const INFO = 0x1549a966;
const TIMECODE_SCALE = 0x2ad7b1;
const CLUSTER = 0x1f43b675;
const CLUSTER_TIMECODE = 0xe7;
const SIMPLE_BLOCK = 0xa3;
const BLOCK_GROUP = 0xa0;
const BLOCK = 0xa1;

/** An EBML variable-length integer at `at`: its value (`keepMarker` for IDs) and length; undefined past the end. */
function vint(bytes: Buffer, at: number, keepMarker: boolean): { value: number; length: number; unknown: boolean } | undefined {
  const first = bytes[at];
  if (first === undefined || first === 0) return undefined;
  const length = Math.clz32(first) - 23;
  if (at + length > bytes.length) return undefined;
  let value = keepMarker ? first : first & (0xff >> length);
  let allOnes = value === 0xff >> length;
  for (let i = 1; i < length; i++) {
    value = value * 256 + bytes[at + i]!;
    allOnes &&= bytes[at + i] === 0xff;
  }
  return { value, length, unknown: !keepMarker && allOnes };
}

const uintOf = (bytes: Buffer, start: number, end: number) => bytes.subarray(start, end).reduce((n, byte) => n * 256 + byte, 0);

/**
 * A WebM's length from its blocks: the latest block time (its Cluster's Timecode plus the
 * block's own offset) plus the gap between the last two blocks (one frame), in the
 * Segment's TimecodeScale. Elements of unknown size (a live recording's Segment and
 * Clusters) are walked child by child: a Cluster ends where the next top-level element
 * starts. Undefined without blocks.
 */
function webmBlocksMs(bytes: Buffer): number | undefined {
  let scale = 1_000_000;
  let clusterTime = 0;
  let last: number | undefined;
  let previous: number | undefined;
  const noteBlock = (start: number, end: number) => {
    const track = vint(bytes, start, false);
    if (!track || start + track.length + 2 > end) return;
    const time = clusterTime + bytes.readInt16BE(start + track.length);
    if (last === undefined || time >= last) {
      previous = last;
      last = time;
    }
  };
  let at = 0;
  while (at < bytes.length) {
    const id = vint(bytes, at, true);
    const size = id && vint(bytes, at + id.length, false);
    if (!id || !size) break;
    const start = at + id.length + size.length;
    const end = size.unknown ? bytes.length : Math.min(bytes.length, start + size.value);
    switch (id.value) {
      // Containers whose children are read in place (of unknown size: until the next top-level element).
      case SEGMENT:
      case INFO:
      case CLUSTER:
      case BLOCK_GROUP:
        at = start;
        continue;
      case TIMECODE_SCALE:
        scale = uintOf(bytes, start, end) || scale;
        break;
      case CLUSTER_TIMECODE:
        clusterTime = uintOf(bytes, start, end);
        break;
      case SIMPLE_BLOCK:
      case BLOCK:
        noteBlock(start, end);
        break;
      default:
    }
    if (size.unknown) break;
    at = end;
  }
  if (last === undefined) return undefined;
  const frame = previous === undefined ? 0 : last - previous;
  const ms = ((last + frame) * scale) / 1_000_000;
  return ms > 0 ? Math.round(ms) : undefined;
}
