import { AccessToken } from 'livekit-server-sdk';

// PLACEHOLDER until the media adapter lands (branch media).
export type DialOutcome =
  | { connected: true; voicemail?: boolean }
  | { connected: false; disconnection_reason: 'dial_busy' | 'dial_no_answer' | 'dial_failed' };

export function mediaKind(): 'sandbox' | 'livekit' {
  return 'sandbox';
}

export async function dialOut(input: { callId: string; fromNumber: string; toNumber: string }): Promise<DialOutcome> {
  const lastFour = input.toNumber.slice(-4);
  if (lastFour === '0001') return { connected: false, disconnection_reason: 'dial_busy' };
  if (lastFour === '0002') return { connected: false, disconnection_reason: 'dial_no_answer' };
  if (lastFour === '0004') return { connected: false, disconnection_reason: 'dial_failed' };
  if (lastFour === '0003') return { connected: true, voicemail: true };
  return { connected: true };
}

export async function endMedia(_callId: string): Promise<void> {}

export async function webCallAccess(callId: string) {
  const token = new AccessToken('devkey', 'secret', { identity: `user_${callId}`, ttl: 3600 });
  token.addGrant({ room: callId, roomJoin: true, canPublish: true, canSubscribe: true });
  return {
    access_token: await token.toJwt(),
    expires_at: Date.now() + 3_600_000,
    livekit_url: 'ws://127.0.0.1:7880',
    transport: 'livekit' as const,
    ice_servers: [{ urls: ['stun:stun.l.google.com:19302'] }],
  };
}
