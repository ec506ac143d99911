import { describe, expect, it } from 'vitest';
import { startLiveKitTestApp, signedWebhook } from '../support/fake-livekit.ts';
import { call } from '../support/http.ts';
import { newAgent } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';

/*
 * LiveKit calls are recorded by LiveKit Egress straight into the recordings bucket
 * (docs/calls.md, Call artifacts): started when the call goes live, ready when LiveKit's
 * egress_ended webhook says the file is written.
 */
const BUCKET = 'parley-recordings-test';
const ROLE = 'arn:aws:iam::123456789012:role/livekit-egress';
// With a bucket, URLs are S3 presigned URLs: signing is local, with any credentials.
const { livekit, app } = await startLiveKitTestApp({
  RECORDINGS_BUCKET: BUCKET,
  RECORDINGS_EGRESS_ROLE_ARN: ROLE,
  AWS_REGION: 'ap-southeast-2',
  AWS_ACCESS_KEY_ID: 'AKIAPARLEYTEST000000',
  AWS_SECRET_ACCESS_KEY: 'parley-test-secret-not-real',
});

async function livekitEvent(event: Record<string, unknown>) {
  const signed = await signedWebhook(event);
  return call(app.url, 'POST', '/livekit/webhook', { rawBody: signed.body, headers: { 'content-type': 'application/json', authorization: signed.authorization } });
}

async function liveWebCall(agentFields: Record<string, unknown> = {}) {
  const ws = await app.newWorkspace();
  const { agent } = await newAgent(ws.api, { agent: agentFields });
  const client = retellClient(app.url, ws.api_key);
  const web: any = await client.call.createWebCall({ agent_id: agent.agent_id });
  const joined = await livekitEvent({ event: 'participant_joined', room: { name: web.call_id }, participant: { identity: 'web_user', kind: 'STANDARD' } });
  expect(joined.body).toEqual({ applied: 'ongoing' });
  const egress = livekit.calls('Egress/StartRoomCompositeEgress').find((request) => request.body.roomName === web.call_id);
  return { ws, client, callId: web.call_id as string, egress, workspaceId: ws.workspace_id as string };
}

const ended = (egressId: string, roomName: string, status: string, durationNs = '0') =>
  livekitEvent({ event: 'egress_ended', egressInfo: { egressId, roomName, status, fileResults: [{ filename: 'recording.ogg', duration: durationNs }] } });

describe('recording a LiveKit call with Egress', () => {
  it('starts an audio-only room egress into the bucket when the call goes live, and serves it once LiveKit says it is written', async () => {
    const { ws, callId, egress } = await liveWebCall({ data_storage_retention_days: 30 });
    expect(egress).toBeDefined();
    expect(egress!.body).toMatchObject({
      roomName: callId,
      audioOnly: true,
      file: {
        fileType: 'OGG',
        filepath: expect.stringMatching(new RegExp(`^recordings/[^/]+/${callId}/recording\\.ogg$`)),
        s3: { bucket: BUCKET, region: 'ap-southeast-2', assumeRoleArn: ROLE, tagging: 'retention_days=30' },
      },
    });
    // No key or secret travels with the request.
    expect(JSON.stringify(egress!.body)).not.toMatch(/accessKey|secret/i);

    const early = await ws.api.get(`/get-call-recording-url/${callId}`);
    expect(early.status).toBe(404);
    expect(early.body.message).toBe(`Call ${callId} has no recording yet: it is ongoing`);

    // Another egress's end, or one for a room that is no call, changes nothing.
    expect((await ended('EG_someone_else', callId, 'EGRESS_COMPLETE')).body).toEqual({ applied: "ignored: not a call's recording" });
    expect((await ended('EG_x', 'no-such-room', 'EGRESS_COMPLETE')).body).toEqual({ applied: "ignored: not a call's recording" });

    const egressId = `EG_${callId}`;
    expect((await ended(egressId, callId, 'EGRESS_COMPLETE', '12345000000')).body).toEqual({ applied: 'recorded' });
    expect((await ended(egressId, callId, 'EGRESS_COMPLETE', '12345000000')).body).toEqual({ applied: 'ignored: already recorded' });
    const url = await ws.api.get(`/get-call-recording-url/${callId}`);
    expect(url.status).toBe(200);
    expect(url.body).toMatchObject({ call_id: callId, content_type: 'audio/ogg', duration_ms: 12345, synthetic: false, scrubbed: false });
    expect(url.body.recording_url).toContain(`${BUCKET}`);
    expect(url.body.recording_url).toContain(`${callId}/recording.ogg`);
    expect((await ws.api.get(`/v2/get-call/${callId}`)).body.recording_url).toContain(`${callId}/recording.ogg`);
  });

  it('a failed egress leaves the call without a recording', async () => {
    const { ws, callId, egress } = await liveWebCall();
    expect(egress).toBeDefined();
    expect((await ended(`EG_${callId}`, callId, 'EGRESS_FAILED')).body).toEqual({ applied: 'recording failed' });
    const url = await ws.api.get(`/get-call-recording-url/${callId}`);
    expect(url.status).toBe(404);
    expect(url.body.message).toBe(`Call ${callId} has no recording yet: it is ongoing`);
  });

  it('records nothing when the agent keeps basic attributes only, and a refused egress does not stop the call', async () => {
    const basic = await liveWebCall({ data_storage_setting: 'basic_attributes_only' });
    expect(basic.egress).toBeUndefined();

    livekit.failNext('Egress/StartRoomCompositeEgress', { status: 500, code: 'internal', msg: 'egress unavailable' });
    const refused = await liveWebCall();
    expect((await refused.ws.api.get(`/v2/get-call/${refused.callId}`)).body.call_status).toBe('ongoing');
    expect((await refused.ws.api.get(`/get-call-recording-url/${refused.callId}`)).status).toBe(404);
  });
});
