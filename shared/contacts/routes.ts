import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { defineRoutes } from '../platform/http/route.ts';
import {
  BackfillBody,
  BackfillStatus,
  Contact,
  ContactFieldList,
  ContactPage,
  contactIdParams,
  ConversationPage,
  ConversationsQuery,
  CreateContactBody,
  FieldMappings,
  FieldMappingsBody,
  idParams,
  ListContactsBody,
  ListContactsQuery,
  Memory,
  MemoryBody,
  MemorySettings,
  MemorySettingsBody,
  phoneParams,
  SaveCallBody,
  UpdateContactBody,
} from './schemas.ts';
import {
  CreateImportFromUploadBody,
  CreateImportJobBody,
  IMPORT_MAX_BODY_BYTES,
  IMPORT_UPLOAD_LIMITS,
  ImportContactsBody,
  ImportJob,
  ImportJobSummary,
  importJobParams,
  ImportReport,
  ListImportJobsQuery,
  RetellImportStatus,
  UploadedImportFile,
  UploadImportFileBody,
} from './import-schemas.ts';

/** An import's body: JSON (`{csv}` or `{contacts}`) or a multipart CSV `file`, up to 10 MB (413 above). */
const importBody = {
  bodyType: 'json-or-multipart',
  uploadLimits: IMPORT_UPLOAD_LIMITS,
  maxBodyBytes: IMPORT_MAX_BODY_BYTES,
  maxJsonString: IMPORT_MAX_BODY_BYTES,
} as const;

/** Contacts (spec: the Contacts group; scope `calls`, as the spec's scope table says). */
export const contactRoutes = defineRoutes({ domain: 'contacts', access: 'calls' }, {
  createContact: {
    method: 'POST', path: '/create-contact', status: 201,
    summary: 'Create a contact (one per phone number in a workspace; 409 if the number has one)',
    body: CreateContactBody, response: Contact,
  },
  listContacts: {
    method: 'GET', path: '/list-contacts', status: 200,
    summary: 'List contacts, newest first',
    query: ListContactsQuery, response: lazySchema(() => z.array(Contact)),
  },
  listContactsPage: {
    method: 'POST', path: '/list-contacts', status: 200,
    summary: 'List contacts as retell-sdk pages them (filter_criteria, search_query, pagination_key, skip)',
    body: ListContactsBody, response: ContactPage,
  },
  getContact: {
    method: 'GET', path: '/get-contact/{contact_id}', status: 200,
    summary: 'Get a contact',
    params: contactIdParams, response: Contact,
  },
  getContactByPhone: {
    method: 'GET', path: '/get-contact-by-phone/{phone_number}', status: 200,
    summary: 'Get the contact of a phone number (E.164)',
    params: phoneParams, response: Contact,
  },
  updateContact: {
    method: 'PATCH', path: '/update-contact/{contact_id}', status: 200,
    summary: 'Update a contact; a new phone_number moves its claim (409 if taken)',
    params: contactIdParams, body: UpdateContactBody, response: Contact,
  },
  deleteContact: {
    method: 'DELETE', path: '/delete-contact/{contact_id}', status: 204,
    summary: 'Delete a contact and its memory; its number is free again',
    params: contactIdParams,
  },
  listContactConversations: {
    method: 'GET', path: '/list-contact-conversations/{contact_id}', status: 200,
    summary: 'Calls with the contact\'s number, newest first (pass next_before back as `before`)',
    params: contactIdParams, query: ConversationsQuery, response: ConversationPage,
  },
  listContactFields: {
    method: 'GET', path: '/list-contact-fields', status: 200,
    summary: 'Built-in contact fields and the custom fields in use',
    response: ContactFieldList,
  },
  getContactFieldMappings: {
    method: 'GET', path: '/contact-field-mappings', status: 200,
    summary: 'CSV/CRM column → contact field mappings',
    response: FieldMappings,
  },
  putContactFieldMappings: {
    method: 'PUT', path: '/contact-field-mappings', status: 200,
    summary: 'Replace the column → contact field mappings (one must target phone_number)',
    body: FieldMappingsBody, response: FieldMappings,
  },
  getContactMemory: {
    method: 'GET', path: '/contacts/{id}/memory', status: 200,
    summary: 'A contact\'s memory text',
    params: idParams, response: Memory,
  },
  putContactMemory: {
    method: 'PUT', path: '/contacts/{id}/memory', status: 200,
    summary: 'Replace a contact\'s memory text',
    params: idParams, body: MemoryBody, response: Memory,
  },
  saveCallToContactMemory: {
    method: 'POST', path: '/contacts/{id}/memory/save-call', status: 200,
    summary: 'Append a language-model summary of an ended call with the contact to its memory',
    throttle: 'vendor',
    params: idParams, body: SaveCallBody, response: Memory,
  },
  getContactMemorySettings: {
    method: 'GET', path: '/contact-memory-settings', status: 200,
    summary: 'Whether contact memory and fields join new calls\' dynamic variables',
    response: MemorySettings,
  },
  putContactMemorySettings: {
    method: 'PUT', path: '/contact-memory-settings', status: 200,
    summary: 'Turn contact memory and fields in new calls\' dynamic variables on or off',
    body: MemorySettingsBody, response: MemorySettings,
  },
  backfillContacts: {
    method: 'POST', path: '/backfill-contacts', aliases: [{ method: 'POST', path: '/backfill-contact-analysis-data' }], status: 202,
    summary: 'Create contacts for the numbers in the call history, in the background (idempotent)',
    body: BackfillBody, response: BackfillStatus,
  },
  importContacts: {
    method: 'POST', path: '/import-contacts', status: 200,
    summary: 'Import up to 1,000 contacts now ({csv}, {contacts} or a multipart CSV file): upsert by number, a report of every row not imported',
    ...importBody, body: ImportContactsBody, response: ImportReport,
  },
  createContactImportJob: {
    method: 'POST', path: '/create-contact-import-job', status: 202,
    summary: 'Import up to 100,000 contacts in the background ({csv}, {contacts} or a multipart CSV file)',
    ...importBody, body: CreateImportJobBody, response: ImportJob,
  },
  getContactImportJob: {
    method: 'GET', path: '/get-contact-import-job/{import_job_id}', status: 200,
    summary: 'An import job: status, progress and the first row errors',
    params: importJobParams, response: ImportJob,
  },
  listContactImportJobs: {
    method: 'GET', path: '/list-contact-import-jobs', status: 200,
    summary: 'Import jobs, newest first (without their row errors)',
    query: ListImportJobsQuery, response: lazySchema(() => z.array(ImportJobSummary)),
  },
  uploadContactImportFile: {
    method: 'POST', path: '/upload-contact-import-file', status: 201,
    summary: 'Upload a CSV for create-contact-import (multipart `file`, up to 10 MB; kept a day)',
    bodyType: 'multipart', uploadLimits: IMPORT_UPLOAD_LIMITS, maxBodyBytes: IMPORT_MAX_BODY_BYTES,
    body: UploadImportFileBody, response: UploadedImportFile,
  },
  createContactImport: {
    method: 'POST', path: '/create-contact-import', status: 202,
    summary: 'Import an uploaded CSV in the background with a column mapping (retell-sdk\'s createImport)',
    body: CreateImportFromUploadBody, response: RetellImportStatus,
  },
  getContactImport: {
    method: 'GET', path: '/get-contact-import', status: 200,
    summary: 'The latest import\'s status and counts (retell-sdk\'s getImport; idle once it has ended)',
    response: RetellImportStatus,
  },
  getBackfillContactJobStatus: {
    method: 'GET', path: '/get-backfill-contact-job-status', status: 200,
    summary: 'The current or latest contacts backfill',
    response: BackfillStatus,
  },
});
