import { defineRoutes } from '../../platform/http/route.ts';
import { Capabilities } from '../tools/capabilities.ts';
import { Walkthrough } from '../walkthrough/index.ts';
import { CreateSessionBody, PostMessageBody, PutAttachmentsBody, Session, SessionListQuery, SessionPage, SessionWithMessages, sessionIdParams, Turn } from './schemas.ts';

/**
 * The assistant (docs/assistant.md), served by the conductor function. The spec's scope
 * table names no scope for these routes, so a key needs `admin` (its catch-all); a
 * dashboard session reads as a member and writes as a developer (the role table's default).
 */
export const conductorRoutes = defineRoutes({ domain: 'conductor', access: 'admin' }, {
  getConductorCapabilities: {
    method: 'GET', path: '/conductor/capabilities', status: 200,
    summary: "What the assistant can do: its tools, each with the scope its route needs and whether it asks to confirm first",
    response: Capabilities,
  },
  getConductorWalkthrough: {
    method: 'GET', path: '/conductor/walkthrough', status: 200,
    summary: "The steps of a first agent (LLM, agent, playground turn, test case, sandbox web call), each done or not from the workspace's data",
    response: Walkthrough,
  },
  createConductorSession: {
    method: 'POST', path: '/conductor/sessions', status: 201,
    summary: 'Start an assistant session, optionally titled and with attachments (objects of the workspace it works on)',
    body: CreateSessionBody, response: Session,
  },
  listConductorSessions: {
    method: 'GET', path: '/conductor/sessions', status: 200,
    summary: "List the workspace's assistant sessions, newest first, a page at a time",
    query: SessionListQuery, response: SessionPage,
  },
  getConductorSession: {
    method: 'GET', path: '/conductor/sessions/{session_id}', status: 200,
    summary: 'Get an assistant session with its messages, oldest first',
    params: sessionIdParams, response: SessionWithMessages,
  },
  deleteConductorSession: {
    method: 'DELETE', path: '/conductor/sessions/{session_id}', status: 204,
    summary: 'Delete an assistant session and its messages',
    params: sessionIdParams,
  },
  putConductorAttachments: {
    method: 'PUT', path: '/conductor/sessions/{session_id}/attachments', status: 200,
    summary: "Replace what the session works on; every attachment must be readable in the workspace, or nothing is kept",
    params: sessionIdParams, body: PutAttachmentsBody, response: Session,
  },
  postConductorMessage: {
    method: 'POST', path: '/conductor/sessions/{session_id}/messages', status: 200,
    summary: "Send the assistant a message and get its reply (server-sent events when the request accepts text/event-stream); a pending action runs only when this message confirms it",
    throttle: 'vendor',
    params: sessionIdParams, body: PostMessageBody, response: Turn,
  },
});
