import * as z from 'zod';
import { idOf, lazySchema, queryInt } from '../platform/http/schemas.ts';
import { canonicalE164 } from '../platform/telephony/phone.ts';

/*
 * The contacts API contract (spec: Other resources, the Contacts group; shapes it does not
 * show follow retell-sdk's `contact` types). Every size is capped, so an oversized body is
 * a 400 naming the field, never a large item or a 500.
 */

const MAX_NAME_CHARS = 200;
const MAX_EMAIL_CHARS = 254;
const MAX_EXTERNAL_ID_CHARS = 256;
export const MAX_TAGS = 50;
export const MAX_TAG_CHARS = 64;
export const MAX_CUSTOM_FIELDS = 50;
const MAX_CUSTOM_VALUE_CHARS = 1000;
export const MAX_MEMORY_CHARS = 10_000;
export const MAX_FIELD_MAPPINGS = 100;

/** Contact fields built in; a custom field may not take one of these names (its variable would collide). */
export const BUILT_IN_FIELDS = ['contact_id', 'phone_number', 'first_name', 'last_name', 'email', 'tags', 'do_not_call', 'external_id', 'memory'] as const;

/** Custom field names: identifiers, so `{{contact_<name>}}` works in prompts. */
export const CUSTOM_FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

const contactPhone = () =>
  z
    .string()
    .max(32)
    .refine((value) => canonicalE164(value) !== undefined, 'Must be a valid phone number in E.164 format (+ and up to 15 digits, e.g. +14155550123)');

const customFieldName = () =>
  z
    .string()
    .regex(CUSTOM_FIELD_NAME, 'Must start with a letter or _ and hold only letters, digits and _ (at most 64)')
    .refine((name) => !(BUILT_IN_FIELDS as readonly string[]).includes(name), 'Is a built-in contact field');

const customValue = () => z.union([z.string().max(MAX_CUSTOM_VALUE_CHARS), z.number(), z.boolean()]);

/** custom_fields of a write: a value of null clears that field (retell-sdk's rule). */
const customFieldsInput = () =>
  z.record(z.string(), customValue().nullable()).superRefine((fields, context) => {
    const names = Object.keys(fields);
    if (names.length > MAX_CUSTOM_FIELDS) context.addIssue({ code: 'custom', message: `Must have at most ${MAX_CUSTOM_FIELDS} fields` });
    for (const name of names) {
      const checked = customFieldName().safeParse(name);
      if (!checked.success) context.addIssue({ code: 'custom', path: [name], message: `Field name: ${checked.error.issues[0]!.message}` });
    }
  });

const editableFields = () => ({
  first_name: z.string().trim().max(MAX_NAME_CHARS).optional(),
  last_name: z.string().trim().max(MAX_NAME_CHARS).optional(),
  email: z.email({ message: 'Must be an email address' }).max(MAX_EMAIL_CHARS).optional(),
  tags: z
    .array(z.string().trim().min(1).max(MAX_TAG_CHARS))
    .max(MAX_TAGS)
    .transform((tags) => [...new Set(tags)])
    .optional(),
  do_not_call: z.boolean().optional(),
  external_id: z.string().min(1).max(MAX_EXTERNAL_ID_CHARS).optional(),
  custom_fields: customFieldsInput().optional(),
});

/** A new contact, and what an import row or a backfill writes: a number and any fields (upsertContactByNumber). */
export const CreateContactBody = lazySchema(() => z.object({ phone_number: contactPhone(), ...editableFields() }));
export type CreateContactInput = z.infer<typeof CreateContactBody>;

/** Every field optional; `phone_number` moves the contact's claim to another number. */
export const UpdateContactBody = lazySchema(() => z.object({ phone_number: contactPhone().optional(), ...editableFields() }));
export type UpdateContactInput = z.infer<typeof UpdateContactBody>;


export type CustomFieldValue = string | number | boolean;

export const Contact = lazySchema(() =>
  z.object({
    contact_id: z.string(),
    org_id: z.string().describe('The workspace ID'),
    phone_number: z.string(),
    first_name: z.string().optional(),
    last_name: z.string().optional(),
    email: z.string().optional(),
    tags: z.array(z.string()),
    do_not_call: z.boolean(),
    external_id: z.string().optional(),
    custom_fields: z.record(z.string(), customValue()),
    created_timestamp: z.number().int(),
    user_modified_timestamp: z.number().int(),
  }),
);
export type Contact = z.infer<typeof Contact>;

export const contactIdParams = lazySchema(() => z.object({ contact_id: idOf('contact', 'a contact ID') }));
/** `/contacts/{id}/...` spells the parameter `id`. */
export const idParams = lazySchema(() => z.object({ id: idOf('contact', 'a contact ID') }));
export const phoneParams = lazySchema(() => z.object({ phone_number: contactPhone() }));

const LIST_LIMIT = { min: 1, max: 1000, default: 100 };

export const ListContactsQuery = lazySchema(() => z.object({ limit: queryInt(LIST_LIMIT) }));

// ---------------------------------------------------------------------------------------
// retell-sdk's POST /list-contacts (ContactListParams)

const stringOp = lazySchema(() => z.enum(['eq', 'ne', 'sw', 'ew', 'co']));
const numberOp = lazySchema(() => z.enum(['eq', 'ne', 'gt', 'ge', 'lt', 'le']));
const StringFilter = lazySchema(() => z.object({ type: z.literal('string'), op: stringOp, value: z.string().max(1000) }));
const NumberFilter = lazySchema(() => z.object({ type: z.literal('number'), op: numberOp, value: z.number() }));
const RangeFilter = lazySchema(() => z.object({ type: z.literal('range'), op: z.literal('bt'), value: z.array(z.number()).length(2) }));
const BooleanFilter = lazySchema(() => z.object({ type: z.literal('boolean'), op: z.literal('eq'), value: z.boolean() }));
const EnumFilter = lazySchema(() => z.object({ type: z.literal('enum'), op: z.literal('in'), value: z.array(z.string().max(1000)).max(100) }));
const PresentFilter = lazySchema(() => z.object({ type: z.literal('present'), op: z.enum(['pr', 'np']) }));
const key = () => ({ key: z.string().max(64) });

export const ContactFilterCriteria = lazySchema(() =>
  z.object({
    contact_id: StringFilter.optional(),
    phone_number: StringFilter.optional(),
    do_not_call: BooleanFilter.optional(),
    external_id: z.discriminatedUnion('type', [StringFilter, PresentFilter]).optional(),
    last_conversation_timestamp: z.discriminatedUnion('type', [NumberFilter, RangeFilter]).optional(),
    tags: EnumFilter.optional(),
    custom_fields: z
      .array(z.discriminatedUnion('type', [StringFilter.extend(key()), NumberFilter.extend(key()), BooleanFilter.extend(key()), RangeFilter.extend(key()), EnumFilter.extend(key()), PresentFilter.extend(key())]))
      .max(20)
      .optional(),
  }),
);
export type ContactFilterCriteria = z.infer<typeof ContactFilterCriteria>;

export const ListContactsBody = lazySchema(() =>
  z.object({
    filter_criteria: ContactFilterCriteria.optional(),
    limit: z.number().int().min(1).max(1000).default(50),
    pagination_key: z.string().max(200).optional(),
    search_query: z.string().max(200).optional(),
    skip: z.number().int().min(0).max(100_000).optional(),
    sort_order: z.enum(['asc', 'desc']).default('desc'),
  }),
);
export type ListContactsInput = z.infer<typeof ListContactsBody>;

export const ContactPage = lazySchema(() =>
  z.object({ items: z.array(Contact), has_more: z.boolean(), pagination_key: z.string().optional() }),
);

// ---------------------------------------------------------------------------------------
// Conversations, fields, mappings

export const ConversationsQuery = lazySchema(() =>
  z.object({
    limit: queryInt({ min: 1, max: 100, default: 20 }),
    before: z.string().max(200).optional().describe('next_before of the previous page'),
    pagination_key: z.string().max(200).optional().describe('retell-sdk\'s spelling of `before`'),
  }),
);

export const ConversationItem = lazySchema(() =>
  z.object({
    type: z.enum(['call', 'chat']),
    call_id: z.string().optional(),
    chat_id: z.string().optional(),
    direction: z.enum(['inbound', 'outbound']).optional(),
    call_status: z.string().optional(),
    start_timestamp: z.number().optional(),
    duration_ms: z.number().optional(),
    disconnection_reason: z.string().optional(),
    sentiment: z.string().optional(),
    successful: z.boolean().optional(),
    summary: z.string().optional(),
  }),
);
export type ConversationItem = z.infer<typeof ConversationItem>;

export const ConversationPage = lazySchema(() =>
  z.object({
    items: z.array(ConversationItem),
    has_more: z.boolean(),
    next_before: z.string().nullable().describe('Pass back as `before` for the next page; null at the end'),
    pagination_key: z.string().optional().describe('The same key, for retell-sdk'),
  }),
);

export const ContactFieldList = lazySchema(() =>
  z.object({
    built_in_fields: z.array(z.string()),
    custom_fields: z.array(z.string()).describe('Custom field names the workspace\'s contacts have used, sorted'),
  }),
);

/** A mapping's target: a built-in field (not the ID) or `custom_fields.<name>`. */
export const MAPPABLE_BUILT_IN = ['phone_number', 'first_name', 'last_name', 'email', 'tags', 'do_not_call', 'external_id'] as const;

const mappingTarget = () =>
  z.string().refine(
    (target) =>
      (MAPPABLE_BUILT_IN as readonly string[]).includes(target) ||
      (target.startsWith('custom_fields.') && CUSTOM_FIELD_NAME.test(target.slice('custom_fields.'.length)) &&
        !(BUILT_IN_FIELDS as readonly string[]).includes(target.slice('custom_fields.'.length))),
    `Must be one of ${MAPPABLE_BUILT_IN.join(', ')} or custom_fields.<name>`,
  );

export const FieldMapping = lazySchema(() =>
  z.object({
    external_field_name: z.string().trim().min(1).max(200).describe('The CSV header or CRM field'),
    field_name: mappingTarget().describe('The contact field it fills'),
  }),
);

export const FieldMappingsBody = lazySchema(() =>
  z
    .object({ mappings: z.array(FieldMapping).max(MAX_FIELD_MAPPINGS) })
    .superRefine((body, context) => {
      const columns = new Set<string>();
      const targets = new Set<string>();
      body.mappings.forEach((mapping, index) => {
        const column = mapping.external_field_name.toLowerCase();
        if (columns.has(column)) context.addIssue({ code: 'custom', path: ['mappings', index, 'external_field_name'], message: 'Is mapped twice' });
        if (targets.has(mapping.field_name)) context.addIssue({ code: 'custom', path: ['mappings', index, 'field_name'], message: 'Is the target of two columns' });
        columns.add(column);
        targets.add(mapping.field_name);
      });
      if (body.mappings.length > 0 && !targets.has('phone_number')) {
        context.addIssue({ code: 'custom', path: ['mappings'], message: 'Exactly one mapping must target phone_number' });
      }
    }),
);
export type FieldMappingsInput = z.infer<typeof FieldMappingsBody>;

export const FieldMappings = lazySchema(() =>
  z.object({ mappings: z.array(FieldMapping), user_modified_timestamp: z.number().int().nullable() }),
);

// ---------------------------------------------------------------------------------------
// Memory

export const MemoryBody = lazySchema(() => z.object({ memory: z.string().max(MAX_MEMORY_CHARS) }));
export const Memory = lazySchema(() =>
  z.object({ contact_id: z.string(), memory: z.string(), user_modified_timestamp: z.number().int().nullable() }),
);
export type Memory = z.infer<typeof Memory>;

export const SaveCallBody = lazySchema(() => z.object({ call_id: z.string().regex(/^call_[0-9a-f]{24}$/, 'Must be a call ID') }));

export const MemorySettingsBody = lazySchema(() =>
  z.object({
    enabled: z.boolean(),
    include_contact_fields: z.boolean().optional().describe('Contact fields join the variables too (default true)'),
    include_memory: z.boolean().optional().describe('The memory joins as contact_memory (default true)'),
  }),
);
export type MemorySettingsInput = z.infer<typeof MemorySettingsBody>;

export const MemorySettings = lazySchema(() =>
  z.object({
    enabled: z.boolean(),
    include_contact_fields: z.boolean(),
    include_memory: z.boolean(),
    user_modified_timestamp: z.number().int().nullable(),
  }),
);
export type MemorySettings = z.infer<typeof MemorySettings>;

// ---------------------------------------------------------------------------------------
// Backfill

const BackfillNumberFilter = lazySchema(() => z.discriminatedUnion('type', [NumberFilter, RangeFilter]));

export const BackfillBody = lazySchema(() =>
  z.object({
    backfill_attributes: z
      .array(customFieldName())
      .max(MAX_CUSTOM_FIELDS)
      .optional()
      .describe('custom_analysis_data keys copied into custom_fields from each number\'s latest call'),
    backfill_call_filter: z
      .object({
        agent: z.array(z.object({ agent_id: z.string().max(128), version: z.array(z.number().int()).max(100).optional() })).max(50).optional(),
        start_timestamp: BackfillNumberFilter.optional(),
      })
      .optional(),
  }),
);
export type BackfillInput = z.infer<typeof BackfillBody>;

export const BackfillStatus = lazySchema(() =>
  z.object({
    status: z.enum(['queued', 'running', 'idle']),
    succeeded: z.number().int().optional().describe('Contacts created or updated'),
    skipped: z.number().int().optional().describe('Numbers that already had a contact'),
    failed: z.number().int().optional(),
    start_timestamp: z.number().int().optional(),
    end_timestamp: z.number().int().optional(),
    triggered_by: z.enum(['manual', 'cron']).optional(),
  }),
);
export type BackfillStatus = z.infer<typeof BackfillStatus>;

/** A backfill step's message on the contact-jobs queue. */
export const BackfillJobMessage = lazySchema(() =>
  z.object({
    kind: z.literal('backfill'),
    workspace_id: z.string(),
    job_id: z.string(),
    after: z.string().optional(),
  }),
);
export type BackfillJobMessage = z.infer<typeof BackfillJobMessage>;

/** An import step's message: one chunk of an import job's rows (shared/contacts/imports.ts). */
export const ImportJobMessage = lazySchema(() =>
  z.object({
    kind: z.literal('import'),
    workspace_id: z.string(),
    job_id: z.string(),
    chunk: z.number().int().min(0),
  }),
);
export type ImportJobMessage = z.infer<typeof ImportJobMessage>;

/** The contact-jobs queue's message. */
export const ContactJobMessage = lazySchema(() => z.discriminatedUnion('kind', [BackfillJobMessage, ImportJobMessage]));
export type ContactJobMessage = z.infer<typeof ContactJobMessage>;
