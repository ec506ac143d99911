import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';

/** What `GET /` answers: where to read about the API, and which version serves it. */
export const ApiIndex = lazySchema(() =>
  z.object({
    name: z.literal('Parley'),
    version: z.string().describe("The server's version (package.json)"),
    docs_url: z.string().describe('The interactive API reference'),
    openapi_url: z.string().describe('The OpenAPI 3.1 document'),
  }),
);
