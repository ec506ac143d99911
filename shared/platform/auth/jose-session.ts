/*
 * The pieces of jose the session tokens use, from their own entry points (sessions.ts
 * loads this module with import() on the first token it signs or verifies: with code
 * splitting it is a chunk of its own, and only these three entry points are in it). Importing
 * `jose` itself through import() made
 * esbuild keep the whole package (JWE, JWK sets, key generation, about 60 KiB minified) in
 * every function's bundle: a dynamically imported module is wrapped, and a wrapped import of a
 * package's index keeps every export (docs/performance.md, "Dynamic imports that cost more than they save").
 */
export { SignJWT } from 'jose/jwt/sign';
export { jwtVerify } from 'jose/jwt/verify';
export { JOSEError } from 'jose/errors';
