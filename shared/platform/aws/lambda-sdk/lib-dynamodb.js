// Stands in for `@aws-sdk/lib-dynamodb` in deployed bundles only (an esbuild alias, lib/bundle-aliases.ts):
// the same classes, imported from the package's own ES module files instead of its index,
// whose `export *` lists make esbuild keep every command and schema of the service once a
// module that uses it is loaded with a dynamic import() (docs/performance.md, "2026-11-23,
// import time"). Only what Parley (and the files below) import is here; a missing name fails
// the bundle build, never a request. Plain JavaScript: the SDK's files have no types of their
// own; the types come from the package as usual.
export { DynamoDBDocumentClient } from '../../../../node_modules/@aws-sdk/lib-dynamodb/dist-es/DynamoDBDocumentClient.js';
export { BatchGetCommand } from '../../../../node_modules/@aws-sdk/lib-dynamodb/dist-es/commands/BatchGetCommand.js';
export { BatchWriteCommand } from '../../../../node_modules/@aws-sdk/lib-dynamodb/dist-es/commands/BatchWriteCommand.js';
export { DeleteCommand } from '../../../../node_modules/@aws-sdk/lib-dynamodb/dist-es/commands/DeleteCommand.js';
export { GetCommand } from '../../../../node_modules/@aws-sdk/lib-dynamodb/dist-es/commands/GetCommand.js';
export { PutCommand } from '../../../../node_modules/@aws-sdk/lib-dynamodb/dist-es/commands/PutCommand.js';
export { ScanCommand } from '../../../../node_modules/@aws-sdk/lib-dynamodb/dist-es/commands/ScanCommand.js';
export { QueryCommand } from '../../../../node_modules/@aws-sdk/lib-dynamodb/dist-es/commands/QueryCommand.js';
export { TransactWriteCommand } from '../../../../node_modules/@aws-sdk/lib-dynamodb/dist-es/commands/TransactWriteCommand.js';
export { UpdateCommand } from '../../../../node_modules/@aws-sdk/lib-dynamodb/dist-es/commands/UpdateCommand.js';
