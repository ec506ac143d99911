/**
 * Modules replaced in deployed Lambda bundles (esbuild `alias`), read by the CDK bundling
 * options and by the benchmark's mirror of them (bench/cdk-bundling.ts). Paths are
 * relative to the project root, where CDK runs esbuild.
 */
export const LAMBDA_BUNDLE_ALIASES: Readonly<Record<string, string>> = {
  // Only the environment link of the credential chain runs in Lambda: see the module.
  '@aws-sdk/credential-provider-node': './shared/platform/aws/lambda-credentials.ts',
  // @middy/core's one use of it is an instanceof test: the built-in loads on first use (see the module).
  'node:stream/web': './shared/platform/bundle/lambda-stream-web.ts',
  // DDSketch's serialization, never called (see the module).
  'protobufjs/minimal': './shared/platform/bundle/no-protobuf.ts',
  // The AWS clients Parley uses, from their own files rather than their `export *` indexes,
  // so a module loaded with import() does not keep every command and schema of the service
  // (shared/platform/aws/lambda-sdk/; about 100 KiB of the calls bundle).
  ...Object.fromEntries(
    ['client-dynamodb', 'lib-dynamodb', 'util-dynamodb', 'client-kms', 'client-sqs', 'client-secrets-manager', 'client-s3', 'client-apigatewaymanagementapi'].map((name) => [
      `@aws-sdk/${name}`,
      `./shared/platform/aws/lambda-sdk/${name}.js`,
    ]),
  ),
};

