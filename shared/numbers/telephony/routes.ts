import { defineRoutes } from '../../platform/http/route.ts';
import * as z from 'zod';
import { lazySchema, queryInt } from '../../platform/http/schemas.ts';
import { BrandedCallerId, brandedCallerIdParams, CreateBrandedCallerIdBody, CreateSipTrunkBody, CreateVerifiedNumberBody, Kyc, PostKycBody, ProviderOperation, SipOrigination, SipTrunk, sipTrunkIdParams, UpdateSipTrunkBody, VerifiedNumber, verifiedNumberParams } from './schemas.ts';

export const telephonyRoutes = defineRoutes({ domain: 'numbers', access: 'numbers' }, {
  getSipOrigination: {
    method: 'GET', path: '/sip-origination', status: 200,
    summary: "The platform's SIP origination URI and the address ranges its SIP traffic comes from",
    response: SipOrigination,
  },
  getKyc: {
    method: 'GET', path: '/kyc', status: 200,
    summary: 'Business verification (KYC) status and the submitted details',
    response: Kyc,
  },
  postKyc: {
    method: 'POST', path: '/kyc', status: 200,
    summary: 'Submit business details for verification (status becomes pending); outside production, decide a pending submission',
    body: PostKycBody, response: Kyc,
  },
  createSipTrunk: {
    method: 'POST', path: '/create-sip-trunk', status: 201,
    summary: 'Register your own SIP trunk (termination URI, credentials, allowed addresses, transport)',
    body: CreateSipTrunkBody, response: SipTrunk,
  },
  listSipTrunks: {
    method: 'GET', path: '/list-sip-trunks', status: 200,
    summary: 'List SIP trunks, oldest first', response: lazySchema(() => z.array(SipTrunk)),
  },
  getSipTrunk: {
    method: 'GET', path: '/get-sip-trunk/{id}', status: 200,
    summary: 'Get a SIP trunk (password masked)', params: sipTrunkIdParams, response: SipTrunk,
  },
  updateSipTrunk: {
    method: 'PATCH', path: '/update-sip-trunk/{id}', status: 200,
    summary: 'Update a SIP trunk; null auth_username and auth_password remove the credentials',
    params: sipTrunkIdParams, body: UpdateSipTrunkBody, response: SipTrunk,
  },
  deleteSipTrunk: {
    method: 'DELETE', path: '/delete-sip-trunk/{id}', status: 204,
    summary: 'Delete a SIP trunk', params: sipTrunkIdParams,
  },
  createBrandedCallerId: {
    method: 'POST', path: '/create-branded-caller-id', status: 201,
    throttle: 'vendor',
    summary: 'Register a branded caller ID for a number with the caller-ID vendor (needs approved business verification)',
    body: CreateBrandedCallerIdBody, response: BrandedCallerId,
  },
  listBrandedCallerIds: {
    method: 'GET', path: '/list-branded-caller-ids', status: 200,
    summary: 'List branded caller IDs, oldest first', response: lazySchema(() => z.array(BrandedCallerId)),
  },
  refreshBrandedCallerId: {
    method: 'POST', path: '/refresh-branded-caller-id/{id}', status: 200,
    throttle: 'vendor',
    summary: "Pull a branded caller ID's current status from the vendor",
    params: brandedCallerIdParams, response: BrandedCallerId,
  },
  deleteBrandedCallerId: {
    method: 'DELETE', path: '/delete-branded-caller-id/{id}', status: 204,
    summary: 'Withdraw a branded caller ID at the vendor and delete it', params: brandedCallerIdParams,
  },
  createVerifiedNumber: {
    method: 'POST', path: '/create-verified-number', status: 201,
    throttle: 'vendor',
    summary: 'Start verifying a number you own for use as caller ID (the vendor calls it with validation_code)',
    body: CreateVerifiedNumberBody, response: VerifiedNumber,
  },
  listVerifiedNumbers: {
    method: 'GET', path: '/list-verified-numbers', status: 200,
    summary: 'List verified numbers, oldest first', response: lazySchema(() => z.array(VerifiedNumber)),
  },
  refreshVerifiedNumber: {
    method: 'POST', path: '/refresh-verified-number/{id}', status: 200,
    throttle: 'vendor',
    summary: "Pull a verified number's current status from the vendor",
    params: verifiedNumberParams, response: VerifiedNumber,
  },
  deleteVerifiedNumber: {
    method: 'DELETE', path: '/delete-verified-number/{id}', status: 204,
    summary: 'Remove a verified number at the vendor and delete it', params: verifiedNumberParams,
  },
  listTelephonyOperations: {
    method: 'GET', path: '/telephony/operations', status: 200,
    summary: 'The telephony provider operation log (requests made to carriers), newest first',
    query: lazySchema(() => z.object({ limit: queryInt({ min: 1, max: 1000, default: 100 }) })),
    response: lazySchema(() => z.array(ProviderOperation)),
  },
});
