/**
 * What other domains use of the meta domain: the built browser files' manifest, for the
 * pages other functions serve (the analytics dashboard page names its hashed files from it).
 */
export { webManifest } from './web-assets.ts';
