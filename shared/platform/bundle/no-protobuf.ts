/*
 * Stands in for `protobufjs/minimal` in deployed bundles only (an esbuild alias,
 * lib/bundle-aliases.ts). DDSketch (`@datadog/sketches-js`) requires it from inside its
 * protobuf serialization methods only, which Parley never calls: rollup cells keep a
 * sketch's bins as attributes (docs/analytics.md). The package does not declare it as a
 * dependency, so esbuild could not resolve the require without this. Whatever reaches it
 * is a mistake, and is told so.
 */
throw new Error('DDSketch protobuf serialization is not bundled: Parley keeps sketch bins as rollup cell attributes');
