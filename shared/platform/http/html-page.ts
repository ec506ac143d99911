import { createHash } from 'node:crypto';
import { MediaResponse } from './handler.ts';

export { escapeHtml } from '../text/text.ts';

/*
 * The small pages Parley serves itself on the API's origin (the payments mock's checkout,
 * the sign-in confirmations): no script and nothing loaded from anywhere, one inline style
 * allowed by its hash, forms only to the origins named, never framed (a framed Continue or
 * Pay button could be clicked through a page laid over it), never cached, no referrer.
 */

export interface HtmlPage {
  /** Already escaped. */
  title: string;
  /** The inside of `<body>`, already escaped. */
  body: string;
  style: string;
  /** Where the page's forms may go (and be redirected): CSP `form-action` sources; none: `'none'`. */
  formAction?: readonly string[];
  /** Set-Cookie values, one cookie each. */
  cookies?: readonly string[];
}

const styleHash = (style: string) => createHash('sha256').update(style).digest('base64');

function pageContentSecurityPolicy(style: string, formAction: readonly string[] = []): string {
  const forms = formAction.length > 0 ? formAction.join(' ') : "'none'";
  return `default-src 'none'; style-src 'sha256-${styleHash(style)}'; form-action ${forms}; frame-ancestors 'none'; base-uri 'none'`;
}

export function htmlPage(page: HtmlPage): MediaResponse {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${page.title}</title><style>${page.style}</style></head>
<body>${page.body}</body></html>
`;
  return new MediaResponse(
    'text/html; charset=utf-8',
    html,
    {
      'cache-control': 'no-store',
      'content-security-policy': pageContentSecurityPolicy(page.style, page.formAction),
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      // A page's URL may hold a token: never sent on to the next page.
      'referrer-policy': 'no-referrer',
    },
    undefined,
    page.cookies ?? [],
  );
}
