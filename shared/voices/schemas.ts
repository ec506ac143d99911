import * as z from 'zod';
import { isUploadedFile, MULTIPART_DEFAULT_LIMITS, type UploadedFile } from '../platform/http/multipart.ts';
import { displayName, idOf, lazySchema } from '../platform/http/schemas.ts';
import { createUploadBody, PresignedUploadView } from '../platform/http/upload-schemas.ts';
import { CLONE_PROVIDERS, COMMUNITY_PROVIDERS, VOICE_PROVIDERS } from '../vendors/voice/voice-vendor.ts';

/*
 * Voices: the built-in catalogue plus the workspace's own (cloned, or added from a
 * community library), in the compatible API's VoiceResponse shape. Schemas are built on
 * first use (z.lazy), as everywhere.
 */

/** Clone uploads: 10 MB per file, 25 files (VoiceCloneParams), inside the 25 MB body cap. */
export const CLONE_UPLOAD_LIMITS = MULTIPART_DEFAULT_LIMITS;

/** Per VoiceCloneParams: Cartesia and MiniMax clone from one file, Inworld from up to three. */
const CLONE_MAX_FILES: Record<(typeof CLONE_PROVIDERS)[number], number> = {
  elevenlabs: 25,
  cartesia: 1,
  minimax: 1,
  fish_audio: 25,
  platform: 25,
  inworld: 3,
};

/** Generic types some clients send for any file; then the extension decides. */
const GENERIC_TYPES = new Set(['application/octet-stream', 'binary/octet-stream', '']);
const AUDIO_EXTENSIONS = /\.(mp3|mpeg|mpga|wav|wave|m4a|mp4|aac|ogg|oga|opus|webm|flac|aif|aiff|amr|3gp)$/i;

export function isAudioUpload(file: UploadedFile): boolean {
  if (file.contentType.startsWith('audio/')) return true;
  return GENERIC_TYPES.has(file.contentType) && AUDIO_EXTENSIONS.test(file.filename);
}

const audioFile = () =>
  z
  .custom<UploadedFile>(isUploadedFile, { message: 'Must be an audio file upload' })
  .superRefine((file, ctx) => {
    if (file.size === 0) ctx.addIssue({ code: 'custom', message: `File "${file.filename}" is empty` });
    else if (!isAudioUpload(file)) {
      ctx.addIssue({
        code: 'custom',
        message: `File "${file.filename}" is ${file.contentType}; only audio files (audio/*) are accepted`,
      });
    }
  })
  .meta({ type: 'string', format: 'binary', description: 'An audio file (audio/*)' } as Record<string, unknown>);

const genderEnum = () => z.enum(['male', 'female']);

const voiceObject = () =>
  z.object({
    voice_id: z.string().describe('`<vendor>-<name>`: catalogue voices, or the workspace\'s own (`<vendor>-custom_voice_<hex>`)'),
    voice_name: z.string(),
    provider: z.enum(VOICE_PROVIDERS),
    gender: genderEnum(),
    accent: z.string().optional(),
    age: z.string().optional(),
    preview_audio_url: z.string().optional(),
  });
export const Voice = lazySchema(voiceObject);
export type Voice = z.infer<typeof Voice>;

export const VoicePreview = lazySchema(() =>
  z.object({
    voice_id: z.string(),
    preview_audio_url: z
      .string()
      .describe('A playable URL: the vendor\'s preview, or a synthesized `data:audio/wav` tone from the built-in provider'),
  }),
);

export const CommunityVoiceSearch = lazySchema(() =>
  z.object({
    voices: z.array(
      z.object({
        provider_voice_id: z.string().optional(),
        name: z.string().optional(),
        description: z.string().optional(),
        public_user_id: z.string().optional().describe('ElevenLabs only: the owner, needed to add the voice'),
      }),
    ),
  }),
);

export const searchFields = () =>
  z.object({
    search_query: z.string().trim().min(1).max(200),
    voice_provider: z.enum(COMMUNITY_PROVIDERS).default('elevenlabs'),
  });
export type SearchCommunityInput = z.infer<ReturnType<typeof searchFields>>;

/** Voice samples past the request limit: at most this many bytes across the files of one clone (held in memory for the vendor call). */
export const CLONE_MAX_TOTAL_BYTES = 100 * 1024 * 1024;

/** Upload IDs as JSON sends them (an array), or as multipart text fields (repeated, or one JSON array). */
const uploadIds = () =>
  z.preprocess(
    (value) => {
      if (typeof value !== 'string') return value;
      const text = value.trim();
      if (!text.startsWith('[')) return [text];
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return value;
      }
    },
    z
      .array(idOf('upload', 'an upload ID from POST /create-voice-clone-upload'))
      .max(CLONE_UPLOAD_LIMITS.maxFiles, `Too many files: at most ${CLONE_UPLOAD_LIMITS.maxFiles} per request`),
  );

/** POST /create-voice-clone-upload: a presigned PUT for one voice sample (an audio file up to 10 MB). */
export const CreateVoiceCloneUploadBody = lazySchema(createUploadBody);
export const VoiceCloneUpload = lazySchema(PresignedUploadView);

/**
 * Multipart `files` (retell-sdk's voice.clone), or presigned uploads named in `upload_ids`
 * (POST /create-voice-clone-upload) for samples past API Gateway's ~6 MB request limit, in
 * JSON or as a multipart field; both may be mixed.
 */
export const CloneVoiceBody = lazySchema(() =>
  z
  .object({
    voice_name: displayName(),
    voice_provider: z.enum(CLONE_PROVIDERS).default('elevenlabs'),
    files: z.array(audioFile()).min(1).max(CLONE_UPLOAD_LIMITS.maxFiles).optional(),
    upload_ids: uploadIds().optional(),
    gender: genderEnum().optional().describe('Not in the compatible API; defaults to the vendor\'s label, else female'),
    accent: z.string().trim().min(1).max(100).optional(),
    age: z.string().trim().min(1).max(100).optional(),
  })
  .superRefine((body, ctx) => {
    const max = CLONE_MAX_FILES[body.voice_provider];
    const count = (body.files?.length ?? 0) + (body.upload_ids?.length ?? 0);
    if (count === 0) ctx.addIssue({ code: 'custom', path: ['files'], message: 'Required (or upload_ids, presigned uploads)' });
    else if (count > CLONE_UPLOAD_LIMITS.maxFiles) {
      ctx.addIssue({ code: 'custom', path: ['files'], message: `Too many files: at most ${CLONE_UPLOAD_LIMITS.maxFiles} per request` });
    } else if (count > max) {
      ctx.addIssue({
        code: 'custom',
        path: ['files'],
        message: `voice_provider ${body.voice_provider} clones from at most ${max} file${max === 1 ? '' : 's'}`,
      });
    }
  }),
);
export type CloneVoiceInput = z.infer<typeof CloneVoiceBody>;

/**
 * The client marks voice_provider and public_user_id optional: left out, the voice is
 * found in the community libraries by its ID (shared/voices/voices.ts, communitySource).
 */
export const AddCommunityVoiceBody = lazySchema(() =>
  z.object({
    provider_voice_id: z.string().trim().min(1).max(200),
    voice_name: displayName(),
    public_user_id: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .describe('ElevenLabs only: the voice owner. Left out, found by provider_voice_id; needed when the voice has several owners'),
    voice_provider: z
      .enum(COMMUNITY_PROVIDERS)
      .optional()
      .describe(
        'Left out: the library that has provider_voice_id (ElevenLabs when public_user_id is given); needed when several libraries have it',
      ),
  }),
);
export type AddCommunityVoiceInput = z.infer<typeof AddCommunityVoiceBody>;

export const voiceIdParams = lazySchema(() => z.object({ voice_id: z.string().min(1).max(200) }));
