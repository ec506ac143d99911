import { findCallWithTranscript } from './store.ts';

/** What the public call routes may show of a web call (shared/public): its progress and transcript, nothing configured. */
export interface PublicCallLog {
  workspace_id: string;
  call_id: string;
  call_status: string;
  agent_id: string;
  start_timestamp: number | null;
  end_timestamp: number | null;
  disconnection_reason: string | null;
  transcript: string;
  transcript_object: unknown[];
}

/**
 * A web call by its ID alone (the public routes name no workspace; the caller has proven
 * it holds the call's access token). Phone calls and unknown IDs are undefined.
 */
export async function findPublicCallLog(callId: string): Promise<PublicCallLog | undefined> {
  const call = await findCallWithTranscript(callId);
  if (!call || call.call_type !== 'web_call') return undefined;
  const fields = call as unknown as Record<string, unknown>;
  return {
    workspace_id: call.workspace_id,
    call_id: call.call_id,
    call_status: call.call_status,
    agent_id: call.agent_id,
    start_timestamp: (fields.start_timestamp as number | undefined) ?? null,
    end_timestamp: (fields.end_timestamp as number | undefined) ?? null,
    disconnection_reason: (fields.disconnection_reason as string | undefined) ?? null,
    transcript: (fields.transcript as string | undefined) ?? '',
    transcript_object: (fields.transcript_object as unknown[] | undefined) ?? [],
  };
}
