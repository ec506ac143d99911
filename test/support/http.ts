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
  headers?: Record<string, string>;
  /** Source address of the connection, e.g. 127.0.0.2, to exercise IP allowlists for real. */
  localAddress?: string;
}

/** A real HTTP request to the local server, from a chosen loopback source address. */
export function call(baseUrl: string, method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
  const url = new URL(path, baseUrl);
  const payload =
    options.rawBody !== undefined
      ? Buffer.from(options.rawBody)
      : options.body !== undefined
        ? Buffer.from(JSON.stringify(options.body))
        : undefined;
  const headers: Record<string, string> = {
    ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
    ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
    ...options.headers,
  };
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method, headers, localAddress: options.localAddress, agent: false },
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
