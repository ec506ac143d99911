import { domainHandler } from '../shared/platform/http/handler.ts';
import { contactRoutes } from '../shared/contacts/routes.ts';
import * as contacts from '../shared/contacts/index.ts';
import { getCall } from '../shared/calls/records/index.ts';
import { parseMultipart } from '../shared/platform/http/multipart.ts';

export const handler = domainHandler(contactRoutes, {
  createContact: ({ principal, body }) => contacts.createContact(principal.workspaceId, body),
  listContacts: ({ principal, query }) => contacts.listContacts(principal.workspaceId, query.limit),
  listContactsPage: ({ principal, body }) => contacts.listContactsPage(principal.workspaceId, body),
  getContact: ({ principal, params }) => contacts.getContact(principal.workspaceId, params.contact_id),
  getContactByPhone: ({ principal, params }) => contacts.getContactByPhone(principal.workspaceId, params.phone_number),
  updateContact: ({ principal, params, body }) => contacts.updateContact(principal.workspaceId, params.contact_id, body),
  deleteContact: ({ principal, params }) => contacts.deleteContact(principal.workspaceId, params.contact_id),
  listContactConversations: ({ principal, params, query }) =>
    contacts.listContactConversations(principal.workspaceId, params.contact_id, query),
  listContactFields: ({ principal }) => contacts.listContactFields(principal.workspaceId),
  getContactFieldMappings: ({ principal }) => contacts.getFieldMappings(principal.workspaceId),
  putContactFieldMappings: ({ principal, body }) => contacts.putFieldMappings(principal.workspaceId, body),
  getContactMemory: ({ principal, params }) => contacts.getMemory(principal.workspaceId, params.id),
  putContactMemory: ({ principal, params, body }) => contacts.putContactMemory(principal.workspaceId, params.id, body.memory),
  // The function sits above both domains: it reads the call (404 if not this workspace's)
  // and hands the contacts domain what it needs of it.
  saveCallToContactMemory: async ({ principal, params, body }) =>
    contacts.saveCallToMemory(principal.workspaceId, params.id, (await getCall(principal.workspaceId, body.call_id)) as contacts.CallForMemory),
  getContactMemorySettings: ({ principal }) => contacts.getContactMemorySettings(principal.workspaceId),
  putContactMemorySettings: ({ principal, body }) => contacts.putContactMemorySettings(principal.workspaceId, body),
  backfillContacts: ({ principal, body }) => contacts.startBackfill(principal.workspaceId, body),
  getBackfillContactJobStatus: ({ principal }) => contacts.getBackfillStatus(principal.workspaceId),
  importContacts: ({ principal, body }) => contacts.importContacts(principal.workspaceId, body),
  createContactImportJob: ({ principal, body }) => contacts.createImportJob(principal.workspaceId, body),
  getContactImportJob: ({ principal, params }) => contacts.getImportJob(principal.workspaceId, params.import_job_id),
  listContactImportJobs: ({ principal, query }) => contacts.listImportJobs(principal.workspaceId, query.limit),
  uploadContactImportFile: ({ principal, body }) => contacts.uploadImportFile(principal.workspaceId, body.file[0]!),
  createContactImport: ({ principal, body }) => contacts.createImportFromUpload(principal.workspaceId, body),
  getContactImport: ({ principal }) => contacts.getLatestImport(principal.workspaceId),
}, { multipart: parseMultipart });
