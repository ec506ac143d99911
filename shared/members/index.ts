/**
 * What other code may use of members. Sessions and roles are enforced by the platform's
 * gate (shared/platform/auth), which reads members' items by key; the export-jobs consumer
 * runs the purge of a deleted workspace.
 */
export { runPurgeStep,  WorkspacePurgeMessage } from './purge.ts';
