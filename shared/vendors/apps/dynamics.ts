import { AppVendorFailed, call, callBody, otherParty, pathId, type AppTarget, type CrmClient, type CrmField, type Json } from './core.ts';

/*
 * Microsoft Dynamics 365 (Dataverse Web API v9.2, OData 4.0) on the organisation's own host
 * (`options.instance_url`, or `DYNAMICS_API_BASE_URL`): the contact table's attribute
 * metadata (with its picklists' options), contacts found by `telephone1` and created or
 * updated, calls logged as `phonecall` activities. Creates ask for the record back
 * (`Prefer: return=representation`) so the new ID comes in the answer.
 */

const API = '/api/data/v9.2';
const ODATA = { 'odata-maxversion': '4.0', 'odata-version': '4.0' };
const RETURN = { ...ODATA, prefer: 'return=representation' };

/** An OData string literal: single quotes doubled. */
const literal = (value: string) => `'${value.replaceAll("'", "''")}'`;

const TYPES: Record<string, CrmField['type']> = {
  Integer: 'number',
  BigInt: 'number',
  Decimal: 'number',
  Double: 'number',
  Money: 'number',
  Boolean: 'boolean',
  DateTime: 'datetime',
  Picklist: 'enum',
  State: 'enum',
  Status: 'enum',
};

/** Attribute kinds a contact push cannot set as a plain value (references, computed and internal columns). */
const SKIPPED = new Set(['Lookup', 'Customer', 'Owner', 'PartyList', 'Uniqueidentifier', 'Virtual', 'EntityName', 'CalendarRules', 'ManagedProperty']);

const label = (attribute: Json): string | undefined => {
  const text = attribute?.DisplayName?.UserLocalizedLabel?.Label;
  return typeof text === 'string' && text ? text : undefined;
};

export const dynamics: CrmClient = {
  async testAuth(target) {
    await call(target, 'GET', `${API}/WhoAmI`, undefined, ODATA);
  },

  async schema(target) {
    const entity = `${API}/EntityDefinitions(LogicalName='contact')`;
    const [attributes, picklists] = await Promise.all([
      call(target, 'GET', `${entity}/Attributes?$select=LogicalName,AttributeType,DisplayName,Description,IsValidForCreate`, undefined, ODATA),
      call(target, 'GET', `${entity}/Attributes/Microsoft.Dynamics.CRM.PicklistAttributeMetadata?$select=LogicalName&$expand=OptionSet($select=Options)`, undefined, ODATA),
    ]);
    const options = new Map<string, string[]>();
    for (const picklist of (picklists.value ?? []) as Json[]) {
      const values = ((picklist?.OptionSet?.Options ?? []) as Json[]).map((option) => String(option?.Value));
      if (typeof picklist?.LogicalName === 'string' && values.length) options.set(picklist.LogicalName, values);
    }
    return ((attributes.value ?? []) as Json[])
      .filter((attribute) => typeof attribute?.LogicalName === 'string' && attribute.IsValidForCreate !== false && !SKIPPED.has(String(attribute.AttributeType)))
      .map((attribute) => {
        const name = String(attribute.LogicalName);
        const description = attribute.Description?.UserLocalizedLabel?.Label;
        return {
          name,
          type: TYPES[String(attribute.AttributeType)] ?? 'string',
          ...(label(attribute) ? { label: label(attribute) } : {}),
          ...(typeof description === 'string' && description ? { description } : {}),
          ...(options.has(name) ? { options: options.get(name) } : {}),
        };
      });
  },

  async upsertContact(target, contact) {
    const fields = {
      telephone1: contact.phone_number,
      ...(contact.first_name ? { firstname: contact.first_name } : {}),
      ...(contact.last_name ? { lastname: contact.last_name } : {}),
      ...(contact.email ? { emailaddress1: contact.email } : {}),
      ...contact.fields,
    };
    const query = new URLSearchParams({ $select: 'contactid', $filter: `telephone1 eq ${literal(contact.phone_number)}`, $top: '1' });
    const found = await call(target, 'GET', `${API}/contacts?${query.toString()}`, undefined, ODATA);
    const existing = found.value?.[0]?.contactid;
    if (existing) {
      // If-Match: * makes the PATCH an update only (never an upsert that creates a second contact).
      await call(target, 'PATCH', `${API}/contacts(${pathId(target.provider, existing)})`, fields, { ...ODATA, 'if-match': '*' });
      return { external_id: String(existing), created: false };
    }
    const created = await call(target, 'POST', `${API}/contacts?$select=contactid`, { lastname: contact.phone_number, ...fields }, RETURN);
    if (!created.contactid) throw new AppVendorFailed(target.provider, 'the created contact came back without contactid');
    return { external_id: String(created.contactid), created: true };
  },

  async logCall(target: AppTarget, callRecord) {
    const minutes = Math.round((callRecord.duration_ms ?? 0) / 60_000);
    const start = callRecord.start_timestamp ?? Date.now();
    const created = await call(
      target,
      'POST',
      `${API}/phonecalls?$select=activityid`,
      {
        subject: `Call ${callRecord.call_id}`,
        description: callBody(callRecord),
        directioncode: callRecord.direction !== 'inbound',
        actualdurationminutes: minutes,
        actualstart: new Date(start).toISOString(),
        actualend: new Date(start + (callRecord.duration_ms ?? 0)).toISOString(),
        ...(otherParty(callRecord) ? { phonenumber: otherParty(callRecord) } : {}),
      },
      RETURN,
    );
    if (!created.activityid) throw new AppVendorFailed(target.provider, 'the logged call came back without activityid');
    return { external_id: String(created.activityid), created: true };
  },
};
