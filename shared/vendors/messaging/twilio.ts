import { vendorSetting } from '../../platform/aws/secrets.ts';
import { badGateway, unprocessable } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import { wire } from '../../platform/naming.ts';
import { trimTrailing } from '../../platform/text/text.ts';
import { traced } from '../../platform/observability/tracing.ts';
import { recordProviderOperation } from '../telephony/operation-log.ts';
import { SmsSendFailed, type MessagingProvider, type OutgoingSms, type SentSms } from './types.ts';

/**
 * Twilio Messaging through its REST API: `POST /2010-04-01/Accounts/{sid}/Messages.json`
 * (From, To, Body), basic auth with the platform account's SID and auth token, the same
 * account and settings the telephony adapter buys numbers with. `TWILIO_BASE_URL` points it
 * at another server (tests: the fake Twilio on 127.0.0.1).
 *
 * Errors: Twilio refusing the message itself (4xx with a Twilio code: 21211 invalid To,
 * 21606 a From that cannot send SMS, 21610 an unsubscribed recipient, …) is a 422 naming
 * the code; 401/403, 5xx, a timeout (10 s) or an unreachable Twilio is a 502. Twilio's
 * message goes to the logs only; the credentials never appear in either.
 */
const CORE_BASE_URL = `https://api.${wire.carrierA}.com`;
const TIMEOUT_MS = 10_000;

export class TwilioMessaging implements MessagingProvider {
  readonly name = 'twilio' as const;

  constructor(
    private readonly accountSid: string,
    private readonly authToken: string,
    private readonly baseUrl: string,
  ) {}

  static async fromSettings(accountSid: string): Promise<TwilioMessaging> {
    const [authToken, baseUrl] = await Promise.all([vendorSetting('TWILIO_AUTH_TOKEN'), vendorSetting('TWILIO_BASE_URL')]);
    if (!authToken) throw badGateway('Twilio is not fully configured: TWILIO_AUTH_TOKEN not set');
    return new TwilioMessaging(accountSid, authToken, baseUrl ? trimTrailing(baseUrl, '/') : CORE_BASE_URL);
  }

  async send(workspaceId: string, message: OutgoingSms): Promise<SentSms> {
    const logged = { from: message.from, to: message.to, body: message.body, ...message.context };
    const record = (outcome: 'ok' | 'error', extra: Record<string, unknown>, error?: string) =>
      recordProviderOperation(workspaceId, { provider: this.name, operation: 'send_sms', request: { ...logged, ...extra }, outcome, ...(error ? { error } : {}) });
    let response: Response;
    try {
      response = await traced('twilio', () => fetch(`${this.baseUrl}/2010-04-01/Accounts/${encodeURIComponent(this.accountSid)}/Messages.json`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${this.accountSid}:${this.authToken}`).toString('base64')}`,
          accept: 'application/json',
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({
          From: message.from,
          To: message.to,
          Body: message.body,
          ...(message.statusCallback ? { StatusCallback: message.statusCallback } : {}),
        }).toString(),
        signal: AbortSignal.timeout(TIMEOUT_MS),
        redirect: 'error',
      }));
    } catch (error) {
      const reason = error instanceof Error && error.name === 'TimeoutError' ? 'timed out' : 'unreachable';
      await record('error', {}, reason);
      throw new SmsSendFailed(`Twilio send SMS failed: ${reason}`, reason !== 'timed out');
    }
    let parsed: Record<string, unknown> = {};
    try {
      const value: unknown = JSON.parse(await response.text());
      if (value && typeof value === 'object' && !Array.isArray(value)) parsed = value as Record<string, unknown>;
    } catch {
      // An unreadable answer: judged by its status below.
    }
    if (!response.ok) {
      const code = typeof parsed.code === 'number' ? parsed.code : undefined;
      const reason = `HTTP ${response.status}${code !== undefined ? ` (Twilio error ${code})` : ''}`;
      logger.warn('Twilio message refused', {
        status: response.status,
        twilio_code: code,
        twilio_message: typeof parsed.message === 'string' ? parsed.message.slice(0, 300) : undefined,
      });
      await record('error', {}, reason);
      if (response.status >= 400 && response.status < 500 && response.status !== 401 && response.status !== 403 && response.status !== 429) {
        throw unprocessable(`Twilio refused the SMS to ${message.to}: ${reason}`);
      }
      throw new SmsSendFailed(`Twilio send SMS failed: ${reason}`, true);
    }
    if (typeof parsed.sid !== 'string' || !parsed.sid) {
      await record('error', {}, 'no sid in the answer');
      throw badGateway('Twilio send SMS failed: no sid in the answer');
    }
    const sent: SentSms = { provider: 'twilio', provider_message_id: parsed.sid, status: typeof parsed.status === 'string' ? parsed.status : 'queued' };
    await record('ok', { message_sid: sent.provider_message_id, status: sent.status });
    return sent;
  }
}
