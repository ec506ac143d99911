/* Its own module so that the agent tools' entry (index.ts) exports it without loading workflows.ts. */

/** A pre-call workflow holds up the call's start: it gets this long in all. */
export const PRE_CALL_BUDGET_MS = 10_000;
