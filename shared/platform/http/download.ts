/*
 * How a stored file is served: the local object store's signed URLs, S3's presigned GETs
 * and the API's own file answers. A stored file is whatever was uploaded (a knowledge-base
 * document, an asset, an export), so it is sent as an attachment under its download name,
 * with `nosniff` and a sandboxing Content-Security-Policy: an uploaded HTML or SVG file is
 * saved, never rendered as a page of the origin that serves it (the API's, locally).
 */

/** The sandbox the public asset route and stored files are served under: nothing runs, nothing loads but inline styles and images. */
export const SANDBOX_CSP = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox";

/** A name `filename="…"` carries as it is: printable ASCII without quote, backslash or percent (which some browsers decode). */
const PLAIN_NAME = /^[\x20-\x21\x23-\x24\x26-\x5b\x5d-\x7e]+$/;

/**
 * `Content-Disposition: attachment` naming the file (RFC 6266): `filename="…"` when the
 * name is plain ASCII, else an ASCII stand-in there and the exact name in
 * `filename*=UTF-8''…` (RFC 8187, formerly 5987: percent-encoded UTF-8, attr-chars as is).
 */
export function attachmentDisposition(filename: string): string {
  const name = filename.trim() || 'download';
  if (PLAIN_NAME.test(name)) return `attachment; filename="${name}"`;
  const fallback = name.replace(/[^\x20-\x21\x23-\x24\x26-\x5b\x5d-\x7e]/gu, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/** The headers a stored file is served with, besides its type and length. */
export function storedFileHeaders(filename: string): Record<string, string> {
  return {
    'content-disposition': attachmentDisposition(filename),
    'x-content-type-options': 'nosniff',
    'content-security-policy': SANDBOX_CSP,
  };
}

/** The name an object is saved under when none was given: its key's last segment. */
export const keyFileName = (key: string): string => key.slice(key.lastIndexOf('/') + 1);
