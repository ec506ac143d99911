import { domainHandler } from '../shared/http/handler.ts';
import { voiceRoutes } from '../shared/routes/voices.ts';

export const handler = domainHandler(voiceRoutes, {});
