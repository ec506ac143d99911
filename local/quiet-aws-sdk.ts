/**
 * Imported first by every local entry point (`npm start`, the CLI, the tests' setup, the
 * bench): the AWS SDK's documented switch for its 9-line "upgrade to node >=22" warning,
 * which it prints once per process on Node 20 (see README, Run it). Lambda runs Node 24 and
 * never prints it. An explicit setting in the environment wins.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
