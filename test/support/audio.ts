/** A WAV header claiming `seconds` of 8 kHz mono 16-bit audio (the data itself short): an audio asset (hold music, a voice sample). */
export function wavBytes(seconds: number): Buffer {
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
