import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { queueNamed } from '../platform/aws/queue.ts';

/**
 * A step of a workspace's purge on the export-jobs queue (the runner is ./purge.ts, kept
 * apart so the members function, which only starts a purge, does not bundle the numbers
 * domain the runner releases numbers through).
 */
export const WorkspacePurgeMessage = lazySchema(() =>
  z.object({
    kind: z.literal('workspace-purge'),
    workspace_id: z.string().min(1),
    step: z.number().int().min(0),
  }),
);
export type WorkspacePurgeMessage = z.infer<typeof WorkspacePurgeMessage>;

const purgeMessage = (workspaceId: string, step: number): WorkspacePurgeMessage => ({ kind: 'workspace-purge', workspace_id: workspaceId, step });

/** Queues a purge step on the export-jobs queue. */
export const enqueuePurgeStep = (workspaceId: string, step: number) => queueNamed('export-jobs').send(purgeMessage(workspaceId, step));
