import type { Handlers } from '../../shared/platform/http/route.ts';
import type { telephonyRoutes } from '../../shared/numbers/telephony/routes.ts';
import type { KycSubmissionInput } from '../../shared/numbers/telephony/schemas.ts';
import { sipOrigination } from '../../shared/numbers/telephony/sip-origination.ts';
import { listProviderOperations } from '../../shared/vendors/telephony/operation-log.ts';
import { onDemand } from './load.ts';

/** KYC, SIP trunks and caller IDs load on the first of their requests (on-demand.ts); the operation log is the carriers' and always loaded. */
export const telephonyHandlers: Handlers<typeof telephonyRoutes> = {
  getSipOrigination: () => sipOrigination(),
  getKyc: async ({ principal }) => (await onDemand()).kyc.getKyc(principal.workspaceId),
  postKyc: async ({ principal, body }) => {
    const { decideKyc, submitKyc } = (await onDemand()).kyc;
    return body.decision
      ? decideKyc(principal.workspaceId, { decision: body.decision, reason: body.reason })
      : submitKyc(principal.workspaceId, body as KycSubmissionInput);
  },
  createSipTrunk: async ({ principal, body }) => (await onDemand()).sipTrunks.createSipTrunk(principal.workspaceId, body),
  listSipTrunks: async ({ principal }) => (await onDemand()).sipTrunks.listSipTrunks(principal.workspaceId),
  getSipTrunk: async ({ principal, params }) => (await onDemand()).sipTrunks.getSipTrunk(principal.workspaceId, params.id),
  updateSipTrunk: async ({ principal, params, body }) => (await onDemand()).sipTrunks.updateSipTrunk(principal.workspaceId, params.id, body),
  deleteSipTrunk: async ({ principal, params }) => (await onDemand()).sipTrunks.deleteSipTrunk(principal.workspaceId, params.id),
  createBrandedCallerId: async ({ principal, body }) => (await onDemand()).callerIds.createBrandedCallerId(principal.workspaceId, body),
  listBrandedCallerIds: async ({ principal }) => (await onDemand()).callerIds.listBrandedCallerIds(principal.workspaceId),
  refreshBrandedCallerId: async ({ principal, params }) => (await onDemand()).callerIds.refreshBrandedCallerId(principal.workspaceId, params.id),
  deleteBrandedCallerId: async ({ principal, params }) => (await onDemand()).callerIds.deleteBrandedCallerId(principal.workspaceId, params.id),
  createVerifiedNumber: async ({ principal, body }) => (await onDemand()).callerIds.createVerifiedNumber(principal.workspaceId, body),
  listVerifiedNumbers: async ({ principal }) => (await onDemand()).callerIds.listVerifiedNumbers(principal.workspaceId),
  refreshVerifiedNumber: async ({ principal, params }) => (await onDemand()).callerIds.refreshVerifiedNumber(principal.workspaceId, params.id),
  deleteVerifiedNumber: async ({ principal, params }) => (await onDemand()).callerIds.deleteVerifiedNumber(principal.workspaceId, params.id),
  listTelephonyOperations: ({ principal, query }) => listProviderOperations(principal.workspaceId, { limit: query.limit }),
};
