import { voice } from '@livekit/agents';
import type { Room } from '@livekit/rtc-node';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { besideBundle } from '../../shared/platform/bundle/bundle-files.ts';
import { logger } from '../../shared/platform/logger.ts';
import type { AgentSettings } from './agent-settings.ts';

/*
 * The agent's ambient sound (`ambient_sound`, `ambient_sound_volume`): a loop the caller
 * hears under the agent's voice for the whole call. It is LiveKit Agents' background audio
 * player, which publishes a second audio track of the agent's (`background_audio`) fed by a
 * mixer, so the voice's own output, its playback positions and its interruptions are left
 * as they are; the caller's side mixes the two tracks (a phone call's SIP bridge and the
 * browser both play every track of the agent). The agent never hears it: an agent does not
 * subscribe to its own tracks.
 */

export type AmbientSound = NonNullable<AgentSettings['ambient_sound']>;

/**
 * Each sound's file and the gain that brings it to the common loudness `ambient_sound_volume`
 * 1 plays (RMS about 0.015 of full scale, well under a voice). The synthetic loops under
 * worker/assets/ambient are made at that loudness by scripts/make-ambient-sounds.sh;
 * `call-center` is LiveKit Agents' own office ambience, recorded much quieter.
 */
const SOUNDS: Record<AmbientSound, { file: string; gain: number } | { builtin: voice.BuiltinAudioClip; gain: number }> = {
  'coffee-shop': { file: 'coffee-shop.ogg', gain: 1 },
  'convention-hall': { file: 'convention-hall.ogg', gain: 1 },
  'summer-outdoor': { file: 'summer-outdoor.ogg', gain: 1 },
  'mountain-outdoor': { file: 'mountain-outdoor.ogg', gain: 1 },
  'static-noise': { file: 'static-noise.ogg', gain: 1 },
  'call-center': { builtin: voice.BuiltinAudioClip.OFFICE_AMBIENCE, gain: 8.8 },
};

export const AMBIENT_SOUNDS = Object.keys(SOUNDS) as AmbientSound[];

/**
 * The folder of the worker's sound files: worker/assets/ambient beside the sources, and
 * /app/worker/assets/ambient beside the bundle in the image (worker/Dockerfile copies it).
 */
function assetsDir(): string {
  const url = besideBundle('../assets/ambient/') ?? new URL('../assets/ambient/', import.meta.url);
  return fileURLToPath(url);
}

/** The file of an ambient sound and the gain that plays it at `volume`. */
export function ambientSource(sound: AmbientSound, volume: number): { path: string; volume: number } {
  const entry = SOUNDS[sound];
  const path = 'file' in entry ? `${assetsDir()}${entry.file}` : voice.getBuiltinAudioPath(entry.builtin);
  return { path, volume: entry.gain * volume };
}

/** What plays the ambient sound; closed when the agent leaves. */
export interface AmbientPlayer {
  close(): Promise<void>;
}

/** The room's part the player needs: the agent's participant, to publish its track. */
export type AmbientRoom = Pick<Room, 'localParticipant'>;

/**
 * Starts the agent's ambient sound in the room (undefined: none is set, or its volume is 0).
 * A sound that cannot start is logged and the call goes on without it.
 */
export async function startAmbientSound(
  settings: Pick<AgentSettings, 'ambient_sound' | 'ambient_sound_volume'>,
  room: AmbientRoom | undefined,
  log: Record<string, unknown> = {},
): Promise<AmbientPlayer | undefined> {
  const sound = settings.ambient_sound;
  if (!sound || settings.ambient_sound_volume <= 0) return undefined;
  if (!room) {
    logger.warn('the agent\'s ambient sound needs a room to play in; none is played', { ...log, ambient_sound: sound });
    return undefined;
  }
  const { path, volume } = ambientSource(sound, settings.ambient_sound_volume);
  // The framework's loop of a file that gives no audio would spin forever: a missing file is not played.
  if (!existsSync(path)) {
    logger.error('the agent\'s ambient sound file is missing; none is played', { ...log, ambient_sound: sound, path });
    return undefined;
  }
  let player: voice.BackgroundAudioPlayer | undefined;
  try {
    // A file source loops for as long as the player runs.
    player = new voice.BackgroundAudioPlayer({ ambientSound: { source: path, volume } });
    await player.start({ room: room as Room });
  } catch (error) {
    logger.warn('the agent\'s ambient sound could not start; the call goes on without it', { ...log, ambient_sound: sound, error });
    await player?.close().catch(() => undefined);
    return undefined;
  }
  const started = player;
  return {
    close: async () => {
      try {
        await started.close();
      } catch (error) {
        logger.warn('the agent\'s ambient sound did not stop cleanly', { ...log, error });
      }
    },
  };
}
