/**
 * What other domains may use of account: they import it from here, never from its
 * files (eslint no-restricted-imports). Keep it small: every name here can pull its module
 * into another domain's bundle.
 */
export { DEFAULT_WEBHOOK_TIMEOUT_MS, getWorkspaceItem, workspaceReliability } from './workspaces.ts';
export type { WorkspaceItem,  } from './workspaces.ts';
/** Every workspace's ID (billing's hourly run and the operator's platform usage). */
export { registeredWorkspaceIds } from './store.ts';
/** Account data (shared/account-data) records its privacy requests and settings changes in the audit log. */
export { auditPut } from './audit-log.ts';
export type { AuditRecord } from './audit-log.ts';
/** Account data's privacy erase masks audit targets; its reliability settings are attributes of the workspace item. */
export { maskAuditTargets, reliabilityUpdate } from './store.ts';
;
