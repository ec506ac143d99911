import {
  AppUnsupported,
  call,
  str,
  type AppTarget,
  type CrmCall,
  type CrmClient,
  type CrmContact,
  type CrmField,
  type Json,
  type PushResult,
} from './core.ts';
import { dynamics } from './dynamics.ts';
import { mockSearch, searchDocuments, testDocumentAuth } from './documents.ts';
import { gohighlevel } from './gohighlevel.ts';
import { zoho } from './zoho.ts';

/*
 * Integration apps' vendor APIs (docs/integrations.md): the minimal authenticated call an
 * auth test makes, the tools an agent may run (book a meeting, create a ticket, upsert a
 * contact, log a call), a CRM's contact fields and the pushes of a CRM sync. Every request
 * goes through the egress guard: an app's base URL (a Zendesk subdomain, a self-hosted
 * Cal.com, a Salesforce instance) is the user's choice. In mock mode (a connection made
 * through the mock OAuth provider) nothing leaves Parley and the answers are deterministic.
 */

export {
  AppAuthRejected,
  AppUnsupported,
  AppVendorFailed,
  
  type AppTarget,
  type CrmCall,
  type CrmContact,
  type CrmField,
  
  type PushResult,
} from './core.ts';
;

/** The CRMs with a client of their own (HubSpot and Salesforce are written out below). */
const CRM_CLIENTS: Partial<Record<string, CrmClient>> = { dynamics, zoho, gohighlevel };
const DOCUMENT_STORES = new Set(['google_drive', 'sharepoint', 'notion']);

const DEFAULT_BASE: Record<string, string> = {
  cal_com: 'https://api.cal.com/v2',
};

export const defaultAppBaseUrl = (provider: string): string | undefined => DEFAULT_BASE[provider];

const calHeaders = { 'cal-api-version': '2024-08-13' };

/** One minimal authenticated call; resolves when the vendor accepted the credentials. */
export async function testAppAuth(target: AppTarget): Promise<void> {
  if (target.mock) return;
  const crm = CRM_CLIENTS[target.provider];
  if (crm) return crm.testAuth(target);
  if (DOCUMENT_STORES.has(target.provider)) return testDocumentAuth(target);
  switch (target.provider) {
    case 'cal_com':
      await call(target, 'GET', '/me', undefined, calHeaders);
      return;
    case 'zendesk':
      await call(target, 'GET', '/api/v2/users/me.json');
      return;
    case 'hubspot':
      await call(target, 'GET', '/crm/v3/objects/contacts?limit=1');
      return;
    case 'salesforce':
      await call(target, 'GET', '/services/data/v60.0/limits');
      return;
    case 'calendly':
      await call(target, 'GET', '/users/me');
      return;
    default:
      throw new AppUnsupported(target.provider, 'Testing credentials');
  }
}

/** Runs one tool through the vendor's API and answers the vendor's result. */
export async function executeAppTool(target: AppTarget, tool: string, args: Record<string, unknown>): Promise<unknown> {
  if (target.mock) return { mock: true, tool, provider: target.provider, result: mockToolResult(target.provider, tool, args) };
  if (tool === 'search_documents' && DOCUMENT_STORES.has(target.provider)) return searchDocuments(target, String(args.query));
  switch (`${target.provider}:${tool}`) {
    case 'cal_com:check_availability': {
      const query = new URLSearchParams({ eventTypeId: String(args.event_type_id), start: String(args.start), end: String(args.end) });
      return call(target, 'GET', `/slots?${query}`, undefined, { 'cal-api-version': '2024-09-04' });
    }
    case 'cal_com:book_meeting':
      return call(
        target,
        'POST',
        '/bookings',
        {
          start: args.start,
          eventTypeId: args.event_type_id,
          attendee: { name: args.name, email: args.email, timeZone: args.time_zone ?? 'UTC', ...(args.phone_number ? { phoneNumber: args.phone_number } : {}) },
        },
        calHeaders,
      );
    case 'zendesk:create_ticket':
      return call(target, 'POST', '/api/v2/tickets.json', {
        ticket: {
          subject: args.subject,
          comment: { body: args.description },
          ...(args.requester_email ? { requester: { email: args.requester_email, name: args.requester_name ?? args.requester_email } } : {}),
          ...(args.priority ? { priority: args.priority } : {}),
        },
      });
    case 'zendesk:get_ticket':
      return call(target, 'GET', `/api/v2/tickets/${encodeURIComponent(String(args.ticket_id))}.json`);
    case 'hubspot:upsert_contact':
    case 'salesforce:upsert_contact':
    case 'dynamics:upsert_contact':
    case 'zoho:upsert_contact':
    case 'gohighlevel:upsert_contact':
      return pushCrmContact(target, {
        contact_id: str(args.phone_number) ?? '',
        phone_number: str(args.phone_number) ?? '',
        first_name: str(args.first_name),
        last_name: str(args.last_name),
        email: str(args.email),
      });
    case 'hubspot:log_call':
    case 'salesforce:log_call':
    case 'dynamics:log_call':
    case 'zoho:log_call':
    case 'gohighlevel:log_call':
      return pushCrmCall(target, { call_id: str(args.call_id) ?? 'manual', summary: str(args.summary), duration_ms: Number(args.duration_ms ?? 0), to_number: str(args.phone_number) });
    case 'calendly:create_scheduling_link':
      return call(target, 'POST', '/scheduling_links', { max_event_count: 1, owner: args.event_type_uri, owner_type: 'EventType' });
    default:
      throw new AppUnsupported(target.provider, `The tool ${tool}`);
  }
}

function mockToolResult(provider: string, tool: string, args: Record<string, unknown>): unknown {
  switch (tool) {
    case 'search_documents':
      return mockSearch(provider, String(args.query ?? ''));
    case 'check_availability':
      return { slots: [{ start: '2030-01-07T09:00:00Z' }, { start: '2030-01-07T10:00:00Z' }] };
    case 'book_meeting':
      return { booking_id: 'mock-booking-1', status: 'accepted', start: args.start ?? null };
    case 'create_ticket':
      return { ticket_id: 'mock-ticket-1', status: 'new', subject: args.subject ?? null };
    case 'get_ticket':
      return { ticket_id: args.ticket_id ?? null, status: 'open' };
    case 'upsert_contact':
      return { id: `mock-contact-${String(args.phone_number ?? '')}`, created: true };
    case 'log_call':
      return { id: 'mock-call-1' };
    default:
      return {};
  }
}

const MOCK_FIELDS: CrmField[] = [
  { name: 'firstname', type: 'string', label: 'First name' },
  { name: 'lastname', type: 'string', label: 'Last name' },
  { name: 'email', type: 'string', label: 'Email' },
  { name: 'phone', type: 'string', label: 'Phone number' },
  { name: 'lifecyclestage', type: 'enum', label: 'Lifecycle stage', options: ['lead', 'customer'] },
];

const hubspotType = (type: string, fieldType?: string): CrmField['type'] =>
  type === 'number' ? 'number' : type === 'bool' || fieldType === 'booleancheckbox' ? 'boolean' : type === 'date' ? 'date' : type === 'datetime' ? 'datetime' : type === 'enumeration' ? 'enum' : 'string';

const salesforceType = (type: string): CrmField['type'] =>
  ['double', 'int', 'currency', 'percent', 'long'].includes(type) ? 'number' : type === 'boolean' ? 'boolean' : type === 'date' ? 'date' : type === 'datetime' ? 'datetime' : type === 'picklist' ? 'enum' : 'string';

/** The CRM's contact object fields. */
export async function crmContactSchema(target: AppTarget): Promise<CrmField[]> {
  if (target.mock) return MOCK_FIELDS;
  const crm = CRM_CLIENTS[target.provider];
  if (crm) return crm.schema(target);
  switch (target.provider) {
    case 'hubspot': {
      const answer = await call(target, 'GET', '/crm/v3/properties/contacts');
      return ((answer.results ?? []) as Json[]).map((field) => ({
        name: String(field.name),
        type: hubspotType(String(field.type ?? ''), field.fieldType),
        ...(field.label ? { label: String(field.label) } : {}),
        ...(field.description ? { description: String(field.description) } : {}),
        ...(Array.isArray(field.options) && field.options.length ? { options: field.options.map((option: Json) => String(option.value)) } : {}),
      }));
    }
    case 'salesforce': {
      const answer = await call(target, 'GET', '/services/data/v60.0/sobjects/Contact/describe');
      return ((answer.fields ?? []) as Json[]).map((field) => ({
        name: String(field.name),
        type: salesforceType(String(field.type ?? '')),
        ...(field.label ? { label: String(field.label) } : {}),
        ...(Array.isArray(field.picklistValues) && field.picklistValues.length ? { options: field.picklistValues.map((value: Json) => String(value.value)) } : {}),
      }));
    }
    default:
      throw new AppUnsupported(target.provider, 'Reading the CRM schema');
  }
}

/** Creates or updates the CRM contact with this phone number; answers the CRM's ID for it. */
export async function pushCrmContact(target: AppTarget, contact: CrmContact): Promise<PushResult> {
  if (target.mock) return { external_id: `mock-contact-${contact.contact_id}`, created: true };
  const crm = CRM_CLIENTS[target.provider];
  if (crm) return crm.upsertContact(target, contact);
  switch (target.provider) {
    case 'hubspot': {
      const properties = {
        phone: contact.phone_number,
        ...(contact.first_name ? { firstname: contact.first_name } : {}),
        ...(contact.last_name ? { lastname: contact.last_name } : {}),
        ...(contact.email ? { email: contact.email } : {}),
        ...contact.fields,
      };
      const found = await call(target, 'POST', '/crm/v3/objects/contacts/search', {
        filterGroups: [{ filters: [{ propertyName: 'phone', operator: 'EQ', value: contact.phone_number }] }],
        limit: 1,
      });
      const existing = found.results?.[0]?.id as string | undefined;
      if (existing) {
        await call(target, 'PATCH', `/crm/v3/objects/contacts/${encodeURIComponent(existing)}`, { properties });
        return { external_id: existing, created: false };
      }
      const created = await call(target, 'POST', '/crm/v3/objects/contacts', { properties });
      return { external_id: String(created.id), created: true };
    }
    case 'salesforce': {
      const fields = {
        Phone: contact.phone_number,
        LastName: contact.last_name ?? contact.phone_number,
        ...(contact.first_name ? { FirstName: contact.first_name } : {}),
        ...(contact.email ? { Email: contact.email } : {}),
        ...contact.fields,
      };
      const soql = `SELECT Id FROM Contact WHERE Phone = '${contact.phone_number.replace(/[^+\d]/g, '')}' LIMIT 1`;
      const found = await call(target, 'GET', `/services/data/v60.0/query?q=${encodeURIComponent(soql)}`);
      const existing = found.records?.[0]?.Id as string | undefined;
      if (existing) {
        await call(target, 'PATCH', `/services/data/v60.0/sobjects/Contact/${encodeURIComponent(existing)}`, fields);
        return { external_id: existing, created: false };
      }
      const created = await call(target, 'POST', '/services/data/v60.0/sobjects/Contact', fields);
      return { external_id: String(created.id), created: true };
    }
    default:
      throw new AppUnsupported(target.provider, 'Pushing contacts');
  }
}

/** Logs an ended call as a CRM activity; answers the CRM's ID for it. */
export async function pushCrmCall(target: AppTarget, callRecord: CrmCall): Promise<PushResult> {
  if (target.mock) return { external_id: `mock-call-${callRecord.call_id}`, created: true };
  const crm = CRM_CLIENTS[target.provider];
  if (crm) return crm.logCall(target, callRecord);
  const body = callRecord.summary ?? callRecord.transcript ?? '';
  switch (target.provider) {
    case 'hubspot': {
      const created = await call(target, 'POST', '/crm/v3/objects/calls', {
        properties: {
          hs_timestamp: new Date(callRecord.start_timestamp ?? Date.now()).toISOString(),
          hs_call_title: `Call ${callRecord.call_id}`,
          hs_call_body: body,
          hs_call_duration: String(callRecord.duration_ms ?? 0),
          hs_call_direction: callRecord.direction === 'inbound' ? 'INBOUND' : 'OUTBOUND',
          hs_call_status: 'COMPLETED',
          ...(callRecord.from_number ? { hs_call_from_number: callRecord.from_number } : {}),
          ...(callRecord.to_number ? { hs_call_to_number: callRecord.to_number } : {}),
        },
      });
      return { external_id: String(created.id), created: true };
    }
    case 'salesforce': {
      const created = await call(target, 'POST', '/services/data/v60.0/sobjects/Task', {
        Subject: `Call ${callRecord.call_id}`,
        Description: body,
        TaskSubtype: 'Call',
        Status: 'Completed',
        CallDurationInSeconds: Math.round((callRecord.duration_ms ?? 0) / 1000),
      });
      return { external_id: String(created.id), created: true };
    }
    default:
      throw new AppUnsupported(target.provider, 'Pushing calls');
  }
}
