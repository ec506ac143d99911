import { defineRoutes } from '../../platform/http/route.ts';
import * as z from 'zod';
import { lazySchema, queryInt } from '../../platform/http/schemas.ts';
import { e164, isoCountry } from '../validation.ts';
import { SipConnectionResult } from '../connection-tests/index.ts';
import { AvailableNumber, CreatePhoneNumberBody, ImportPhoneNumberBody, NUMBER_PROVIDERS, numberParams, PhoneNumber, PhoneNumberBinding, PutBindingBody, UpdatePhoneNumberBody } from './schemas.ts';

export const phoneNumberRoutes = defineRoutes({ domain: 'numbers', access: 'numbers' }, {
  createPhoneNumber: {
    method: 'POST', path: '/create-phone-number', status: 201,
    throttle: 'vendor',
    summary: 'Buy a number from the platform carrier account (Twilio; offline mock without credentials) and bind agents',
    body: CreatePhoneNumberBody, response: PhoneNumber,
  },
  importPhoneNumber: {
    method: 'POST', path: '/import-phone-number', status: 201,
    summary: 'Import a number from your own SIP trunk (termination URI, credentials, transport) and bind agents',
    body: ImportPhoneNumberBody, response: PhoneNumber,
  },
  getPhoneNumber: {
    method: 'GET', path: '/get-phone-number/{phone_number}', status: 200,
    summary: 'Get a phone number', params: numberParams, response: PhoneNumber,
  },
  listPhoneNumbers: {
    method: 'GET', path: '/v2/list-phone-numbers', aliases: [{ method: 'GET', path: '/list-phone-numbers' }],
    status: 200,
    summary: 'List phone numbers a page at a time (the compatible client’s page), newest first',
    query: lazySchema(() =>
      z.object({
        limit: queryInt({ min: 1, max: 1000, default: 1000 }),
        pagination_key: e164().optional(),
        sort_order: z.enum(['ascending', 'descending']).default('descending'),
      }),
    ),
    response: lazySchema(() => z.object({ has_more: z.boolean(), items: z.array(PhoneNumber), pagination_key: z.string().optional() })),
  },
  updatePhoneNumber: {
    method: 'PATCH', path: '/update-phone-number/{phone_number}', status: 200,
    summary: 'Update a phone number (null removes a field or restores its default)',
    params: numberParams, body: UpdatePhoneNumberBody, response: PhoneNumber,
  },
  deletePhoneNumber: {
    method: 'DELETE', path: '/delete-phone-number/{phone_number}', status: 204,
    summary: 'Delete a phone number (a bought number is released at the carrier)', params: numberParams,
  },
  searchPhoneNumbers: {
    method: 'GET', path: '/search-phone-numbers', status: 200,
    throttle: 'vendor',
    summary: 'Search numbers available to buy (country, area code, digits it contains)',
    query: lazySchema(() =>
      z.object({
        country: isoCountry().optional(),
        country_code: isoCountry().optional(),
        area_code: z.string().regex(/^[2-9][0-9]{2}$/, 'Must be a 3-digit area code').transform(Number).optional(),
        contains: z.string().regex(/^[0-9*]{1,10}$/, 'Must be 1 to 10 digits (* matches any digit)').optional(),
        toll_free: z.enum(['true', 'false']).optional(),
        number_provider: z.enum(NUMBER_PROVIDERS).default('twilio'),
        limit: queryInt({ min: 1, max: 50, default: 20 }),
      }),
    ),
    response: lazySchema(() => z.array(AvailableNumber)),
  },
  provisionPhoneNumber: {
    method: 'POST', path: '/provision-phone-number/{phone_number}', status: 200,
    throttle: 'vendor',
    summary: 'Provision a number at its carrier again (trunk, credentials, number attached); 502 provisioning_failed when the carrier fails',
    params: numberParams, response: PhoneNumber,
  },
  testPhoneNumberConnection: {
    method: 'POST', path: '/test-phone-number-connection/{phone_number}', status: 200,
    throttle: 'outbound',
    summary: 'Send SIP OPTIONS to an imported number’s termination URI (over its transport) and report whether and how it answered',
    params: numberParams,
    body: lazySchema(() => z.object({ timeout_ms: z.number().int().min(500).max(10_000).default(5000) })),
    response: SipConnectionResult,
  },
  getPhoneNumberBindings: {
    method: 'GET', path: '/phone-number-bindings/{phone_number}', status: 200,
    summary: 'The version binding of a number and the version each of its agents resolves to now',
    params: numberParams, response: PhoneNumberBinding,
  },
  putPhoneNumberBindings: {
    method: 'PUT', path: '/phone-number-bindings/{phone_number}', status: 200,
    summary: 'Set the version binding (a version number, latest, latest_published or a tag name; null restores latest)',
    params: numberParams, body: PutBindingBody, response: PhoneNumberBinding,
  },
});
