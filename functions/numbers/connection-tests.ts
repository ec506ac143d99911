import type { Handlers } from '../../shared/platform/http/route.ts';
import type { connectionTestRoutes } from '../../shared/numbers/connection-tests/routes.ts';
import { withOutboundSlot } from '../../shared/platform/egress/outbound-slots.ts';
import { onDemand } from './load.ts';

export const connectionTestHandlers: Handlers<typeof connectionTestRoutes> = {
  testSipConnection: async ({ principal, body }) => {
    const { probeSipUri } = await onDemand();
    return withOutboundSlot(principal.workspaceId, () =>
      probeSipUri(body.termination_uri, { timeoutMs: body.timeout_ms, transport: body.transport }),
    );
  },
};
