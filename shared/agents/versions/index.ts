/**
 * What voice and chat agents share: the fields both carry (agent-fields.ts), the version
 * operations (agent-versions.ts), the engine version a version pins, publishes and branches
 * (response-engines.ts), version references and tags resolved (version-references.ts), and
 * whether a version can run (runnable.ts).
 */
export type { ResponseEngine } from './agent-fields.ts';
export { assertRunnable } from './runnable.ts';
export type { VersionReference } from './version-references.ts';
