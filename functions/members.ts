import { domainHandler, isFormBody } from '../shared/platform/http/handler.ts';
import * as invites from '../shared/members/invites.ts';
import * as members from '../shared/members/members.ts';
import { memberRoutes } from '../shared/members/routes.ts';
import * as saml from '../shared/members/saml.ts';
import * as scim from '../shared/members/scim.ts';
import * as sessions from '../shared/members/sessions.ts';
import * as signInStart from '../shared/members/sign-in-start.ts';
import * as sso from '../shared/members/sso.ts';

/** A session answered with its cookie (a MediaResponse); the route's schema describes its JSON. */
const session = async (issued: Promise<sessions.IssuedSession>) => sessions.withCookie(await issued) as never;

export const handler = domainHandler(memberRoutes, {
  listMembers: ({ principal }) => members.listMembers(principal.workspaceId),
  addMember: ({ principal, body }) => members.addMember(principal, body),
  updateMember: ({ principal, params, body }) => members.updateMember(principal, params.id, body),
  removeMember: ({ principal, params }) => members.removeMember(principal.workspaceId, principal, params.id),
  listInvites: ({ principal }) => invites.listInvites(principal.workspaceId),
  createInvite: ({ principal, body }) => invites.createInvite(principal, body),
  revokeInvite: ({ principal, params }) => invites.revokeInvite(principal, params.id),
  leaveWorkspace: ({ principal }) => members.leaveWorkspace(principal),
  deleteWorkspace: async ({ principal, body }) => {
    await members.deleteWorkspace(principal, body.confirm);
    return { workspace_id: principal.workspaceId, deleted: true };
  },
  transferWorkspace: ({ principal, body }) => members.transferOwnership(principal, body.member_id),
  getSso: ({ principal }) => sso.getSso(principal.workspaceId),
  putSso: ({ principal, body }) => sso.putSso(principal, body),
  deleteSso: ({ principal }) => sso.deleteSso(principal),
  getSaml: ({ principal }) => saml.getSaml(principal.workspaceId),
  putSaml: ({ principal, body }) => saml.putSaml(principal, body),
  deleteSaml: ({ principal }) => saml.deleteSaml(principal),
  getScim: ({ principal }) => scim.getScimStatus(principal.workspaceId),
  createScimToken: ({ principal }) => scim.createScimToken(principal),
  deleteScimToken: ({ principal }) => scim.deleteScimToken(principal),

  acceptInvite: ({ body }) => session(invites.acceptInvite(body.token, body.name)),
  refreshSession: ({ body }) => session(sessions.refreshSession(body.refresh_token)),
  signOut: ({ principal }) => sessions.signOut(principal),
  startSso: ({ params, query, request }) => signInStart.answerStart('sso', params.workspace_id, query, request) as never,
  finishSso: ({ query, request }) => sso.ssoCallback(query, request.cookie) as never,
  startSaml: ({ params, query, request }) => signInStart.answerStart('saml', params.workspace_id, query, request) as never,
  samlAcs: ({ params, body, request }) => saml.samlAcs(params.workspace_id, body.SAMLResponse, request.cookie, isFormBody(request.headers)) as never,
  confirmSaml: ({ params, body, request }) => saml.confirmIdpInitiated(params.workspace_id, body.confirm, request.cookie),

  scimListUsers: ({ request, query }) => scim.scim(request.headers, (ws) => scim.listUsers(ws, query)),
  scimCreateUser: ({ request, body }) => scim.scim(request.headers, (ws) => scim.createUser(ws, body)),
  scimGetUser: ({ request, params }) => scim.scim(request.headers, (ws) => scim.getUser(ws, params.id)),
  scimReplaceUser: ({ request, params, body }) => scim.scim(request.headers, (ws) => scim.replaceUser(ws, params.id, body)),
  scimPatchUser: ({ request, params, body }) => scim.scim(request.headers, (ws) => scim.patchUser(ws, params.id, body)),
  scimDeleteUser: ({ request, params }) => scim.scim(request.headers, (ws) => scim.deleteUser(ws, params.id)) as never,
  scimServiceProviderConfig: ({ request }) => scim.scim(request.headers, async () => scim.serviceProviderConfig()),
  scimResourceTypes: ({ request }) => scim.scim(request.headers, async () => scim.resourceTypes()),
  scimSchemas: ({ request }) => scim.scim(request.headers, async () => scim.schemasList()),
});
