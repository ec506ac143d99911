import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import {
  isSupportedCountry as isSupportedCountryWith,
  parsePhoneNumberFromString as parseWith,
  type CountryCode,
  type MetadataJson,
} from 'libphonenumber-js/core';
import { besideBundle } from '../bundle/bundle-files.ts';

/*
 * Phone numbers as every domain reads them (numbers, later calls, contacts, SMS): strict
 * E.164 with libphonenumber-js's full metadata, and the compatible API's display form.
 *
 * The metadata (about 150 KB) is read from a JSON file on first use rather than bundled as
 * JavaScript: JSON.parse of it costs about a millisecond once, where the bundled object
 * literal was parsed on every cold start of every function that imports this module,
 * whether or not the request touched a phone number. A deployed function ships the file
 * beside its bundle (PHONE_METADATA_FILE in lib/functions.ts, held to the code by
 * test/cdk/grants-match-code); locally it comes from node_modules.
 */

/** The file a deployed function carries beside index.mjs. */
export const PHONE_METADATA_FILE_NAME = 'metadata.max.json';

let metadata: MetadataJson | undefined;

function phoneMetadata(): MetadataJson {
  if (!metadata) {
    const beside = besideBundle(PHONE_METADATA_FILE_NAME);
    const file = beside && existsSync(beside) ? beside : createRequire(import.meta.url).resolve('libphonenumber-js/metadata.max.json');
    metadata = JSON.parse(readFileSync(file, 'utf8')) as MetadataJson;
  }
  return metadata;
}

/** `+`, a non-zero digit, at most 15 digits in all, ASCII only, nothing before or after. */
const E164_SHAPE = /^\+[1-9][0-9]{1,14}$/;

const parse = (text: string) => parseWith(text, phoneMetadata());

/** The number in E.164 when it is a valid, dialable number exactly as written; otherwise undefined. */
export function canonicalE164(text: string): string | undefined {
  if (!E164_SHAPE.test(text)) return undefined;
  const parsed = parse(text);
  if (!parsed || !parsed.isValid() || parsed.number !== text) return undefined;
  return parsed.number;
}

/** As the compatible API shows it: `+1 (415) 555-0123` for North America, else international format. */
export function prettyNumber(e164: string): string {
  const parsed = parse(e164);
  if (!parsed) return e164;
  if (parsed.countryCallingCode === '1') return `+1 ${parsed.formatNational()}`;
  return parsed.formatInternational();
}

export function countryOfNumber(e164: string): string | undefined {
  return parse(e164)?.country;
}

/** Whether libphonenumber knows the ISO 3166 alpha-2 country code. */
export function isSupportedCountry(code: string): code is CountryCode {
  return isSupportedCountryWith(code as CountryCode, phoneMetadata());
}

/**
 * A number as written in `country` (national form: `(415) 555-0123` in US) in E.164, when
 * it is a valid number there; undefined otherwise (an unknown country included).
 */
export function nationalToE164(text: string, country: string): string | undefined {
  if (!isSupportedCountry(country)) return undefined;
  const parsed = parseWith(text, country, phoneMetadata());
  return parsed && parsed.isValid() ? parsed.number : undefined;
}
