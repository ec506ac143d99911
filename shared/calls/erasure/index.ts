/**
 * The calls domain's erasure entry, for what deletes calls or reports what they store
 * (account data: privacy erases, retention, the privacy view of a call, reliability
 * settings): deleting a call, and what a call stores (../records/index.ts has the readers). It reaches
 * scrubbing and recordings (S3, the recordings bucket: its importers need that grant), but
 * not the engine, live media or the conversation runtime (`ws`, the LLM vendors), which
 * index.ts reaches (docs/performance.md, "Narrow entries").
 */
export { deleteCall } from './deletion.ts';
export { callStorageFacts,  } from '../artifacts/scrubbing.ts';
