// Stands in for `@aws-sdk/client-sqs` in deployed bundles only (an esbuild alias, lib/bundle-aliases.ts):
// the same classes, imported from the package's own ES module files instead of its index,
// whose `export *` lists make esbuild keep every command and schema of the service once a
// module that uses it is loaded with a dynamic import() (docs/performance.md, "2026-11-23,
// import time"). Only what Parley (and the files below) import is here; a missing name fails
// the bundle build, never a request. Plain JavaScript: the SDK's files have no types of their
// own; the types come from the package as usual.
export { SQSClient } from '../../../../node_modules/@aws-sdk/client-sqs/dist-es/SQSClient.js';
export { SendMessageCommand } from '../../../../node_modules/@aws-sdk/client-sqs/dist-es/commands/SendMessageCommand.js';
