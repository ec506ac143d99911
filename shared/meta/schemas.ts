import * as z from 'zod';

/** What `GET /` answers: where to read about the API, and which version serves it. */
export const ApiIndex = z.object({
  name: z.literal('Parley'),
  version: z.string().describe("The server's version (package.json)"),
  docs_url: z.string().describe('The interactive API reference'),
  openapi_url: z.string().describe('The OpenAPI 3.1 document'),
});
