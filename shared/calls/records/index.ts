/**
 * The calls domain's narrow entry, for domains that read calls, embed their schemas or
 * follow their lifecycle (batches, contacts, account data, integrations, the public
 * call log): nothing here reaches the engine, media (LiveKit), recordings (S3) or the
 * conversation runtime (`ws`, the LLM vendors). esbuild keeps a reached module's side
 * effects (a CommonJS package, top-level schemas) even when none of its exports is used,
 * so importing index.ts for `getCall` put about 60 KiB of them into every such bundle
 * (docs/performance.md). test/platform/lambda-bundles.test.ts holds the `contacts` bundle
 * free of them. Anything that dials, ends, records or deletes a call stays in index.ts.
 */
export { callExportPage, callHistoryPage, callIdsWithNumber, callRetentionPage, getCall, parseCallFilter, storedCall, storedCallPage } from '../history.ts';
export type { CallItem } from '../store.ts';
export { getConcurrency } from '../concurrency.ts';
export { callExistsCheck, countedCallListing } from '../store.ts';
export { checkedAgentOverride } from '../agent-override.ts';
export { batchCallIdFor, unlinkBatchCall } from '../batch-links.ts';
export { onCallLifecycle } from '../call-listeners.ts';
export type { CallLifecycleEvent,  } from '../call-listeners.ts';
export { dynamicVariables, versionRef } from '../schemas.ts';
export { findPublicCallLog,  } from '../public-call.ts';
/** The listing index partitions of a workspace's calls: where the workspace purge finds them. */
export { callListingPartitions } from '../store.ts';
/** A batch task's dial's idempotency key: the workspace purge deletes each task's claim with the task. */
export { batchDialKey } from '../idempotency.ts';
