import { llm, stt, voice, type APIConnectOptions, type TimedString } from '@livekit/agents';
import { AudioFrame } from '@livekit/rtc-node';
import { ReadableStream } from 'node:stream/web';
import { currentSpeech } from './framework.ts';
import { RecogniserClock } from './recogniser-clock.ts';

/*
 * The agent LiveKit Agents runs for a call. Its model is Parley's response engine: the
 * framework asks `llmNode` for a reply and gets the words the engine streams (the engine
 * runs the tools, the flow and the custom LLM itself); the framework then speaks them,
 * stops when the caller barges in, and tells the host what was heard.
 */

/** What the agent asks of the call it serves (session.ts). */
export interface ReplyHost {
  /** The words of the reply for this speech, as they are written; null: nothing to say. */
  reply(speech: voice.SpeechHandle, chatCtx: llm.ChatContext): Promise<ReadableStream<string> | null>;
  /** The speech reaches the voice: its audio is what plays next. */
  voicing(speech: voice.SpeechHandle): void;
  /** The speech's words as the voice aligned them (seconds from the start of its audio), as they come. */
  aligned(speech: voice.SpeechHandle, word: TimedString | string): void;
  /** The caller's words in a final recognition, each with when it was said (epoch ms). */
  recognised(words: RecognisedWord[]): void;
}

export interface RecognisedWord {
  word: string;
  startMs: number;
  endMs: number;
}

/**
 * Stands in for the framework's LLM: the session only generates replies when it has one,
 * and `ParleyAgent.llmNode` never calls it.
 */
export class ParleyResponseEngine extends llm.LLM {
  label(): string {
    return 'parley.ResponseEngine';
  }

  override get model(): string {
    return 'parley';
  }

  chat(_options: { chatCtx: llm.ChatContext; toolCtx?: llm.ToolContext; connOptions?: APIConnectOptions }): llm.LLMStream {
    throw new Error('Parley\'s response engine answers through ParleyAgent.llmNode, never LLM.chat');
  }
}

export class ParleyAgent extends voice.Agent {
  constructor(
    private readonly host: ReplyHost,
    /** The agent's `volume` (0 to 2): a gain on every sample the voice vendor sends. */
    private readonly volume = 1,
  ) {
    super({ instructions: '' });
  }

  override async llmNode(chatCtx: llm.ChatContext): Promise<ReadableStream<string> | null> {
    const speech = currentSpeech();
    if (!speech) throw new Error('llmNode ran outside a speech: LiveKit Agents changed how replies run');
    return this.host.reply(speech, chatCtx);
  }

  override async sttNode(audio: ReadableStream<AudioFrame>, modelSettings: voice.ModelSettings): Promise<ReadableStream<stt.SpeechEvent | string> | null> {
    // The caller's audio passes the recogniser's clock on its way in, so its words can be
    // placed in time (recogniser-clock.ts).
    const clock = new RecogniserClock();
    const frames = audio.getReader();
    const heard = new ReadableStream<AudioFrame>({
      async pull(controller) {
        const { done, value } = await frames.read();
        if (done) return controller.close();
        clock.push(value, Date.now());
        controller.enqueue(value);
      },
      cancel: (reason) => frames.cancel(reason),
    });
    const openedAt = Date.now();
    const source = await super.sttNode(heard, modelSettings);
    if (!source) return source;
    const host = this.host;
    /** The stream's offset on the framework's input clock (startTimeOffset): it changes only when the plugin reconnects. */
    let offset: number | undefined;
    const reader = source.getReader();
    return new ReadableStream<stt.SpeechEvent | string>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        if (typeof value !== 'string' && value.type === stt.SpeechEventType.FINAL_TRANSCRIPT) {
          const timed = (value.alternatives?.[0]?.words ?? []).filter(
            (word): word is TimedString & { startTime: number; endTime: number } => word.startTime !== undefined && word.endTime !== undefined && word.text.trim() !== '',
          );
          if (timed.length) {
            offset ??= timed[0]!.startTimeOffset ?? 0;
            const placed = timed.map((word) => {
              const shift = word.startTimeOffset ?? 0;
              // A reconnected stream's clock starts afresh: its words are placed from the input's start only.
              const at = (time: number) => (shift === offset ? clock.at(time - shift) : undefined) ?? openedAt + (time - offset!) * 1000;
              return { word: word.text.trim(), startMs: at(word.startTime), endMs: at(word.endTime) };
            });
            clock.forget(timed.at(-1)!.endTime - (timed.at(-1)!.startTimeOffset ?? 0));
            host.recognised(placed);
          }
        }
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    });
  }

  override async transcriptionNode(
    text: ReadableStream<string | TimedString>,
    modelSettings: voice.ModelSettings,
  ): Promise<ReadableStream<string | TimedString> | null> {
    const speech = currentSpeech();
    const source = await super.transcriptionNode(text, modelSettings);
    if (!source || !speech) return source;
    const host = this.host;
    host.voicing(speech);
    const reader = source.getReader();
    return new ReadableStream<string | TimedString>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        host.aligned(speech, value);
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    });
  }

  override async ttsNode(text: ReadableStream<string>, modelSettings: voice.ModelSettings): Promise<ReadableStream<AudioFrame> | null> {
    const audio = await super.ttsNode(text, modelSettings);
    if (!audio || this.volume === 1) return audio;
    const gain = this.volume;
    const reader = audio.getReader();
    return new ReadableStream<AudioFrame>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        controller.enqueue(withGain(value, gain));
      },
      cancel: (reason) => reader.cancel(reason),
    });
  }
}

/** The frame louder or softer (samples clipped to 16 bits); its userdata (aligned words) kept. */
function withGain(frame: AudioFrame, gain: number): AudioFrame {
  const samples = new Int16Array(frame.data.length);
  for (let i = 0; i < samples.length; i++) {
    samples[i] = Math.max(-32768, Math.min(32767, Math.round(frame.data[i]! * gain)));
  }
  return new AudioFrame(samples, frame.sampleRate, frame.channels, frame.samplesPerChannel, { ...frame.userdata });
}
