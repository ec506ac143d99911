import type { voice } from '@livekit/agents';
import { AsyncLocalStorage } from 'node:async_hooks';
// The speech a reply belongs to. LiveKit Agents runs every node of a reply (llmNode,
// ttsNode, transcriptionNode) inside that speech's async context, kept in this store, but
// exports neither the store nor any other link from a node call to its SpeechHandle. The
// worker needs that link: a turn is committed when its own speech has played out (with
// what was heard of it), and a reply generated before the turn is certain must not run a
// tool until its speech is scheduled. The path is the same module the package's entry
// loads (the same file URL), so this is the framework's one instance of the store.
import { speechHandleStorage } from '../node_modules/@livekit/agents/dist/voice/agent.js';

if (!(speechHandleStorage instanceof AsyncLocalStorage)) {
  throw new Error('@livekit/agents changed: voice/agent.js no longer exports speechHandleStorage (worker/src/framework.ts)');
}

/** The speech whose reply is running in this async context (inside a node), if any. */
export function currentSpeech(): voice.SpeechHandle | undefined {
  return speechHandleStorage.getStore() as voice.SpeechHandle | undefined;
}
