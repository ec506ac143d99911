import { randomBytes } from 'node:crypto';
import { recordProviderOperation } from '../telephony/operation-log.ts';
import type { MessagingProvider, OutgoingSms, SentSms } from './types.ts';

/**
 * The offline messaging provider (no `TWILIO_ACCOUNT_SID`): nothing leaves the machine;
 * every message it would have sent is recorded in the provider operation log
 * (`send_sms`, provider `mock`) and answered as sent, with a mock message ID.
 */
export class MockMessaging implements MessagingProvider {
  readonly name = 'mock' as const;

  async send(workspaceId: string, message: OutgoingSms): Promise<SentSms> {
    const sent: SentSms = { provider: 'mock', provider_message_id: `SMmock${randomBytes(13).toString('hex')}`, status: 'sent' };
    await recordProviderOperation(workspaceId, {
      provider: 'mock',
      operation: 'send_sms',
      request: { from: message.from, to: message.to, body: message.body, ...message.context, message_sid: sent.provider_message_id },
      outcome: 'ok',
    });
    return sent;
  }
}
