import { badRequest, forbidden } from '../errors.ts';
import { wire } from '../naming.ts';
import type { CredentialItem } from './credentials.ts';
import { IDENTITY_VARIABLES } from '../system-variables.ts';

/*
 * What a public (browser) key may send when it starts a web call or a chat (docs/security.md,
 * "What a public key may send"). The key is in the customer's page, so anyone can read it
 * and send anything with it from an allowed origin: it may start the agent as the customer
 * configured it and pass the visitor's context, nothing that reprograms the agent or bills
 * the customer for more than a conversation. The handler applies this to every route with a
 * `publicKey` capability, on the body as sent (before the route's schema drops fields it does
 * not know), so each of those routes gets the same rule and a new one cannot miss it; the
 * public chat routes that take a chat ID check the chat's agent with `assertAgentAllowed`.
 */

/** The largest `metadata` a public key may attach, as JSON: labels for the customer's webhooks, not a payload store. */
const PUBLIC_METADATA_MAX_BYTES = 16 * 1024;
/** Dynamic variables a public key may pass: the visitor's context for the prompt's placeholders. */
const PUBLIC_VARIABLES_MAX_COUNT = 100;
const PUBLIC_VARIABLES_MAX_BYTES = 16 * 1024;

/** The version reference a public key may name: the default a request without one gets. */
const DEFAULT_VERSION = 'latest';

/** Metadata keys the call engine reads as a sandbox script (shared/calls/calls.ts, sandboxScript) all begin so. */
const SCRIPT_PREFIX = 'sandbox_';

const VARIABLES = `${wire.compat}_llm_dynamic_variables`;

const refusedField = (field: string, why: string) => forbidden(`A public key cannot send ${field}: ${why}`);

/** 403 naming the agent when a public key limited to some agents names another. */
export function assertAgentAllowed(credential: Pick<CredentialItem, 'allowed_agent_ids'>, agentId: string): void {
  const allowed = credential.allowed_agent_ids ?? [];
  if (allowed.length > 0 && !allowed.includes(agentId)) throw forbidden(`This public key is not allowed for agent ${agentId}`);
}

/**
 * A public key's request to start a call or chat, as sent: its agent must be one the key
 * allows (403), it may not carry what changes the agent (403 naming the field), and its
 * metadata and dynamic variables must be within the bounds above (400 naming the field).
 * What is not an object is left to the route's schema (400).
 */
export function assertPublicStart(credential: Pick<CredentialItem, 'allowed_agent_ids'>, body: unknown): void {
  if (!isObject(body)) return;
  if (typeof body.agent_id === 'string') assertAgentAllowed(credential, body.agent_id);

  if (body.agent_override !== undefined) {
    throw refusedField('agent_override', 'a browser starts the agent as configured; override it from your server with a secret key');
  }
  if (body.agent_version !== undefined && body.agent_version !== DEFAULT_VERSION) {
    throw refusedField('agent_version', `a browser starts the agent's default version (${DEFAULT_VERSION}); choose another from your server with a secret key`);
  }
  for (const field of ['current_node_id', 'current_state']) {
    if (body[field] !== undefined && body[field] !== null) throw refusedField(field, 'a browser starts the agent at its beginning');
  }

  const metadata = body.metadata;
  if (isObject(metadata)) {
    const script = Object.keys(metadata).find((key) => key.startsWith(SCRIPT_PREFIX));
    if (script) throw refusedField(`metadata.${script}`, 'sandbox scripts need a secret key');
  }
  if (metadata !== undefined && jsonBytes(metadata) > PUBLIC_METADATA_MAX_BYTES) {
    throw badRequest(`metadata: Must be at most ${PUBLIC_METADATA_MAX_BYTES} bytes as JSON when sent from a browser`);
  }

  const problem = publicVariablesProblem(body[VARIABLES]);
  if (problem) throw badRequest(`${VARIABLES}: ${problem}`);
}

/** What is wrong with dynamic variables a browser sent (public keys, share links), if anything. */
export function publicVariablesProblem(variables: unknown): string | undefined {
  if (!isObject(variables)) return undefined;
  const identity = IDENTITY_VARIABLES.find((name) => Object.hasOwn(variables, name));
  if (identity) return `${identity} is set by the platform and cannot be sent from a browser`;
  if (Object.keys(variables).length > PUBLIC_VARIABLES_MAX_COUNT) return `Must have at most ${PUBLIC_VARIABLES_MAX_COUNT} variables when sent from a browser`;
  if (jsonBytes(variables) > PUBLIC_VARIABLES_MAX_BYTES) return `Must be at most ${PUBLIC_VARIABLES_MAX_BYTES} bytes as JSON when sent from a browser`;
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
