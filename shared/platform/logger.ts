import { Logger } from '@aws-lambda-powertools/logger';
import { onFirstUse } from './lazy.ts';

/**
 * Structured JSON logs with the Lambda request id (Powertools). Nothing logs headers or
 * bodies, and these keys are masked wherever they appear, as a second line of defence.
 */
const SECRET_KEYS = /authorization|api_key|public_key|secret|password|token|ciphertext/i;

export const logger: Logger = onFirstUse(
  () =>
    new Logger({
      serviceName: 'parley',
      logLevel: (process.env.POWERTOOLS_LOG_LEVEL as 'INFO' | undefined) ?? 'INFO',
      jsonReplacerFn: (key: string, value: unknown) =>
        key && SECRET_KEYS.test(key) && typeof value === 'string' ? '[redacted]' : value,
    }),
  { bindMethods: true },
);
