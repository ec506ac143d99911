import type { Handlers } from '../../shared/http/route.ts';
import type { phoneNumberRoutes } from '../../shared/routes/phone-numbers.ts';

export const phoneNumberHandlers: Handlers<typeof phoneNumberRoutes> = {};
