import { randomBytes } from 'node:crypto';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Principal } from './auth/gate.ts';
import { badRequest, notFound } from './errors.ts';
import { wire } from './naming.ts';
import type { AddCommunityVoiceInput, CloneVoiceInput, SearchCommunityInput, Voice } from './routes/voices.ts';
import { db, tableName } from './store/db.ts';
import { keys } from './store/keys.ts';
import { synthesizedPreviewUrl } from './vendors/mock-voice-vendor.ts';
import { voiceVendorFor, type Gender, type VendorVoice, type VoiceProvider } from './vendors/voice-vendor.ts';

/**
 * Voices: a fixed built-in catalogue (IDs `<vendor>-<name>`) plus each workspace's own
 * voices, cloned from audio or added from a vendor's community library, stored in the
 * workspace's partition (another workspace's voice is simply not found).
 */

/** The ID prefix of each provider's voices (`11labs-Adrian`, `cartesia-Cleo`, `retell-Cimo`, …). */
export const VOICE_ID_PREFIX: Record<VoiceProvider, string> = {
  elevenlabs: '11labs',
  openai: 'openai',
  cartesia: 'cartesia',
  minimax: 'minimax',
  fish_audio: 'fish_audio',
  inworld: 'inworld',
  platform: wire.compat,
};

/**
 * The premium (highest-quality) model tier recommended for each provider's voices, from the
 * compatible API's voice_model list. The platform's own voices have no model choice.
 */
export const PREMIUM_VOICE_MODEL = {
  elevenlabs: 'eleven_multilingual_v2',
  openai: 'gpt-4o-mini-tts',
  cartesia: 'sonic-3',
  minimax: 'speech-2.8-turbo',
  fish_audio: 's2.1-pro',
  inworld: 'inworld-tts-2',
  platform: null,
} as const satisfies Record<VoiceProvider, string | null>;
export type VoiceModel = Exclude<(typeof PREMIUM_VOICE_MODEL)[VoiceProvider], null>;

export interface CatalogueVoice {
  voice_id: string;
  voice_name: string;
  provider: VoiceProvider;
  gender: Gender;
  accent: string;
  age: string;
  /** Recommended voice_model for this voice: its provider's premium tier. */
  premium_model: VoiceModel | null;
}

type Entry = [name: string, gender: Gender, accent: string, age: string];

const catalogueOf = (provider: VoiceProvider, entries: Entry[]): CatalogueVoice[] =>
  entries.map(([name, gender, accent, age]) => ({
    voice_id: `${VOICE_ID_PREFIX[provider]}-${name}`,
    voice_name: name,
    provider,
    gender,
    accent,
    age,
    premium_model: PREMIUM_VOICE_MODEL[provider],
  }));

/** The built-in catalogue, in list order. */
export const VOICE_CATALOGUE: readonly CatalogueVoice[] = [
  ...catalogueOf('elevenlabs', [
    ['Adrian', 'male', 'American', 'Young'],
    ['Anthony', 'male', 'British', 'Middle Aged'],
    ['Chloe', 'female', 'Australian', 'Young'],
    ['Dorothy', 'female', 'British', 'Young'],
    ['Grace', 'female', 'American', 'Middle Aged'],
    ['Lily', 'female', 'American', 'Young'],
    ['Marissa', 'female', 'American', 'Young'],
    ['Noah', 'male', 'Australian', 'Middle Aged'],
    ['Paul', 'male', 'American', 'Middle Aged'],
  ]),
  ...catalogueOf('cartesia', [
    ['Cleo', 'female', 'American', 'Young'],
    ['Emily', 'female', 'British', 'Middle Aged'],
    ['Ryan', 'male', 'Australian', 'Young'],
    ['Walter', 'male', 'American', 'Old'],
  ]),
  ...catalogueOf('openai', [
    ['Alloy', 'female', 'American', 'Young'],
    ['Echo', 'male', 'American', 'Young'],
    ['Nova', 'female', 'American', 'Young'],
    ['Onyx', 'male', 'American', 'Middle Aged'],
    ['Shimmer', 'female', 'American', 'Young'],
  ]),
  ...catalogueOf('minimax', [
    ['Ava', 'female', 'American', 'Young'],
    ['Leo', 'male', 'American', 'Middle Aged'],
    ['Mia', 'female', 'British', 'Young'],
  ]),
  ...catalogueOf('platform', [['Cimo', 'female', 'American', 'Young']]),
];

const catalogueById = new Map(VOICE_CATALOGUE.map((voice) => [voice.voice_id, voice]));

/**
 * The voice of a new agent when none is given (spec: Agent defaults, "built-in voice from
 * a voice-vendor catalogue, premium model tier"): an ElevenLabs voice with an Australian
 * accent, matching the default language en-AU. Its model is DEFAULT_VOICE_MODEL.
 */
export const DEFAULT_VOICE_ID = '11labs-Chloe';
export const DEFAULT_VOICE_MODEL: VoiceModel = PREMIUM_VOICE_MODEL.elevenlabs;

export function catalogueVoice(voiceId: string): CatalogueVoice | undefined {
  return catalogueById.get(voiceId);
}

function toVoice(voice: CatalogueVoice): Voice {
  return {
    voice_id: voice.voice_id,
    voice_name: voice.voice_name,
    provider: voice.provider,
    gender: voice.gender,
    accent: voice.accent,
    age: voice.age,
    preview_audio_url: synthesizedPreviewUrl(voice.voice_id, voice.gender),
  };
}

/** A workspace's own voice as stored: pk WS#<ws>, sk VOICE#<voice_id>. */
interface WorkspaceVoiceItem {
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
}

function fromItem(item: WorkspaceVoiceItem): Voice {
  return {
    voice_id: item.voice_id,
    voice_name: item.voice_name,
    provider: item.provider,
    gender: item.gender,
    ...(item.accent ? { accent: item.accent } : {}),
    ...(item.age ? { age: item.age } : {}),
    ...(item.preview_audio_url ? { preview_audio_url: item.preview_audio_url } : {}),
  };
}

const voiceNotFound = () => notFound('Voice not found');

async function readWorkspaceVoice(workspaceId: string, voiceId: string): Promise<WorkspaceVoiceItem | undefined> {
  const out = await db.send(
    new GetCommand({ TableName: tableName, Key: keys.workspaceVoice(workspaceId, voiceId), ConsistentRead: true }),
  );
  return out.Item as WorkspaceVoiceItem | undefined;
}

async function listWorkspaceVoices(workspaceId: string): Promise<WorkspaceVoiceItem[]> {
  const partition = keys.workspaceVoices(workspaceId);
  const items: WorkspaceVoiceItem[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await db.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    items.push(...((out.Items ?? []) as WorkspaceVoiceItem[]));
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return items.sort((a, b) => a.created_timestamp - b.created_timestamp || a.voice_id.localeCompare(b.voice_id));
}

/** The catalogue first, then the workspace's own voices, oldest first. */
export async function listVoices(workspaceId: string): Promise<Voice[]> {
  return [...VOICE_CATALOGUE.map(toVoice), ...(await listWorkspaceVoices(workspaceId)).map(fromItem)];
}

export async function getVoice(workspaceId: string, voiceId: string): Promise<Voice> {
  const builtIn = catalogueVoice(voiceId);
  if (builtIn) return toVoice(builtIn);
  const item = await readWorkspaceVoice(workspaceId, voiceId);
  if (!item) throw voiceNotFound();
  return fromItem(item);
}

/**
 * For agents: a voice_id is usable when it is a catalogue voice or one of the workspace's
 * own. Otherwise 400 `voice_id: Unknown voice <id>` (a request field, not a missing resource).
 */
export async function assertVoiceUsable(workspaceId: string, voiceId: string): Promise<void> {
  if (catalogueVoice(voiceId)) return;
  if (voiceId.length <= 200 && (await readWorkspaceVoice(workspaceId, voiceId))) return;
  throw badRequest(`voice_id: Unknown voice ${voiceId.slice(0, 200)}`);
}

/**
 * A playable preview: the catalogue's synthesized tone for built-in voices; for the
 * workspace's own, the vendor's current preview (vendor preview links may be signed and
 * expire), falling back to the one stored when the voice was created.
 */
export async function previewVoice(workspaceId: string, voiceId: string) {
  const builtIn = catalogueVoice(voiceId);
  if (builtIn) return { voice_id: voiceId, preview_audio_url: toVoice(builtIn).preview_audio_url! };
  const item = await readWorkspaceVoice(workspaceId, voiceId);
  if (!item) throw voiceNotFound();
  const vendor = await voiceVendorFor(item.provider);
  const url = (await vendor.preview({ provider: item.provider, providerVoiceId: item.provider_voice_id })) ?? item.preview_audio_url;
  if (!url) throw notFound('This voice has no preview yet');
  return { voice_id: voiceId, preview_audio_url: url };
}

export async function cloneVoice(principal: Principal, input: CloneVoiceInput): Promise<Voice> {
  const vendor = await voiceVendorFor(input.voice_provider);
  const cloned = await vendor.clone({
    provider: input.voice_provider,
    voiceName: input.voice_name,
    files: input.files.map(({ filename, contentType, data }) => ({ filename, contentType, data })),
  });
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
  const vendor = await voiceVendorFor(input.voice_provider);
  const added = await vendor.addCommunity({
    provider: input.voice_provider,
    providerVoiceId: input.provider_voice_id,
    publicUserId: input.public_user_id,
    voiceName: input.voice_name,
  });
  return saveWorkspaceVoice(principal.workspaceId, {
    provider: input.voice_provider,
    voice_name: input.voice_name,
    source: 'community',
    public_user_id: input.public_user_id,
    vendorVoice: added,
  });
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
  const item: WorkspaceVoiceItem = {
    ...keys.workspaceVoice(workspaceId, voiceId),
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
  await db.send(
    new PutCommand({ TableName: tableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }),
  );
  return fromItem(item);
}
