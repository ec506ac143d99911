import { randomBytes, randomInt } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake of the Twilio REST API parts Parley uses, on 127.0.0.1: the core API
 * (`/2010-04-01/Accounts/{sid}/…`: available numbers, incoming numbers, SIP credential
 * lists, Messages) and the trunking API (`/v1/Trunks…`), both on one origin (`TWILIO_BASE_URL`).
 * It checks basic auth, records every request with its form fields, keeps the trunks and
 * numbers it has handed out, and answers a scripted failure when one is queued.
 */
interface FakeTwilioRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  form: Record<string, string>;
  authorization: string | undefined;
}

export interface FakeTwilio {
  url: string;
  requests: FakeTwilioRequest[];
  trunks: Map<string, { friendlyName: string; originationUrls: string[]; credentialLists: string[]; phoneNumbers: string[]; transferMode?: string }>;
  credentialLists: Map<string, { username: string; password: string }[]>;
  numbers: Map<string, string>;
  /** Messages sent through `POST …/Messages.json`, in order. */
  messages: { sid: string; from: string; to: string; body: string }[];
  /** Numbers search answers with; default: three random ones in the area code asked for. */
  available: string[] | undefined;
  /** Runs before a sent message is answered (a status callback that beats the answer, as Twilio's can). */
  beforeMessageAnswer: ((message: { sid: string; from: string; to: string; body: string }) => Promise<void>) | undefined;
  /** The next request matching `method path-pattern` gets this status and body instead. */
  failNext(method: string, path: RegExp, status: number, body?: Record<string, unknown>): void;
  close(): Promise<void>;
}

const sid = (prefix: string) => prefix + randomBytes(16).toString('hex');

export async function startFakeTwilio(accountSid: string, authToken: string): Promise<FakeTwilio> {
  const failures: { method: string; path: RegExp; status: number; body: Record<string, unknown> }[] = [];
  const fake: Omit<FakeTwilio, 'url' | 'close'> = {
    requests: [],
    trunks: new Map(),
    credentialLists: new Map(),
    numbers: new Map(),
    messages: [],
    available: undefined,
    beforeMessageAnswer: undefined,
    failNext: (method, path, status, body = { code: 20500, message: 'Internal Server Error', status }) =>
      void failures.push({ method, path, status, body }),
  };
  const expectedAuth = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`;
  const account = `/2010-04-01/Accounts/${accountSid}`;

  const handle = (req: IncomingMessage, res: ServerResponse, text: string) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const form = Object.fromEntries(new URLSearchParams(text));
    const method = req.method ?? 'GET';
    const path = url.pathname;
    fake.requests.push({ method, path, query: Object.fromEntries(url.searchParams), form, authorization: req.headers.authorization });
    const send = (status: number, body?: unknown) => {
      res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };
    if (req.headers.authorization !== expectedAuth) return send(401, { code: 20003, message: 'Authenticate', status: 401 });
    const failure = failures.findIndex((f) => f.method === method && f.path.test(path));
    if (failure !== -1) {
      const [f] = failures.splice(failure, 1);
      return send(f!.status, f!.body);
    }
    let match: RegExpExecArray | null;
    if (method === 'POST' && path === '/v1/Trunks') {
      const trunkSid = sid('TK');
      fake.trunks.set(trunkSid, {
        friendlyName: form.FriendlyName ?? '',
        originationUrls: [],
        credentialLists: [],
        phoneNumbers: [],
        transferMode: form.TransferMode,
      });
      return send(201, { sid: trunkSid, friendly_name: form.FriendlyName });
    }
    if ((match = /^\/v1\/Trunks\/([^/]+)\/(OriginationUrls|CredentialLists|PhoneNumbers)$/.exec(path)) && method === 'POST') {
      const trunk = fake.trunks.get(match[1]!);
      if (!trunk) return send(404, { code: 20404, message: 'Not found', status: 404 });
      if (match[2] === 'OriginationUrls') trunk.originationUrls.push(form.SipUrl ?? '');
      if (match[2] === 'CredentialLists') trunk.credentialLists.push(form.CredentialListSid ?? '');
      if (match[2] === 'PhoneNumbers') {
        if (!fake.numbers.has(form.PhoneNumberSid ?? '')) return send(404, { code: 20404, message: 'Not found', status: 404 });
        trunk.phoneNumbers.push(form.PhoneNumberSid ?? '');
      }
      return send(201, { sid: form.CredentialListSid ?? form.PhoneNumberSid ?? sid('OU') });
    }
    if (method === 'POST' && path === `${account}/SIP/CredentialLists.json`) {
      const listSid = sid('CL');
      fake.credentialLists.set(listSid, []);
      return send(201, { sid: listSid });
    }
    if ((match = new RegExp(`^${account}/SIP/CredentialLists/([^/]+)/Credentials\\.json$`).exec(path)) && method === 'POST') {
      const list = fake.credentialLists.get(match[1]!);
      if (!list) return send(404, { code: 20404, message: 'Not found', status: 404 });
      list.push({ username: form.Username ?? '', password: form.Password ?? '' });
      return send(201, { sid: sid('CR'), username: form.Username });
    }
    if ((match = new RegExp(`^${account}/AvailablePhoneNumbers/([A-Z]{2})/(Local|TollFree)\\.json$`).exec(path)) && method === 'GET') {
      const area = url.searchParams.get('AreaCode') ?? (match[2] === 'TollFree' ? '833' : '415');
      const numbers = fake.available ?? [0, 1, 2].map(() => `+1${area}${randomInt(200, 1000)}${String(randomInt(0, 10_000)).padStart(4, '0')}`);
      const size = Number(url.searchParams.get('PageSize') ?? '50');
      return send(200, {
        available_phone_numbers: numbers.slice(0, size).map((n) => ({ phone_number: n, locality: 'San Francisco', region: 'CA', iso_country: match![1] })),
      });
    }
    if (method === 'POST' && path === `${account}/IncomingPhoneNumbers.json`) {
      const numberSid = sid('PN');
      fake.numbers.set(numberSid, form.PhoneNumber ?? '');
      return send(201, { sid: numberSid, phone_number: form.PhoneNumber });
    }
    if (method === 'POST' && path === `${account}/Messages.json`) {
      // Twilio's own checks of a message: a To it can route, a body.
      if (!/^\+[1-9][0-9]{6,14}$/.test(form.To ?? '')) return send(400, { code: 21211, message: "Invalid 'To' Phone Number", status: 400 });
      if (!form.Body) return send(400, { code: 21602, message: 'Message body is required.', status: 400 });
      const message = { sid: sid('SM'), from: form.From ?? '', to: form.To ?? '', body: form.Body };
      fake.messages.push(message);
      const answer = () => send(201, { sid: message.sid, status: 'queued', from: message.from, to: message.to, body: message.body });
      if (!fake.beforeMessageAnswer) return answer();
      void fake.beforeMessageAnswer(message).then(answer, () => send(500, { code: 20500, message: 'hook failed', status: 500 }));
      return;
    }
    if ((match = new RegExp(`^${account}/IncomingPhoneNumbers/([^/]+)\\.json$`).exec(path)) && method === 'DELETE') {
      if (!fake.numbers.delete(match[1]!)) return send(404, { code: 20404, message: 'Not found', status: 404 });
      return send(204);
    }
    return send(404, { code: 20404, message: `No fake for ${method} ${path}`, status: 404 });
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    ...fake,
    get available() {
      return fake.available;
    },
    set available(value) {
      fake.available = value;
    },
    get beforeMessageAnswer() {
      return fake.beforeMessageAnswer;
    },
    set beforeMessageAnswer(value) {
      fake.beforeMessageAnswer = value;
    },
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  } as FakeTwilio;
}
