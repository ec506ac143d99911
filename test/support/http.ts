import { request as httpRequest } from 'node:http';

export interface ApiResponse<T = any> {
  status: number;
  headers: Record<string, string>;
  body: T;
  text: string;
}

export interface RequestOptions {
  key?: string;
  body?: unknown;
  /** Sent as is (for malformed-body tests) instead of JSON-encoding `body`. */
  rawBody?: string | Buffer;
  /** Extra headers; null leaves one out (e.g. the content-type a body otherwise gets). */
  headers?: Record<string, string | null>;
  /** Source address of the connection, e.g. 127.0.0.2, to exercise IP allowlists for real. */
  localAddress?: string;
  /** Headers sent as written, repeats included: [name, value, name, value, ...]. */
  rawHeaders?: string[];
}

/** A real HTTP request to the local server, from a chosen loopback source address. */
export function call(baseUrl: string, method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
  // The path is sent exactly as given (`//x` stays `//x`), never resolved against the base.
  const base = new URL(baseUrl);
  const payload =
    options.rawBody !== undefined
      ? Buffer.from(options.rawBody)
      : options.body !== undefined
        ? Buffer.from(JSON.stringify(options.body))
        : undefined;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries({
    ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
    ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
    ...options.headers,
  })) {
    if (value !== null) headers[name] = value;
  }
  // Node adds no Host header to headers given as a list.
  const sent = options.rawHeaders ? ['Host', base.host, ...Object.entries(headers).flat(), ...options.rawHeaders] : headers;
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        hostname: base.hostname.replace(/^\[|\]$/g, ''),
        port: base.port,
        // As a URL would, percent-encode what may not appear raw in a request line
        // (non-ASCII, spaces, quotes), and nothing else.
        path: path.replace(/[^\x21-\x7e]|["<>`{}]/gu, (char) => encodeURIComponent(char)),
        method,
        headers: sent,
        localAddress: options.localAddress,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = undefined;
          if (text) {
            try {
              body = JSON.parse(text);
            } catch {
              body = text;
            }
          }
          const flat: Record<string, string> = {};
          for (const [name, value] of Object.entries(res.headers)) {
            if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(',') : value;
          }
          resolve({ status: res.statusCode ?? 0, headers: flat, body, text });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** A client bound to one server and key: `api.get('/workspace')`. */
export function apiClient(baseUrl: string, key?: string) {
  const send = (method: string) => (path: string, options: RequestOptions = {}) =>
    call(baseUrl, method, path, { key, ...options });
  return {
    get: send('GET'),
    post: send('POST'),
    patch: send('PATCH'),
    put: send('PUT'),
    delete: send('DELETE'),
    withKey: (other: string) => apiClient(baseUrl, other),
  };
}
export type ApiClient = ReturnType<typeof apiClient>;

/**
 * The Cookie header a browser would send back after `response`: each cookie it set with a
 * value, as `name=value` (a cleared one is dropped). The cookies Parley sets carry no
 * `Expires`, so the joined Set-Cookie headers split at commas.
 */
export function cookiesFrom(response: ApiResponse): string {
  return (response.headers['set-cookie'] ?? '')
    .split(',')
    .map((cookie) => cookie.split(';', 1)[0]!.trim())
    .filter((pair) => /^[^=]+=./.test(pair))
    .join('; ');
}
