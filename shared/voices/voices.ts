import { randomBytes } from 'node:crypto';
import type { Principal } from '../platform/auth/gate.ts';
import { badRequest, Invalid, notFound, payloadTooLarge } from '../platform/errors.ts';
import type { UploadedFile } from '../platform/http/multipart.ts';
import { createPresignedUpload, readUpload, withClaimedUploads, type PresignedUpload } from '../platform/uploads.ts';
import { CLONE_MAX_TOTAL_BYTES, CLONE_UPLOAD_LIMITS, isAudioUpload, type AddCommunityVoiceInput, type CloneVoiceInput, type SearchCommunityInput, type Voice } from './schemas.ts';
import { workspaceVoices, type WorkspaceVoiceItem } from './store.ts';
import {
  COMMUNITY_PROVIDERS,
  voiceVendorFor,
  type CommunityProvider,
  type Gender,
  type VendorVoice,
  type VoiceProvider,
} from '../vendors/voice/voice-vendor.ts';

export {
  assertVoiceUsable,
  
  DEFAULT_VOICE_ID,
  DEFAULT_VOICE_MODEL,
  getVoice,
  listVoices,
  
  VOICE_CATALOGUE,
  
  
  
} from './voice-catalogue.ts';
import { catalogueVoice, fromItem, toVoice, VOICE_ID_PREFIX } from './voice-catalogue.ts';

/*
 * The vendor-backed voice operations (previews of workspace voices, cloning, community
 * voices). The catalogue and voice lookups agents need live in voice-catalogue.ts, which
 * does not import the vendor clients or their credentials.
 */
/**
 * A playable preview: the catalogue's synthesized tone for built-in voices; for the
 * workspace's own, the vendor's current preview (vendor preview links may be signed and
 * expire), falling back to the one stored when the voice was created.
 */
export async function previewVoice(workspaceId: string, voiceId: string) {
  const builtIn = catalogueVoice(voiceId);
  if (builtIn) return { voice_id: voiceId, preview_audio_url: toVoice(builtIn).preview_audio_url! };
  const item = await workspaceVoices.mustGet(workspaceId, voiceId);
  const vendor = await voiceVendorFor(item.provider);
  const url = (await vendor.preview({ provider: item.provider, providerVoiceId: item.provider_voice_id })) ?? item.preview_audio_url;
  if (!url) throw notFound('This voice has no preview yet');
  return { voice_id: voiceId, preview_audio_url: url };
}

/**
 * POST /create-voice-clone-upload: a presigned PUT for one voice sample past API Gateway's
 * ~6 MB request limit (shared/platform/uploads.ts). The sample is checked as a multipart file
 * is (audio by its declared type, or a generic type with an audio extension; 10 MB), then
 * named in clone-voice's `upload_ids`.
 */
export async function createVoiceCloneUpload(
  workspaceId: string,
  input: { filename: string; content_type?: string; content_length: number; checksum_sha256?: string },
  nowMs = Date.now(),
): Promise<PresignedUpload> {
  const maxBytes = CLONE_UPLOAD_LIMITS.maxFileBytes;
  if (input.content_length > maxBytes) throw payloadTooLarge(`File "${input.filename}" exceeds the ${maxBytes / (1024 * 1024)} MB limit per file`);
  const contentType = input.content_type ?? 'application/octet-stream';
  if (!isAudioUpload({ filename: input.filename, contentType, size: input.content_length, data: Buffer.alloc(0) })) {
    throw badRequest(`File "${input.filename}" is ${contentType}; only audio files (audio/*) are accepted`);
  }
  return createPresignedUpload(
    workspaceId,
    { purpose: 'voice_sample', filename: input.filename, contentType, contentLength: input.content_length, ...(input.checksum_sha256 ? { checksumSha256: input.checksum_sha256 } : {}) },
    maxBytes,
    nowMs,
  );
}

/** The samples of a clone: the multipart files, then the presigned uploads (each this workspace's voice sample, uploaded). */
async function cloneFiles(workspaceId: string, input: CloneVoiceInput): Promise<UploadedFile[]> {
  const uploaded = await Promise.all(
    (input.upload_ids ?? []).map((uploadId, index) => readUpload(workspaceId, uploadId, 'voice_sample', `upload_ids.${index}`, CLONE_UPLOAD_LIMITS.maxFileBytes)),
  );
  const files = [...(input.files ?? []), ...uploaded];
  const total = files.reduce((sum, file) => sum + file.size, 0);
  if (total > CLONE_MAX_TOTAL_BYTES) throw payloadTooLarge(`The files of one clone may total ${CLONE_MAX_TOTAL_BYTES / (1024 * 1024)} MB; these are ${Math.ceil(total / (1024 * 1024))} MB`);
  return files;
}

/**
 * Clones a voice from multipart files and/or presigned uploads. The uploads are held while the
 * vendor clones (a concurrent clone naming one is a 409, so no sample is cloned twice) and
 * deleted once it did; when the vendor fails they are given back for a retry.
 */
export async function cloneVoice(principal: Principal, input: CloneVoiceInput): Promise<Voice> {
  const workspaceId = principal.workspaceId;
  const uploadIds = input.upload_ids ?? [];
  if (new Set(uploadIds).size !== uploadIds.length) throw badRequest('upload_ids: Each upload may be named once');
  const files = await cloneFiles(workspaceId, input);
  const vendor = await voiceVendorFor(input.voice_provider);
  const cloned = await withClaimedUploads(
    workspaceId,
    uploadIds,
    'upload_ids',
    () =>
      vendor.clone({
        provider: input.voice_provider,
        voiceName: input.voice_name,
        files: files.map(({ filename, contentType, data }) => ({ filename, contentType, data })),
      }),
    // The vendor refusing the audio (400) spends the uploads; a vendor outage gives them back.
    (error) => !(error instanceof Invalid),
  );
  return saveWorkspaceVoice(principal.workspaceId, {
    provider: input.voice_provider,
    voice_name: input.voice_name,
    source: 'clone',
    vendorVoice: {
      ...cloned,
      gender: input.gender ?? cloned.gender,
      accent: input.accent ?? cloned.accent,
      age: input.age ?? cloned.age,
    },
  });
}

export async function searchCommunityVoices(input: SearchCommunityInput) {
  const vendor = await voiceVendorFor(input.voice_provider);
  return { voices: await vendor.searchCommunity({ provider: input.voice_provider, query: input.search_query }) };
}

export async function addCommunityVoice(principal: Principal, input: AddCommunityVoiceInput): Promise<Voice> {
  const { provider, publicUserId } = await communitySource(input);
  const vendor = await voiceVendorFor(provider);
  const added = await vendor.addCommunity({
    provider,
    providerVoiceId: input.provider_voice_id,
    publicUserId,
    voiceName: input.voice_name,
  });
  return saveWorkspaceVoice(principal.workspaceId, {
    provider,
    voice_name: input.voice_name,
    source: 'community',
    public_user_id: publicUserId,
    vendorVoice: added,
  });
}

/**
 * Which library, and for ElevenLabs which owner, to add a community voice from. Given,
 * they are used as they are (an owner without a provider means ElevenLabs, the only
 * library with owners). Otherwise the voice is looked up by its ID: in the given library,
 * or in every community library. Found once, that is the source; found in several
 * libraries, or under several owners, the caller must say which (400 naming the field);
 * found nowhere, 404.
 */
async function communitySource(input: AddCommunityVoiceInput): Promise<{ provider: CommunityProvider; publicUserId?: string }> {
  const given = input.voice_provider ?? (input.public_user_id !== undefined ? 'elevenlabs' : undefined);
  if (given && (given !== 'elevenlabs' || input.public_user_id !== undefined)) {
    return { provider: given, publicUserId: input.public_user_id };
  }
  const id = input.provider_voice_id;
  const libraries = given ? [given] : COMMUNITY_PROVIDERS;
  const found = (
    await Promise.all(
      libraries.map(async (provider) => {
        const vendor = await voiceVendorFor(provider);
        return (await vendor.findCommunity({ provider, providerVoiceId: id })).map((voice) => ({
          provider,
          publicUserId: voice.public_user_id,
        }));
      }),
    )
  ).flat();
  const providers = [...new Set(found.map((source) => source.provider))];
  if (providers.length === 0) {
    throw notFound(`Community voice "${id}" not found ${given ? `in the ${given} library` : 'in any community library'}`);
  }
  if (providers.length > 1) {
    throw badRequest(`voice_provider: Required: community voice "${id}" is in more than one library (${providers.join(', ')})`);
  }
  const owners = [...new Set(found.map((source) => source.publicUserId))];
  if (owners.length > 1) {
    throw badRequest(`public_user_id: Required: community voice "${id}" has more than one owner (${owners.join(', ')})`);
  }
  return found[0]!;
}

/** When neither the caller nor the vendor says: VoiceResponse requires a gender. */
const FALLBACK_GENDER: Gender = 'female';

async function saveWorkspaceVoice(
  workspaceId: string,
  voice: {
    provider: VoiceProvider;
    voice_name: string;
    source: WorkspaceVoiceItem['source'];
    public_user_id?: string;
    vendorVoice: VendorVoice;
  },
): Promise<Voice> {
  const voiceId = `${VOICE_ID_PREFIX[voice.provider]}-custom_voice_${randomBytes(12).toString('hex')}`;
  const item: Omit<WorkspaceVoiceItem, 'pk' | 'sk'> = {
    voice_id: voiceId,
    voice_name: voice.voice_name,
    provider: voice.provider,
    provider_voice_id: voice.vendorVoice.provider_voice_id,
    source: voice.source,
    public_user_id: voice.public_user_id,
    gender: voice.vendorVoice.gender ?? FALLBACK_GENDER,
    accent: voice.vendorVoice.accent,
    age: voice.vendorVoice.age,
    preview_audio_url: voice.vendorVoice.preview_audio_url,
    created_timestamp: Date.now(),
  };
  return fromItem(await workspaceVoices.create(item, workspaceId, voiceId));
}
