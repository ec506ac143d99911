import type { ExportType } from './schemas.ts';

/*
 * An export's CSV: a header, then one line per record, written by the shared CSV writer
 * (csvLine, shared/platform/text/csv-write.ts: RFC 4180 quoting, CRLF line ends, formula
 * escaping). Nested values (tags, custom fields, analysis data) are JSON text in one cell.
 * JSONL exports write each record as the API answers it, one JSON object a line.
 */

export const EXPORT_COLUMNS: Record<ExportType, readonly string[]> = {
  calls: [
    'call_id', 'call_type', 'direction', 'call_status', 'agent_id', 'agent_version', 'from_number', 'to_number',
    'start_timestamp', 'end_timestamp', 'duration_ms', 'disconnection_reason', 'user_sentiment', 'call_successful',
    'call_summary', 'combined_cost', 'metadata', 'transcript',
  ],
  chats: [
    'chat_id', 'chat_type', 'chat_status', 'agent_id', 'agent_version', 'start_timestamp', 'end_timestamp', 'message_count',
    'user_sentiment', 'chat_successful', 'chat_summary', 'metadata', 'transcript',
  ],
  contacts: [
    'contact_id', 'phone_number', 'first_name', 'last_name', 'email', 'tags', 'do_not_call', 'external_id', 'custom_fields',
    'created_timestamp', 'user_modified_timestamp',
  ],
  sms: ['message_id', 'chat_id', 'direction', 'from_number', 'to_number', 'body', 'created_timestamp'],
};

const object = (value: unknown): Record<string, unknown> => (value && typeof value === 'object' ? (value as Record<string, unknown>) : {});

/** A record's cells in its type's column order. */
export function exportRow(type: ExportType, record: Record<string, unknown>): unknown[] {
  const callAnalysis = object(record.call_analysis);
  const chatAnalysis = object(record.chat_analysis);
  const derived: Record<string, unknown> = {
    user_sentiment: type === 'chats' ? chatAnalysis.user_sentiment : callAnalysis.user_sentiment,
    call_successful: callAnalysis.call_successful,
    call_summary: callAnalysis.call_summary,
    chat_successful: chatAnalysis.chat_successful,
    chat_summary: chatAnalysis.chat_summary,
    combined_cost: object(record.call_cost).combined_cost,
  };
  return EXPORT_COLUMNS[type].map((column) => (column in derived ? derived[column] : record[column]));
}
