import { defineRoutes } from '../http/route.ts';

/** Telephony: SIP origination, SIP trunks, branded caller IDs, verified numbers, KYC, provider operation log (scope `numbers`). */
export const telephonyRoutes = defineRoutes({});
