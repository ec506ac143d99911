import { clearedFlowCookie, sentByAnotherSite, startedInThisBrowser } from '../platform/auth/flow-binding.ts';
import { badRequest } from '../platform/errors.ts';
import type { MediaResponse, Redirect } from '../platform/http/handler.ts';
import type { RequestInfo } from '../platform/http/route.ts';
import { startSaml } from './saml.ts';
import { confirmationFlow, confirmationPage, hostOf, newConfirmation } from './sign-in-confirmation.ts';
import { publicBase, startAnswer, startResponds, startSso } from './sso.ts';
import { samlConfigs, ssoConfigs } from './store.ts';

/*
 * `GET /auth/sso/{ws}/start` and `GET /auth/saml/{ws}/start`. A browser's navigation that
 * another site may have sent (`Sec-Fetch-Site: cross-site`, or none from a browser too old
 * to say) gets the confirmation page (shared/members/sign-in-confirmation.ts) instead of
 * the 302 to the identity provider; its Continue link comes back here with `confirm`, the
 * token whose hash the page's cookie holds, and then starts. Parley's own pages, the
 * dashboard's site, the address bar and bookmarks start at once. A script's JSON start is
 * never asked: the `authorization_url` it gets is useless without the binding cookie, which
 * a page of another site can have set only where it cannot read the answer.
 */

export type SignInMethod = 'sso' | 'saml';

const CONFIRM_COOKIE = 'parley_signin_confirm';

/** The start's cookie of a confirmed Continue, sent to that start's path only. */
const startConfirmation = (method: SignInMethod, workspaceId: string) =>
  confirmationFlow(CONFIRM_COOKIE, new URL(`${publicBase()}/auth/${method}/${workspaceId}/start`).pathname);

export async function answerStart(
  method: SignInMethod,
  workspaceId: string,
  query: { format?: 'json' | 'redirect'; return_to?: string; confirm?: string },
  request: Pick<RequestInfo, 'headers' | 'cookie'>,
): Promise<MediaResponse | Redirect> {
  const respond = startResponds(query.format, request.headers.accept);
  const flow = startConfirmation(method, workspaceId);
  const confirmed = query.confirm !== undefined && startedInThisBrowser(flow, request.cookie, query.confirm);
  if (respond === 'redirect' && !confirmed && sentByAnotherSite(request.headers)) return askFirst(method, workspaceId, query.return_to);
  const options = { respond, returnTo: query.return_to };
  const started = method === 'sso' ? await startSso(workspaceId, options) : await startSaml(workspaceId, options);
  return startAnswer(respond, started, confirmed ? [clearedFlowCookie(flow)] : []);
}

/** The confirmation page of a start: "Sign in to workspace <name> with <the identity provider's host>?". */
async function askFirst(method: SignInMethod, workspaceId: string, returnTo: string | undefined): Promise<MediaResponse> {
  const provider = method === 'sso' ? (await ssoConfigs.get(workspaceId))?.issuer : (await samlConfigs.get(workspaceId))?.sso_url;
  if (provider === undefined) throw badRequest(`${method === 'sso' ? 'SSO' : 'SAML'} is not configured for this workspace`);
  const { token, cookie } = newConfirmation(startConfirmation(method, workspaceId));
  // A query-only link: this same start, wherever Parley is served from.
  const link = `?${new URLSearchParams({ ...(returnTo === undefined ? {} : { return_to: returnTo }), confirm: token })}`;
  return confirmationPage({
    workspaceId,
    how: `with ${hostOf(provider)}`,
    why: 'Another site sent you here to sign in to this Parley workspace through its identity provider.',
    next: { link },
    cookie,
  });
}
