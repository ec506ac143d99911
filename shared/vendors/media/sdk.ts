import type * as LiveKitSdk from 'livekit-server-sdk';
import { loadOnce } from '../../platform/lazy.ts';

/*
 * livekit-server-sdk (with @livekit/protocol, @bufbuild/protobuf and jose, about 170 KiB
 * minified), loaded on first use, once per process: with esbuild's code splitting a
 * package reached only through a literal `import('livekit-server-sdk')` lands in its own
 * chunk, which a cold start does not load. Every module of the media vendor takes the SDK
 * from here (a static value import anywhere would pull it back into the cold closure);
 * types come from `import type`.
 */
export const loadLiveKitSdk = loadOnce((): Promise<typeof LiveKitSdk> => import('livekit-server-sdk'));
