// Stands in for `@aws-sdk/client-apigatewaymanagementapi` in deployed bundles only (an esbuild alias, lib/bundle-aliases.ts):
// the same classes, imported from the package's own ES module files instead of its index,
// whose `export *` lists make esbuild keep every command and schema of the service once a
// module that uses it is loaded with a dynamic import() (docs/performance.md, "2026-11-23,
// import time"). Only what Parley (and the files below) import is here; a missing name fails
// the bundle build, never a request. Plain JavaScript: the SDK's files have no types of their
// own; the types come from the package as usual.
export { ApiGatewayManagementApiClient } from '../../../../node_modules/@aws-sdk/client-apigatewaymanagementapi/dist-es/ApiGatewayManagementApiClient.js';
export { PostToConnectionCommand } from '../../../../node_modules/@aws-sdk/client-apigatewaymanagementapi/dist-es/commands/PostToConnectionCommand.js';
export { DeleteConnectionCommand } from '../../../../node_modules/@aws-sdk/client-apigatewaymanagementapi/dist-es/commands/DeleteConnectionCommand.js';
export { GoneException } from '../../../../node_modules/@aws-sdk/client-apigatewaymanagementapi/dist-es/models/errors.js';
