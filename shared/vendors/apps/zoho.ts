import { AppVendorFailed, bearerToken, call, callBody, type AppTarget, type CrmClient, type CrmField, type Json, type PushResult } from './core.ts';

/*
 * Zoho CRM (REST API v2) on the data centre's API host (the token answer's `api_domain`,
 * kept on the connection; `ZOHO_API_BASE_URL` overrides it). Zoho wants its own
 * authorization scheme (`Zoho-oauthtoken <token>`). Contacts are found with the module's
 * search by phone, then updated or inserted; calls are `Calls` records. Zoho answers a
 * write with one status per record (HTTP 200/201/202 even when the record failed), so each
 * record's `status` is checked.
 */

const API = '/crm/v2';

const headers = (target: AppTarget) => ({ authorization: `Zoho-oauthtoken ${bearerToken(target)}` });

const TYPES: Record<string, CrmField['type']> = {
  integer: 'number',
  bigint: 'number',
  double: 'number',
  decimal: 'number',
  currency: 'number',
  percent: 'number',
  autonumber: 'number',
  boolean: 'boolean',
  date: 'date',
  datetime: 'datetime',
  picklist: 'enum',
  multiselectpicklist: 'enum',
};

/** Zoho's date-time form: ISO 8601 to the second, with an offset (`2030-01-07T09:00:00+00:00`). */
const zohoTime = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+00:00');

/** Zoho's call duration: minutes and seconds (`mm:ss`). */
const zohoDuration = (ms: number) => {
  const seconds = Math.max(0, Math.round(ms / 1000));
  return `${String(Math.floor(seconds / 60)).padStart(2, '0')}:${String(seconds % 60).padStart(2, '0')}`;
};

/** The first record's outcome of a write: its ID, or the record's error as a vendor failure. */
function recordResult(target: AppTarget, answer: Json, created: boolean): PushResult {
  const record = answer?.data?.[0];
  if (record?.status !== 'success' || !record.details?.id) {
    const detail = record ? `${String(record.code ?? 'ERROR')}: ${String(record.message ?? 'the record was refused')}` : 'the answer holds no record';
    throw new AppVendorFailed(target.provider, detail);
  }
  return { external_id: String(record.details.id), created };
}

export const zoho: CrmClient = {
  async testAuth(target) {
    await call(target, 'GET', `${API}/users?type=CurrentUser`, undefined, headers(target));
  },

  async schema(target) {
    const answer = await call(target, 'GET', `${API}/settings/fields?module=Contacts`, undefined, headers(target));
    return ((answer.fields ?? []) as Json[])
      .filter((field) => typeof field?.api_name === 'string')
      .map((field) => {
        const options = Array.isArray(field.pick_list_values) ? field.pick_list_values.map((value: Json) => String(value?.actual_value ?? value?.display_value)) : [];
        return {
          name: String(field.api_name),
          type: TYPES[String(field.data_type)] ?? 'string',
          ...(field.field_label ? { label: String(field.field_label) } : {}),
          ...(options.length ? { options } : {}),
        };
      });
  },

  async upsertContact(target, contact) {
    const fields = {
      Phone: contact.phone_number,
      ...(contact.first_name ? { First_Name: contact.first_name } : {}),
      ...(contact.last_name ? { Last_Name: contact.last_name } : {}),
      ...(contact.email ? { Email: contact.email } : {}),
      ...contact.fields,
    };
    const found = await call(target, 'GET', `${API}/Contacts/search?${new URLSearchParams({ phone: contact.phone_number }).toString()}`, undefined, headers(target));
    const existing = found.data?.[0]?.id;
    if (existing) {
      const answer = await call(target, 'PUT', `${API}/Contacts`, { data: [{ id: String(existing), ...fields }] }, headers(target));
      return recordResult(target, answer, false);
    }
    // Last_Name is mandatory in Zoho's Contacts: the phone number stands in until a name is known.
    const answer = await call(target, 'POST', `${API}/Contacts`, { data: [{ Last_Name: contact.phone_number, ...fields }] }, headers(target));
    return recordResult(target, answer, true);
  },

  async logCall(target, callRecord) {
    const answer = await call(
      target,
      'POST',
      `${API}/Calls`,
      {
        data: [
          {
            Subject: `Call ${callRecord.call_id}`,
            Call_Type: callRecord.direction === 'inbound' ? 'Inbound' : 'Outbound',
            Call_Start_Time: zohoTime(callRecord.start_timestamp ?? Date.now()),
            Call_Duration: zohoDuration(callRecord.duration_ms ?? 0),
            Description: callBody(callRecord),
          },
        ],
      },
      headers(target),
    );
    return recordResult(target, answer, true);
  },
};
