import { canonicalE164 } from '../../platform/telephony/phone.ts';
import { getContactItem, getMemoryItem, getMemorySettings, getPhoneClaim, type ContactItem } from '../store.ts';

/*
 * The contacts domain's narrow entry, for domains that look a contact up by number while
 * dialing or texting (calls: a new call's contact variables; batches and SMS: the
 * do-not-call flags): the contact items only, no contacts schemas, imports or backfill.
 * esbuild keeps the top-level schemas of every module a bundle reaches, so the calls
 * functions took the contacts schemas and the import schemas (about 10 KiB) at cold start
 * through index.ts for one function (docs/performance.md, "Narrow entries").
 */

/** The contact holding `e164`, if any (its claim item names it; a stale claim is no contact). */
export async function contactByPhone(workspaceId: string, e164: string): Promise<ContactItem | undefined> {
  const claim = await getPhoneClaim(workspaceId, e164);
  if (!claim) return undefined;
  const item = await getContactItem(workspaceId, claim.contact_id);
  return item && item.phone_number === e164 ? item : undefined;
}

/**
 * The dynamic variables a new call with `phoneNumber` gets from its contact, when the
 * workspace's memory settings are enabled (else none): `contact_id`, `contact_phone_number`,
 * `contact_first_name`, `contact_last_name`, `contact_email`, `contact_tags` (comma
 * separated), `contact_do_not_call`, `contact_external_id`, `contact_<custom field>` and
 * `contact_memory`. Values are strings, as dynamic variables are. The calls domain merges
 * them below the call's own variables (spec: contact fields are merged below).
 */
export async function contactVariables(workspaceId: string, phoneNumber: string | undefined): Promise<Record<string, string>> {
  if (!phoneNumber || !canonicalE164(phoneNumber)) return {};
  // Settings first: with memory off (the default) a call creation pays one read, not three.
  const settings = await getMemorySettings(workspaceId);
  if (!settings?.enabled) return {};
  const contact = await contactByPhone(workspaceId, phoneNumber);
  if (!contact) return {};
  const variables: Record<string, string> = {};
  if (settings.include_contact_fields ?? true) {
    for (const [name, value] of Object.entries(contact.custom_fields)) variables[`contact_${name}`] = String(value);
    Object.assign(variables, {
      contact_id: contact.contact_id,
      contact_phone_number: contact.phone_number,
      ...(contact.first_name !== undefined ? { contact_first_name: contact.first_name } : {}),
      ...(contact.last_name !== undefined ? { contact_last_name: contact.last_name } : {}),
      ...(contact.email !== undefined ? { contact_email: contact.email } : {}),
      ...(contact.tags.length ? { contact_tags: contact.tags.join(', ') } : {}),
      contact_do_not_call: String(contact.do_not_call),
      ...(contact.external_id !== undefined ? { contact_external_id: contact.external_id } : {}),
    });
  }
  if (settings.include_memory ?? true) {
    const memory = await getMemoryItem(workspaceId, contact.contact_id);
    if (memory?.memory) variables.contact_memory = memory.memory;
  }
  return variables;
}

/**
 * Which of `numbers` belong to a contact of the workspace flagged do-not-call, read now (the
 * batch pass asks at dial time, so a contact flagged after its batch was created is skipped).
 * One claim read and one contact read a number, all in parallel: a pass asks for the few
 * dozen numbers it is about to dial.
 */
export async function doNotCallNumbers(workspaceId: string, numbers: readonly string[]): Promise<Set<string>> {
  const flagged = await Promise.all(
    numbers.map(async (number) => ((await contactByPhone(workspaceId, number))?.do_not_call ? number : undefined)),
  );
  return new Set(flagged.filter((number): number is string => number !== undefined));
}
