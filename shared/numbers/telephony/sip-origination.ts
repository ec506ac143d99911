import { config } from '../../platform/config.ts';

/*
 * Where calls enter the platform: a carrier trunk (Twilio's, or any elastic SIP trunk)
 * sends its calls to `origination_uri` and should accept traffic from `ip_ranges` only
 * (spec: Telephony provider rules 3–4). Both come from settings (`SIP_HOST`,
 * `SIP_IP_RANGES`), read once at start.
 */

export interface SipOrigination {
  origination_uri: string;
  ip_ranges: string[];
}

export function originationUri(host = config.SIP_HOST): string {
  return `sip:${host};transport=tcp`;
}

export function sipOrigination(): SipOrigination {
  return { origination_uri: originationUri(), ip_ranges: [...config.SIP_IP_RANGES] };
}
