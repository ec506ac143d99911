import type { Handlers } from '../../shared/platform/http/route.ts';
import * as numbers from '../../shared/numbers/phone-numbers/phone-numbers.ts';
import { withOutboundSlot } from '../../shared/platform/egress/outbound-slots.ts';
import type { phoneNumberRoutes } from '../../shared/numbers/phone-numbers/routes.ts';
import { onDemand } from './load.ts';

export const phoneNumberHandlers: Handlers<typeof phoneNumberRoutes> = {
  createPhoneNumber: ({ principal, body }) => numbers.createPhoneNumber(principal.workspaceId, body),
  importPhoneNumber: ({ principal, body }) => numbers.importPhoneNumber(principal.workspaceId, body),
  getPhoneNumber: ({ principal, params }) => numbers.getPhoneNumber(principal.workspaceId, params.phone_number),
  listPhoneNumbers: ({ principal, query }) => numbers.listPhoneNumbers(principal.workspaceId, query),
  updatePhoneNumber: ({ principal, params, body }) =>
    numbers.updatePhoneNumber(principal.workspaceId, params.phone_number, body),
  deletePhoneNumber: ({ principal, params }) => numbers.deletePhoneNumber(principal.workspaceId, params.phone_number),
  searchPhoneNumbers: ({ principal, query }) => numbers.searchPhoneNumbers(principal.workspaceId, query),
  provisionPhoneNumber: ({ principal, params }) => numbers.provisionPhoneNumber(principal.workspaceId, params.phone_number),
  testPhoneNumberConnection: async ({ principal, params, body }) => {
    const termination = await numbers.terminationOf(principal.workspaceId, params.phone_number);
    const { probeSipUri } = await onDemand();
    return withOutboundSlot(principal.workspaceId, () =>
      probeSipUri(termination.uri, { timeoutMs: body.timeout_ms, transport: termination.transport }),
    );
  },
  getPhoneNumberBindings: ({ principal, params }) => numbers.getPhoneNumberBinding(principal.workspaceId, params.phone_number),
  putPhoneNumberBindings: ({ principal, params, body }) =>
    numbers.putPhoneNumberBinding(principal.workspaceId, params.phone_number, body),
};
