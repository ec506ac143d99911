import { badRequest } from '../platform/errors.ts';

/*
 * The CRM config's field rules (retell-sdk's `crm` types): `custom_fields` declare the
 * contact fields a workspace adds (with a type), `crm_analysis_data_mappings` write a call's
 * post-call analysis data into its contact, and a provider's `field_mappings` name the CRM
 * field each contact field is pushed to. Pure functions: no table, no vendor.
 */

type FieldType = 'string' | 'number' | 'boolean' | 'date' | 'datetime' | 'enum';
export interface CustomFieldSpec {
  name: string;
  type: FieldType;
  description?: string;
  label?: string;
  options?: string[];
}
export interface AnalysisMapping {
  analysis_data_name: string;
  field_name: string;
  update_mode: 'overwrite' | 'fill_if_empty' | 'merge';
}

type Scalar = string | number | boolean;

/** A Parley contact as the CRM side reads it. */
export interface ParleyContact {
  contact_id: string;
  phone_number: string;
  first_name?: string;
  last_name?: string;
  email?: string;
  external_id?: string;
  do_not_call?: boolean;
  custom_fields?: Record<string, Scalar>;
}

/** A change of a contact the analysis data asks for (update-contact's fields). */
export interface ContactChange {
  first_name?: string;
  last_name?: string;
  email?: string;
  external_id?: string;
  do_not_call?: boolean;
  custom_fields?: Record<string, Scalar>;
}

/** Built-in contact fields an analysis mapping may write, with their types. */
const BUILT_IN_TARGETS: Record<string, FieldType> = { first_name: 'string', last_name: 'string', email: 'string', external_id: 'string', do_not_call: 'boolean' };
/** Every built-in contact field name (a custom field may not take one). */
const BUILT_IN_NAMES = new Set(['contact_id', 'phone_number', 'first_name', 'last_name', 'email', 'tags', 'do_not_call', 'external_id', 'memory']);
/** The contacts domain's caps (docs/contacts.md). */
const MAX_TEXT: Record<string, number> = { first_name: 200, last_name: 200, email: 254, external_id: 256 };
const MAX_CUSTOM_TEXT = 1000;

/**
 * Checks the settings update-crm-config would store (400 naming the problem): custom field
 * names are snake_case (the schema), unique, never a built-in field's or starting with
 * `contact`/`external`, enums have options; each mapping targets an existing built-in or
 * custom field other than phone_number, `merge` only a text field; a custom field still
 * targeted by a mapping cannot be removed.
 */
export function checkCrmSettings(fields: readonly CustomFieldSpec[], mappings: readonly AnalysisMapping[], previousFields?: readonly CustomFieldSpec[]): void {
  const seen = new Set<string>();
  fields.forEach((field, index) => {
    const at = `custom_fields[${index}].name`;
    if (BUILT_IN_NAMES.has(field.name)) throw badRequest(`${at}: ${field.name} is a built-in contact field`);
    if (field.name.startsWith('contact') || field.name.startsWith('external')) throw badRequest(`${at}: must not start with contact or external`);
    if (seen.has(field.name)) throw badRequest(`${at}: ${field.name} is declared twice`);
    seen.add(field.name);
    if (field.type === 'enum' && !field.options?.length) throw badRequest(`custom_fields[${index}].options: required for an enum field`);
  });
  const types = new Map(fields.map((field) => [field.name, field.type] as const));
  mappings.forEach((mapping, index) => {
    const at = `crm_analysis_data_mappings[${index}].field_name`;
    if (mapping.field_name === 'phone_number') throw badRequest(`${at}: phone_number identifies the contact and cannot be written`);
    const type = BUILT_IN_TARGETS[mapping.field_name] ?? types.get(mapping.field_name);
    if (!type) {
      if (previousFields?.some((field) => field.name === mapping.field_name)) {
        throw badRequest(
          `custom_fields: ${mapping.field_name} is still the target of crm_analysis_data_mappings[${index}]; send crm_analysis_data_mappings in the same request to retarget or drop it`,
        );
      }
      throw badRequest(`${at}: ${mapping.field_name} is not a built-in or custom contact field`);
    }
    if (mapping.update_mode === 'merge' && type !== 'string') throw badRequest(`crm_analysis_data_mappings[${index}].update_mode: merge is for text fields; ${mapping.field_name} is ${type}`);
  });
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A value as a field of this type holds it, or undefined when it does not fit (skipped, never a failure). */
function typedValue(value: unknown, type: FieldType | undefined, options?: readonly string[]): Scalar | undefined {
  switch (type) {
    case undefined:
      return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : undefined;
    case 'string':
      return typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
    case 'number': {
      if (typeof value === 'number' && Number.isFinite(value)) return value;
      if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
      return undefined;
    }
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (value === 'true' || value === 'false') return value === 'true';
      return undefined;
    case 'date':
      return typeof value === 'string' && DATE.test(value) && !Number.isNaN(Date.parse(value)) ? value : undefined;
    case 'datetime':
      return typeof value === 'string' && value.length >= 10 && !Number.isNaN(Date.parse(value)) ? new Date(value).toISOString() : undefined;
    case 'enum':
      return typeof value === 'string' && options?.includes(value) ? value : undefined;
  }
}

const empty = (value: unknown) => value === undefined || value === null || value === '';

/**
 * What a call's analysis data changes on its contact: each mapping's value, typed as the
 * target field (a value that does not fit is skipped), applied by its update mode
 * (`overwrite`; `fill_if_empty` only where the contact holds nothing; `merge` appends text
 * on a new line unless the contact already holds it). Undefined when nothing changes.
 */
export function analysisChange(
  contact: ParleyContact,
  data: Record<string, unknown>,
  mappings: readonly AnalysisMapping[],
  fields: readonly CustomFieldSpec[],
): ContactChange | undefined {
  const change: ContactChange = {};
  const custom: Record<string, Scalar> = {};
  for (const mapping of mappings) {
    const raw = data[mapping.analysis_data_name];
    if (empty(raw)) continue;
    const builtIn = BUILT_IN_TARGETS[mapping.field_name];
    const spec = fields.find((field) => field.name === mapping.field_name);
    if (!builtIn && !spec) continue;
    let value = typedValue(raw, builtIn ?? spec!.type, spec?.options);
    if (value === undefined) continue;
    const current = builtIn ? (contact as unknown as Record<string, unknown>)[mapping.field_name] : contact.custom_fields?.[mapping.field_name];
    if (mapping.update_mode === 'fill_if_empty' && !empty(current)) continue;
    if (mapping.update_mode === 'merge' && typeof current === 'string' && current !== '') {
      if (current.split('\n').includes(String(value))) continue;
      value = `${current}\n${String(value)}`;
    }
    if (typeof value === 'string') {
      const cap = builtIn ? MAX_TEXT[mapping.field_name] : MAX_CUSTOM_TEXT;
      if (cap !== undefined && value.length > cap) {
        if (mapping.update_mode !== 'merge') continue;
        value = value.slice(value.length - cap);
      }
    }
    if (value === current) continue;
    if (builtIn) (change as Record<string, Scalar>)[mapping.field_name] = value;
    else custom[mapping.field_name] = value;
  }
  if (Object.keys(custom).length) change.custom_fields = custom;
  return Object.keys(change).length ? change : undefined;
}

/**
 * The CRM fields a contact is pushed with: each provider field mapping's contact field
 * (a built-in name, a custom field's name, or `custom_fields.<name>`), typed as the
 * workspace declared that custom field. Undefined when no mapping has a value.
 */
export function mappedFields(
  contact: ParleyContact,
  mappings: readonly { field_name: string; external_field_name: string }[],
  fields: readonly CustomFieldSpec[],
): Record<string, Scalar> | undefined {
  const out: Record<string, Scalar> = {};
  for (const mapping of mappings) {
    const name = mapping.field_name.startsWith('custom_fields.') ? mapping.field_name.slice('custom_fields.'.length) : mapping.field_name;
    const builtIn = name === mapping.field_name && name !== 'custom_fields' && BUILT_IN_NAMES.has(name);
    const raw = builtIn ? (contact as unknown as Record<string, unknown>)[name] : contact.custom_fields?.[name];
    const spec = builtIn ? undefined : fields.find((field) => field.name === name);
    const value = typedValue(raw, spec?.type, spec?.options);
    if (value !== undefined && value !== '') out[mapping.external_field_name] = value;
  }
  return Object.keys(out).length ? out : undefined;
}
