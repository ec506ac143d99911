import { trimTrailing } from '../../platform/text/text.ts';
import { vendorSetting } from '../../platform/aws/secrets.ts';
import { unprocessable } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import { wire } from '../../platform/naming.ts';
import { traced } from '../../platform/observability/tracing.ts';
import { recordProviderOperation } from './operation-log.ts';
import {
  provisioningFailed,
  type FoundNumber,
  type HeldNumber,
  type PurchaseRequest,
  type SearchOptions,
  type TelephonyProvider,
  type Trunk,
} from './types.ts';

/**
 * The platform's Twilio account through Twilio's REST API (fetch, basic auth with the
 * account SID and auth token): the core API (`/2010-04-01/Accounts/{sid}/…`) for numbers
 * and credential lists, the trunking API (`/v1/Trunks…`) for the workspace's trunk.
 * `TWILIO_BASE_URL` sends both to one server (tests point it at a fake on 127.0.0.1).
 *
 * Errors: a number Twilio cannot sell (its codes 21421, 21422, 21452, 21631) is a 422;
 * anything else Twilio refuses or fails at, or cannot be reached for, is a 502
 * `provisioning_failed` naming the status and Twilio's error code. Twilio's own message
 * goes to the logs only; the credentials never appear in either.
 */
const CORE_BASE_URL = `https://api.${wire.carrierA}.com`;
const TRUNKING_BASE_URL = `https://trunking.${wire.carrierA}.com`;
const TIMEOUT_MS = 10_000;
const UNAVAILABLE_CODES = new Set([21421, 21422, 21452, 21631]);

export interface TwilioSettings {
  accountSid: string;
  authToken: string;
  sipUsername: string;
  sipPassword: string;
  coreBaseUrl: string;
  trunkingBaseUrl: string;
}

class TwilioFailure extends Error {
  constructor(
    readonly status: number | undefined,
    readonly code: number | undefined,
    reason: string,
  ) {
    super(reason);
  }
}

type Form = Record<string, string | number | boolean | undefined>;

export class TwilioProvider implements TelephonyProvider {
  readonly name = 'twilio' as const;

  constructor(private readonly settings: TwilioSettings) {}

  /** Reads the other settings; a missing one is a 502 provisioning_failed naming it. */
  static async fromSettings(accountSid: string): Promise<TwilioProvider> {
    const [authToken, sipPassword, sipUsername, baseUrl] = await Promise.all([
      vendorSetting('TWILIO_AUTH_TOKEN'),
      vendorSetting('TWILIO_SIP_PASSWORD'),
      vendorSetting('TWILIO_SIP_USERNAME'),
      vendorSetting('TWILIO_BASE_URL'),
    ]);
    const missing = [!authToken && 'TWILIO_AUTH_TOKEN', !sipPassword && 'TWILIO_SIP_PASSWORD'].filter(Boolean);
    if (missing.length > 0) throw provisioningFailed(`Twilio is not fully configured: ${missing.join(', ')} not set`);
    const base = baseUrl === undefined ? undefined : trimTrailing(baseUrl, '/');
    return new TwilioProvider({
      accountSid,
      authToken: authToken!,
      sipPassword: sipPassword!,
      sipUsername: sipUsername || wire.service,
      coreBaseUrl: base ?? CORE_BASE_URL,
      trunkingBaseUrl: base ?? TRUNKING_BASE_URL,
    });
  }

  private accountPath(path: string): string {
    return `${this.settings.coreBaseUrl}/2010-04-01/Accounts/${encodeURIComponent(this.settings.accountSid)}${path}`;
  }

  private trunkingPath(path: string): string {
    return `${this.settings.trunkingBaseUrl}/v1${path}`;
  }

  private async send(method: 'GET' | 'POST' | 'DELETE', url: string, form?: Form): Promise<Record<string, unknown>> {
    const body = form
      ? new URLSearchParams(
          Object.entries(form)
            .filter(([, value]) => value !== undefined)
            .map(([name, value]): [string, string] => [name, String(value)]),
        ).toString()
      : undefined;
    let response: Response;
    try {
      response = await traced('twilio', () => fetch(url, {
        method,
        headers: {
          authorization: `Basic ${Buffer.from(`${this.settings.accountSid}:${this.settings.authToken}`).toString('base64')}`,
          accept: 'application/json',
          ...(body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        body,
        signal: AbortSignal.timeout(TIMEOUT_MS),
        redirect: 'error',
      }));
    } catch (error) {
      const reason = error instanceof Error && error.name === 'TimeoutError' ? 'timed out' : 'unreachable';
      throw new TwilioFailure(undefined, undefined, reason);
    }
    const text = await response.text();
    let parsed: Record<string, unknown> = {};
    if (text) {
      try {
        const value: unknown = JSON.parse(text);
        if (value && typeof value === 'object' && !Array.isArray(value)) parsed = value as Record<string, unknown>;
      } catch {
        if (response.ok) throw new TwilioFailure(response.status, undefined, 'unreadable answer');
      }
    }
    if (!response.ok) {
      const code = typeof parsed.code === 'number' ? parsed.code : undefined;
      logger.warn('Twilio request refused', {
        status: response.status,
        twilio_code: code,
        twilio_message: typeof parsed.message === 'string' ? parsed.message.slice(0, 300) : undefined,
      });
      throw new TwilioFailure(response.status, code, `HTTP ${response.status}${code !== undefined ? ` (Twilio error ${code})` : ''}`);
    }
    return parsed;
  }

  /** One request, recorded in the operation log; failures become the API's errors. */
  private async call(
    workspaceId: string,
    operation: string,
    logged: Record<string, unknown>,
    request: () => Promise<Record<string, unknown>>,
    options: { unavailable?: string; tolerate404?: boolean } = {},
  ): Promise<Record<string, unknown>> {
    try {
      const out = await request();
      await recordProviderOperation(workspaceId, { provider: this.name, operation, request: logged, outcome: 'ok' });
      return out;
    } catch (error) {
      if (!(error instanceof TwilioFailure)) throw error;
      if (options.tolerate404 && error.status === 404) {
        await recordProviderOperation(workspaceId, { provider: this.name, operation, request: logged, outcome: 'ok', error: 'already gone (404)' });
        return {};
      }
      await recordProviderOperation(workspaceId, { provider: this.name, operation, request: logged, outcome: 'error', error: error.message });
      if (options.unavailable && error.code !== undefined && UNAVAILABLE_CODES.has(error.code)) {
        throw unprocessable(`${options.unavailable} (Twilio error ${error.code})`);
      }
      if (error.status === 401 || error.status === 403) {
        throw provisioningFailed(`Twilio ${operation.replaceAll('_', ' ')} failed: the platform's Twilio credentials were refused (${error.message})`);
      }
      throw provisioningFailed(`Twilio ${operation.replaceAll('_', ' ')} failed: ${error.message}`);
    }
  }

  async search(workspaceId: string, options: SearchOptions): Promise<FoundNumber[]> {
    const params = new URLSearchParams({ PageSize: String(options.limit) });
    if (options.areaCode !== undefined && !options.tollFree) params.set('AreaCode', String(options.areaCode));
    if (options.contains) params.set('Contains', options.contains);
    const kind = options.tollFree ? 'TollFree' : 'Local';
    const url = this.accountPath(`/AvailablePhoneNumbers/${encodeURIComponent(options.country)}/${kind}.json?${params.toString()}`);
    const out = await this.call(workspaceId, 'search_numbers', { ...options }, () => this.send('GET', url));
    const numbers = Array.isArray(out.available_phone_numbers) ? (out.available_phone_numbers as Record<string, unknown>[]) : [];
    return numbers
      .filter((entry) => typeof entry.phone_number === 'string')
      .map((entry) => ({
        phone_number: entry.phone_number as string,
        ...(typeof entry.locality === 'string' && entry.locality ? { locality: entry.locality } : {}),
        ...(typeof entry.region === 'string' && entry.region ? { region: entry.region } : {}),
      }));
  }

  async createTrunk(workspaceId: string, originationUri: string): Promise<Trunk> {
    const friendlyName = `${wire.service}-${workspaceId}`;
    const trunk = await this.call(workspaceId, 'create_trunk', { friendly_name: friendlyName, transfer_mode: 'enable-all' }, () =>
      // Telephony rule 6: the trunk must allow REFER and PSTN transfers.
      this.send('POST', this.trunkingPath('/Trunks'), { FriendlyName: friendlyName, TransferMode: 'enable-all' }),
    );
    const trunkSid = stringField(trunk, 'sid', 'create trunk');
    await this.call(workspaceId, 'add_origination_url', { trunk_sid: trunkSid, sip_url: originationUri }, () =>
      this.send('POST', this.trunkingPath(`/Trunks/${encodeURIComponent(trunkSid)}/OriginationUrls`), {
        FriendlyName: `${wire.service} origination`,
        SipUrl: originationUri,
        Priority: 10,
        Weight: 10,
        Enabled: true,
      }),
    );
    const list = await this.call(workspaceId, 'create_credential_list', { friendly_name: friendlyName }, () =>
      this.send('POST', this.accountPath('/SIP/CredentialLists.json'), { FriendlyName: friendlyName }),
    );
    const credentialListSid = stringField(list, 'sid', 'create credential list');
    await this.call(
      workspaceId,
      'add_credential',
      { credential_list_sid: credentialListSid, username: this.settings.sipUsername, password: '[redacted]' },
      () =>
        this.send('POST', this.accountPath(`/SIP/CredentialLists/${encodeURIComponent(credentialListSid)}/Credentials.json`), {
          Username: this.settings.sipUsername,
          Password: this.settings.sipPassword,
        }),
    );
    await this.call(workspaceId, 'attach_credential_list', { trunk_sid: trunkSid, credential_list_sid: credentialListSid }, () =>
      this.send('POST', this.trunkingPath(`/Trunks/${encodeURIComponent(trunkSid)}/CredentialLists`), {
        CredentialListSid: credentialListSid,
      }),
    );
    return { trunk_sid: trunkSid, credential_list_sid: credentialListSid, origination_uri: originationUri, sip_username: this.settings.sipUsername };
  }

  async purchase(workspaceId: string, request: PurchaseRequest): Promise<HeldNumber> {
    let phoneNumber = request.phoneNumber;
    if (!phoneNumber) {
      const [first] = await this.search(workspaceId, {
        country: request.country,
        areaCode: request.areaCode,
        tollFree: request.tollFree,
        limit: 1,
      });
      if (!first) {
        throw unprocessable(
          request.areaCode !== undefined ? `No numbers available in area code ${request.areaCode}` : `No numbers available in ${request.country}`,
        );
      }
      phoneNumber = first.phone_number;
    }
    const number = phoneNumber;
    const out = await this.call(
      workspaceId,
      'purchase_number',
      { phone_number: number },
      () => this.send('POST', this.accountPath('/IncomingPhoneNumbers.json'), { PhoneNumber: number }),
      { unavailable: `Phone number ${number} is not available to buy` },
    );
    return { phoneNumber: typeof out.phone_number === 'string' ? out.phone_number : number, providerSid: stringField(out, 'sid', 'purchase number') };
  }

  async attach(workspaceId: string, trunk: Trunk, number: HeldNumber): Promise<void> {
    await this.call(
      workspaceId,
      'attach_number',
      { trunk_sid: trunk.trunk_sid, phone_number: number.phoneNumber, phone_number_sid: number.providerSid },
      () =>
        this.send('POST', this.trunkingPath(`/Trunks/${encodeURIComponent(trunk.trunk_sid)}/PhoneNumbers`), {
          PhoneNumberSid: number.providerSid,
        }),
    );
  }

  async release(workspaceId: string, number: HeldNumber): Promise<void> {
    await this.call(
      workspaceId,
      'release_number',
      { phone_number: number.phoneNumber, phone_number_sid: number.providerSid },
      () => this.send('DELETE', this.accountPath(`/IncomingPhoneNumbers/${encodeURIComponent(number.providerSid)}.json`)),
      { tolerate404: true },
    );
  }
}

function stringField(out: Record<string, unknown>, field: string, operation: string): string {
  const value = out[field];
  if (typeof value !== 'string' || value === '') throw provisioningFailed(`Twilio ${operation} failed: no ${field} in the answer`);
  return value;
}
