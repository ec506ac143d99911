/*
 * Files a deployed function carries beside its bundle's index.mjs (ParleyFunction's `files`
 * and `directories`, the tracer's sidecar), found from any module of the bundle. With code
 * splitting (lib/bundling.ts) a module's code may sit in index.mjs or in a chunk under
 * chunks/, so `new URL('./file', import.meta.url)` in that module would look in chunks/ for
 * some functions and beside index.mjs for others; this module resolves from the bundle's
 * root wherever esbuild put it.
 */

/** The folder, beside a split bundle's index.mjs, that holds its chunks. */
export const CHUNKS_DIR = 'chunks';

/**
 * The URL of `name` beside the deployed bundle's index.mjs; undefined when this runs from the
 * sources (tsx locally, the tests), where each caller knows its own path.
 */
export function besideBundle(name: string): URL | undefined {
  if (!/\.m?js$/.test(new URL(import.meta.url).pathname)) return undefined;
  const dir = new URL('.', import.meta.url);
  const root = dir.pathname.endsWith(`/${CHUNKS_DIR}/`) ? new URL('..', dir) : dir;
  return new URL(name, root);
}
