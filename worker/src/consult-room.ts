import type { voice } from '@livekit/agents';
import { AudioSource, LocalAudioTrack, RoomEvent, TrackPublishOptions, TrackSource, type AudioFrame, type RemoteParticipant, type Room } from '@livekit/rtc-node';
import type { ReadableStream } from 'node:stream/web';
import { logger } from '../../shared/platform/logger.ts';
import { HOLD_TRACK_NAME } from '../../shared/vendors/media/index.ts';
import { HOLD_SAMPLE_RATE } from './hold-audio.ts';

/*
 * The room's side of an agentic warm transfer's private consultation (docs/voice-worker.md,
 * Transfers). Who hears whom is Parley's (LiveKit's UpdateSubscriptions, server side:
 * rtc-node has no per-track permissions); the worker's part is whom its session listens to
 * and a track of its own for the hold music, which the caller keeps hearing while Parley
 * unsubscribes them from the agent's voice.
 */

/** The part of a room the listener needs (a Room; tests pass an emitter). */
type ParticipantEvents = Pick<Room, 'prependListener'>;

/**
 * Whose voice the session hears: `listenTo(identity)` links RoomIO to a consulted
 * destination, `listenTo(undefined)` back to the participant it was linked to before (the
 * caller). A consulted destination that hangs up gives the session back to the caller
 * first: RoomIO closes the session when its linked participant leaves, which would end the
 * call as if the caller had hung up.
 */
export function roomListener(room: ParticipantEvents, session: () => Pick<voice.AgentSession, '_roomIO'>): (identity: string | undefined) => void {
  let caller: string | null = null;
  let consulted: string | undefined;
  const back = () => {
    if (consulted === undefined) return;
    consulted = undefined;
    session()._roomIO?.setParticipant(caller);
  };
  // Before RoomIO's own listener, which was registered when the session started.
  room.prependListener(RoomEvent.ParticipantDisconnected, (participant: RemoteParticipant) => {
    if (participant.identity === consulted) back();
  });
  return (identity) => {
    if (identity === undefined) return back();
    const io = session()._roomIO;
    if (!io) return;
    if (consulted === undefined) caller = io.linkedParticipant?.identity ?? null;
    consulted = identity;
    io.setParticipant(identity);
  };
}

/**
 * Plays audio on a track of the worker's own named HOLD_TRACK_NAME, published on the first
 * frame's way and unpublished on stop (or when the audio ends).
 */
export function roomHoldTrack(room: Room): (audio: ReadableStream<AudioFrame>) => { stop(): void } {
  return (audio) => {
    const source = new AudioSource(HOLD_SAMPLE_RATE, 1);
    const track = LocalAudioTrack.createAudioTrack(HOLD_TRACK_NAME, source);
    const reader = audio.getReader();
    let stopped = false;
    let published: string | undefined;
    const finish = async () => {
      if (published) await room.localParticipant?.unpublishTrack(published).catch(() => undefined);
      published = undefined;
      await source.close().catch(() => undefined);
    };
    const playing = (async () => {
      const publication = await room.localParticipant!.publishTrack(track, new TrackPublishOptions({ source: TrackSource.SOURCE_UNKNOWN }));
      published = publication.sid;
      while (!stopped) {
        const { value, done } = await reader.read();
        if (done) break;
        await source.captureFrame(value);
      }
    })();
    playing
      .catch((error: unknown) => logger.warn('the hold track failed', { error }))
      .finally(() => void finish());
    return {
      stop() {
        stopped = true;
        void reader.cancel().catch(() => undefined);
      },
    };
  };
}
