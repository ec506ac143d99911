import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { conflict, notFound } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { approvedKyc } from './kyc.ts';
import { logger } from '../platform/logger.ts';
import type {
  BrandedCallerId,
  CreateBrandedCallerIdInput,
  CreateVerifiedNumberInput,
  VerifiedNumber,
} from './telephony-routes.ts';
import { db, isConditionFailure, isTransactionConflict, tableName } from '../platform/store/db.ts';
import { keys, type ItemKey } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query.ts';
import { callerIdVendor, callerIdVendorOf, type CallerIdVendor } from '../vendors/caller-id/caller-id-vendor.ts';

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

interface StoredItem {
  pk: string;
  sk: string;
  vendor_reference: string;
}

type BrandedItem = BrandedCallerId & StoredItem;
type VerifiedItem = VerifiedNumber & StoredItem;

const brandedNotFound = (id: string) => notFound(`Branded caller ID ${id} not found`);
const verifiedNotFound = (id: string) => notFound(`Verified number ${id} not found`);

function strip<T extends StoredItem>(item: T): Omit<T, 'pk' | 'sk' | 'vendor_reference'> {
  const { pk: _pk, sk: _sk, vendor_reference: _reference, ...rest } = item;
  return rest;
}

async function read<T>(key: ItemKey): Promise<T | undefined> {
  return (await db.send(new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true }))).Item as T | undefined;
}

/** Writes a record and its per-number lock; false when the number is taken meanwhile. */
async function writeWithLock(record: StoredItem, lock: ItemKey): Promise<boolean> {
  try {
    await db.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: tableName, Item: record, ConditionExpression: 'attribute_not_exists(pk)' } },
          { Put: { TableName: tableName, Item: { ...lock, record_sk: record.sk }, ConditionExpression: 'attribute_not_exists(pk)' } },
        ],
      }),
    );
    return true;
  } catch (error) {
    if (isTransactionConflict(error)) return false;
    throw error;
  }
}

async function deleteWithLock(key: ItemKey, lock: ItemKey, onMissing: () => Error): Promise<void> {
  try {
    await db.send(
      new TransactWriteCommand({
        TransactItems: [
          { Delete: { TableName: tableName, Key: key, ConditionExpression: 'attribute_exists(pk)' } },
          { Delete: { TableName: tableName, Key: lock } },
        ],
      }),
    );
  } catch (error) {
    if (isTransactionConflict(error)) throw onMissing();
    throw error;
  }
}

async function storeStatus(key: ItemKey, fields: Record<string, unknown>, onMissing: () => Error): Promise<Record<string, unknown>> {
  const names = Object.keys(fields);
  try {
    const out = await db.send(
      new UpdateCommand({
        TableName: tableName,
        Key: key,
        UpdateExpression: `SET ${names.map((_, i) => `#f${i} = :v${i}`).join(', ')}`,
        ExpressionAttributeNames: Object.fromEntries(names.map((name, i) => [`#f${i}`, name])),
        ExpressionAttributeValues: Object.fromEntries(names.map((name, i) => [`:v${i}`, fields[name]])),
        ConditionExpression: 'attribute_exists(pk)',
        ReturnValues: 'ALL_NEW',
      }),
    );
    return out.Attributes!;
  } catch (error) {
    if (isConditionFailure(error)) throw onMissing();
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
  const lock = keys.brandedCallerIdNumber(workspaceId, input.phone_number);
  const taken = () => conflict(`${input.phone_number} already has a branded caller ID`);
  if (await read(lock)) throw taken();
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
    ...keys.brandedCallerId(workspaceId, id),
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
  return (await queryAll<BrandedItem>(keys.brandedCallerIds(workspaceId)))
    .sort(byCreation((item) => item.branded_caller_id))
    .map(strip);
}

async function readBranded(workspaceId: string, id: string): Promise<BrandedItem> {
  const item = await read<BrandedItem>(keys.brandedCallerId(workspaceId, id));
  if (!item) throw brandedNotFound(id);
  return item;
}

export async function refreshBrandedCallerId(workspaceId: string, id: string, nowMs = Date.now()): Promise<BrandedCallerId> {
  const item = await readBranded(workspaceId, id);
  const vendor: CallerIdVendor = await callerIdVendorOf(item.vendor);
  const current = await vendor.getBrandedCallerId(item.vendor_reference);
  const stored = await storeStatus(
    keys.brandedCallerId(workspaceId, id),
    { status: current.status, status_reason: current.status_reason, last_refreshed_timestamp: nowMs },
    () => brandedNotFound(id),
  );
  return strip(stored as unknown as BrandedItem);
}

export async function deleteBrandedCallerId(workspaceId: string, id: string): Promise<void> {
  const item = await readBranded(workspaceId, id);
  await (await callerIdVendorOf(item.vendor)).deleteBrandedCallerId(item.vendor_reference);
  await deleteWithLock(
    keys.brandedCallerId(workspaceId, id),
    keys.brandedCallerIdNumber(workspaceId, item.phone_number),
    () => brandedNotFound(id),
  );
}

// ── Verified numbers ────────────────────────────────────────────────────────────────

export async function createVerifiedNumber(
  workspaceId: string,
  input: CreateVerifiedNumberInput,
  nowMs = Date.now(),
): Promise<VerifiedNumber> {
  const lock = keys.verifiedNumberNumber(workspaceId, input.phone_number);
  const taken = () => conflict(`${input.phone_number} is already a verified number in this workspace`);
  if (await read(lock)) throw taken();
  const vendor = await callerIdVendor();
  const started = await vendor.startNumberVerification({ phone_number: input.phone_number, friendly_name: input.friendly_name });
  const id = newId('verifiedNumber');
  const item: VerifiedItem = {
    ...keys.verifiedNumber(workspaceId, id),
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
  return (await queryAll<VerifiedItem>(keys.verifiedNumbers(workspaceId)))
    .sort(byCreation((item) => item.verified_number_id))
    .map(strip);
}

async function readVerified(workspaceId: string, id: string): Promise<VerifiedItem> {
  const item = await read<VerifiedItem>(keys.verifiedNumber(workspaceId, id));
  if (!item) throw verifiedNotFound(id);
  return item;
}

export async function refreshVerifiedNumber(workspaceId: string, id: string, nowMs = Date.now()): Promise<VerifiedNumber> {
  const item = await readVerified(workspaceId, id);
  const current = await (await callerIdVendorOf(item.vendor)).getVerifiedNumber(item.vendor_reference);
  const stored = await storeStatus(
    keys.verifiedNumber(workspaceId, id),
    {
      status: current.status,
      status_reason: current.status_reason,
      // The code is only useful until the number is verified; a vendor may also issue a new one.
      validation_code: current.status === 'verified' ? null : (current.validation_code ?? item.validation_code),
      last_refreshed_timestamp: nowMs,
    },
    () => verifiedNotFound(id),
  );
  return strip(stored as unknown as VerifiedItem);
}

export async function deleteVerifiedNumber(workspaceId: string, id: string): Promise<void> {
  const item = await readVerified(workspaceId, id);
  await (await callerIdVendorOf(item.vendor)).deleteVerifiedNumber(item.vendor_reference);
  await deleteWithLock(
    keys.verifiedNumber(workspaceId, id),
    keys.verifiedNumberNumber(workspaceId, item.phone_number),
    () => verifiedNotFound(id),
  );
}
