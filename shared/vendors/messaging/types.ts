/**
 * The messaging provider adapter: sending one SMS from a workspace number. Picked per
 * request by `messagingProvider()` (index.ts) from vendor settings: the Twilio Messaging
 * client (twilio.ts) with `TWILIO_ACCOUNT_SID`, the platform's carrier account as the
 * telephony adapter uses it, else the built-in offline mock (mock.ts). Both record every
 * message in the provider operation log (shared/vendors/telephony/operation-log.ts).
 *
 * Failures are ApiErrors already: 422 when the carrier refuses the message itself (a
 * number that cannot receive SMS, an unsubscribed recipient), 502 when it fails or cannot
 * be reached.
 */
import { VendorFailed } from '../../platform/errors.ts';

/**
 * 502: the carrier failed to take the message. `retryable` when it surely did not take it
 * (it answered an error, or could not be reached); not after a timeout, when it may have.
 */
export class SmsSendFailed extends VendorFailed {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

export interface OutgoingSms {
  /** The workspace's number (E.164). */
  from: string;
  /** The recipient (E.164). */
  to: string;
  body: string;
  /** What the message belongs to, for the operation log (`chat_id`, or `message_id` for send-sms). */
  context?: Record<string, string>;
  /** Where the carrier reports the message's delivery (Twilio's StatusCallback), when the API has a public URL. */
  statusCallback?: string;
}

export interface SentSms {
  provider: 'twilio' | 'mock';
  /** The carrier's ID for the message (Twilio's `SM…` MessageSid). */
  provider_message_id: string;
  /** The carrier's status for it when accepted (`queued`, `sent`, …). */
  status: string;
}

export interface MessagingProvider {
  readonly name: 'twilio' | 'mock';
  send(workspaceId: string, message: OutgoingSms): Promise<SentSms>;
}

/** SMS bodies are cut at Twilio's limit (1,600 characters: ten segments). */
export const MAX_SMS_BODY = 1600;
