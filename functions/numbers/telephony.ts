import * as callerIds from '../../shared/numbers/caller-ids.ts';
import type { Handlers } from '../../shared/platform/http/route.ts';
import { decideKyc, getKyc, submitKyc } from '../../shared/numbers/kyc.ts';
import type { telephonyRoutes } from '../../shared/numbers/telephony-routes.ts';
import type { KycSubmissionInput } from '../../shared/numbers/telephony-schemas.ts';
import { sipOrigination } from '../../shared/numbers/sip-origination.ts';
import * as sipTrunks from '../../shared/numbers/sip-trunks.ts';
import { listProviderOperations } from '../../shared/vendors/telephony/operation-log.ts';

export const telephonyHandlers: Handlers<typeof telephonyRoutes> = {
  getSipOrigination: () => sipOrigination(),
  getKyc: ({ principal }) => getKyc(principal.workspaceId),
  postKyc: ({ principal, body }) =>
    body.decision
      ? decideKyc(principal.workspaceId, { decision: body.decision, reason: body.reason })
      : submitKyc(principal.workspaceId, body as KycSubmissionInput),
  createSipTrunk: ({ principal, body }) => sipTrunks.createSipTrunk(principal.workspaceId, body),
  listSipTrunks: ({ principal }) => sipTrunks.listSipTrunks(principal.workspaceId),
  getSipTrunk: ({ principal, params }) => sipTrunks.getSipTrunk(principal.workspaceId, params.id),
  updateSipTrunk: ({ principal, params, body }) => sipTrunks.updateSipTrunk(principal.workspaceId, params.id, body),
  deleteSipTrunk: ({ principal, params }) => sipTrunks.deleteSipTrunk(principal.workspaceId, params.id),
  createBrandedCallerId: ({ principal, body }) => callerIds.createBrandedCallerId(principal.workspaceId, body),
  listBrandedCallerIds: ({ principal }) => callerIds.listBrandedCallerIds(principal.workspaceId),
  refreshBrandedCallerId: ({ principal, params }) => callerIds.refreshBrandedCallerId(principal.workspaceId, params.id),
  deleteBrandedCallerId: ({ principal, params }) => callerIds.deleteBrandedCallerId(principal.workspaceId, params.id),
  createVerifiedNumber: ({ principal, body }) => callerIds.createVerifiedNumber(principal.workspaceId, body),
  listVerifiedNumbers: ({ principal }) => callerIds.listVerifiedNumbers(principal.workspaceId),
  refreshVerifiedNumber: ({ principal, params }) => callerIds.refreshVerifiedNumber(principal.workspaceId, params.id),
  deleteVerifiedNumber: ({ principal, params }) => callerIds.deleteVerifiedNumber(principal.workspaceId, params.id),
  listTelephonyOperations: ({ principal, query }) => listProviderOperations(principal.workspaceId, { limit: query.limit }),
};
