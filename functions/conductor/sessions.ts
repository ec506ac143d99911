import * as conductor from '../../shared/conductor/index.ts';
import type { conductorRoutes } from '../../shared/conductor/sessions/routes.ts';
import { MediaResponse } from '../../shared/platform/http/handler.ts';
import type { Handlers } from '../../shared/platform/http/route.ts';

/** Whether the request asks for server-sent events (`Accept: text/event-stream`). */
const wantsEventStream = (accept: string | undefined) => /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept ?? '');

export const conductorHandlers: Handlers<typeof conductorRoutes> = {
  getConductorCapabilities: () => conductor.capabilities(),
  getConductorWalkthrough: ({ principal, request }) => conductor.walkthrough({ principal, request }),
  createConductorSession: ({ principal, request, body }) => conductor.createSession({ principal, request }, body),
  listConductorSessions: ({ principal, query }) => conductor.listSessions(principal.workspaceId, query),
  getConductorSession: ({ principal, params }) => conductor.getSession(principal.workspaceId, params.session_id),
  deleteConductorSession: ({ principal, params }) => conductor.deleteSession(principal.workspaceId, params.session_id),
  putConductorAttachments: ({ principal, request, params, body }) => conductor.putAttachments({ principal, request }, params.session_id, body.attachments),
  postConductorMessage: async ({ principal, request, params, body }) => {
    const turn = await conductor.postMessage({ principal, request }, params.session_id, body);
    if (!wantsEventStream(request.headers.accept)) return turn;
    // Buffered SSE, as the agent playground answers: the whole turn in one response.
    return new MediaResponse('text/event-stream; charset=utf-8', conductor.turnEvents(turn), { 'cache-control': 'no-cache' }) as never;
  },
};
