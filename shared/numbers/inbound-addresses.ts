import { checkWithSettings, config } from '../platform/config.ts';
import type { NumberItem } from './store.ts';
import { canonicalAddress } from './validation.ts';

/*
 * Where numbers accept inbound INVITEs from. Apart from phone-numbers.ts so that the numbers
 * entry (index.ts), which loads phone-numbers.ts only on use, still registers the setting's
 * check in every function that reaches it, as before.
 */

/** Telephony rule 2: Twilio's signalling blocks, where Twilio numbers accept INVITEs from by default. */
const TWILIO_SIGNALLING_BLOCKS = [
  '54.172.60.0/30',
  '54.244.51.0/30',
  '54.171.127.192/30',
  '35.156.191.128/30',
  '54.65.63.192/30',
  '54.169.127.128/30',
  '54.252.254.64/30',
  '177.71.206.192/30',
] as const;

/** Parses `TWILIO_INBOUND_ALLOWED_ADDRESSES`: IPs or CIDR blocks, comma-separated, canonicalised. */
export function parseInboundAddresses(setting: string): string[] {
  return setting.split(',').map((entry) => {
    const canonical = canonicalAddress(entry.trim());
    if (!canonical) throw new Error(`Invalid Parley settings: TWILIO_INBOUND_ALLOWED_ADDRESSES: "${entry.trim()}" is not an IP or CIDR block`);
    return canonical;
  });
}

let inboundAddresses: readonly string[] | undefined;
const readInboundAddresses = () =>
  (inboundAddresses ??= config.TWILIO_INBOUND_ALLOWED_ADDRESSES
    ? parseInboundAddresses(config.TWILIO_INBOUND_ALLOWED_ADDRESSES)
    : TWILIO_SIGNALLING_BLOCKS);
// Checked with every setting, so a bad value stops the function before its first request does any work, never mid-request.
checkWithSettings(readInboundAddresses);

/** The inbound blocks of Twilio numbers: `TWILIO_INBOUND_ALLOWED_ADDRESSES` when set, else Twilio's. */
function twilioInboundAddresses(): string[] {
  return [...readInboundAddresses()];
}

/**
 * Where a number accepts inbound INVITEs from, as configured; null: the addresses its
 * termination URI resolves to when a call arrives (see shared/numbers/inbound-admission.ts).
 */
export function inboundAddressesFor(number: Pick<NumberItem, 'allowed_inbound_addresses' | 'provider'>): string[] | null {
  if (number.allowed_inbound_addresses?.length) return number.allowed_inbound_addresses;
  if (number.provider === 'twilio') return twilioInboundAddresses();
  return null;
}
