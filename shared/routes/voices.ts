import { defineRoutes } from '../http/route.ts';

/** Voices: the built-in catalogue, cloning and community voices (scope `agents`). */
export const voiceRoutes = defineRoutes({});
