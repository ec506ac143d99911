import { serveCappedWork } from './capped-worker.ts';
import { documentText } from './document-text.ts';
import type { ParsedKind } from './extract.ts';

/*
 * The extraction worker's script (started by extract.ts's extractText): each piece of work is
 * one document's bytes, and its answer the document's text. Deployed as extract-worker.mjs,
 * built on its own beside the bundle of every function that bundles extract.ts
 * (lib/functions.ts, lib/bundling.ts).
 */
serveCappedWork(({ kind, data }: { kind: ParsedKind; data: Uint8Array }) =>
  documentText(kind, Buffer.from(data.buffer, data.byteOffset, data.byteLength)),
);
