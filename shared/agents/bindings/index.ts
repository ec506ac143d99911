/**
 * The agents domain's narrow entry, for what binds to an agent version without editing
 * agents (numbers today): resolve a version reference, check that a version can run, the
 * tag-name schema, and the reference items a binding writes in its own transaction.
 * Nothing here reaches the agent, chat agent, LLM or flow schemas, the voice catalogue or
 * the agent writes: esbuild keeps a reached module's side effects (its top-level `z.lazy`
 * schemas) even when none of its exports is used, so importing index.ts for these put
 * about 25 KiB and 37 schema objects into the numbers bundle's cold import
 * (docs/performance.md, "Narrow entries"). test/platform/lambda-bundles.test.ts holds the
 * numbers bundle free of them. Everything here is exported by the agents index.ts too.
 */
export { assertRunnable } from '../versions/runnable.ts';
export { resolveAgentVersion } from '../versions/version-references.ts';
export { tagName } from '../voice-agents/tag-name.ts';
export { addAgentReferenceItems, removeAgentReferenceItems } from './references.ts';
export type { AgentReferrer } from './references.ts';
