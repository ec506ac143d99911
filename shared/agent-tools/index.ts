import type * as Workflows from './workflows.ts';
import { loadOnce } from '../platform/lazy.ts';

/**
 * The agent tools' entry for other domains: what the calls domain runs on a call (the
 * agent's pre-call workflow, spec: Inbound call webhook, step 7).
 *
 * The workflows (their HTTP steps, the LLM vendor for their outputs) are loaded with
 * `import()` by the first pre-call run, once per process: the functions that reach this
 * entry (calls, call-steps, public) mostly serve requests that run none, and a module
 * reached only through `import()` is not loaded at their cold start (docs/performance.md).
 */
const workflows = loadOnce((): Promise<typeof Workflows> => import('./workflows.ts'));

/** The agent's pre-call workflow's outputs for a new call (workflows.ts runPreCallWorkflow). */
export async function runPreCallWorkflow(...args: Parameters<typeof Workflows.runPreCallWorkflow>): ReturnType<typeof Workflows.runPreCallWorkflow> {
  return (await workflows()).runPreCallWorkflow(...args);
}
;
/** The public routes' lookups of share links (shared/public): by token, and whether a link still works. */
export { findShareLinkByToken, isShareLinkEnabled,  } from './share-links.ts';
