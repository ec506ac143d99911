import { randomBytes } from 'node:crypto';
import { getWorkspaceItem } from '../account/index.ts';
import { flowCookie, type BrowserFlow } from '../platform/auth/flow-binding.ts';
import { escapeHtml, htmlPage } from '../platform/http/html-page.ts';
import type { MediaResponse } from '../platform/http/handler.ts';

/*
 * The page that asks before a sign-in another site sent the browser into (docs/access.md,
 * "A sign-in another site sent you to"). Binding a flow to its browser does not stop a page
 * of another site from running a whole sign-in in the victim's browser: navigate it to the
 * start of the attacker's workspace, whose identity provider approves at once, or post it
 * an IdP-initiated assertion for the attacker's account, and the victim is signed into the
 * attacker's workspace. So such a sign-in stops at this page, on Parley's origin, naming
 * the workspace and the identity provider (or account); it goes on only when the user
 * presses Continue.
 *
 * Continue carries a random token, and the page's answer sets a cookie holding its SHA-256
 * (the flow binding's cookie, SameSite=Strict and sent to Continue's path only): the
 * attacker's page can neither read the token out of the victim's page nor set the cookie,
 * and a token fetched elsewhere matches no cookie in the victim's browser. The page runs no
 * script and cannot be framed (a framed Continue could be clicked through a decoy laid
 * over it): shared/platform/http/html-page.ts.
 */

const STYLE =
  'body{font-family:system-ui,sans-serif;background:#f6f8fa;color:#1f2328;margin:0}' +
  'main{max-width:30rem;margin:4rem auto;background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:2rem}' +
  'h1{font-size:1.25rem;margin:0 0 1rem;overflow-wrap:anywhere}p{line-height:1.5}' +
  '#continue{display:inline-block;font:inherit;padding:.6rem 1.2rem;border-radius:6px;border:1px solid #1a7f37;background:#1f883d;color:#fff;text-decoration:none;cursor:pointer}';

/** The confirmation's cookie: SameSite=Strict (Continue comes from Parley's own page), sent to `path` only. */
export const confirmationFlow = (name: string, path: string): BrowserFlow => ({ name, path, sameSite: 'Strict' });

/** A fresh token for Continue, and the Set-Cookie that binds it to the browser shown the page. */
export function newConfirmation(flow: BrowserFlow): { token: string; cookie: string } {
  const token = randomBytes(32).toString('base64url');
  return { token, cookie: flowCookie(flow, token) };
}

/** The host a URL names (what the user can recognise), or the text itself when it is no URL (a SAML entity ID may be a URN). */
export function hostOf(text: string): string {
  try {
    return new URL(text).host || text;
  } catch {
    return text;
  }
}

export type Continue =
  /** A link (GET): the start's redirects may go anywhere the identity provider sends them, which a form's `form-action` would have to name. */
  | { link: string }
  /** A form post of `confirm`, redirected to the dashboard only. */
  | { post: string; token: string; redirectsTo: string };

/**
 * The confirmation page: "Sign in to workspace <name> <how>?" with what the user should
 * know, and Continue. Every value from a workspace or an identity provider is escaped here.
 */
export async function confirmationPage(input: {
  workspaceId: string;
  /** After the workspace's name: "with idp.example.com", "as ada@example.com". Plain text. */
  how: string;
  /** Why the page asks. Plain text. */
  why: string;
  next: Continue;
  cookie: string;
}): Promise<MediaResponse> {
  const workspace = await getWorkspaceItem(input.workspaceId);
  const name = escapeHtml(workspace.name);
  const action =
    'link' in input.next
      ? `<p><a id="continue" href="${escapeHtml(input.next.link)}">Continue</a></p>`
      : `<form method="post" action="${escapeHtml(input.next.post)}"><input type="hidden" name="confirm" value="${escapeHtml(input.next.token)}"><button id="continue" type="submit">Continue</button></form>`;
  return htmlPage({
    title: `Sign in to ${name}?`,
    style: STYLE,
    formAction: 'post' in input.next ? ["'self'", new URL(input.next.redirectsTo).origin] : [],
    body: `<main>
<h1>Sign in to workspace <strong id="workspace">${name}</strong> ${escapeHtml(input.how)}?</h1>
<p>${escapeHtml(input.why)}</p>
<p>Continue only if you meant to sign in to this workspace. If you did not, close this page: a workspace you sign in to by mistake belongs to someone else, who sees what you enter there.</p>
${action}
</main>`,
    cookies: [input.cookie],
  });
}
