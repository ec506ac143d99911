/**
 * The workspace's telephony setup (docs/numbers.md): KYC, SIP trunks and origination,
 * branded caller IDs and verified numbers. Only what other parts read is here; the numbers
 * function loads the rest on demand (functions/numbers/on-demand.ts).
 */
export { getKyc } from './kyc.ts';
