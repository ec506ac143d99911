import * as z from 'zod';

/** Probe: loading zod itself (namespace import, one small schema), for the import-time breakdown. */
export const handler = z.object({ ok: z.boolean() });
