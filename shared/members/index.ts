/**
 * What other domains may use of members: nothing yet. Sessions and roles are enforced by
 * the platform's gate (shared/platform/auth), which reads members' items by key.
 */
export {};
