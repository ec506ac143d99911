import type * as WebStreamsModule from 'node:stream/web';

/*
 * Stands in for `node:stream/web` in deployed bundles only (an esbuild alias,
 * lib/bundle-aliases.ts). Every HTTP function bundles @middy/core, which imports
 * `ReadableStream` from node:stream/web at its top level only to test `instanceof` on a
 * streamed response; loading the built-in made Node compile its web-streams internals at
 * every cold start, about 2.5 ms of CPU on the bench machine (docs/performance.md,
 * "Bundles and import time"), used by no Parley route. Each class here is a stand-in
 * that behaves as the built-in class (`new`, `instanceof`, `extends`, static members) and
 * reads Node's global of the same name on first use, which is the very same class: Node
 * loads the web streams then, and only then. A name a bundled package imports that is
 * missing here fails the bundle build, never a request. Local runs and tests use the
 * built-in itself.
 */
type WebStreams = typeof WebStreamsModule;

function onFirstUse<K extends keyof WebStreams>(name: K): WebStreams[K] {
  const real = () => (globalThis as unknown as WebStreams)[name] as unknown as new (...args: unknown[]) => object;
  // A function (not an arrow) so the stand-in is constructible, as the class is.
  const stand: object = new Proxy(function standIn() {}, {
    construct: (_target, args, newTarget): object => Reflect.construct(real(), args, newTarget === stand ? real() : newTarget),
    apply: (_target, thisArg, args) => Reflect.apply(real(), thisArg, args),
    get: (_target, key) => Reflect.get(real(), key),
    has: (_target, key) => Reflect.has(real(), key),
    getPrototypeOf: () => Reflect.getPrototypeOf(real()),
  });
  return stand as unknown as WebStreams[K];
}

export const ReadableStream = onFirstUse('ReadableStream');
export const ReadableStreamDefaultReader = onFirstUse('ReadableStreamDefaultReader');
export const ReadableStreamBYOBReader = onFirstUse('ReadableStreamBYOBReader');
export const ReadableStreamBYOBRequest = onFirstUse('ReadableStreamBYOBRequest');
export const ReadableByteStreamController = onFirstUse('ReadableByteStreamController');
export const ReadableStreamDefaultController = onFirstUse('ReadableStreamDefaultController');
export const TransformStream = onFirstUse('TransformStream');
export const TransformStreamDefaultController = onFirstUse('TransformStreamDefaultController');
export const WritableStream = onFirstUse('WritableStream');
export const WritableStreamDefaultWriter = onFirstUse('WritableStreamDefaultWriter');
export const WritableStreamDefaultController = onFirstUse('WritableStreamDefaultController');
export const ByteLengthQueuingStrategy = onFirstUse('ByteLengthQueuingStrategy');
export const CountQueuingStrategy = onFirstUse('CountQueuingStrategy');
export const TextEncoderStream = onFirstUse('TextEncoderStream');
export const TextDecoderStream = onFirstUse('TextDecoderStream');
export const CompressionStream = onFirstUse('CompressionStream');
export const DecompressionStream = onFirstUse('DecompressionStream');
