/**
 * A call's artifacts (docs/calls.md, Call artifacts): its recording, the scrubbing of its
 * sensitive data, its SIP trace and pcap, and what it keeps once over (its data storage
 * setting). What the rest of the calls domain offers of them through its index.ts is here.
 * The rest of this folder is reached otherwise, each for its bundles' sake: routes.ts (with
 * schemas.ts) is imported by the route table and the calls function like ../routes.ts;
 * sip-trace.ts (with pcap.ts) and scrubbing.ts load on their first request through
 * ../on-demand.ts, and account data deletes calls and reads storage facts through
 * ../erasure/index.ts; data-storage.ts loads on the engine's first step after an end;
 * store.ts (the artifacts' items), recordings.ts and sip-leg.ts are what the engine and the
 * live events write.
 */
export { getCallRecordingUrl } from './recordings.ts';
