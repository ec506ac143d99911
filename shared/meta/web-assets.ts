import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { besideBundle } from '../platform/bundle/bundle-files.ts';
import { config } from '../platform/config.ts';
import { notFound, unavailable } from '../platform/errors.ts';

/**
 * The built browser files (`npm run build:web`, scripts/build-web.ts): the web SDK, the
 * Voice Orb page's and the dashboard page's scripts and styles, each under a content-hashed
 * name listed in manifest.json. Found in WEB_ASSETS_DIR, else beside the deployed bundle (lib/ copies
 * web/dist there as `web/`), else in the project's web/dist. Read once per process: a
 * hashed file never changes, and a new build is a new deployment (or a restart locally).
 */
export interface WebAsset {
  file: string;
  integrity: string;
  contentType: string;
}

export interface WebManifest {
  files: Record<string, WebAsset>;
}

/** The logical names the pages need from the manifest: the Orb page's, the dashboard page's (shared/analytics/dashboards/page.ts). */
const PAGE_ASSETS = ['orb.css', 'parley-web-sdk.js', 'orb.js', 'dashboard.css', 'dashboard.js'] as const;

/** A year: hashed names change with their content, so a cached copy is never stale. */
export const IMMUTABLE_CACHE = 'public, max-age=31536000, immutable';

interface Loaded {
  dir: string;
  manifest: WebManifest;
  byFile: Map<string, WebAsset>;
  contents: Map<string, string>;
}

let loaded: Loaded | undefined;

function assetsDir(): string | undefined {
  const candidates = [
    config.WEB_ASSETS_DIR,
    besideBundle('web/'),
    new URL('../../web/dist/', import.meta.url),
  ].map((dir) => (dir instanceof URL ? fileURLToPath(dir) : dir));
  return candidates.find((dir): dir is string => dir !== undefined && existsSync(join(dir, 'manifest.json')));
}

function load(): Loaded {
  if (loaded) return loaded;
  const dir = assetsDir();
  if (!dir) throw unavailable('The browser files are not built (npm run build:web)', 60);
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as WebManifest;
  for (const name of PAGE_ASSETS) {
    if (!manifest.files[name]) throw unavailable(`The browser files are incomplete: ${name} is missing (npm run build:web)`, 60);
  }
  loaded = { dir, manifest, byFile: new Map(Object.values(manifest.files).map((asset) => [asset.file, asset])), contents: new Map() };
  return loaded;
}

export function webManifest(): WebManifest {
  return load().manifest;
}

/**
 * One built file by its hashed name: only names the manifest lists are served, so nothing
 * else of the folder (or beyond it) can be asked for.
 */
export function readWebAsset(file: string): { asset: WebAsset; body: string } {
  const { dir, byFile, contents } = load();
  const asset = byFile.get(file);
  if (!asset) throw notFound(`Asset ${file} not found`);
  let body = contents.get(file);
  if (body === undefined) {
    body = readFileSync(join(dir, asset.file), 'utf8');
    contents.set(file, body);
  }
  return { asset, body };
}
