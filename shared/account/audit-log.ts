import type { Principal } from '../platform/auth/gate.ts';
import { invalidPaginationKey } from '../platform/errors.ts';
import { idPattern, newTimeOrderedId } from '../platform/ids.ts';
import type { TransactOp } from '../platform/store/table.ts';
import type { AuditEntry } from './schemas.ts';
import { auditEntriesPage, auditEntryOp } from './store.ts';

export interface AuditRecord {
  action: AuditEntry['action'];
  target: AuditEntry['target'];
  changes: string[];
  /** The assistant's tool that made the change (action `conductor.tool_call`). */
  tool?: string;
}

/** Who acted: the credential, and the assistant's session when its tool made the request. */
function actorOf(actor: Principal | undefined): AuditEntry['actor'] {
  const who: AuditEntry['actor'] = !actor
    ? { type: 'system', id: null }
    : actor.kind === 'session'
      ? { type: 'member', id: actor.credentialId }
      : actor.credentialId === 'scim'
        ? { type: 'scim', id: null }
        : { type: 'api_key', id: actor.credentialId };
  return actor?.conductorSessionId ? { ...who, via: 'conductor', conductor_session_id: actor.conductorSessionId } : who;
}

/**
 * The Put that records an action. Callers add it to the same transaction as the change
 * itself, so an action is never applied without its entry or recorded without applying.
 */
export function auditPut(workspaceId: string, actor: Principal | undefined, record: AuditRecord, nowMs: number): TransactOp {
  const auditLogId = newTimeOrderedId('audit', nowMs);
  const entry: AuditEntry = {
    audit_log_id: auditLogId,
    action: record.action,
    actor: actorOf(actor),
    target: record.target,
    changes: record.changes,
    ...(record.tool ? { tool: record.tool } : {}),
    created_timestamp: nowMs,
  };
  return auditEntryOp(workspaceId, entry);
}

export async function listAuditLog(
  workspaceId: string,
  options: { limit: number; pagination_key?: string },
): Promise<AuditEntry[]> {
  if (options.pagination_key !== undefined && !idPattern('audit').test(options.pagination_key)) {
    throw invalidPaginationKey();
  }
  const items = await auditEntriesPage(workspaceId, { limit: options.limit, after: options.pagination_key });
  return items.map((item) => ({
    audit_log_id: item.audit_log_id,
    action: item.action,
    actor: item.actor,
    target: item.target,
    changes: item.changes,
    ...(item.tool ? { tool: item.tool } : {}),
    created_timestamp: item.created_timestamp,
  }));
}
