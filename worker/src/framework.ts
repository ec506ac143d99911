import type { voice } from '@livekit/agents';
import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
// The speech a reply belongs to. LiveKit Agents runs every node of a reply (llmNode,
// ttsNode, transcriptionNode) inside that speech's async context, kept in this store, but
// exports neither the store nor any other link from a node call to its SpeechHandle. The
// worker needs that link: a turn is committed when its own speech has played out (with
// what was heard of it), and a reply generated before the turn is certain must not run a
// tool until its speech is scheduled.
//
// The store must be the framework's one instance: the module the package's entry loads,
// from the installed package. So its file is found at runtime beside the package's entry
// (the package exports no subpath, and Node refuses a deep specifier) and loaded by URL, a
// dynamic import of a computed address, which no bundler follows. A static relative import
// would be bundled: a second copy of the framework whose store the framework never uses, and
// in the worker's ES-module bundle a copy of fluent-ffmpeg that reads `__dirname` as it loads.
const frameworkEntry = createRequire(import.meta.url).resolve('@livekit/agents');
const voiceAgentModule = (await import(pathToFileURL(join(dirname(frameworkEntry), 'voice', 'agent.js')).href)) as { speechHandleStorage?: unknown };

if (!(voiceAgentModule.speechHandleStorage instanceof AsyncLocalStorage)) {
  throw new Error('@livekit/agents changed: voice/agent.js no longer exports speechHandleStorage (worker/src/framework.ts)');
}
const speechHandleStorage: AsyncLocalStorage<unknown> = voiceAgentModule.speechHandleStorage;

/** The speech whose reply is running in this async context (inside a node), if any. */
export function currentSpeech(): voice.SpeechHandle | undefined {
  return speechHandleStorage.getStore() as voice.SpeechHandle | undefined;
}
