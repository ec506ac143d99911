import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';

/*
 * A fake of the CRM and document-search APIs the vendor clients of shared/vendors/apps call
 * (beside fake-oauth.ts's HubSpot, Zendesk and Cal.com), on 127.0.0.1 under one origin:
 * Dynamics 365's Web API at /api/data/v9.2 (WhoAmI, contact attribute metadata, contacts,
 * phonecalls), Zoho CRM at /crm/v2 (the `Zoho-oauthtoken` scheme; users, field settings,
 * Contacts search/insert/update, Calls, one status per record), HighLevel at the root
 * (the `Version` header; locations, custom fields, /contacts/upsert, notes), and the
 * search endpoints of Google Drive (/drive/v3), Microsoft Graph (/graph/v1.0) and Notion
 * (/notion/v1). Tokens are checked with `tokenValid` (what the fake OAuth server issued);
 * `failNext` makes the next API requests answer an error status. Every request is recorded.
 */

interface VendorRequest {
  method: string;
  path: string;
  /** The query string's parameters, decoded. */
  params: Record<string, string>;
  authorization?: string;
  headers: Record<string, string | undefined>;
  body: any;
}

export interface FakeCrmVendors {
  url: string;
  requests: VendorRequest[];
  /** Contacts by vendor (`dynamics`, `zoho`, `gohighlevel`): ID → fields. */
  contacts: Record<'dynamics' | 'zoho' | 'gohighlevel', Map<string, Record<string, unknown>>>;
  /** The next `count` API requests answer `status`. */
  failNext(status: number, count?: number): void;
  since(mark: number): VendorRequest[];
}

const read = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });

const send = (res: ServerResponse, status: number, body?: unknown) => {
  if (body === undefined) {
    res.writeHead(status);
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

const DOCUMENTS = [
  { id: 'doc-refunds', name: 'Refund policy', text: 'Refunds are paid within 14 days.', modified: '2030-01-01T10:00:00Z' },
  { id: 'doc-hours', name: 'Opening hours', text: 'We open at nine.', modified: '2030-01-02T10:00:00Z' },
];
const matching = (query: string) => DOCUMENTS.filter((doc) => `${doc.name} ${doc.text}`.toLowerCase().includes(query.toLowerCase()));

export async function fakeCrmVendors(tokenValid: (token: string) => boolean): Promise<FakeCrmVendors> {
  let failures: { status: number; count: number } | undefined;
  const fake: FakeCrmVendors = {
    url: '',
    requests: [],
    contacts: { dynamics: new Map(), zoho: new Map(), gohighlevel: new Map() },
    failNext(status, count = 1) {
      failures = { status, count };
    },
    since: (mark) => fake.requests.slice(mark),
  };

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const path = decodeURIComponent(url.pathname);
    const text = await read(req);
    let body: any;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    const header = (name: string) => req.headers[name] as string | undefined;
    fake.requests.push({
      method: req.method ?? '',
      path: decodeURIComponent(url.pathname + url.search),
      params: Object.fromEntries(url.searchParams),
      authorization: header('authorization'),
      headers: {
        version: header('version'),
        prefer: header('prefer'),
        'if-match': header('if-match'),
        'odata-version': header('odata-version'),
        'notion-version': header('notion-version'),
      },
      body,
    });
    if (failures && failures.count > 0) {
      failures.count--;
      return send(res, failures.status, { message: `failure ${failures.status}` });
    }
    const auth = header('authorization') ?? '';
    const scheme = path.startsWith('/crm/v2/') ? 'Zoho-oauthtoken ' : 'Bearer ';
    if (!auth.startsWith(scheme) || !tokenValid(auth.slice(scheme.length))) return send(res, 401, { code: 'INVALID_TOKEN', message: 'invalid oauth token' });

    // Dynamics 365 (Dataverse Web API)
    if (path.startsWith('/api/data/v9.2/')) {
      if (header('odata-version') !== '4.0') return send(res, 400, { error: { message: 'OData-Version 4.0 expected' } });
      const rest = path.slice('/api/data/v9.2'.length);
      const contacts = fake.contacts.dynamics;
      if (rest === '/WhoAmI') return send(res, 200, { UserId: 'user-1' });
      if (rest === "/EntityDefinitions(LogicalName='contact')/Attributes") {
        return send(res, 200, {
          value: [
            { LogicalName: 'firstname', AttributeType: 'String', DisplayName: { UserLocalizedLabel: { Label: 'First Name' } }, IsValidForCreate: true },
            { LogicalName: 'numberofchildren', AttributeType: 'Integer', DisplayName: { UserLocalizedLabel: { Label: 'No. of Children' } }, IsValidForCreate: true },
            { LogicalName: 'preferredcontactmethodcode', AttributeType: 'Picklist', DisplayName: { UserLocalizedLabel: { Label: 'Preferred Method of Contact' } }, Description: { UserLocalizedLabel: { Label: 'How to reach them' } }, IsValidForCreate: true },
            { LogicalName: 'contactid', AttributeType: 'Uniqueidentifier', DisplayName: { UserLocalizedLabel: { Label: 'Contact' } }, IsValidForCreate: true },
            { LogicalName: 'fullname', AttributeType: 'String', DisplayName: { UserLocalizedLabel: { Label: 'Full Name' } }, IsValidForCreate: false },
          ],
        });
      }
      if (rest === "/EntityDefinitions(LogicalName='contact')/Attributes/Microsoft.Dynamics.CRM.PicklistAttributeMetadata") {
        return send(res, 200, { value: [{ LogicalName: 'preferredcontactmethodcode', OptionSet: { Options: [{ Value: 1 }, { Value: 2 }, { Value: 3 }] } }] });
      }
      if (rest === '/contacts' && req.method === 'GET') {
        const phone = /^telephone1 eq '(.*)'$/.exec(url.searchParams.get('$filter') ?? '')?.[1]?.replaceAll("''", "'");
        const found = [...contacts.entries()].find(([, fields]) => fields.telephone1 === phone);
        return send(res, 200, { value: found ? [{ contactid: found[0] }] : [] });
      }
      if (rest === '/contacts' && req.method === 'POST') {
        if (header('prefer') !== 'return=representation') return send(res, 204);
        const id = randomUUID();
        contacts.set(id, body);
        return send(res, 201, { contactid: id });
      }
      const existing = /^\/contacts\(([\w-]+)\)$/.exec(rest)?.[1];
      if (existing && req.method === 'PATCH') {
        if (!contacts.has(existing)) return send(res, 404, { error: { message: 'contact not found' } });
        contacts.set(existing, { ...contacts.get(existing), ...body });
        return send(res, 204);
      }
      if (rest === '/phonecalls' && req.method === 'POST') return send(res, 201, { activityid: randomUUID() });
      return send(res, 404, { error: { message: 'not found' } });
    }

    // Zoho CRM v2
    if (path.startsWith('/crm/v2/')) {
      const contacts = fake.contacts.zoho;
      const record = (id: string) => ({ data: [{ code: 'SUCCESS', details: { id }, message: 'record saved', status: 'success' }] });
      if (path === '/crm/v2/users') return send(res, 200, { users: [{ id: 'zuser-1', email: 'owner@example.com' }] });
      if (path === '/crm/v2/settings/fields' && url.searchParams.get('module') === 'Contacts') {
        return send(res, 200, {
          fields: [
            { api_name: 'Last_Name', data_type: 'text', field_label: 'Last Name' },
            { api_name: 'Lead_Source', data_type: 'picklist', field_label: 'Lead Source', pick_list_values: [{ display_value: '-None-', actual_value: '-None-' }, { display_value: 'Web', actual_value: 'Web' }] },
            { api_name: 'Date_of_Birth', data_type: 'date', field_label: 'Date of Birth' },
          ],
        });
      }
      if (path === '/crm/v2/Contacts/search') {
        const found = [...contacts.entries()].find(([, fields]) => fields.Phone === url.searchParams.get('phone'));
        return found ? send(res, 200, { data: [{ id: found[0], ...found[1] }] }) : send(res, 204);
      }
      if (path === '/crm/v2/Contacts' && (req.method === 'POST' || req.method === 'PUT')) {
        const [fields] = body?.data ?? [];
        if (fields?.Email === 'invalid') return send(res, 202, { data: [{ code: 'INVALID_DATA', details: { api_name: 'Email' }, message: 'invalid data', status: 'error' }] });
        if (req.method === 'POST') {
          if (!fields?.Last_Name) return send(res, 202, { data: [{ code: 'MANDATORY_NOT_FOUND', message: 'required field not found', status: 'error' }] });
          const id = `z${contacts.size + 1}`;
          contacts.set(id, fields);
          return send(res, 201, record(id));
        }
        if (!contacts.has(fields?.id)) return send(res, 202, { data: [{ code: 'INVALID_DATA', message: 'the id given seems to be invalid', status: 'error' }] });
        contacts.set(fields.id, { ...contacts.get(fields.id), ...fields });
        return send(res, 200, record(fields.id));
      }
      if (path === '/crm/v2/Calls' && req.method === 'POST') return send(res, 201, record(`zcall${fake.requests.length}`));
      return send(res, 404, { code: 'INVALID_URL_PATTERN' });
    }

    // Document search (Drive, Graph, Notion)
    if (path === '/drive/v3/about') return send(res, 200, { user: { displayName: 'Drive user' } });
    if (path === '/drive/v3/files') {
      const query = /^fullText contains '((?:[^'\\]|\\.)*)' and trashed = false$/.exec(url.searchParams.get('q') ?? '')?.[1]?.replace(/\\(.)/g, '$1');
      if (query === undefined) return send(res, 400, { error: { message: 'Invalid Value' } });
      return send(res, 200, { files: matching(query).map((doc) => ({ id: doc.id, name: doc.name, mimeType: 'application/vnd.google-apps.document', modifiedTime: doc.modified, webViewLink: `https://docs.example/${doc.id}` })) });
    }
    if (path === '/graph/v1.0/me') return send(res, 200, { id: 'graph-user' });
    if (path === '/graph/v1.0/search/query' && req.method === 'POST') {
      const query = String(body?.requests?.[0]?.query?.queryString ?? '');
      const hits = matching(query).map((doc) => ({ hitId: doc.id, summary: `<c0>${doc.name}</c0><ddd/>`, resource: { id: doc.id, name: `${doc.name}.docx`, webUrl: `https://contoso.sharepoint.com/${doc.id}`, lastModifiedDateTime: doc.modified } }));
      return send(res, 200, { value: [{ searchTerms: [query], hitsContainers: [{ hits, total: hits.length, moreResultsAvailable: false }] }] });
    }
    if (path.startsWith('/notion/v1/')) {
      if (header('notion-version') !== '2022-06-28') return send(res, 400, { code: 'missing_version' });
      if (path === '/notion/v1/users/me') return send(res, 200, { object: 'user', id: 'bot-1', type: 'bot' });
      if (path === '/notion/v1/search' && req.method === 'POST') {
        return send(res, 200, {
          object: 'list',
          results: matching(String(body?.query ?? '')).map((doc) => ({
            object: 'page',
            id: doc.id,
            url: `https://www.notion.so/${doc.id}`,
            last_edited_time: doc.modified,
            properties: { title: { id: 'title', type: 'title', title: [{ plain_text: doc.name }] } },
          })),
          has_more: false,
        });
      }
      return send(res, 404, { code: 'object_not_found' });
    }

    // HighLevel (LeadConnector v2)
    if (header('version') !== '2021-07-28') return send(res, 400, { message: 'Version header missing' });
    const contacts = fake.contacts.gohighlevel;
    if (path === '/locations/loc_1') return send(res, 200, { location: { id: 'loc_1', name: 'Main office' } });
    if (path === '/locations/loc_1/customFields' && url.searchParams.get('model') === 'contact') {
      return send(res, 200, { customFields: [{ id: 'cf_plan', name: 'Plan', fieldKey: 'contact.plan', dataType: 'SINGLE_OPTIONS', picklistOptions: ['basic', 'pro'] }, { id: 'cf_notes', name: 'Notes', fieldKey: 'contact.notes', dataType: 'LARGE_TEXT' }] });
    }
    if (path.startsWith('/locations/')) return send(res, 403, { message: 'The token does not have access to this location' });
    if (path === '/contacts/upsert' && req.method === 'POST') {
      if (body?.locationId !== 'loc_1') return send(res, 403, { message: 'The token does not have access to this location' });
      const found = [...contacts.entries()].find(([, fields]) => fields.phone === body.phone);
      const id = found?.[0] ?? `ghl${contacts.size + 1}`;
      contacts.set(id, { ...found?.[1], ...body });
      return send(res, found ? 200 : 201, { new: !found, contact: { id, ...body }, traceId: 't' });
    }
    const noted = /^\/contacts\/([\w-]+)\/notes$/.exec(path)?.[1];
    if (noted && req.method === 'POST') {
      if (!contacts.has(noted)) return send(res, 400, { message: 'Contact not found' });
      return send(res, 201, { note: { id: `note${fake.requests.length}`, body: body?.body, contactId: noted } });
    }
    return send(res, 404, { message: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return fake;
}
