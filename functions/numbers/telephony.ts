import type { Handlers } from '../../shared/http/route.ts';
import type { telephonyRoutes } from '../../shared/routes/telephony.ts';

export const telephonyHandlers: Handlers<typeof telephonyRoutes> = {};
