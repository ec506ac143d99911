/*
 * How the local runtime reads a request's target, shared by the HTTP server (server.ts)
 * and the WebSocket monitors it loads on start (live-monitors.ts).
 */

export interface RequestTarget {
  /** The path exactly as sent (what API Gateway calls rawPath). */
  path: string;
  /** Everything after the first `?`, without it. */
  query: string;
}

/**
 * Splits the request target at its first `?` without resolving it as a URL: `new URL`
 * would read `//host/x` as a protocol-relative URL (path `/x`) and collapse `/a/../x`,
 * routing a request to a path it did not ask for.
 */
export function requestTarget(raw: string): RequestTarget {
  const withoutFragment = raw.split('#', 1)[0]!;
  const at = withoutFragment.indexOf('?');
  return at === -1
    ? { path: withoutFragment, query: '' }
    : { path: withoutFragment.slice(0, at), query: withoutFragment.slice(at + 1) };
}
