import { config } from '../platform/config.ts';
import { MediaResponse } from '../platform/http/handler.ts';
import { APP_PAGE_HEAD, appPage, appPageContentSecurityPolicy, scriptTag, stylesheetTag } from '../platform/http/html-page.ts';
import { IMMUTABLE_CACHE, readWebAsset, webManifest } from './web-assets.ts';

/**
 * The Voice Orb page, `GET /orb/{token}` (docs/browser.md, "The Voice Orb page"): static
 * HTML naming the hashed page files, with a strict Content-Security-Policy. The token is not
 * written into the page (the script reads it from the address), so nothing the request
 * carries reaches the HTML. The page is `no-cache` (it names the current build's files);
 * the files are immutable.
 */

/**
 * Where web calls connect without LIVEKIT_URL: `livekit-server --dev`. The same value as
 * LOCAL_LIVEKIT_URL of shared/vendors/media (a test holds them equal), kept here so the meta
 * bundle does not carry livekit-server-sdk.
 */
export const LOCAL_MEDIA_URL = 'ws://127.0.0.1:7880';

/** Where the page's files are, relative to `/orb/{token}` (so any base path works). */
const ASSETS_PATH = '../static/';

/**
 * The origins the page may connect to besides its own: the media server's WebSocket origin
 * and its HTTP twin (livekit-client validates a failed connection over HTTP(S) on the same
 * host). LiveKit Cloud moves a connection to another region's host of the same project on
 * failure, under the same `*.livekit.cloud` domain, so that domain is allowed there.
 */
function mediaOrigins(mediaUrl = config.LIVEKIT_URL ?? LOCAL_MEDIA_URL): string[] {
  const url = new URL(mediaUrl);
  const secure = url.protocol === 'wss:' || url.protocol === 'https:';
  const host = url.host;
  const origins = [`${secure ? 'wss' : 'ws'}://${host}`, `${secure ? 'https' : 'http'}://${host}`];
  if (secure && /(^|\.)livekit\.cloud$/i.test(url.hostname)) origins.push('wss://*.livekit.cloud', 'https://*.livekit.cloud');
  return origins;
}

/** The app page policy (html-page.ts) with the media server: `media-src blob:` for the agent's audio element. */
export function orbContentSecurityPolicy(mediaUrl?: string): string {
  return appPageContentSecurityPolicy({ media: ['blob:'], connect: mediaOrigins(mediaUrl) });
}

function orbPageHtml(): string {
  const { files } = webManifest();
  return `<!doctype html>
<html lang="en">
<head>
${APP_PAGE_HEAD}
<title>Voice agent</title>
${stylesheetTag(ASSETS_PATH, files['orb.css']!)}
${scriptTag(ASSETS_PATH, files['parley-web-sdk.js']!)}
${scriptTag(ASSETS_PATH, files['orb.js']!)}
</head>
<body>
<main id="orb" data-state="loading" aria-labelledby="agent-name">
<div class="orb" aria-hidden="true"></div>
<h1 id="agent-name">Voice agent</h1>
<p class="lead">Talk to this agent from your browser.</p>
<button id="call" type="button" disabled>Start call</button>
<p id="status" role="status" aria-live="polite">Loading…</p>
<section id="transcript-section" aria-labelledby="transcript-heading" hidden>
<h2 id="transcript-heading">Transcript</h2>
<ol id="transcript"></ol>
</section>
<noscript><p>This page needs JavaScript to start a call.</p></noscript>
</main>
</body>
</html>
`;
}

/** Headers every page answer carries: the policy, no caching without revalidation, no token in referrers. */
export function orbPage(): MediaResponse {
  return appPage(orbPageHtml(), {
    cacheControl: 'no-cache',
    contentSecurityPolicy: orbContentSecurityPolicy(),
    permissionsPolicy: 'microphone=(self), camera=(), geolocation=()',
  });
}

/**
 * `GET /static/{file}`: a built file by its hashed name, cached for a year (immutable)
 * and loadable from any origin (a customer's page may import the SDK's ES module).
 * `manifest.json` names the current files and is revalidated on every use.
 */
export function webAsset(file: string): MediaResponse {
  const shared = {
    'x-content-type-options': 'nosniff',
    'access-control-allow-origin': '*',
    'cross-origin-resource-policy': 'cross-origin',
  };
  if (file === 'manifest.json') {
    return new MediaResponse('application/json', JSON.stringify(webManifest()), { ...shared, 'cache-control': 'no-cache' });
  }
  const { asset, body } = readWebAsset(file);
  return new MediaResponse(asset.contentType, body, { ...shared, 'cache-control': IMMUTABLE_CACHE });
}
