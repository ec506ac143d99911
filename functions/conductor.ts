import { domainHandler } from '../shared/platform/http/handler.ts';
import { creditRoutes } from '../shared/conductor/credits/routes.ts';
import { conductorRoutes } from '../shared/conductor/sessions/routes.ts';
import { creditHandlers } from './conductor/credits.ts';
import { conductorHandlers } from './conductor/sessions.ts';

/** One Lambda for the assistant (docs/assistant.md): its tools invoke the other domains' functions as the caller; its credits are counted beside its messages. */
export const handler = domainHandler({ ...conductorRoutes, ...creditRoutes }, { ...conductorHandlers, ...creditHandlers });
