/**
 * The agent tools' entry for other domains: what the calls domain runs on a call (the
 * agent's pre-call workflow, spec: Inbound call webhook, step 7).
 */
export { runPreCallWorkflow, PRE_CALL_BUDGET_MS } from './workflows.ts';
/** The public routes' lookups of share links (shared/public): by token, and whether a link still works. */
export { findShareLinkByToken, isShareLinkEnabled, type ResolvedShareLink } from './share-links.ts';
