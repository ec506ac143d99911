import { randomBytes } from 'node:crypto';

/** Type prefixes from the spec's Identifiers table (plus the few objects it leaves to us). */
export const idPrefix = {
  agent: 'agent_',
  llm: 'llm_',
  conversationFlow: 'conversation_flow_',
  /** Shared conversation flow components: the compatible API shows no ID format, so ours. */
  flowComponent: 'component_',
  call: 'call_',
  /** Chats and their messages: the compatible API shows no ID format, so ours (time-ordered). */
  chat: 'chat_',
  chatMessage: 'message_',
  knowledgeBase: 'knowledge_base_',
  knowledgeBaseSource: 'source_',
  /** One retrieval of a call or chat from its knowledge bases: ours (time-ordered). */
  kbRetrieval: 'kb_retrieval_',
  batchCall: 'batch_call_',
  contact: 'contact_',
  /** Contact import jobs and uploaded import files: the compatible API shows no ID format, so ours. */
  contactImportJob: 'contact_import_',
  contactImportUpload: 'contact_upload_',
  testCase: 'test_case_',
  batchTest: 'batch_test_',
  testRun: 'test_run_',
  alert: 'alert_',
  /** What an alert rule's change of state recorded (time-ordered: the list is newest first): ours. */
  alertEvent: 'alert_event_',
  /** Saved analytics dashboards: ours. */
  dashboard: 'dashboard_',
  qaCohort: 'qa_cohort_',
  /** QA results (deterministic from cohort, call and rubric version) and runs (time-ordered): ours. */
  qaResult: 'qa_result_',
  qaRun: 'qa_run_',
  apiKey: 'key_',
  publicKey: 'public_key_',
  workspace: 'ws_',
  chatAgent: 'chat_agent_',
  app: 'app_',
  /** CRM sync jobs and OAuth-synced sources: the compatible API shows no ID format, so ours. */
  crmSyncJob: 'crm_sync_',
  syncedSource: 'sync_',
  /** A knowledge base's synced-source runs (time-ordered): ours. */
  kbSyncRun: 'sync_run_',
  /** Presigned uploads (shared/platform/uploads.ts): knowledge-base files', then assets' and voice samples': ours. */
  kbUpload: 'kb_upload_',
  upload: 'upload_',
  audit: 'audit_',
  request: 'req_',
  webhookDelivery: 'webhook_delivery_',
  webhookAttempt: 'webhook_attempt_',
  shareLink: 'share_link_',
  workflowRun: 'workflow_run_',
  /** Telephony objects the compatible API shows no ID format for: ours. */
  sipTrunk: 'sip_trunk_',
  brandedCallerId: 'branded_caller_id_',
  verifiedNumber: 'verified_number_',
  /** Billing objects (shared/billing): ours. */
  ledgerEntry: 'ledger_entry_',
  invoice: 'invoice_',
  /** Account data (shared/account-data): exports (time-ordered), assets (96 random bits: their public URL is the ID), privacy requests. */
  export: 'export_',
  asset: 'asset_',
  privacyRequest: 'privacy_request_',
  /** Members, invites and sessions: the compatible API shows no ID format, so ours. */
  member: 'member_',
  invite: 'invite_',
  session: 'session_',
  /** An entry of the assistant's credit ledger (shared/conductor/credits; time-ordered: the ledger is newest first): ours. */
  conductorCharge: 'conductor_charge_',
  /** The assistant (shared/conductor): sessions, their messages and proposed actions (time-ordered): ours. */
  conductorSession: 'conductor_session_',
  conductorMessage: 'conductor_message_',
  conductorAction: 'conductor_action_',
} as const;

export type IdKind = keyof typeof idPrefix;

/** A type prefix followed by 24 random hex characters. */
export function newId(kind: IdKind): string {
  return idPrefix[kind] + randomBytes(12).toString('hex');
}

/**
 * Audit entries need a stable newest-first order and a pagination key, so their 24 hex
 * characters start with the creation time (12 hex of epoch ms) followed by 12 random ones.
 */
export function newTimeOrderedId(kind: IdKind, nowMs: number): string {
  return idPrefix[kind] + nowMs.toString(16).padStart(12, '0') + randomBytes(6).toString('hex');
}

/** The bound below every time-ordered ID of `kind` made at or after `atMs` (and above every earlier one). */
export function timeOrderedIdFloor(kind: IdKind, atMs: number): string {
  return idPrefix[kind] + atMs.toString(16).padStart(12, '0');
}

/** The epoch ms a time-ordered ID of `kind` was made at (its first 12 hex after the prefix). */
export function timeOfOrderedId(kind: IdKind, id: string): number {
  return parseInt(id.slice(idPrefix[kind].length, idPrefix[kind].length + 12), 16);
}

export function idPattern(kind: IdKind): RegExp {
  return new RegExp(`^${idPrefix[kind]}[0-9a-f]{24}$`);
}
