/**
 * Where the worker says it is healthy: LiveKit Agents' own worker HTTP server, which `start`
 * (production mode) opens on port 8081 (its default; worker/src/main.ts keeps it). `GET /`
 * answers 200 `OK` while the worker is registered with LiveKit over its WebSocket, 503
 * otherwise (`not connected to livekit`); `GET /worker` answers its state as JSON, with
 * `active_jobs` (worker/src/worker-watch.ts reads both).
 *
 * The image's HEALTHCHECK (worker/Dockerfile) and the ECS task's container health check
 * (lib/voice-worker.ts) run the same command, a fetch in node (the slim image has no curl);
 * a CDK test holds the Dockerfile to this text. Dependency-free: the CDK app imports it.
 */
export const WORKER_HTTP_PORT = 8081;

export const HEALTH_CHECK_SCRIPT =
  `fetch('http://127.0.0.1:${WORKER_HTTP_PORT}/').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))`;
