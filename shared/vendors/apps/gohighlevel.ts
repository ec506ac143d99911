import { badRequest, unprocessable } from '../../platform/errors.ts';
import { AppVendorFailed, call, callBody, otherParty, pathId, type AppTarget, type CrmClient, type CrmContact, type CrmField, type Json } from './core.ts';

/*
 * HighLevel (LeadConnector API v2, services.leadconnectorhq.com; `GOHIGHLEVEL_API_BASE_URL`
 * overrides it). Every request names the API version in a `Version` header and the
 * sub-account in the `location_id` kept from the token answer. The contact schema is the
 * standard contact fields plus the location's custom fields (named by their ID, which is
 * what a push sends); contacts are written with `/contacts/upsert` (the location's duplicate
 * rules match the phone number); HighLevel has no call-activity record for calls made
 * elsewhere, so a call is logged as a note on the other party's contact (upserted first).
 */

const VERSION = { version: '2021-07-28' };

const STANDARD: CrmField[] = [
  { name: 'firstName', type: 'string', label: 'First Name' },
  { name: 'lastName', type: 'string', label: 'Last Name' },
  { name: 'name', type: 'string', label: 'Full Name' },
  { name: 'email', type: 'string', label: 'Email' },
  { name: 'phone', type: 'string', label: 'Phone' },
  { name: 'companyName', type: 'string', label: 'Company Name' },
  { name: 'address1', type: 'string', label: 'Street Address' },
  { name: 'city', type: 'string', label: 'City' },
  { name: 'state', type: 'string', label: 'State' },
  { name: 'postalCode', type: 'string', label: 'Postal Code' },
  { name: 'country', type: 'string', label: 'Country' },
  { name: 'website', type: 'string', label: 'Website' },
  { name: 'timezone', type: 'string', label: 'Time Zone' },
  { name: 'dateOfBirth', type: 'date', label: 'Date of Birth' },
  { name: 'source', type: 'string', label: 'Source' },
  { name: 'dnd', type: 'boolean', label: 'Do Not Disturb' },
];
const STANDARD_NAMES = new Set(STANDARD.map((field) => field.name));

const TYPES: Record<string, CrmField['type']> = {
  NUMERICAL: 'number',
  MONETORY: 'number',
  DATE: 'date',
  SINGLE_OPTIONS: 'enum',
  MULTIPLE_OPTIONS: 'enum',
  RADIO: 'enum',
  CHECKBOX: 'enum',
};

function locationId(target: AppTarget): string {
  const id = target.kept?.location_id;
  if (!id) throw unprocessable(`The ${target.provider} connection has no location_id (the sub-account); reconnect it`);
  return pathId(target.provider, id);
}

async function upsert(target: AppTarget, contact: CrmContact): Promise<{ id: string; created: boolean }> {
  const standard: Record<string, unknown> = {};
  const customFields: { id: string; field_value: unknown }[] = [];
  for (const [name, value] of Object.entries(contact.fields ?? {})) {
    if (STANDARD_NAMES.has(name)) standard[name] = value;
    else customFields.push({ id: name, field_value: value });
  }
  const answer = await call(
    target,
    'POST',
    '/contacts/upsert',
    {
      locationId: decodeURIComponent(locationId(target)),
      phone: contact.phone_number,
      ...(contact.first_name ? { firstName: contact.first_name } : {}),
      ...(contact.last_name ? { lastName: contact.last_name } : {}),
      ...(contact.email ? { email: contact.email } : {}),
      ...standard,
      ...(customFields.length ? { customFields } : {}),
    },
    VERSION,
  );
  const id = answer.contact?.id;
  if (!id) throw new AppVendorFailed(target.provider, 'the upserted contact came back without id');
  return { id: String(id), created: answer.new === true };
}

export const gohighlevel: CrmClient = {
  async testAuth(target) {
    await call(target, 'GET', `/locations/${locationId(target)}`, undefined, VERSION);
  },

  async schema(target) {
    const answer = await call(target, 'GET', `/locations/${locationId(target)}/customFields?model=contact`, undefined, VERSION);
    const custom = ((answer.customFields ?? []) as Json[])
      .filter((field) => typeof field?.id === 'string')
      .map((field) => {
        const options = Array.isArray(field.picklistOptions) ? field.picklistOptions.map((option: Json) => String(option)) : [];
        return {
          name: String(field.id),
          type: TYPES[String(field.dataType)] ?? 'string',
          ...(field.name ? { label: String(field.name) } : {}),
          ...(field.fieldKey ? { description: String(field.fieldKey) } : {}),
          ...(options.length ? { options } : {}),
        };
      });
    return [...STANDARD, ...custom];
  },

  async upsertContact(target, contact) {
    const { id, created } = await upsert(target, contact);
    return { external_id: id, created };
  },

  async logCall(target, callRecord) {
    const phone = otherParty(callRecord);
    if (!phone) throw badRequest(`A call logged to ${target.provider} needs the other party's phone number (a note goes on their contact)`);
    const contact = await upsert(target, { contact_id: phone, phone_number: phone });
    const seconds = Math.round((callRecord.duration_ms ?? 0) / 1000);
    const heading = `Call ${callRecord.call_id} (${callRecord.direction ?? 'outbound'}, ${seconds} s)`;
    const body = callBody(callRecord);
    const answer = await call(target, 'POST', `/contacts/${pathId(target.provider, contact.id)}/notes`, { body: body ? `${heading}\n\n${body}` : heading }, VERSION);
    const id = answer.note?.id;
    if (!id) throw new AppVendorFailed(target.provider, 'the note came back without id');
    return { external_id: String(id), created: true };
  },
};
