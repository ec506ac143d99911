// Stands in for `@aws-sdk/client-s3` in deployed bundles only (an esbuild alias, lib/bundle-aliases.ts):
// the same classes, imported from the package's own ES module files instead of its index,
// whose `export *` lists make esbuild keep every command and schema of the service once a
// module that uses it is loaded with a dynamic import() (docs/performance.md, "2026-11-23,
// import time"). Only what Parley (and the files below) import is here; a missing name fails
// the bundle build, never a request. Plain JavaScript: the SDK's files have no types of their
// own; the types come from the package as usual.
export { S3Client } from '../../../../node_modules/@aws-sdk/client-s3/dist-es/S3Client.js';
export { AbortMultipartUploadCommand } from '../../../../node_modules/@aws-sdk/client-s3/dist-es/commands/AbortMultipartUploadCommand.js';
export { CompleteMultipartUploadCommand } from '../../../../node_modules/@aws-sdk/client-s3/dist-es/commands/CompleteMultipartUploadCommand.js';
export { CreateMultipartUploadCommand } from '../../../../node_modules/@aws-sdk/client-s3/dist-es/commands/CreateMultipartUploadCommand.js';
export { DeleteObjectCommand } from '../../../../node_modules/@aws-sdk/client-s3/dist-es/commands/DeleteObjectCommand.js';
export { DeleteObjectsCommand } from '../../../../node_modules/@aws-sdk/client-s3/dist-es/commands/DeleteObjectsCommand.js';
export { GetObjectCommand } from '../../../../node_modules/@aws-sdk/client-s3/dist-es/commands/GetObjectCommand.js';
export { ListObjectsV2Command } from '../../../../node_modules/@aws-sdk/client-s3/dist-es/commands/ListObjectsV2Command.js';
export { ListPartsCommand } from '../../../../node_modules/@aws-sdk/client-s3/dist-es/commands/ListPartsCommand.js';
export { PutObjectCommand } from '../../../../node_modules/@aws-sdk/client-s3/dist-es/commands/PutObjectCommand.js';
export { UploadPartCommand } from '../../../../node_modules/@aws-sdk/client-s3/dist-es/commands/UploadPartCommand.js';
