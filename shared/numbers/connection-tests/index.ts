/**
 * SIP connection tests (docs/numbers.md): what the rest of numbers uses of them, the probe's
 * answer (a number's connection test answers it too). The probe itself is loaded on demand by
 * the numbers function (functions/numbers/on-demand.ts), never through this entry, so the
 * phone number routes do not carry it.
 */
export { SipConnectionResult } from './schemas.ts';
