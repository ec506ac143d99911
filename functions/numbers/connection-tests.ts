import type { Handlers } from '../../shared/http/route.ts';
import type { connectionTestRoutes } from '../../shared/routes/connection-tests.ts';

export const connectionTestHandlers: Handlers<typeof connectionTestRoutes> = {};
