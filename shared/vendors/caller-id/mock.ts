import { createHash } from 'node:crypto';
import type { CallerIdVendor, VendorBrandedCallerId, VendorVerifiedNumber } from './types.ts';

/**
 * The built-in offline caller-ID vendor, used when no HTTP vendor is configured (locally,
 * in tests). It never touches the network and keeps no state, so it answers the same in
 * every process: a registration or verification starts `pending` and the first refresh
 * finds it approved (branded caller IDs) or verified (numbers). References and validation
 * codes are derived from the request, so they are stable. Deleting always succeeds.
 */

const digest = (text: string) => createHash('sha256').update(text).digest('hex');

export const mockCallerIdVendor: CallerIdVendor = {
  kind: 'mock',

  async registerBrandedCallerId(input): Promise<VendorBrandedCallerId> {
    return {
      vendor_reference: `mock_bcid_${digest(`${input.phone_number}|${input.display_name}`).slice(0, 24)}`,
      status: 'pending',
      status_reason: null,
    };
  },

  async getBrandedCallerId(reference): Promise<VendorBrandedCallerId> {
    return { vendor_reference: reference, status: 'approved', status_reason: null };
  },

  async deleteBrandedCallerId(): Promise<void> {},

  async startNumberVerification(input): Promise<VendorVerifiedNumber> {
    const hash = digest(input.phone_number);
    return {
      vendor_reference: `mock_vn_${hash.slice(0, 24)}`,
      status: 'pending',
      validation_code: String(parseInt(hash.slice(0, 8), 16) % 1_000_000).padStart(6, '0'),
      status_reason: null,
    };
  },

  async getVerifiedNumber(reference): Promise<VendorVerifiedNumber> {
    return { vendor_reference: reference, status: 'verified', validation_code: null, status_reason: null };
  },

  async deleteVerifiedNumber(): Promise<void> {},
};
