import { fromEnv } from '@aws-sdk/credential-provider-env';

/*
 * Stands in for `@aws-sdk/credential-provider-node` in deployed bundles only (an esbuild
 * alias, lib/bundle-aliases.ts). Inside Lambda the default chain always stops at its
 * first link, the environment: the runtime sets AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
 * and AWS_SESSION_TOKEN for the function's role. The rest of the chain (SSO, INI files,
 * web identity, container and instance metadata, with their STS/SSO clients) was about
 * 90 KB of every bundle parsed at every cold start and never run. Local runs and tests
 * keep the full chain.
 */
export const defaultProvider = (init?: Parameters<typeof fromEnv>[0]) => fromEnv(init);
