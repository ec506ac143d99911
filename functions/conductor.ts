import { domainHandler } from '../shared/platform/http/handler.ts';
import { conductorRoutes } from '../shared/conductor/sessions/routes.ts';
import { conductorHandlers } from './conductor/sessions.ts';

/** One Lambda for the assistant (docs/assistant.md): its tools invoke the other domains' functions as the caller. */
export const handler = domainHandler(conductorRoutes, conductorHandlers);
