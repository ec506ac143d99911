import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

/*
 * Phone numbers as every domain reads them (numbers, later calls, contacts, SMS): strict
 * E.164 with libphonenumber-js's full metadata, and the compatible API's display form.
 */

/** `+`, a non-zero digit, at most 15 digits in all, ASCII only, nothing before or after. */
export const E164_SHAPE = /^\+[1-9][0-9]{1,14}$/;

/** The number in E.164 when it is a valid, dialable number exactly as written; otherwise undefined. */
export function canonicalE164(text: string): string | undefined {
  if (!E164_SHAPE.test(text)) return undefined;
  const parsed = parsePhoneNumberFromString(text);
  if (!parsed || !parsed.isValid() || parsed.number !== text) return undefined;
  return parsed.number;
}

/** As the compatible API shows it: `+1 (415) 555-0123` for North America, else international format. */
export function prettyNumber(e164: string): string {
  const parsed = parsePhoneNumberFromString(e164);
  if (!parsed) return e164;
  if (parsed.countryCallingCode === '1') return `+1 ${parsed.formatNational()}`;
  return parsed.formatInternational();
}

export function countryOfNumber(e164: string): string | undefined {
  return parsePhoneNumberFromString(e164)?.country;
}
