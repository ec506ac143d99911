import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { defineRoutes } from '../platform/http/route.ts';
import {
  AcceptInviteBody,
  AddMemberBody,
  CreatedInvite,
  CreatedScimToken,
  CreateInviteBody,
  DeleteWorkspaceBody,
  Invite,
  inviteIdParams,
  Member,
  memberIdParams,
  PutSamlBody,
  PutSsoBody,
  RefreshBody,
  SamlAcsBody,
  SamlConfirmBody,
  SamlConfig,
  ScimBody,
  ScimListQuery,
  ScimStatus,
  scimUserParams,
  SessionView,
  SsoCallbackQuery,
  SsoConfig,
  SsoStart,
  SsoStartQuery,
  TransferBody,
  UpdateMemberBody,
  workspaceIdParams,
} from './schemas.ts';
import { scimErrorFormat } from './scim-schemas.ts';

/*
 * Members and access (spec: Members and access). API keys reach the workspace
 * routes with the `admin` scope; sessions by role (`role` below, shared/platform/auth/roles.ts).
 * Sign-in routes are public (their own proof: an invite, the IdP's answer, a refresh
 * token); the SCIM routes are public to the gate, authenticate their own bearer token and
 * answer every error in SCIM's format (errorFormat).
 */

export const memberRoutes = defineRoutes({ domain: 'members', access: 'admin' }, {
  listMembers: {
    method: 'GET', path: '/workspace/members', status: 200,
    summary: 'List the workspace members',
    response: lazySchema(() => z.array(Member)),
  },
  addMember: {
    method: 'POST', path: '/workspace/members', status: 201, role: 'admin',
    summary: 'Add a member directly (no invite); 409 if the email is already a member',
    body: AddMemberBody, response: Member,
  },
  updateMember: {
    method: 'PATCH', path: '/workspace/members/{id}', status: 200, role: 'admin',
    summary: "Change a member's role or name; the last admin cannot be demoted",
    params: memberIdParams, body: UpdateMemberBody, response: Member,
  },
  removeMember: {
    method: 'DELETE', path: '/workspace/members/{id}', status: 204, role: 'admin',
    summary: 'Remove a member; its sessions stop at once; the last admin cannot be removed',
    params: memberIdParams,
  },
  listInvites: {
    method: 'GET', path: '/workspace/invites', status: 200, role: 'admin',
    summary: 'List pending invites',
    response: lazySchema(() => z.array(Invite)),
  },
  createInvite: {
    method: 'POST', path: '/workspace/invites', status: 201, role: 'admin',
    summary: 'Invite an email with a role; the single-use token (7 days) is answered once',
    body: CreateInviteBody, response: CreatedInvite,
  },
  revokeInvite: {
    method: 'DELETE', path: '/workspace/invites/{id}', status: 204, role: 'admin',
    summary: 'Revoke a pending invite',
    params: inviteIdParams,
  },
  leaveWorkspace: {
    method: 'POST', path: '/workspace/leave', status: 204, access: 'any-key', role: 'member',
    summary: 'Leave the workspace (a signed-in member; the owner and the last admin cannot)',
  },
  deleteWorkspace: {
    method: 'POST', path: '/workspace/delete', status: 202, role: 'admin',
    summary: "Delete the workspace (confirm with its name): every key and session is revoked at once",
    body: DeleteWorkspaceBody,
  },
  transferWorkspace: {
    method: 'POST', path: '/workspace/transfer', status: 200, role: 'admin',
    summary: 'Hand ownership to another admin',
    body: TransferBody, response: Member,
  },
  getSso: {
    method: 'GET', path: '/workspace/sso', status: 200, role: 'admin',
    summary: 'The OIDC single sign-on settings', response: SsoConfig,
  },
  putSso: {
    method: 'PUT', path: '/workspace/sso', status: 200, role: 'admin',
    summary: 'Set OIDC single sign-on: issuer, client, allowed email domains, default role',
    body: PutSsoBody, response: SsoConfig,
  },
  deleteSso: {
    method: 'DELETE', path: '/workspace/sso', status: 204, role: 'admin',
    summary: 'Turn OIDC single sign-on off',
  },
  getSaml: {
    method: 'GET', path: '/workspace/saml', status: 200, role: 'admin',
    summary: 'The SAML settings', response: SamlConfig,
  },
  putSaml: {
    method: 'PUT', path: '/workspace/saml', status: 200, role: 'admin',
    summary: 'Set SAML: IdP metadata, or entity ID, SSO URL and certificate',
    body: PutSamlBody, response: SamlConfig,
  },
  deleteSaml: {
    method: 'DELETE', path: '/workspace/saml', status: 204, role: 'admin',
    summary: 'Turn SAML off',
  },
  getScim: {
    method: 'GET', path: '/workspace/scim', status: 200, role: 'admin',
    summary: 'SCIM provisioning: base URL and whether a token exists', response: ScimStatus,
  },
  createScimToken: {
    method: 'POST', path: '/workspace/scim-token', status: 201, role: 'admin',
    summary: 'Create (or replace) the SCIM bearer token; answered once',
    response: CreatedScimToken,
  },
  deleteScimToken: {
    method: 'DELETE', path: '/workspace/scim-token', status: 204, role: 'admin',
    summary: 'Revoke the SCIM token',
  },

  // ── Sign-in and sessions ─────────────────────────────────────────────────────────
  acceptInvite: {
    method: 'POST', path: '/auth/invites/accept', status: 200, access: 'public',
    summary: 'Accept an invite: creates the member and answers a session',
    body: AcceptInviteBody, response: SessionView,
  },
  refreshSession: {
    method: 'POST', path: '/auth/session/refresh', status: 200, access: 'public',
    summary: 'Exchange a refresh token (single use) for a new session token and refresh token',
    body: RefreshBody, response: SessionView,
  },
  signOut: {
    method: 'POST', path: '/auth/session/logout', status: 200, access: 'any-key', role: 'member',
    summary: 'Sign the calling session out',
  },
  startSso: {
    method: 'GET', path: '/auth/sso/{workspace_id}/start', status: 200, access: 'public',
    summary: "Start OIDC sign-in (PKCE, state, nonce; the state bound to this browser by a cookie): 302 to the identity provider; {authorization_url} with ?format=json or Accept: application/json; a browser another site sent here gets a confirmation page first, whose Continue comes back with confirm",
    params: workspaceIdParams, query: SsoStartQuery, response: SsoStart,
  },
  finishSso: {
    method: 'GET', path: '/auth/sso/callback', status: 200, access: 'public',
    summary: "The identity provider's redirect: refuses a state this browser did not start; signs the member in; the session cookie and a 302 to the dashboard's return_to (JSON when the start was)",
    query: SsoCallbackQuery, response: SessionView,
  },
  startSaml: {
    method: 'GET', path: '/auth/saml/{workspace_id}/start', status: 200, access: 'public',
    summary: "Start SP-initiated SAML sign-in (the request bound to this browser by a cookie): 302 to the IdP with an AuthnRequest (HTTP-Redirect binding); {authorization_url} with ?format=json or Accept: application/json; a browser another site sent here gets a confirmation page first, whose Continue comes back with confirm",
    params: workspaceIdParams, query: SsoStartQuery, response: SsoStart,
  },
  samlAcs: {
    method: 'POST', path: '/auth/saml/{workspace_id}/acs', status: 200, access: 'public', bodyType: 'json-or-form',
    summary: "SAML assertion consumer service (HTTP-POST binding): signs the assertion's subject in; an answer to a browser's start 302s to the dashboard with the cookie; an IdP-initiated assertion posted by a form answers a confirmation page",
    params: workspaceIdParams, body: SamlAcsBody, response: SessionView,
  },
  confirmSaml: {
    method: 'POST', path: '/auth/saml/{workspace_id}/confirm', status: 200, access: 'public', bodyType: 'json-or-form',
    summary: "The IdP-initiated confirmation page's Continue (in the browser shown the page): signs the assertion's subject in; the session cookie and a 302 to the dashboard",
    params: workspaceIdParams, body: SamlConfirmBody,
  },

  // ── SCIM 2.0 (RFC 7644); the SCIM token authenticates ────────────────────────────
  scimListUsers: {
    method: 'GET', path: '/scim/v2/Users', status: 200, access: 'public', errorFormat: scimErrorFormat,
    summary: 'SCIM: list Users (filter, startIndex, count)', query: ScimListQuery,
  },
  scimCreateUser: {
    method: 'POST', path: '/scim/v2/Users', status: 201, access: 'public', errorFormat: scimErrorFormat,
    summary: 'SCIM: provision a User', body: ScimBody,
  },
  scimGetUser: {
    method: 'GET', path: '/scim/v2/Users/{id}', status: 200, access: 'public', errorFormat: scimErrorFormat,
    summary: 'SCIM: get a User', params: scimUserParams,
  },
  scimReplaceUser: {
    method: 'PUT', path: '/scim/v2/Users/{id}', status: 200, access: 'public', errorFormat: scimErrorFormat,
    summary: 'SCIM: replace a User', params: scimUserParams, body: ScimBody,
  },
  scimPatchUser: {
    method: 'PATCH', path: '/scim/v2/Users/{id}', status: 200, access: 'public', errorFormat: scimErrorFormat,
    summary: 'SCIM: patch a User (add, replace, remove; active false deprovisions)', params: scimUserParams, body: ScimBody,
  },
  scimDeleteUser: {
    method: 'DELETE', path: '/scim/v2/Users/{id}', status: 204, access: 'public', errorFormat: scimErrorFormat,
    summary: 'SCIM: delete a User (removes the member)', params: scimUserParams,
  },
  scimServiceProviderConfig: {
    method: 'GET', path: '/scim/v2/ServiceProviderConfig', status: 200, access: 'public', errorFormat: scimErrorFormat,
    summary: 'SCIM: what this service supports',
  },
  scimResourceTypes: {
    method: 'GET', path: '/scim/v2/ResourceTypes', status: 200, access: 'public', errorFormat: scimErrorFormat,
    summary: 'SCIM: resource types (User)',
  },
  scimSchemas: {
    method: 'GET', path: '/scim/v2/Schemas', status: 200, access: 'public', errorFormat: scimErrorFormat,
    summary: 'SCIM: the User schema as supported',
  },
});
