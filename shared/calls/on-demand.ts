/**
 * The calls function's operations that few requests need and no other module uses, each
 * loaded with `import()` by its first request, once per process (docs/performance.md,
 * "One import() target for a domain's rare routes"): the SIP trace and PCAP
 * builders, the supervisor's live controls, the media webhook and the worker's reports
 * (live/events.ts, which reach the engine's media paths), deleting a call and scrubbing
 * (erasure/deletion.ts, artifacts/scrubbing.ts). Only functions/calls.ts imports this module: a lazy
 * wrapper in index.ts would make its targets chunks of every function importing the index
 * (public, call-steps), and the files those chunks share with the entry are loaded cold
 * whole. Account data deletes and reads storage facts through erasure/index.ts.
 */
import type * as Deletion from './erasure/deletion.ts';
import type * as LiveControl from './live/control.ts';
import type * as LiveEvents from './live/events.ts';
import type * as Scrubbing from './artifacts/scrubbing.ts';
import type * as SipTrace from './artifacts/sip-trace.ts';
import { loadOnce } from '../platform/lazy.ts';

const sipTraceModule = loadOnce((): Promise<typeof SipTrace> => import('./artifacts/sip-trace.ts'));
const liveControlModule = loadOnce((): Promise<typeof LiveControl> => import('./live/control.ts'));
const liveEventsModule = loadOnce((): Promise<typeof LiveEvents> => import('./live/events.ts'));
const deletionModule = loadOnce((): Promise<typeof Deletion> => import('./erasure/deletion.ts'));
const scrubbingModule = loadOnce((): Promise<typeof Scrubbing> => import('./artifacts/scrubbing.ts'));

/** GET /get-call-sip-trace (sip-trace.ts). */
export async function getCallSipTrace(...args: Parameters<typeof SipTrace.getCallSipTrace>): ReturnType<typeof SipTrace.getCallSipTrace> {
  return (await sipTraceModule()).getCallSipTrace(...args);
}
/** GET /get-call-pcap (sip-trace.ts). */
export async function getCallPcap(...args: Parameters<typeof SipTrace.getCallPcap>): ReturnType<typeof SipTrace.getCallPcap> {
  return (await sipTraceModule()).getCallPcap(...args);
}

/** The supervisor's live controls (live/control.ts). */
export async function updateLiveCall(...args: Parameters<typeof LiveControl.updateLiveCall>): ReturnType<typeof LiveControl.updateLiveCall> {
  return (await liveControlModule()).updateLiveCall(...args);
}
export async function listenLive(...args: Parameters<typeof LiveControl.listenLive>): ReturnType<typeof LiveControl.listenLive> {
  return (await liveControlModule()).listenLive(...args);
}
export async function takeOverLive(...args: Parameters<typeof LiveControl.takeOverLive>): ReturnType<typeof LiveControl.takeOverLive> {
  return (await liveControlModule()).takeOverLive(...args);
}
export async function supervisorSay(...args: Parameters<typeof LiveControl.supervisorSay>): ReturnType<typeof LiveControl.supervisorSay> {
  return (await liveControlModule()).supervisorSay(...args);
}
export async function listViewers(...args: Parameters<typeof LiveControl.listViewers>): ReturnType<typeof LiveControl.listViewers> {
  return (await liveControlModule()).listViewers(...args);
}
export async function leaveLive(...args: Parameters<typeof LiveControl.leaveLive>): ReturnType<typeof LiveControl.leaveLive> {
  return (await liveControlModule()).leaveLive(...args);
}

/** The media server's webhook and the worker's reports (live/events.ts). */
export async function receiveMediaWebhook(...args: Parameters<typeof LiveEvents.receiveMediaWebhook>): ReturnType<typeof LiveEvents.receiveMediaWebhook> {
  return (await liveEventsModule()).receiveMediaWebhook(...args);
}
export async function receiveWorkerEvent(...args: Parameters<typeof LiveEvents.receiveWorkerEvent>): ReturnType<typeof LiveEvents.receiveWorkerEvent> {
  return (await liveEventsModule()).receiveWorkerEvent(...args);
}

/** DELETE /delete-call (erasure/deletion.ts). */
export async function deleteCall(...args: Parameters<typeof Deletion.deleteCall>): ReturnType<typeof Deletion.deleteCall> {
  return (await deletionModule()).deleteCall(...args);
}

/** Scrubbing a call's sensitive data, and the unscrubbed read (scrubbing.ts). */
export async function removeCallSensitiveData(...args: Parameters<typeof Scrubbing.removeCallSensitiveData>): ReturnType<typeof Scrubbing.removeCallSensitiveData> {
  return (await scrubbingModule()).removeCallSensitiveData(...args);
}
export async function getCallUnscrubbed(...args: Parameters<typeof Scrubbing.getCallUnscrubbed>): ReturnType<typeof Scrubbing.getCallUnscrubbed> {
  return (await scrubbingModule()).getCallUnscrubbed(...args);
}
