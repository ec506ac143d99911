/*
 * What the caller-ID vendor adapter (caller-id-vendor.ts) and the offline mock (mock.ts) share:
 * the statuses and the adapter's interface. Callers import them from caller-id-vendor.ts, which
 * re-exports them; the mock imports them from here, since caller-id-vendor.ts imports the mock.
 */

export const BRANDED_CALLER_ID_STATUSES = ['pending', 'approved', 'rejected'] as const;
type BrandedCallerIdStatus = (typeof BRANDED_CALLER_ID_STATUSES)[number];
export const VERIFIED_NUMBER_STATUSES = ['pending', 'verified', 'failed'] as const;
type VerifiedNumberStatus = (typeof VERIFIED_NUMBER_STATUSES)[number];

export type CallerIdVendorKind = 'http' | 'mock';

export interface VendorBrandedCallerId {
  vendor_reference: string;
  status: BrandedCallerIdStatus;
  status_reason: string | null;
}

export interface VendorVerifiedNumber {
  vendor_reference: string;
  status: VerifiedNumberStatus;
  /** The code the number's owner enters when the verification call comes in. */
  validation_code: string | null;
  status_reason: string | null;
}

export interface BrandedCallerIdRequest {
  phone_number: string;
  display_name: string;
  call_reason: string | null;
  logo_url: string | null;
  /** The approved business verification the registration is made for. */
  business: { legal_name: string; registration_number: string; country: string };
}

export interface CallerIdVendor {
  readonly kind: CallerIdVendorKind;
  registerBrandedCallerId(input: BrandedCallerIdRequest): Promise<VendorBrandedCallerId>;
  getBrandedCallerId(reference: string): Promise<VendorBrandedCallerId>;
  deleteBrandedCallerId(reference: string): Promise<void>;
  startNumberVerification(input: { phone_number: string; friendly_name: string | null }): Promise<VendorVerifiedNumber>;
  getVerifiedNumber(reference: string): Promise<VendorVerifiedNumber>;
  deleteVerifiedNumber(reference: string): Promise<void>;
}
