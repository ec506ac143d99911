import { badGateway, type ApiError } from '../../platform/errors.ts';

/**
 * The telephony provider adapter: what buying and releasing numbers needs from a carrier.
 * `telephonyProvider()` picks it per request from vendor settings: the Twilio REST client
 * (shared/vendors/telephony/twilio.ts) with `TWILIO_ACCOUNT_SID`, else the offline mock
 * (shared/vendors/telephony/mock.ts). Both record every request in the provider operation log
 * (shared/vendors/telephony/operation-log.ts).
 *
 * Failures are ApiErrors already: 502 `provisioning_failed` when the carrier fails or
 * refuses, 422 when the number asked for cannot be had.
 */
export interface SearchOptions {
  country: string;
  areaCode?: number;
  contains?: string;
  tollFree: boolean;
  limit: number;
}

export interface FoundNumber {
  phone_number: string;
  locality?: string;
  region?: string;
}

export interface PurchaseRequest {
  phoneNumber?: string;
  country: string;
  areaCode?: number;
  tollFree: boolean;
}

/** A number held at the carrier: its E.164 and the carrier's ID for it. */
export interface HeldNumber {
  phoneNumber: string;
  providerSid: string;
}

/** The workspace's trunk at the carrier: origination to the platform, a credential list. */
export interface Trunk {
  trunk_sid: string;
  credential_list_sid: string;
  origination_uri: string;
  sip_username: string;
}

export interface TelephonyProvider {
  readonly name: 'twilio' | 'mock';
  search(workspaceId: string, options: SearchOptions): Promise<FoundNumber[]>;
  /** One trunk per workspace: the trunk, its origination URL and a credential list attached to it. */
  createTrunk(workspaceId: string, originationUri: string): Promise<Trunk>;
  purchase(workspaceId: string, request: PurchaseRequest): Promise<HeldNumber>;
  attach(workspaceId: string, trunk: Trunk, number: HeldNumber): Promise<void>;
  release(workspaceId: string, number: HeldNumber): Promise<void>;
}

export const provisioningFailed = (message: string): ApiError => badGateway(message, 'provisioning_failed');
