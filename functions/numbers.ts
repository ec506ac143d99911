import { domainHandler } from '../shared/http/handler.ts';
import { connectionTestRoutes } from '../shared/routes/connection-tests.ts';
import { phoneNumberRoutes } from '../shared/routes/phone-numbers.ts';
import { telephonyRoutes } from '../shared/routes/telephony.ts';
import { connectionTestHandlers } from './numbers/connection-tests.ts';
import { phoneNumberHandlers } from './numbers/phone-numbers.ts';
import { telephonyHandlers } from './numbers/telephony.ts';

/** One Lambda for the numbers scope; its handler maps live beside it, one per route module. */
export const handler = domainHandler(
  { ...phoneNumberRoutes, ...telephonyRoutes, ...connectionTestRoutes },
  { ...phoneNumberHandlers, ...telephonyHandlers, ...connectionTestHandlers },
);
