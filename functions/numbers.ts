import { domainHandler } from '../shared/platform/http/handler.ts';
import { connectionTestRoutes } from '../shared/numbers/connection-tests/routes.ts';
import { phoneNumberRoutes } from '../shared/numbers/phone-numbers/routes.ts';
import { telephonyRoutes } from '../shared/numbers/telephony/routes.ts';
import { connectionTestHandlers } from './numbers/connection-tests.ts';
import { phoneNumberHandlers } from './numbers/phone-numbers.ts';
import { telephonyHandlers } from './numbers/telephony.ts';

/** One Lambda for the numbers scope; its handler maps live beside it, one per route module. */
export const handler = domainHandler(
  { ...phoneNumberRoutes, ...telephonyRoutes, ...connectionTestRoutes },
  { ...phoneNumberHandlers, ...telephonyHandlers, ...connectionTestHandlers },
);
