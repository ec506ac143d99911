import { existsSync, readFileSync } from 'node:fs';
import { domainHandler } from '../shared/platform/http/handler.ts';
import { preflightTable } from '../shared/platform/http/cors.ts';
import { publicRoutes } from '../shared/public/routes.ts';
import { callRoutes } from '../shared/calls/routes.ts';
import { chatRoutes } from '../shared/chats/routes.ts';
import * as pub from '../shared/public/index.ts';

/**
 * The public routes (docs/browser.md): widget chats, share links, a web call's public log,
 * and /widget.js. It also answers every CORS preflight (API Gateway's `OPTIONS /{proxy+}`),
 * judged by the CORS classes of the browser routes: its own, and create-web-call and
 * create-chat, which public keys may call.
 */
let widgetScript: string | undefined;
function widget(): string {
  if (widgetScript === undefined) {
    // Beside the deployed bundle (its entry in lib/functions.ts ships it), or in the project locally.
    const file = ['./widget.js', '../web/widget/dist/widget.js'].map((path) => new URL(path, import.meta.url)).find((url) => existsSync(url));
    if (!file) throw new Error('widget.js is missing from the deployment');
    widgetScript = readFileSync(file, 'utf8');
  }
  return widgetScript;
}

const origin = (headers: Record<string, string | undefined>) => headers.origin;

export const handler = domainHandler(
  publicRoutes,
  {
    startPublicChat: ({ principal, body }) => pub.startPublicChat(principal, body),
    publicChatMessage: ({ params, body, request }) => pub.sendPublicChatMessage(params.chat_id, body, origin(request.headers)),
    endPublicChat: ({ params, body, request }) => pub.endPublicChat(params.chat_id, body, origin(request.headers)),
    getPublicShare: ({ params }) => pub.getPublicShare(params.token),
    shareWebCall: ({ params, body }) => pub.startShareWebCall(params.token, body),
    shareChat: ({ params, body }) => pub.startShareChat(params.token, body),
    publicCallLog: ({ params, query, request }) => pub.getPublicCallLog(params.call_id, request.headers, query),
    publicCallKbRetrievals: ({ params, query, request }) => pub.getPublicCallKbRetrievals(params.call_id, request.headers, query) as never,
    getWidgetScript: ({ request }) => pub.widgetResponse(widget(), request.headers['if-none-match']) as never,
  },
  { preflight: preflightTable([...Object.values(publicRoutes), callRoutes.createWebCall, chatRoutes.createChat]) },
);
