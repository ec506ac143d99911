import { defineRoutes } from '../http/route.ts';

/** Phone numbers: buy, import, read, update, delete, search, provision, version bindings (scope `numbers`). */
export const phoneNumberRoutes = defineRoutes({});
