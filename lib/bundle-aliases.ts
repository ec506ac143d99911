/**
 * Modules replaced in deployed Lambda bundles (esbuild `alias`), read by the CDK bundling
 * options and by the benchmark's mirror of them (bench/cdk-bundling.ts). Paths are
 * relative to the project root, where CDK runs esbuild.
 */
export const LAMBDA_BUNDLE_ALIASES: Readonly<Record<string, string>> = {
  // Only the environment link of the credential chain runs in Lambda: see the module.
  '@aws-sdk/credential-provider-node': './shared/platform/aws/lambda-credentials.ts',
};

/** The aliases as CDK's `esbuildArgs` (`--alias:<module>=<path>`). */
export const aliasEsbuildArgs = (): Record<string, string> =>
  Object.fromEntries(Object.entries(LAMBDA_BUNDLE_ALIASES).map(([module, path]) => [`--alias:${module}`, path]));
