/**
 * The contacts domain's entry: the API operations (functions/contacts.ts), the backfill
 * job's step (functions/contact-jobs.ts), and what other domains may use: the calls domain
 * asks for a new call's contact variables (through the narrow entry lookups.ts, as batches and SMS
 * ask for the do-not-call flags). Imports (imports.ts) write their rows with
 * upsertContactByNumber.
 */
export {
  createContact,
  deleteContact,
  getContact,
  getContactByPhone,
  getFieldMappings,
  listContactConversations,
  listContactFields,
  listContacts,
  listContactsPage,
  putFieldMappings,
  updateContact,
  
} from './contacts.ts';
export {
  getContactMemorySettings,
  getMemory,
  putContactMemory,
  putContactMemorySettings,
  saveCallToMemory,
  type CallForMemory,
} from './memory.ts';
;
export { getBackfillStatus, runBackfillStep, startBackfill,  type CallPageReader } from './backfill.ts';
export {
  createImportFromUpload,
  createImportJob,
  getImportJob,
  getLatestImport,
  importContacts,
  importStepFailed,
  listImportJobs,
  runImportStep,
  uploadImportFile,
} from './imports.ts';
export { CreateContactBody, ContactJobMessage, type Contact,  } from './schemas.ts';
