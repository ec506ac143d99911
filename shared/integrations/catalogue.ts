/*
 * The app catalogue (GET /list-app-types, GET /get-app-tool-schema): every app type, its
 * providers, how each connects (OAuth or pasted credentials) and the tools an agent can
 * call through it, as JSON Schema function definitions. One list, read by the app routes,
 * the OAuth start (which providers a target takes) and the execute route.
 */

export const APP_TYPES = ['crm', 'calendar', 'knowledge_base', 'support', 'communication'] as const;
export type AppType = (typeof APP_TYPES)[number];

export interface ToolDefinition {
  name: string;
  description: string;
  parameters: { type: 'object'; properties: Record<string, unknown>; required: string[] };
}

export interface ProviderEntry {
  provider: string;
  type: AppType;
  display_name: string;
  auth: 'oauth' | 'pasted';
  /** Pasted credentials the provider takes (auth_config types). */
  auth_types?: readonly ('api_key' | 'basic')[];
  /** A per-tenant base URL is needed (Zendesk's subdomain). */
  requires_tenant_url?: boolean;
  tools: readonly string[];
}

const string = (description: string) => ({ type: 'string', description });

export const TOOLS: Record<string, ToolDefinition> = {
  check_availability: {
    name: 'check_availability',
    description: 'List free slots of an event type between two times',
    parameters: {
      type: 'object',
      properties: {
        event_type_id: { type: 'integer', description: 'The event type to book' },
        start: string('ISO 8601 start of the range'),
        end: string('ISO 8601 end of the range'),
      },
      required: ['event_type_id', 'start', 'end'],
    },
  },
  book_meeting: {
    name: 'book_meeting',
    description: 'Book a meeting for the caller',
    parameters: {
      type: 'object',
      properties: {
        event_type_id: { type: 'integer', description: 'The event type to book' },
        start: string('ISO 8601 start time'),
        name: string('Attendee name'),
        email: string('Attendee email'),
        time_zone: string('IANA time zone of the attendee'),
        phone_number: string('Attendee phone number (E.164)'),
      },
      required: ['event_type_id', 'start', 'name', 'email'],
    },
  },
  create_scheduling_link: {
    name: 'create_scheduling_link',
    description: 'Create a single-use scheduling link for an event type',
    parameters: { type: 'object', properties: { event_type_uri: string('The event type URI') }, required: ['event_type_uri'] },
  },
  create_ticket: {
    name: 'create_ticket',
    description: 'Create a support ticket',
    parameters: {
      type: 'object',
      properties: {
        subject: string('Ticket subject'),
        description: string('What the caller needs'),
        requester_email: string('Email of the requester'),
        requester_name: string('Name of the requester'),
        priority: { type: 'string', enum: ['low', 'normal', 'high', 'urgent'] },
      },
      required: ['subject', 'description'],
    },
  },
  get_ticket: {
    name: 'get_ticket',
    description: 'Read a support ticket\'s status',
    parameters: { type: 'object', properties: { ticket_id: string('The ticket ID') }, required: ['ticket_id'] },
  },
  upsert_contact: {
    name: 'upsert_contact',
    description: 'Create or update the CRM contact with this phone number',
    parameters: {
      type: 'object',
      properties: {
        phone_number: string('E.164 phone number'),
        first_name: string('First name'),
        last_name: string('Last name'),
        email: string('Email'),
      },
      required: ['phone_number'],
    },
  },
  log_call: {
    name: 'log_call',
    description: 'Log a call on the CRM',
    parameters: {
      type: 'object',
      properties: {
        call_id: string('The call ID'),
        phone_number: string('The other party (E.164)'),
        summary: string('Summary of the call'),
        duration_ms: { type: 'integer', description: 'Duration in milliseconds' },
      },
      required: ['summary'],
    },
  },
  search_documents: {
    name: 'search_documents',
    description: 'Search the synced documents',
    parameters: { type: 'object', properties: { query: string('What to look for') }, required: ['query'] },
  },
};

const crm = (provider: string, display: string): ProviderEntry => ({ provider, type: 'crm', display_name: display, auth: 'oauth', tools: ['upsert_contact', 'log_call'] });

const PROVIDERS: readonly ProviderEntry[] = [
  crm('hubspot', 'HubSpot'),
  crm('salesforce', 'Salesforce'),
  crm('dynamics', 'Microsoft Dynamics 365'),
  crm('zoho', 'Zoho CRM'),
  crm('gohighlevel', 'HighLevel'),
  { provider: 'calendly', type: 'calendar', display_name: 'Calendly', auth: 'oauth', tools: ['create_scheduling_link'] },
  { provider: 'cal_com', type: 'calendar', display_name: 'Cal.com', auth: 'pasted', auth_types: ['api_key'], tools: ['check_availability', 'book_meeting'] },
  { provider: 'google_drive', type: 'knowledge_base', display_name: 'Google Drive', auth: 'oauth', tools: ['search_documents'] },
  { provider: 'sharepoint', type: 'knowledge_base', display_name: 'SharePoint', auth: 'oauth', tools: ['search_documents'] },
  { provider: 'notion', type: 'knowledge_base', display_name: 'Notion', auth: 'oauth', tools: ['search_documents'] },
  {
    provider: 'zendesk',
    type: 'support',
    display_name: 'Zendesk',
    auth: 'pasted',
    auth_types: ['basic', 'api_key'],
    requires_tenant_url: true,
    tools: ['create_ticket', 'get_ticket'],
  },
];

export const CRM_PROVIDERS = PROVIDERS.filter((entry) => entry.type === 'crm').map((entry) => entry.provider);

export const providerEntry = (provider: string): ProviderEntry | undefined => PROVIDERS.find((entry) => entry.provider === provider);

/** GET /list-app-types: each type with its providers and their tools' names. */
export function appTypes() {
  return APP_TYPES.map((type) => ({
    type,
    providers: PROVIDERS.filter((entry) => entry.type === type).map((entry) => ({
      provider: entry.provider,
      display_name: entry.display_name,
      auth: entry.auth,
      ...(entry.auth_types ? { auth_types: [...entry.auth_types] } : {}),
      ...(entry.requires_tenant_url ? { requires_tenant_url: true } : {}),
      tools: [...entry.tools],
    })),
  }));
}

/** GET /get-app-tool-schema: the tools of one provider, one type, or all. */
export function toolSchemas(filter: { provider?: string; type?: string }) {
  return PROVIDERS.filter((entry) => (!filter.provider || entry.provider === filter.provider) && (!filter.type || entry.type === filter.type)).map((entry) => ({
    provider: entry.provider,
    type: entry.type,
    tools: entry.tools.map((name) => TOOLS[name]!),
  }));
}
