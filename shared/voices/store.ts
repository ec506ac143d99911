import { notFound } from '../platform/errors.ts';
import { keys } from '../platform/store/keys.ts';
import { defineEntity } from '../platform/store/table.ts';
import type { Gender, VoiceProvider } from '../vendors/voice/voice-vendor.ts';

/*
 * The voices domain's items, each declared once with its key (the keys themselves are
 * built in shared/platform/store/keys.ts). Domain modules reach the table through these
 * and `table` (shared/platform/store/table.ts), never through key strings of their own.
 */

/** A workspace's own voice (cloned, or added from a community library), in its configuration partition. */
export type WorkspaceVoiceItem = {
  pk: string;
  sk: string;
  voice_id: string;
  voice_name: string;
  provider: VoiceProvider;
  provider_voice_id: string;
  source: 'clone' | 'community';
  public_user_id?: string;
  gender: Gender;
  accent?: string;
  age?: string;
  preview_audio_url?: string;
  created_timestamp: number;
};

const voiceNotFound = () => notFound('Voice not found');

/** Another workspace's voice is simply not found: the key is in the workspace's partition. */
export const workspaceVoices = defineEntity<WorkspaceVoiceItem, [workspaceId: string, voiceId: string]>({
  key: keys.workspaceVoice,
  notFound: voiceNotFound,
});
export const workspaceVoicesOf = keys.workspaceVoices;
