import { getAgent } from '../../agents/lookups/index.ts';
import { objectStore, retentionTagging } from '../../platform/aws/object-store.ts';
import { config } from '../../platform/config.ts';
import { badRequest, notFound, NotFound } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import { objectKeys } from '../../platform/store/keys.ts';
import type { RecordingUrlView } from './schemas.ts';
import { CALL_STATUSES, DATA_STORAGE_SETTINGS } from '../schemas.ts';
import { recordRoom } from '../engine/media.ts';
import { findCallItem, getCallItem, transitionCall, type CallItem, type RecordingState } from '../store.ts';
import { withTranscript } from '../transcript.ts';

;

/*
 * Call recordings (docs/calls.md, Call artifacts). The bytes live in the object store (the
 * recordings bucket in AWS, a folder under DATA_DIR locally); the call item keeps where
 * (`recording`, never answered) and `recording_url`, a signed URL made when the recording
 * was stored. `GET /get-call-recording-url/{call_id}` signs a fresh one.
 *
 * The sandbox has no audio, so it writes a synthetic WAV at the call's end: PCM 16-bit,
 * 8 kHz mono, as long as the call (capped at MAX_SYNTHETIC_RECORDING_MS), one tone per
 * transcript turn (the agent at 440 Hz, the user at 660 Hz), silence between. It is a
 * stand-in that lets clients exercise downloads, players and scrubbing, not a recording
 * of anything. On LiveKit, Egress records the room into the bucket (media.ts startRecording).
 */

const RECORDING_SAMPLE_RATE = 8000;
/** A synthetic recording stops here (about 9.6 MB of PCM): a sandbox call may be scripted to last an hour. */
const MAX_SYNTHETIC_RECORDING_MS = 10 * 60_000;
/** The agent's `signed_url_expiration_ms` when it sets none (retell-sdk: 24 hours). */
const DEFAULT_SIGNED_URL_EXPIRATION_MS = 86_400_000;

/** What the call's agent says about its artifacts (the version the call ran; defaults when it is gone). */
export interface ArtifactSettings {
  signedUrlExpirationMs: number;
  retentionDays?: number;
  dataStorage: 'everything' | 'everything_except_pii' | 'basic_attributes_only';
  piiCategories?: string[];
}

export async function artifactSettings(call: Pick<CallItem, 'workspace_id' | 'agent_id' | 'agent_version' | 'data_storage_setting'>): Promise<ArtifactSettings> {
  // A deleted agent leaves the defaults; a store that did not answer must not (it would drop the PII settings).
  const agent = (await getAgent(call.workspace_id, call.agent_id, call.agent_version).catch((error: unknown) => {
    if (error instanceof NotFound) return undefined;
    throw error;
  })) as Record<string, unknown> | undefined;
  const pii = agent?.pii_config as { categories?: unknown } | undefined;
  return {
    signedUrlExpirationMs: (agent?.signed_url_expiration_ms as number | null | undefined) ?? DEFAULT_SIGNED_URL_EXPIRATION_MS,
    retentionDays: (agent?.data_storage_retention_days as number | null | undefined) ?? undefined,
    // The call's own setting (update-call) wins over its agent's; unset everywhere keeps everything.
    dataStorage: call.data_storage_setting ?? (agent?.data_storage_setting as ArtifactSettings['dataStorage'] | undefined) ?? 'everything',
    piiCategories: Array.isArray(pii?.categories) ? pii.categories.filter((c): c is string => typeof c === 'string') : undefined,
  };
}

/**
 * 400 when `next` would keep more than the call's data storage setting (its own, else its
 * agent version's) keeps (update-call, update-live-call): what a stricter setting removed
 * cannot come back, and the call would claim a setting its stored data does not follow.
 */
export async function assertNotLooser(call: Pick<CallItem, 'workspace_id' | 'agent_id' | 'agent_version' | 'data_storage_setting'>, next: ArtifactSettings['dataStorage']): Promise<void> {
  const { dataStorage } = await artifactSettings(call);
  if (DATA_STORAGE_SETTINGS.indexOf(next) < DATA_STORAGE_SETTINGS.indexOf(dataStorage)) {
    throw badRequest(`data_storage_setting: Cannot change from ${dataStorage} to the less restrictive ${next}`);
  }
}

// ---------------------------------------------------------------------------------------
// The sandbox's synthetic WAV

interface Segment {
  turn: number;
  role: 'agent' | 'user';
  startMs: number;
  endMs: number;
}

const MS_PER_WORD = 320;
const MIN_TURN_MS = 600;
const GAP_MS = 300;

/**
 * Where each transcript turn sits in the recording: lengths by word count, laid end to end
 * with a gap, squeezed to fit the call's length. Derived from the transcript alone, so a
 * scrubbed recording silences exactly the turns the original toned.
 */
function turnSegments(turns: readonly { role: string; content: string }[], durationMs: number): Segment[] {
  const lengths = turns.map((turn) => Math.max(MIN_TURN_MS, turn.content.split(/\s+/).filter(Boolean).length * MS_PER_WORD));
  const natural = lengths.reduce((sum, ms) => sum + ms + GAP_MS, GAP_MS);
  const scale = natural > durationMs && natural > 0 ? durationMs / natural : 1;
  const segments: Segment[] = [];
  let at = GAP_MS * scale;
  turns.forEach((turn, index) => {
    const length = lengths[index]! * scale;
    if (turn.role === 'agent' || turn.role === 'user') segments.push({ turn: index, role: turn.role, startMs: at, endMs: at + length });
    at += length + GAP_MS * scale;
  });
  return segments;
}

/** A WAV file (RIFF, PCM 16-bit little-endian, 8 kHz, mono) of the call's length with a tone per turn not in `silenced`. */
export function syntheticRecording(
  turns: readonly { role: string; content: string }[],
  durationMs: number,
  silenced: ReadonlySet<number> = new Set(),
): Buffer {
  const lengthMs = Math.min(Math.max(0, durationMs), MAX_SYNTHETIC_RECORDING_MS);
  const samples = Math.round((lengthMs * RECORDING_SAMPLE_RATE) / 1000);
  const data = Buffer.alloc(samples * 2);
  const fade = RECORDING_SAMPLE_RATE / 100; // 10 ms ramps, so tones start and stop without clicks
  for (const segment of turnSegments(turns, lengthMs)) {
    if (silenced.has(segment.turn)) continue;
    const frequency = segment.role === 'agent' ? 440 : 660;
    const from = Math.floor((segment.startMs * RECORDING_SAMPLE_RATE) / 1000);
    const to = Math.min(samples, Math.floor((segment.endMs * RECORDING_SAMPLE_RATE) / 1000));
    for (let i = from; i < to; i++) {
      const ramp = Math.min(1, (i - from) / fade, (to - i) / fade);
      const value = Math.round(Math.sin((2 * Math.PI * frequency * (i - from)) / RECORDING_SAMPLE_RATE) * 0.3 * 32767 * ramp);
      data.writeInt16LE(value, i * 2);
    }
  }
  return Buffer.concat([wavHeader(data.length), data]);
}

function wavHeader(dataBytes: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16); // PCM format chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(RECORDING_SAMPLE_RATE, 24);
  header.writeUInt32LE(RECORDING_SAMPLE_RATE * 2, 28); // byte rate
  header.writeUInt16LE(2, 32); // block align
  header.writeUInt16LE(16, 34); // bits per sample
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(dataBytes, 40);
  return header;
}

// ---------------------------------------------------------------------------------------
// Storing and signing

/**
 * Writes the sandbox's recording of an ended call and records it on the call (`recording`,
 * `recording_url`). Called by finishCall before call_ended is sent, so the webhook carries
 * the URL. Never fails the call's end: a store that does not answer is logged, and the call
 * simply has no recording. Calls whose data storage setting is `basic_attributes_only` keep none.
 */
export async function recordSandboxCall(call: CallItem): Promise<CallItem> {
  if (call.engine.media === 'livekit' || call.call_status !== 'ended' || !call.duration_ms) return call;
  try {
    const settings = await artifactSettings(call);
    if (settings.dataStorage === 'basic_attributes_only') return call;
    const key = objectKeys.callArtifact(call.workspace_id, call.call_id, 'recording.wav');
    const wav = syntheticRecording((await withTranscript(call)).transcript_object ?? [], call.duration_ms);
    const store = objectStore();
    await store.put(key, wav, 'audio/wav', { retentionDays: settings.retentionDays });
    const recording: RecordingState = {
      key,
      content_type: 'audio/wav',
      synthetic: true,
      duration_ms: Math.min(call.duration_ms, MAX_SYNTHETIC_RECORDING_MS),
    };
    const url = await store.signedUrl(key, Date.now() + settings.signedUrlExpirationMs, { downloadName: `${call.call_id}.wav` });
    return (await transitionCall(call.call_id, { from: ['ended'], set: { recording, recording_url: url } })) ?? call;
  } catch (error) {
    logger.warn('storing the sandbox recording failed; the call has none', { call_id: call.call_id, error: error as Error });
    return call;
  }
}

/** `GET /get-call-recording-url/{call_id}`: a fresh signed URL, valid for the agent's `signed_url_expiration_ms`. */
export async function getCallRecordingUrl(workspaceId: string, callId: string): Promise<RecordingUrlView> {
  const call = await getCallItem(workspaceId, callId);
  const recording = call.recording;
  if (recording?.removed) {
    throw notFound(
      call.data_storage_applied === 'basic_attributes_only'
        ? `Call ${callId} keeps no recording: its data storage setting is basic_attributes_only`
        : `The recording of call ${callId} was removed with its sensitive data`,
    );
  }
  if (!recording || recording.failed || (recording.egress_id && !recording.ready)) {
    throw notFound(
      call.call_status === 'registered' || call.call_status === 'ongoing'
        ? `Call ${callId} has no recording yet: it is ${call.call_status}`
        : `Call ${callId} has no recording`,
    );
  }
  const settings = await artifactSettings(call);
  const expiresAt = Date.now() + settings.signedUrlExpirationMs;
  const extension = recording.content_type === 'audio/wav' ? 'wav' : 'ogg';
  return {
    call_id: callId,
    recording_url: await objectStore().signedUrl(recording.key, expiresAt, { downloadName: `${callId}.${extension}` }),
    expires_at: expiresAt,
    content_type: recording.content_type,
    duration_ms: recording.duration_ms,
    synthetic: recording.synthetic,
    scrubbed: (recording.silenced_turns?.length ?? 0) > 0 || call.scrubbed_timestamp !== undefined,
  };
}

/** The setting the media layer's recorder needs; undefined when recordings cannot be made there. */
const egressRoleArn = (): string | undefined => (config.RECORDINGS_BUCKET ? config.RECORDINGS_EGRESS_ROLE_ARN : undefined);

// ---------------------------------------------------------------------------------------
// LiveKit calls: Egress records the room into the bucket

/**
 * Starts recording a LiveKit call that just became ongoing: a room composite Egress (audio
 * only, OGG) writes `recordings/<ws>/<call>/recording.ogg` into the recordings bucket under
 * RECORDINGS_EGRESS_ROLE_ARN, tagged for the agent's retention. The call keeps the egress
 * ID; the file is there once LiveKit's `egress_ended` webhook says so (finishRoomRecording).
 * Without the bucket and the role (locally, or not configured) LiveKit calls are not
 * recorded. A refused start is logged and the call goes on without a recording.
 */
export async function startRoomRecording(call: CallItem): Promise<CallItem> {
  const roleArn = egressRoleArn();
  if (call.engine.media !== 'livekit' || !roleArn || call.recording) return call;
  try {
    const settings = await artifactSettings(call);
    if (settings.dataStorage === 'basic_attributes_only') return call;
    const key = objectKeys.callArtifact(call.workspace_id, call.call_id, 'recording.ogg');
    const egressId = await recordRoom(call, {
      bucket: config.RECORDINGS_BUCKET!,
      region: config.AWS_REGION,
      key,
      role_arn: roleArn,
      ...(settings.retentionDays ? { tagging: retentionTagging(settings.retentionDays) } : {}),
    });
    const recording: RecordingState = { key, content_type: 'audio/ogg', synthetic: false, duration_ms: 0, egress_id: egressId };
    return (await transitionCall(call.call_id, { from: ['ongoing'], set: { recording } })) ?? call;
  } catch (error) {
    logger.warn('starting the recording of a LiveKit call failed; the call has none', { call_id: call.call_id, error: error as Error });
    return call;
  }
}

const EGRESS_DONE = new Set(['EGRESS_COMPLETE', 'EGRESS_LIMIT_REACHED']);

/**
 * LiveKit's `egress_ended` for a call's recording: complete (or stopped at LiveKit's
 * limit, the file holding what was recorded) marks it ready with its length and a signed
 * URL; failed or aborted removes it from the call (there is no file). An egress that is
 * not the call's current one is ignored, so a redelivered or stale webhook changes nothing.
 */
export async function finishRoomRecording(callId: string, egress: { egress_id: string; status: string; duration_ms: number; error?: string }): Promise<string> {
  const call = await findCallItem(callId);
  const recording = call?.recording;
  if (!call || !recording || recording.egress_id !== egress.egress_id) return 'ignored: not a call\'s recording';
  if (recording.ready) return 'ignored: already recorded';
  if (recording.removed) {
    // Removed (scrubbing, or the data storage setting) before LiveKit wrote the file: the file goes as it lands.
    if (EGRESS_DONE.has(egress.status)) await objectStore().delete(recording.key);
    return 'removed: the recording was removed before it was written';
  }
  if (!EGRESS_DONE.has(egress.status)) {
    logger.warn('the recording of a LiveKit call failed; the call has none', { call_id: call.call_id, status: egress.status, error: egress.error });
    await transitionCall(call.call_id, { from: CALL_STATUSES, set: { recording: { ...recording, failed: true } } });
    return 'recording failed';
  }
  const settings = await artifactSettings(call);
  const url = await objectStore().signedUrl(recording.key, Date.now() + settings.signedUrlExpirationMs, { downloadName: `${call.call_id}.ogg` });
  await transitionCall(call.call_id, { from: CALL_STATUSES, set: { recording: { ...recording, ready: true, duration_ms: egress.duration_ms }, recording_url: url } });
  return 'recorded';
}
