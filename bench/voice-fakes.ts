import { pathToFileURL } from 'node:url';
import { startFakeOpenAi, streamChunks } from '../test/support/fake-openai.ts';
import { startFakeDeepgram } from '../worker/test/support/fake-deepgram.ts';
import { startFakeElevenLabs } from '../worker/test/support/fake-elevenlabs.ts';

/*
 * The voice benchmark's vendors (bench/voice-to-voice.ts), in a process of their own so the
 * CPU and memory measured for the calls are the worker's, not the fakes': Deepgram (every
 * voiced segment says CALLER_LINE), an OpenAI-compatible model that answers REPLY, and
 * ElevenLabs, at the latencies given as JSON in argv[2]. Sends its URLs to the parent
 * (IPC), then runs until the parent disconnects.
 */

export interface VoiceFakeLatencies {
  /** Final transcript this long after the segment's last voiced audio. */
  finalDelayMs: number;
  /** Silence that tells the fake recogniser the speech ended. */
  hangoverMs: number;
  modelFirstTokenMs: number;
  voiceFirstByteMs: number;
}

export const CALLER_LINE = 'I would like to book an appointment';
export const REPLY = ['Sure, ', 'which day ', 'suits you?'];

if (process.send && import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const latencies = JSON.parse(process.argv[2] ?? '{}') as VoiceFakeLatencies;
  const deepgram = await startFakeDeepgram({ transcriptFor: () => CALLER_LINE, finalDelayMs: latencies.finalDelayMs, hangoverMs: latencies.hangoverMs });
  const eleven = await startFakeElevenLabs({ firstByteDelayMs: latencies.voiceFirstByteMs });
  const model = await startFakeOpenAi({ closeAfterAll: false });
  model.setDefault(() => ({ delayMs: latencies.modelFirstTokenMs, events: streamChunks(REPLY) }));
  process.send({ deepgram: deepgram.url, elevenlabs: eleven.origin, openai: model.url });
  process.on('disconnect', () => process.exit(0));
}
