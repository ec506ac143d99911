/*
 * What only some numbers routes need, loaded together on the first of them: the KYC,
 * SIP trunk and caller ID routes' modules (the caller ID vendor with them) and the SIP
 * OPTIONS probe with its egress guard. One import() target, not
 * one per module: esbuild gives each set of entry points reaching a module a chunk of its
 * own, so every extra target sharing code with the entry splits the cold start into more
 * files, and on Node each costs about half a millisecond to load, as much as compiling
 * 7 KiB (docs/performance.md, "One import() target for a domain's rare routes").
 */
export * as callerIds from '../../shared/numbers/telephony/caller-ids.ts';
export * as kyc from '../../shared/numbers/telephony/kyc.ts';
export * as sipTrunks from '../../shared/numbers/telephony/sip-trunks.ts';
export { probeSipUri } from '../../shared/numbers/connection-tests/sip-options.ts';
