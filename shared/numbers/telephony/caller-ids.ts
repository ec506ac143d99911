import { conflict } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { approvedKyc } from './kyc.ts';
import { logger } from '../../platform/logger.ts';
import type { BrandedCallerId, CreateBrandedCallerIdInput, CreateVerifiedNumberInput, VerifiedNumber } from './schemas.ts';
import type { ItemKey } from '../../platform/store/keys.ts';
import { ConditionFailed, table, TransactionCancelled } from '../../platform/store/table.ts';
import {
  brandedCallerIdLocks,
  brandedCallerIdNotFound,
  brandedCallerIds,
  listBrandedItems,
  listVerifiedItems,
  verifiedNumberLocks,
  verifiedNumberNotFound,
  verifiedNumbers,
  type BrandedItem,
  type CallerIdStored,
  type VerifiedItem,
} from '../store.ts';
import { callerIdVendor, callerIdVendorOf, type CallerIdVendor } from '../../vendors/caller-id/caller-id-vendor.ts';

/*
 * Branded caller IDs and verified numbers, through the caller-ID vendor adapter
 * (shared/vendors/caller-id/caller-id-vendor.ts). Each record lives in the workspace partition with
 * the vendor's reference and the vendor kind it was made with (refresh and delete go to
 * that vendor); a second item per phone number (`…NUM#<number>`) written in the same
 * transaction allows one record per number and workspace (409 otherwise).
 *
 * Order on create: input (400) → approved business verification for branded caller IDs
 * (403) → duplicate (409) → vendor → write. Should the write lose a race for the number,
 * the vendor registration just made is withdrawn again (best effort) before the 409.
 * Delete withdraws at the vendor first and deletes locally only when that worked, so a
 * record never disappears while the vendor still holds it. Refresh pulls the vendor's
 * current status and stores it.
 */

function strip<T extends CallerIdStored>(item: T): Omit<T, 'pk' | 'sk' | 'vendor_reference'> {
  const { pk: _pk, sk: _sk, vendor_reference: _reference, ...rest } = item;
  return rest;
}

/** Writes a record and its per-number lock; false when the number is taken meanwhile. */
async function writeWithLock(record: CallerIdStored, lock: ItemKey): Promise<boolean> {
  try {
    await table.transact([
      { Put: { Item: record, ConditionExpression: 'attribute_not_exists(pk)' } },
      { Put: { Item: { ...lock, record_sk: record.sk }, ConditionExpression: 'attribute_not_exists(pk)' } },
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionCancelled) return false;
    throw error;
  }
}

async function deleteWithLock(key: ItemKey, lock: ItemKey, onMissing: () => Error): Promise<void> {
  try {
    await table.transact([{ Delete: { Key: key, ConditionExpression: 'attribute_exists(pk)' } }, { Delete: { Key: lock } }]);
  } catch (error) {
    if (error instanceof TransactionCancelled) throw onMissing();
    throw error;
  }
}

async function storeStatus(key: ItemKey, fields: Record<string, unknown>, onMissing: () => Error): Promise<Record<string, unknown>> {
  const names = Object.keys(fields);
  try {
    const stored = await table.update({
      Key: key,
      UpdateExpression: `SET ${names.map((_, i) => `#f${i} = :v${i}`).join(', ')}`,
      ExpressionAttributeNames: Object.fromEntries(names.map((name, i) => [`#f${i}`, name])),
      ExpressionAttributeValues: Object.fromEntries(names.map((name, i) => [`:v${i}`, fields[name]])),
      ConditionExpression: 'attribute_exists(pk)',
      ReturnValues: 'ALL_NEW',
    });
    return stored!;
  } catch (error) {
    if (error instanceof ConditionFailed) throw onMissing();
    throw error;
  }
}

async function withdraw(what: string, undo: () => Promise<void>): Promise<void> {
  try {
    await undo();
  } catch (error) {
    logger.warn('Caller ID vendor withdrawal after a lost race failed', { what, error: (error as Error).message });
  }
}

const byCreation = <T extends { created_timestamp: number }>(idOf: (item: T) => string) => (a: T, b: T) =>
  a.created_timestamp - b.created_timestamp || (idOf(a) < idOf(b) ? -1 : 1);

// ── Branded caller IDs ──────────────────────────────────────────────────────────────

export async function createBrandedCallerId(
  workspaceId: string,
  input: CreateBrandedCallerIdInput,
  nowMs = Date.now(),
): Promise<BrandedCallerId> {
  const kyc = await approvedKyc(workspaceId, 'create a branded caller ID');
  const lock = brandedCallerIdLocks.key(workspaceId, input.phone_number);
  const taken = () => conflict(`${input.phone_number} already has a branded caller ID`);
  if (await table.get(lock)) throw taken();
  const vendor = await callerIdVendor();
  const registered = await vendor.registerBrandedCallerId({
    phone_number: input.phone_number,
    display_name: input.display_name,
    call_reason: input.call_reason,
    logo_url: input.logo_url,
    business: { legal_name: kyc.legal_name!, registration_number: kyc.registration_number!, country: kyc.country! },
  });
  const id = newId('brandedCallerId');
  const item: BrandedItem = {
    ...brandedCallerIds.key(workspaceId, id),
    branded_caller_id: id,
    phone_number: input.phone_number,
    display_name: input.display_name,
    call_reason: input.call_reason,
    logo_url: input.logo_url,
    status: registered.status,
    status_reason: registered.status_reason,
    vendor: vendor.kind,
    vendor_reference: registered.vendor_reference,
    created_timestamp: nowMs,
    last_refreshed_timestamp: nowMs,
  };
  if (!(await writeWithLock(item, lock))) {
    await withdraw('branded caller ID', () => vendor.deleteBrandedCallerId(registered.vendor_reference));
    throw taken();
  }
  return strip(item);
}

export async function listBrandedCallerIds(workspaceId: string): Promise<BrandedCallerId[]> {
  return (await listBrandedItems(workspaceId))
    .sort(byCreation((item) => item.branded_caller_id))
    .map(strip);
}

export async function refreshBrandedCallerId(workspaceId: string, id: string, nowMs = Date.now()): Promise<BrandedCallerId> {
  const item = await brandedCallerIds.mustGet(workspaceId, id);
  const vendor: CallerIdVendor = await callerIdVendorOf(item.vendor);
  const current = await vendor.getBrandedCallerId(item.vendor_reference);
  const stored = await storeStatus(
    brandedCallerIds.key(workspaceId, id),
    { status: current.status, status_reason: current.status_reason, last_refreshed_timestamp: nowMs },
    () => brandedCallerIdNotFound(workspaceId, id),
  );
  return strip(stored as unknown as BrandedItem);
}

export async function deleteBrandedCallerId(workspaceId: string, id: string): Promise<void> {
  const item = await brandedCallerIds.mustGet(workspaceId, id);
  await (await callerIdVendorOf(item.vendor)).deleteBrandedCallerId(item.vendor_reference);
  await deleteWithLock(
    brandedCallerIds.key(workspaceId, id),
    brandedCallerIdLocks.key(workspaceId, item.phone_number),
    () => brandedCallerIdNotFound(workspaceId, id),
  );
}

// ── Verified numbers ────────────────────────────────────────────────────────────────

export async function createVerifiedNumber(
  workspaceId: string,
  input: CreateVerifiedNumberInput,
  nowMs = Date.now(),
): Promise<VerifiedNumber> {
  const lock = verifiedNumberLocks.key(workspaceId, input.phone_number);
  const taken = () => conflict(`${input.phone_number} is already a verified number in this workspace`);
  if (await table.get(lock)) throw taken();
  const vendor = await callerIdVendor();
  const started = await vendor.startNumberVerification({ phone_number: input.phone_number, friendly_name: input.friendly_name });
  const id = newId('verifiedNumber');
  const item: VerifiedItem = {
    ...verifiedNumbers.key(workspaceId, id),
    verified_number_id: id,
    phone_number: input.phone_number,
    friendly_name: input.friendly_name,
    status: started.status,
    status_reason: started.status_reason,
    validation_code: started.status === 'verified' ? null : started.validation_code,
    vendor: vendor.kind,
    vendor_reference: started.vendor_reference,
    created_timestamp: nowMs,
    last_refreshed_timestamp: nowMs,
  };
  if (!(await writeWithLock(item, lock))) {
    await withdraw('verified number', () => vendor.deleteVerifiedNumber(started.vendor_reference));
    throw taken();
  }
  return strip(item);
}

export async function listVerifiedNumbers(workspaceId: string): Promise<VerifiedNumber[]> {
  return (await listVerifiedItems(workspaceId))
    .sort(byCreation((item) => item.verified_number_id))
    .map(strip);
}

export async function refreshVerifiedNumber(workspaceId: string, id: string, nowMs = Date.now()): Promise<VerifiedNumber> {
  const item = await verifiedNumbers.mustGet(workspaceId, id);
  const current = await (await callerIdVendorOf(item.vendor)).getVerifiedNumber(item.vendor_reference);
  const stored = await storeStatus(
    verifiedNumbers.key(workspaceId, id),
    {
      status: current.status,
      status_reason: current.status_reason,
      // The code is only useful until the number is verified; a vendor may also issue a new one.
      validation_code: current.status === 'verified' ? null : (current.validation_code ?? item.validation_code),
      last_refreshed_timestamp: nowMs,
    },
    () => verifiedNumberNotFound(workspaceId, id),
  );
  return strip(stored as unknown as VerifiedItem);
}

export async function deleteVerifiedNumber(workspaceId: string, id: string): Promise<void> {
  const item = await verifiedNumbers.mustGet(workspaceId, id);
  await (await callerIdVendorOf(item.vendor)).deleteVerifiedNumber(item.vendor_reference);
  await deleteWithLock(
    verifiedNumbers.key(workspaceId, id),
    verifiedNumberLocks.key(workspaceId, item.phone_number),
    () => verifiedNumberNotFound(workspaceId, id),
  );
}
