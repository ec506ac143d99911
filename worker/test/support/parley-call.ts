import { createServer } from 'node:net';
import { expect } from 'vitest';
import { signedWebhook, startLiveKitTestApp } from '../../../test/support/fake-livekit.ts';
import { call } from '../../../test/support/http.ts';
import { retellClient } from '../../../test/support/sdk.ts';
import type { DispatchMetadata } from '../../../shared/vendors/media/index.ts';

/*
 * A real local Parley in LiveKit mode (its media server the fake LiveKit Twirp server), and
 * calls on it as the worker meets them: the dispatch metadata Parley sent to LiveKit, with
 * its report URL and token, for a call that is live.
 */

export type ParleyApp = Awaited<ReturnType<typeof startLiveKitTestApp>>;

/**
 * Starts it on a port chosen first, so the report URL Parley hands the worker
 * (PUBLIC_BASE_URL's local default, `http://127.0.0.1:<PORT>`) leads back to it.
 */
export async function startParley(settings: Record<string, string> = {}): Promise<ParleyApp> {
  return startLiveKitTestApp({ PORT: String(await freePort()), ...settings });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A web call created through the API, its caller joined (so it is `ongoing`), and the metadata its dispatch carried. */
export async function liveWebCall(parley: ParleyApp, apiKey: string, body: Record<string, unknown>): Promise<DispatchMetadata> {
  const { app, livekit } = parley;
  const web: any = await retellClient(app.url, apiKey).call.createWebCall(body as never);
  const dispatch = livekit.calls('AgentDispatchService/CreateDispatch').find((req) => req.body.room === web.call_id)!;
  const metadata = JSON.parse(dispatch.body.metadata) as DispatchMetadata;
  const signed = await signedWebhook({ event: 'participant_joined', room: { name: web.call_id }, participant: { identity: 'web_user', kind: 'STANDARD' } });
  const joined = await call(app.url, 'POST', '/livekit/webhook', {
    rawBody: signed.body,
    headers: { 'content-type': 'application/json', authorization: signed.authorization },
  });
  expect(joined.body).toEqual({ applied: 'ongoing' });
  return metadata;
}

/** The call as the API answers it. */
export async function readCall(parley: ParleyApp, apiKey: string, callId: string): Promise<any> {
  return retellClient(parley.app.url, apiKey).call.retrieve(callId);
}
