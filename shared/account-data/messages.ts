import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';

/** An export-jobs queue message: one whole account-data job (docs/account-data.md). */
export const AccountDataJobMessage = lazySchema(() =>
z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('export'), workspace_id: z.string(), export_id: z.string() }),
  z.object({ kind: z.literal('erase'), workspace_id: z.string(), request_id: z.string() }),
  z.object({ kind: z.literal('retention'), workspace_id: z.string(), request_id: z.string() }),
  /**
   * The daily retention sweep: the schedule sends `scheduled_at` (its event's time), each run
   * the `day` it continues (shared/account-data/retention.ts).
   */
  z.object({ kind: z.literal('retention-sweep'), day: z.string().regex(/^\d{4}-\d{2}-\d{2}$/).optional(), scheduled_at: z.string().optional() }),
  /** A run of the listing counters' backfill (shared/account-data/listing-backfill.ts): from the schedule, or a run's continuation. */
  z.object({ kind: z.literal('listing-backfill'), scheduled_at: z.string().optional() }),
]),
);
export type AccountDataJobMessage = z.infer<typeof AccountDataJobMessage>;
