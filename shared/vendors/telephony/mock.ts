import { randomBytes, randomInt } from 'node:crypto';
import { unprocessable } from '../../platform/errors.ts';
import { recordProviderOperation } from './operation-log.ts';
import type { FoundNumber, HeldNumber, PurchaseRequest, SearchOptions, TelephonyProvider, Trunk } from './types.ts';
import { wire } from '../../platform/naming.ts';
import { canonicalE164 } from '../../platform/telephony/phone.ts';

export { listProviderOperations,  } from './operation-log.ts';

/**
 * The offline provider (no `TWILIO_ACCOUNT_SID`): fake numbers, fake trunk IDs, and every
 * request it would have made recorded in the provider operation log, so what buying a
 * number does at the carrier can be seen without one.
 */
const DEFAULT_AREA: Record<string, number> = { US: 415, CA: 416 };
const TOLL_FREE_AREA = 833;

const sid = (prefix: string) => `${prefix}mock${randomBytes(14).toString('hex')}`;

function matches(number: string, contains?: string): boolean {
  if (!contains) return true;
  const pattern = new RegExp(contains.replaceAll('*', '[0-9]'));
  return pattern.test(number.slice(2));
}

export class MockProvider implements TelephonyProvider {
  readonly name = 'mock' as const;

  private async log(workspaceId: string, operation: string, request: Record<string, unknown>): Promise<void> {
    await recordProviderOperation(workspaceId, { provider: this.name, operation, request, outcome: 'ok' });
  }

  async search(workspaceId: string, options: SearchOptions): Promise<FoundNumber[]> {
    await this.log(workspaceId, 'search_numbers', { ...options });
    if (options.country !== 'US' && options.country !== 'CA') return [];
    const area = options.tollFree ? TOLL_FREE_AREA : (options.areaCode ?? DEFAULT_AREA[options.country] ?? 415);
    const found: FoundNumber[] = [];
    const contains = options.contains?.replaceAll('*', '5');
    for (let i = 0; i < 2000 && found.length < options.limit; i++) {
      const line = String(2_000_000 + i * 7919).slice(-7);
      const subscriber = contains && contains.length <= 7 ? (line.slice(0, 7 - contains.length) + contains) : line;
      const number = canonicalE164(`+1${area}${subscriber}`);
      if (!number || !matches(number, options.contains) || found.some((f) => f.phone_number === number)) continue;
      found.push({ phone_number: number, locality: 'Mock City', region: options.country === 'US' ? 'CA' : 'ON' });
    }
    return found;
  }

  async createTrunk(workspaceId: string, originationUri: string): Promise<Trunk> {
    const trunk: Trunk = {
      trunk_sid: sid('TK'),
      credential_list_sid: sid('CL'),
      origination_uri: originationUri,
      sip_username: wire.service,
    };
    await this.log(workspaceId, 'create_trunk', { trunk_sid: trunk.trunk_sid, transfer_mode: 'enable-all' });
    await this.log(workspaceId, 'add_origination_url', { trunk_sid: trunk.trunk_sid, sip_url: originationUri });
    await this.log(workspaceId, 'create_credential_list', { credential_list_sid: trunk.credential_list_sid });
    await this.log(workspaceId, 'add_credential', {
      credential_list_sid: trunk.credential_list_sid,
      username: trunk.sip_username,
      password: '[redacted]',
    });
    await this.log(workspaceId, 'attach_credential_list', {
      trunk_sid: trunk.trunk_sid,
      credential_list_sid: trunk.credential_list_sid,
    });
    return trunk;
  }

  async purchase(workspaceId: string, request: PurchaseRequest): Promise<HeldNumber> {
    let phoneNumber = request.phoneNumber;
    if (!phoneNumber) {
      const area = request.tollFree ? TOLL_FREE_AREA : (request.areaCode ?? DEFAULT_AREA[request.country] ?? 415);
      for (let attempt = 0; attempt < 50 && !phoneNumber; attempt++) {
        phoneNumber = canonicalE164(`+1${area}${randomInt(200, 1000)}${String(randomInt(0, 10_000)).padStart(4, '0')}`);
      }
      if (!phoneNumber) throw unprocessable(`No numbers available in area code ${area}`);
    }
    const held = { phoneNumber, providerSid: sid('PN') };
    await this.log(workspaceId, 'purchase_number', { phone_number: held.phoneNumber, phone_number_sid: held.providerSid });
    return held;
  }

  async attach(workspaceId: string, trunk: Trunk, number: HeldNumber): Promise<void> {
    await this.log(workspaceId, 'attach_number', {
      trunk_sid: trunk.trunk_sid,
      phone_number: number.phoneNumber,
      phone_number_sid: number.providerSid,
    });
  }

  async release(workspaceId: string, number: HeldNumber): Promise<void> {
    await this.log(workspaceId, 'release_number', { phone_number: number.phoneNumber, phone_number_sid: number.providerSid });
  }
}
