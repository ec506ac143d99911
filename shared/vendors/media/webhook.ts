import type { WebhookEventNames } from 'livekit-server-sdk';
import { Unauthorized } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import { readLiveKitCredentials, type CredentialOptions } from './credentials.ts';
import { loadLiveKitSdk } from './sdk.ts';

/**
 * A LiveKit webhook, reduced to what the call engine reads. LiveKit posts JSON (protobuf's
 * JSON form) with an `Authorization` header holding a JWT signed with the API secret whose
 * `sha256` claim is the body's SHA-256 (base64); WebhookReceiver checks both.
 */
export interface MediaWebhookEvent {
  /** LiveKit's event ID: the key for dropping a redelivered event. */
  id: string;
  event: Exclude<WebhookEventNames, ''>;
  /** Epoch ms LiveKit stamped on the event. */
  created_at: number;
  room?: { name: string; sid: string; metadata: string };
  participant?: {
    identity: string;
    sid: string;
    /** LiveKit's participant kind, lower case: `standard` (a browser), `sip`, `agent`, `ingress`, `egress`. */
    kind: string;
    attributes: Record<string, string>;
    /** Why it left (participant_left), LiveKit's DisconnectReason name, e.g. `CLIENT_INITIATED`. */
    disconnect_reason?: string;
  };
  /** An Egress (a room's recording): egress_started, egress_updated, egress_ended. */
  egress?: {
    egress_id: string;
    room_name: string;
    /** LiveKit's EgressStatus name: `EGRESS_COMPLETE`, `EGRESS_FAILED`, `EGRESS_ABORTED`, `EGRESS_LIMIT_REACHED`, … */
    status: string;
    /** The file's length (its first file result), ms. */
    duration_ms: number;
    error?: string;
  };
}

/**
 * Verifies and parses one webhook: the raw body exactly as received and its Authorization
 * header (LiveKit sends the bare JWT; a `Bearer ` prefix is accepted too). A missing,
 * malformed, expired or wrongly signed header, or a body that does not match its hash, is
 * 401; the reason goes to the logs only.
 */
export async function verifyMediaWebhook(
  rawBody: string,
  authorization: string | undefined,
  options: CredentialOptions = {},
): Promise<MediaWebhookEvent> {
  const token = authorization?.replace(/^Bearer /i, '').trim();
  if (!token) throw new Unauthorized();
  const [{ apiKey, apiSecret }, { WebhookReceiver }] = await Promise.all([readLiveKitCredentials(options), loadLiveKitSdk()]);
  let parsed;
  try {
    parsed = await new WebhookReceiver(apiKey, apiSecret).receive(rawBody, token);
  } catch (error) {
    logger.warn('LiveKit webhook refused', { reason: error instanceof Error ? error.message : String(error) });
    throw new Unauthorized();
  }
  const json = parsed.toJson() as WebhookJson;
  if (!json.event) throw new Unauthorized();
  const event: MediaWebhookEvent = {
    id: json.id ?? '',
    event: json.event as MediaWebhookEvent['event'],
    created_at: Number(json.createdAt ?? 0) * 1000,
  };
  if (json.room) event.room = { name: json.room.name ?? '', sid: json.room.sid ?? '', metadata: json.room.metadata ?? '' };
  if (json.participant) {
    event.participant = {
      identity: json.participant.identity ?? '',
      sid: json.participant.sid ?? '',
      kind: (json.participant.kind ?? 'STANDARD').toLowerCase(),
      attributes: json.participant.attributes ?? {},
      ...(json.participant.disconnectReason ? { disconnect_reason: json.participant.disconnectReason } : {}),
    };
  }
  if (json.egressInfo) {
    const file = json.egressInfo.fileResults?.[0] ?? json.egressInfo.file;
    event.egress = {
      egress_id: json.egressInfo.egressId ?? '',
      room_name: json.egressInfo.roomName ?? '',
      status: json.egressInfo.status ?? 'EGRESS_STARTING',
      // protobuf's JSON writes int64 nanoseconds as a string.
      duration_ms: Math.round(Number(file?.duration ?? 0) / 1e6),
      ...(json.egressInfo.error ? { error: json.egressInfo.error } : {}),
    };
  }
  return event;
}

/** The fields read from protobuf's JSON form of livekit.WebhookEvent (defaults are omitted there). */
interface WebhookJson {
  id?: string;
  event?: string;
  createdAt?: string;
  room?: { name?: string; sid?: string; metadata?: string };
  participant?: {
    identity?: string;
    sid?: string;
    kind?: string;
    attributes?: Record<string, string>;
    disconnectReason?: string;
  };
  egressInfo?: {
    egressId?: string;
    roomName?: string;
    status?: string;
    error?: string;
    fileResults?: { duration?: string; size?: string; filename?: string }[];
    file?: { duration?: string; size?: string; filename?: string };
  };
}
