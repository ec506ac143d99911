import type * as OnDemand from './on-demand.ts';
import { loadOnce } from '../../shared/platform/lazy.ts';

/** The calls routes' modules few requests need (on-demand.ts), loaded once, on the first of them. */
export const onDemand = loadOnce((): Promise<typeof OnDemand> => import('./on-demand.ts'));
