import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { RefreshSweepMessage, runRefreshSweep } from './auto-refresh.ts';
import { IngestJobMessage, ingestionFailed, runIngestion } from './ingest.ts';
import { ConnectedJobMessage, runConnected, runSyncStep, SyncJobMessage, syncStepFailed } from './syncs.ts';

/**
 * The kb-jobs queue's messages (functions/kb-jobs.ts): `ingest` (a knowledge base's pending
 * sources and its index), `sync` (one step of a synced source's run), `connected` (the OAuth
 * callback's new kb_sync connection: its sync is created and run) and `refresh-sweep` (the
 * daily auto refresh, put on the queue by an EventBridge rule).
 */
export const KbJobMessage = lazySchema(() => z.discriminatedUnion('kind', [IngestJobMessage, SyncJobMessage, ConnectedJobMessage, RefreshSweepMessage]));
export type KbJobMessage = z.output<typeof KbJobMessage>;

export async function runKbJob(message: KbJobMessage): Promise<void> {
  switch (message.kind) {
    case 'ingest':
      return runIngestion(message);
    case 'sync':
      return runSyncStep(message);
    case 'connected':
      return runConnected(message);
    case 'refresh-sweep':
      await runRefreshSweep(message);
      return;
  }
}

export async function kbJobFailed(message: KbJobMessage, error: unknown, receiveCount: number): Promise<void> {
  if (message.kind === 'ingest') return ingestionFailed(message, error, receiveCount);
  if (message.kind === 'sync') return syncStepFailed(message, error, receiveCount);
}
