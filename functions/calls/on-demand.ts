/*
 * What only some calls routes need, loaded together on the first of them: the SIP trace and
 * PCAP builders, the supervisor's live controls, deleting a call and scrubbing. One import() target
 * (docs/performance.md, "One import() target for a domain's rare routes"), and only the calls
 * function reaches it: a lazy wrapper in the domain's index would make these modules chunks of
 * every function importing the index (public, call-steps).
 */
export * as sipTrace from '../../shared/calls/artifacts/sip-trace.ts';
export * as scrubbing from '../../shared/calls/artifacts/scrubbing.ts';
export * as liveControl from '../../shared/calls/live/control.ts';
export { deleteCall } from '../../shared/calls/erasure/deletion.ts';
