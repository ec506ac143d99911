/**
 * Live calls (docs/calls.md, Live calls): what the rest of the calls domain offers of them
 * through its index.ts, the monitors' stream and WebSocket pushes. The rest of this folder
 * is reached otherwise, each for its bundle's sake: routes.ts (the routes and their schemas
 * in schemas.ts) is imported by the route table and the calls function like ../routes.ts;
 * control.ts (the supervisor's controls) and events.ts (the media webhook and the worker's
 * reports) load on their first request through ../on-demand.ts; state.ts, store.ts and
 * frames.ts are the live items the engine and the call store write.
 */
export { callStream, lastEventId, monitorInfo } from './stream.ts';
export { openLiveConnection, syncLiveConnection, closeLiveConnection } from './push.ts';
