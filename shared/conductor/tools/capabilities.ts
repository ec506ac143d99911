import * as z from 'zod';
import { lazySchema } from '../../platform/http/schemas.ts';
import { TOOLS } from './catalog.ts';

export const Capabilities = lazySchema(() =>
  z.object({
    tools: z.array(
      z.object({
        name: z.string(),
        description: z.string(),
        route: z.string().describe('The API route the tool runs, as the caller'),
        scope: z.string().describe("The key scope the route needs (the spec's scope table)"),
        needs_confirmation: z.boolean().describe('Publishes, deletes, spends or places calls: proposed first, run only when the next message confirms'),
      }),
    ),
  }),
);

/** The tools, with the scope each needs and whether it asks to confirm first. */
export function capabilities(): z.infer<typeof Capabilities> {
  return {
    tools: TOOLS.map((tool) => ({ name: tool.name, description: tool.description, route: `${tool.method} ${tool.path}`, scope: tool.scope, needs_confirmation: tool.confirm })),
  };
}
