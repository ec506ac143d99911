import { toFile } from 'retell-sdk';
import { describe, expect, it } from 'vitest';
import { localObjectStore } from '../../local/object-store.ts';
import { S3ObjectStore } from '../../shared/platform/aws/object-store.ts';
import { startTestApp } from '../support/app.ts';
import { useOfflineAwsCredentials } from '../support/offline-aws-credentials.ts';
import { retellClient } from '../support/sdk.ts';

/*
 * A stored file is whatever was uploaded. Served from its signed URL (locally on the API's
 * own origin) it must be saved, never rendered as a page there: an attachment under its
 * download name (RFC 6266, the exact name in filename* per RFC 8187), nosniff, and the
 * sandbox CSP of the public asset route. S3's presigned GET carries the same disposition.
 */

const SANDBOX_CSP = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox";
const HEADERS = ['content-type', 'content-disposition', 'x-content-type-options', 'content-security-policy'];
const app = await startTestApp();

describe('stored files on the local object store', () => {
  it('an uploaded HTML knowledge-base file downloads as an attachment under its name, with nosniff and a sandbox CSP', async () => {
    const ws = await app.newWorkspace();
    const html = '<!doctype html><html><body><script>fetch("/workspace")</script><p>Prices</p></body></html>';
    const created = await retellClient(app.url, ws.api_key).knowledgeBase.create({
      knowledge_base_name: 'Pages',
      knowledge_base_files: [
        await toFile(Buffer.from(html), '100% prices.html', { type: 'text/html' }),
        await toFile(Buffer.from(html), 'plain.html', { type: 'text/html' }),
      ],
    });
    const files = created.knowledge_base_sources as unknown as { filename: string; file_url: string }[];
    const url = (name: string) => files.find((source) => source.filename === name)!.file_url;
    expect(url('plain.html')).toMatch(/\/local-objects\/knowledge-bases\//);

    const served = await fetch(url('100% prices.html'));
    expect(served.status).toBe(200);
    expect(Object.fromEntries(HEADERS.map((name) => [name, served.headers.get(name)]))).toEqual({
      'content-type': 'text/html',
      // A percent sign is not left to filename="…" (some browsers decode it): the exact name goes in filename*.
      'content-disposition': 'attachment; filename="100_ prices.html"; filename*=UTF-8\'\'100%25%20prices.html',
      'x-content-type-options': 'nosniff',
      'content-security-policy': SANDBOX_CSP,
    });
    expect(await served.text()).toBe(html);
    const plain = await fetch(url('plain.html'));
    expect(plain.headers.get('content-disposition')).toBe('attachment; filename="plain.html"');

    // A name beyond ASCII, signed by the store itself: an ASCII stand-in and the exact UTF-8 name.
    const key = decodeURIComponent(new URL(url('plain.html')).pathname.slice('/local-objects/'.length));
    const named = await fetch(await localObjectStore()!.signedUrl(key, Date.now() + 60_000, { downloadName: 'Prix "spécial" été.html' }));
    expect(named.headers.get('content-disposition')).toBe(`attachment; filename="Prix _sp_cial_ _t_.html"; filename*=UTF-8''Prix%20%22sp%C3%A9cial%22%20%C3%A9t%C3%A9.html`);
    // Without a download name: the key's last segment.
    const unnamed = await fetch(await localObjectStore()!.signedUrl(key, Date.now() + 60_000));
    expect(Object.fromEntries(HEADERS.map((name) => [name, unnamed.headers.get(name)]))).toEqual({
      'content-type': 'text/html',
      'content-disposition': 'attachment; filename="original"',
      'x-content-type-options': 'nosniff',
      'content-security-policy': SANDBOX_CSP,
    });

    // The download name is signed: another one in the URL is refused.
    const renamed = new URL(url('plain.html'));
    renamed.searchParams.set('name', 'other.html');
    const refused = await fetch(renamed);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({ status: 403, message: 'Signature does not match' });
  });
});

describe('stored files on S3 (presigned offline: no bucket is reached)', () => {
  useOfflineAwsCredentials();

  it('a presigned GET makes S3 answer every object as an attachment, under its download name or its key\'s last segment', async () => {
    const store = new S3ObjectStore('parley-test-bucket');
    const expiresAt = Date.now() + 60_000;
    const named = new URL(await store.signedUrl('knowledge-bases/ws_1/kb_1/src_1/original', expiresAt, { downloadName: 'Prix "spécial" été.html' }));
    expect(named.searchParams.get('response-content-disposition')).toBe(
      'attachment; filename="Prix _sp_cial_ _t_.html"; filename*=UTF-8\'\'Prix%20%22sp%C3%A9cial%22%20%C3%A9t%C3%A9.html',
    );
    const unnamed = new URL(await store.signedUrl('knowledge-bases/ws_1/kb_1/src_2/original', expiresAt));
    expect(unnamed.searchParams.get('response-content-disposition')).toBe('attachment; filename="original"');
  });
});
