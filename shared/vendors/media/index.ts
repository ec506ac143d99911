import { config } from '../../platform/config.ts';
import { readLiveKitCredentials, type CredentialOptions } from './credentials.ts';
import { SandboxMedia } from './sandbox.ts';
import type { MediaAdapter, TrunkStore } from './types.ts';
import { workerReportToken, workerReportUrl } from './worker-token.ts';

export * from './types.ts';
export { readLiveKitCredentials,   type LiveKitCredentials,  } from './credentials.ts';
export { SandboxMedia,  } from './sandbox.ts';
export { webCallAccess, verifyWebCallAccess, liveAccess,      } from './web-call.ts';
export { verifyMediaWebhook, type MediaWebhookEvent } from './webhook.ts';
export { workerReportToken, verifyWorkerReportToken, workerReportUrl } from './worker-token.ts';

export interface MediaAdapterOptions extends CredentialOptions {
  /** Where each number's outbound trunk is kept (the calls domain's table items). */
  trunks: TrunkStore;
  /** LIVEKIT_URL; the setting when not given (tests pass a fake's URL). */
  url?: string;
  /** LIVEKIT_AGENT_NAME; the setting when not given. */
  agentName?: string;
}

/** The process's sandbox, one instance so its recorded operations can be inspected. */
let sandbox: SandboxMedia | undefined;

/**
 * The media layer the settings name, per call: LiveKit when LIVEKIT_URL is set, else the
 * sandbox. The credentials are read each time (the vendor secret is cached for a minute),
 * so a rotated LiveKit secret is picked up without a restart. The LiveKit implementation is
 * loaded only when used, so the sandbox never loads the SDK's service clients.
 */
export async function mediaAdapter(options: MediaAdapterOptions): Promise<MediaAdapter> {
  const url = options.url ?? config.LIVEKIT_URL;
  if (!url) return sandboxMedia();
  const [{ LiveKitMedia }, credentials] = await Promise.all([import('./livekit.ts'), readLiveKitCredentials(options)]);
  return new LiveKitMedia({
    ...credentials,
    url,
    agentName: options.agentName ?? config.LIVEKIT_AGENT_NAME,
    trunks: options.trunks,
    reportAccess: async (callId) => ({
      report_url: workerReportUrl(callId),
      report_token: await workerReportToken(callId, options),
    }),
  });
}

/** The process's sandbox media layer (what mediaAdapter answers without LIVEKIT_URL). */
export function sandboxMedia(): SandboxMedia {
  sandbox ??= new SandboxMedia();
  return sandbox;
}
export {
  MAX_REPORT_UTTERANCES,
  MAX_WORKER_ENTRY_BYTES,
  MAX_WORKER_REPORT_BYTES,
  MAX_LATENCY_VALUES,
  workerEventSchema,
  
  WORKER_END_REASONS,
  type WorkerEvent,
  type WorkerLatency,
  type WorkerUtterance,
} from './worker-events.ts';
