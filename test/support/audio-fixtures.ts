/*
 * Small, structurally valid audio files of a chosen length, built in memory (no encoder on
 * the machine): silence in real frames (MP3, AAC ADTS), or the containers' own length fields
 * with one short packet (Ogg Opus, WebM, M4A), as an encoder would write them. For the
 * assets' 210 s limit (test/account-data/audio-length.test.ts).
 */

/** MPEG-2 Layer III, 8 kbit/s, 16 kHz, mono, no CRC: 36-byte frames of 576 samples (36 ms) of silence. */
export function mp3(seconds: number): Buffer {
  const frame = Buffer.alloc(36);
  // Sync, MPEG-2 (10), Layer III (01), no CRC (1); 8 kbit/s (0001), 16 kHz (10), no padding; mono (11).
  frame.set([0xff, 0xf3, 0x18, 0xc0]);
  const frames = Math.round((seconds * 16_000) / 576);
  return Buffer.concat(Array.from({ length: frames }, () => frame));
}

/** AAC LC in ADTS frames, 8 kHz mono: 1,024 samples (128 ms) a frame, each a 7-byte header and 121 bytes of payload. */
export function aac(seconds: number): Buffer {
  const length = 128;
  const frame = Buffer.alloc(length, 0x21);
  frame[0] = 0xff;
  frame[1] = 0xf1; // MPEG-4, no CRC
  frame[2] = (1 << 6) | (11 << 2) | (1 >> 2); // AAC LC, 8 kHz (index 11), one channel
  frame[3] = ((1 & 3) << 6) | ((length >> 11) & 0x03);
  frame[4] = (length >> 3) & 0xff;
  frame[5] = ((length & 7) << 5) | 0x1f; // buffer fullness 0x7FF: variable
  frame[6] = 0xfc;
  const frames = Math.round((seconds * 8000) / 1024);
  return Buffer.concat(Array.from({ length: frames }, () => frame));
}

const OGG_CRC = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let j = 0; j < 8; j++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    table[i] = r >>> 0;
  }
  return table;
})();

function oggPage(headerType: number, granule: bigint, sequence: number, packet: Buffer): Buffer {
  const segments: number[] = [];
  for (let left = packet.length; ; left -= 255) {
    segments.push(Math.min(left, 255));
    if (left < 255) break;
  }
  const header = Buffer.alloc(27 + segments.length);
  header.write('OggS', 0, 'latin1');
  header[5] = headerType;
  header.writeBigInt64LE(granule, 6);
  header.writeUInt32LE(0x5041524c, 14); // serial
  header.writeUInt32LE(sequence, 18);
  header[26] = segments.length;
  header.set(segments, 27);
  const page = Buffer.concat([header, packet]);
  let crc = 0;
  for (const byte of page) crc = ((crc << 8) ^ OGG_CRC[((crc >>> 24) & 0xff) ^ byte]!) >>> 0;
  page.writeUInt32LE(crc, 22);
  return page;
}

/** Ogg Opus, mono: OpusHead, OpusTags, then one page of audio whose granule position says `seconds` at 48 kHz. */
export function ogg(seconds: number): Buffer {
  const preSkip = 312;
  const head = Buffer.alloc(19);
  head.write('OpusHead', 0, 'latin1');
  head[8] = 1;
  head[9] = 1;
  head.writeUInt16LE(preSkip, 10);
  head.writeUInt32LE(48_000, 12);
  const vendor = Buffer.from('parley-test');
  const tags = Buffer.alloc(8 + 4 + vendor.length + 4);
  tags.write('OpusTags', 0, 'latin1');
  tags.writeUInt32LE(vendor.length, 8);
  vendor.copy(tags, 12);
  // One 20 ms silent frame (TOC: SILK-only, 20 ms, mono, code 0).
  const audio = Buffer.from([0x08, 0x00, 0x00]);
  return Buffer.concat([
    oggPage(0x02, 0n, 0, head),
    oggPage(0x00, 0n, 1, tags),
    oggPage(0x04, BigInt(Math.round(seconds * 48_000) + preSkip), 2, audio),
  ]);
}

/** An EBML element: its ID's bytes, an 8-byte size, the content. */
function ebml(id: number[], content: Buffer): Buffer {
  const size = Buffer.alloc(8);
  size.writeBigUInt64BE(BigInt(content.length) | (1n << 56n));
  return Buffer.concat([Buffer.from(id), size, content]);
}
const uint = (value: number) => Buffer.from([value]);
const float64 = (value: number) => {
  const bytes = Buffer.alloc(8);
  bytes.writeDoubleBE(value);
  return bytes;
};

/**
 * WebM with one Opus track: the EBML header, then the Segment's Info (timecode scale 1 ms,
 * Duration) and Tracks. `null`: no Duration, as a browser's MediaRecorder writes it.
 */
export function webm(seconds: number | null): Buffer {
  const header = ebml([0x1a, 0x45, 0xdf, 0xa3], Buffer.concat([
    ebml([0x42, 0x86], uint(1)),
    ebml([0x42, 0xf7], uint(1)),
    ebml([0x42, 0xf2], uint(4)),
    ebml([0x42, 0xf3], uint(8)),
    ebml([0x42, 0x82], Buffer.from('webm')),
    ebml([0x42, 0x87], uint(4)),
    ebml([0x42, 0x85], uint(2)),
  ]));
  const info = ebml([0x15, 0x49, 0xa9, 0x66], Buffer.concat([
    ebml([0x2a, 0xd7, 0xb1], Buffer.from([0x0f, 0x42, 0x40])), // TimecodeScale 1,000,000 ns
    ...(seconds === null ? [] : [ebml([0x44, 0x89], float64(seconds * 1000))]), // Duration, in timecode units (ms)
  ]));
  const tracks = ebml([0x16, 0x54, 0xae, 0x6b], ebml([0xae], Buffer.concat([
    ebml([0xd7], uint(1)),
    ebml([0x83], uint(2)), // audio
    ebml([0x86], Buffer.from('A_OPUS')),
    ebml([0xe1], Buffer.concat([ebml([0xb5], float64(48_000)), ebml([0x9f], uint(1))])),
  ])));
  return Buffer.concat([header, ebml([0x18, 0x53, 0x80, 0x67], Buffer.concat([info, tracks]))]);
}

/** An EBML element of unknown size (all ones), as a live recorder writes its Segment and Clusters. */
const unknownSize = (id: number[]) => Buffer.from([...id, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);

/**
 * WebM as a browser's MediaRecorder writes it: no Duration, the Segment and its Clusters of
 * unknown size, one Opus track in SimpleBlocks of 60 ms (a few bytes each), a Cluster every
 * 5 s; `seconds` of them.
 */
export function recordedWebm(seconds: number): Buffer {
  const head = webm(null);
  // webm(null) ends with its Segment (8-byte ID+size prefix) holding Info and Tracks: keep the
  // EBML header and the Segment's children, and give the Segment an unknown size instead.
  const segmentAt = head.indexOf(Buffer.from([0x18, 0x53, 0x80, 0x67]));
  const parts = [head.subarray(0, segmentAt), unknownSize([0x18, 0x53, 0x80, 0x67]), head.subarray(segmentAt + 12)];
  const blocks = Math.round((seconds * 1000) / 60);
  for (let first = 0; first < blocks; first += 5000 / 60) {
    const clusterMs = Math.round(first * 60);
    parts.push(unknownSize([0x1f, 0x43, 0xb6, 0x75]), Buffer.from([0xe7, 0x84]), Buffer.from([clusterMs >>> 24, (clusterMs >>> 16) & 0xff, (clusterMs >>> 8) & 0xff, clusterMs & 0xff]));
    for (let b = Math.ceil(first); b < Math.min(blocks, first + 5000 / 60); b++) {
      const relative = b * 60 - clusterMs;
      // SimpleBlock: track 1, the time relative to the Cluster, keyframe, a 3-byte Opus packet.
      parts.push(Buffer.from([0xa3, 0x87, 0x81, (relative >> 8) & 0xff, relative & 0xff, 0x80, 0xf8, 0xff, 0xfe]));
    }
  }
  return Buffer.concat(parts);
}

function box(type: string, content: Buffer): Buffer {
  const size = Buffer.alloc(8);
  size.writeUInt32BE(8 + content.length);
  size.write(type, 4, 'latin1');
  return Buffer.concat([size, content]);
}

/** M4A: ftyp (M4A ), then moov with mvhd (time scale 1,000, the duration) and one sound track. */
export function m4a(seconds: number): Buffer {
  const ftyp = box('ftyp', Buffer.concat([Buffer.from('M4A '), Buffer.alloc(4), Buffer.from('M4A mp42isom')]));
  const mvhd = Buffer.alloc(100);
  mvhd.writeUInt32BE(1000, 12); // time scale
  mvhd.writeUInt32BE(Math.round(seconds * 1000), 16); // duration
  mvhd.writeUInt32BE(0x00010000, 20); // rate 1.0
  mvhd.writeUInt16BE(0x0100, 24); // volume 1.0
  for (const [i, value] of [0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000].entries()) mvhd.writeUInt32BE(value, 36 + i * 4);
  mvhd.writeUInt32BE(2, 96); // next track ID
  const mdhd = Buffer.alloc(24);
  mdhd.writeUInt32BE(8000, 12);
  mdhd.writeUInt32BE(Math.round(seconds * 8000), 16);
  mdhd.writeUInt16BE(0x55c4, 20); // language: und
  const hdlr = Buffer.concat([Buffer.alloc(8), Buffer.from('soun'), Buffer.alloc(12), Buffer.from('SoundHandler\0')]);
  const tkhd = Buffer.alloc(84);
  tkhd.writeUInt32BE(0x00000007, 0); // enabled, in movie, in preview
  tkhd.writeUInt32BE(1, 12); // track ID
  tkhd.writeUInt32BE(Math.round(seconds * 1000), 20);
  tkhd.writeUInt16BE(0x0100, 36); // volume 1.0
  for (const [i, value] of [0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000].entries()) tkhd.writeUInt32BE(value, 40 + i * 4);
  // The sample table: one AAC sample description, N samples of 1,024 frames and 4 bytes each, in one chunk.
  const samples = Math.round((seconds * 8000) / 1024);
  const words = (...values: number[]) => {
    const bytes = Buffer.alloc(values.length * 4);
    values.forEach((value, i) => bytes.writeUInt32BE(value, i * 4));
    return bytes;
  };
  const mp4a = Buffer.alloc(28);
  mp4a.writeUInt16BE(1, 6); // data reference index
  mp4a.writeUInt16BE(1, 16); // channels
  mp4a.writeUInt16BE(16, 18); // sample size
  mp4a.writeUInt32BE(8000 * 65536, 24); // sample rate, 16.16
  const stbl = box('stbl', Buffer.concat([
    box('stsd', Buffer.concat([words(0, 1), box('mp4a', mp4a)])),
    box('stts', words(0, 1, samples, 1024)),
    box('stsc', words(0, 1, 1, samples, 1)),
    box('stsz', words(0, 4, samples)),
    box('stco', words(0, 1, 0)),
  ]));
  const mdia = box('mdia', Buffer.concat([box('mdhd', mdhd), box('hdlr', hdlr), box('minf', stbl)]));
  const trak = box('trak', Buffer.concat([box('tkhd', tkhd), mdia]));
  return Buffer.concat([ftyp, box('moov', Buffer.concat([box('mvhd', mvhd), trak])), box('mdat', Buffer.alloc(16))]);
}

/** A WAV header claiming `seconds` of 8 kHz mono 16-bit audio (the data itself short): an audio asset (hold music, a voice sample). */
export function wav(seconds: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + seconds * 16000, 4);
  header.write('WAVE', 8, 'latin1');
  header.write('fmt ', 12, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(8000, 24);
  header.writeUInt32LE(16000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(seconds * 16000, 40);
  return Buffer.concat([header, Buffer.alloc(1600)]);
}
