import { servedRoutes } from '../shared/route-table.ts';

/** Every served route as `METHOD /path`, one a line (aliases included). */
for (const route of servedRoutes()) console.log(`${route.method} ${route.path}`);
