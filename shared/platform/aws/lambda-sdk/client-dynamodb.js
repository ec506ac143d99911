// Stands in for `@aws-sdk/client-dynamodb` in deployed bundles only (an esbuild alias, lib/bundle-aliases.ts):
// the same classes, imported from the package's own ES module files instead of its index,
// whose `export *` lists make esbuild keep every command and schema of the service once a
// module that uses it is loaded with a dynamic import() (docs/performance.md, "2026-11-23,
// import time"). Only what Parley (and the files below) import is here; a missing name fails
// the bundle build, never a request. Plain JavaScript: the SDK's files have no types of their
// own; the types come from the package as usual.
export { DynamoDBClient } from '../../../../node_modules/@aws-sdk/client-dynamodb/dist-es/DynamoDBClient.js';
export { BatchGetItemCommand } from '../../../../node_modules/@aws-sdk/client-dynamodb/dist-es/commands/BatchGetItemCommand.js';
export { BatchWriteItemCommand } from '../../../../node_modules/@aws-sdk/client-dynamodb/dist-es/commands/BatchWriteItemCommand.js';
export { DeleteItemCommand } from '../../../../node_modules/@aws-sdk/client-dynamodb/dist-es/commands/DeleteItemCommand.js';
export { GetItemCommand } from '../../../../node_modules/@aws-sdk/client-dynamodb/dist-es/commands/GetItemCommand.js';
export { PutItemCommand } from '../../../../node_modules/@aws-sdk/client-dynamodb/dist-es/commands/PutItemCommand.js';
export { QueryCommand } from '../../../../node_modules/@aws-sdk/client-dynamodb/dist-es/commands/QueryCommand.js';
export { ScanCommand } from '../../../../node_modules/@aws-sdk/client-dynamodb/dist-es/commands/ScanCommand.js';
export { TransactWriteItemsCommand } from '../../../../node_modules/@aws-sdk/client-dynamodb/dist-es/commands/TransactWriteItemsCommand.js';
export { UpdateItemCommand } from '../../../../node_modules/@aws-sdk/client-dynamodb/dist-es/commands/UpdateItemCommand.js';
