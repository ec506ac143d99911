import * as z from 'zod';

/** An export-jobs queue message: one whole account-data job (docs/account-data.md). */
export const AccountDataJobMessage = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('export'), workspace_id: z.string(), export_id: z.string() }),
  z.object({ kind: z.literal('erase'), workspace_id: z.string(), request_id: z.string() }),
  z.object({ kind: z.literal('retention'), workspace_id: z.string(), request_id: z.string() }),
]);
export type AccountDataJobMessage = z.infer<typeof AccountDataJobMessage>;
