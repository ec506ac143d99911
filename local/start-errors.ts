const SETTINGS_PREFIX = 'Invalid Parley settings: ';

/**
 * What `npm start` prints when start-up fails: one line per problem, without a stack trace
 * (settings problems each on their own line, a busy port as a port, not as EADDRINUSE).
 */
export function startFailureLines(error: unknown): string[] {
  const prefix = 'Parley did not start:';
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const { address, port } = (error ?? {}) as { address?: string; port?: number };
  if (code === 'EADDRINUSE') {
    return [`${prefix} port ${port} on ${address} is already in use; stop what listens there or set PORT to another port.`];
  }
  if (code === 'EACCES' && port !== undefined) {
    return [`${prefix} not allowed to listen on port ${port} on ${address}; set PORT to a port above 1023.`];
  }
  const message = error instanceof Error ? error.message : String(error);
  if (message.startsWith(SETTINGS_PREFIX)) {
    return message
      .slice(SETTINGS_PREFIX.length)
      .split('; ')
      .map((problem) => `${prefix} invalid setting ${problem}`);
  }
  return [`${prefix} ${message.split('\n')[0]}`];
}
