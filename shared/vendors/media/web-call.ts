import { config, type IceServer } from '../../platform/config.ts';
import { readLiveKitCredentials, type CredentialOptions } from './credentials.ts';
import { loadLiveKitSdk } from './sdk.ts';

/** Where `livekit-server --dev` listens: the URL web calls get when LIVEKIT_URL is unset. */
export const LOCAL_LIVEKIT_URL = 'ws://127.0.0.1:7880';
/** Spec Limits: a web call token is valid 1 hour. */
const WEB_CALL_TOKEN_TTL_SECONDS = 3600;

/** What create-web-call adds to the call object (spec, "Web call (create response)"). */
export interface WebCallAccess {
  access_token: string;
  /** Epoch ms of the token's expiry: exactly its `exp` claim. */
  expires_at: number;
  livekit_url: string;
  transport: 'livekit';
  ice_servers: IceServer[];
}

export interface WebCallAccessOptions extends CredentialOptions {
  /** The participant's display name in the room. */
  name?: string;
}

/**
 * A LiveKit access token for the browser that joins the call's room (named after the
 * call_id). It may join that room only, publish and subscribe to audio and send data
 * (the web client's events); it cannot create, list or administer rooms. It is made in
 * both modes: without a media server the call and its token still exist (the sandbox runs
 * the call; a local `livekit-server --dev` would accept the token).
 */
export async function webCallAccess(
  callId: string,
  identity: string,
  options: WebCallAccessOptions = {},
): Promise<WebCallAccess> {
  const [{ apiKey, apiSecret }, { AccessToken }] = await Promise.all([readLiveKitCredentials(options), loadLiveKitSdk()]);
  const token = new AccessToken(apiKey, apiSecret, {
    identity,
    ttl: WEB_CALL_TOKEN_TTL_SECONDS,
    ...(options.name ? { name: options.name } : {}),
  });
  token.addGrant({ room: callId, roomJoin: true, canPublish: true, canSubscribe: true, canPublishData: true });
  const jwt = await token.toJwt();
  return {
    access_token: jwt,
    expires_at: expiryOf(jwt) * 1000,
    livekit_url: config.LIVEKIT_URL ?? LOCAL_LIVEKIT_URL,
    transport: 'livekit',
    ice_servers: config.WEB_CALL_ICE_SERVERS,
  };
}

/**
 * Whether `token` is a valid, unexpired web call token for `callId` (signed with our LiveKit
 * credentials, for that call's room and its web user): what the public call routes ask
 * for instead of a key (docs/browser.md).
 */
export async function verifyWebCallAccess(callId: string, token: string, options: CredentialOptions = {}): Promise<boolean> {
  if (token.length > 4096) return false;
  const [{ apiKey, apiSecret }, { TokenVerifier }] = await Promise.all([readLiveKitCredentials(options), loadLiveKitSdk()]);
  try {
    const claims = await new TokenVerifier(apiKey, apiSecret).verify(token);
    return claims.video?.room === callId && claims.sub === `web_user_${callId}`;
  } catch {
    return false;
  }
}

/** The `exp` claim (epoch seconds) of a JWT the SDK just signed, so expires_at never drifts from it. */
function expiryOf(jwt: string): number {
  const payload = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: unknown };
  if (typeof payload.exp !== 'number') throw new Error('LiveKit access token has no exp claim');
  return payload.exp;
}

/** What listen and take-over answer (retell-sdk CallListenLiveResponse): the token and where to use it. */
export interface LiveAccess {
  access_token: string;
  expires_at: number;
  participant_id: string;
  room_name: string;
  transport: 'livekit';
  url: string;
  ice_servers: IceServer[];
}

/**
 * A token for a live viewer of a call's room: `publish: false` joins subscribe-only (hears
 * the call, cannot speak, cannot send data, hidden from the other participants); `publish:
 * true` is a supervisor who took the call over (speaks to the caller). Valid for an hour,
 * like a web call's. The identity is the viewer's participant_id.
 */
export async function liveAccess(
  room: string,
  participantId: string,
  options: CredentialOptions & { publish: boolean },
): Promise<LiveAccess> {
  const [{ apiKey, apiSecret }, { AccessToken }] = await Promise.all([readLiveKitCredentials(options), loadLiveKitSdk()]);
  const token = new AccessToken(apiKey, apiSecret, { identity: participantId, ttl: WEB_CALL_TOKEN_TTL_SECONDS });
  token.addGrant({
    room,
    roomJoin: true,
    canSubscribe: true,
    canPublish: options.publish,
    canPublishData: options.publish,
    hidden: !options.publish,
  });
  const jwt = await token.toJwt();
  return {
    access_token: jwt,
    expires_at: expiryOf(jwt) * 1000,
    participant_id: participantId,
    room_name: room,
    transport: 'livekit',
    url: config.LIVEKIT_URL ?? LOCAL_LIVEKIT_URL,
    ice_servers: config.WEB_CALL_ICE_SERVERS,
  };
}
