import type * as OnDemand from './on-demand.ts';

let onDemand_: Promise<typeof OnDemand> | undefined;
/** The numbers routes' modules few requests need (on-demand.ts), loaded once, on the first of them. */
export const onDemand = (): Promise<typeof OnDemand> => (onDemand_ ??= import('./on-demand.ts'));
