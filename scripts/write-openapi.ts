import { writeFileSync } from 'node:fs';
import { buildOpenApiDocument } from '../shared/openapi.ts';

writeFileSync(new URL('../openapi.json', import.meta.url), `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`);
console.log('wrote openapi.json');
