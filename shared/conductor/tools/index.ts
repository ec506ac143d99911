/**
 * The assistant's tools: catalog.ts (each a route of the API), dispatch.ts (run as the
 * caller through the route's own function), run.ts (a turn's tool calls and audit records),
 * capabilities.ts (GET /conductor/capabilities).
 */
export { capabilities } from './capabilities.ts';
