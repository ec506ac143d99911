import { Token } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { loadConfig, PRODUCTION_REQUIRED_SETTINGS } from '../shared/platform/config.ts';

/**
 * Deploy-time settings: each comes from the stack's props, else from CDK context
 * (`-c name=value` or cdk.json's `context`), else a default. Context given on the command
 * line arrives as text, so objects, lists, numbers and booleans are read as JSON.
 */
export function contextValue(scope: Construct, name: string): unknown {
  const value: unknown = scope.node.tryGetContext(name);
  if (typeof value !== 'string') return value;
  const text = value.trim();
  if (!/^[[{]|^(true|false|-?\d+(\.\d+)?)$/.test(text)) return value;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Error(`CDK context ${name}: ${JSON.stringify(value)} is not valid JSON`);
  }
}

/**
 * The functions' settings whose local defaults must never reach production (see
 * PRODUCTION_REQUIRED_SETTINGS in shared/platform/config.ts); the stack sets the others itself.
 */
export interface FunctionSettings {
  /** SIP_HOST: host of the platform's SIP servers (context `sipHost`). */
  sipHost: string;
  /** SIP_IP_RANGES: the blocks they send from (context `sipIpRanges`: a JSON array or comma list). */
  sipIpRanges: readonly string[];
  /** PUBLIC_BASE_URL (context `publicBaseUrl`); default: the HTTP API's own https:// endpoint. */
  publicBaseUrl?: string;
  /**
   * LIVEKIT_URL (context `livekitUrl`): calls run on this LiveKit server (docs/calls-media.md),
   * and the stack deploys the voice worker that registers with it (lib/voice-worker.ts).
   * Unset: calls run in the sandbox, and there is no worker.
   */
  livekitUrl?: string;
  /**
   * LIVEKIT_AGENT_NAME (context `livekitAgentName`), set with livekitUrl on the functions and
   * the worker alike, so dispatch and registration name the same agent; default the settings'
   * own default. Stages sharing one LiveKit project need a name each, or one stage's calls may
   * be dispatched to another stage's workers.
   */
  livekitAgentName?: string;
}

/**
 * Obviously-not-real values that let `npm run synth` (CI, offline, no account) build the
 * template when context `allowExampleSettings` is true. They never serve: shared/platform/config.ts
 * refuses `.invalid` hosts and documentation address blocks in production, so functions
 * deployed with them stop at cold start naming SIP_HOST and SIP_IP_RANGES.
 */
const EXAMPLE_SETTINGS: FunctionSettings = {
  sipHost: 'sip.example.invalid',
  sipIpRanges: ['192.0.2.0/24'],
};

const list = (value: unknown): string[] | undefined => {
  if (value === undefined || value === null || value === '') return undefined;
  if (Array.isArray(value)) return value.map(String);
  return String(value)
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
};

/**
 * The settings to deploy, from props or context. Missing ones fail the synth with what to
 * pass, unless context `allowExampleSettings` is true (CI's offline synth), which fills the
 * gaps with EXAMPLE_SETTINGS. Given values are checked now with the functions' own
 * production check (shared/platform/config.ts), so a local or example value fails the synth rather
 * than every cold start.
 */
export function functionSettings(scope: Construct, given: Partial<FunctionSettings> = {}): FunctionSettings {
  const sipHost = given.sipHost ?? (contextValue(scope, 'sipHost') as string | undefined);
  const sipIpRanges = given.sipIpRanges ?? list(contextValue(scope, 'sipIpRanges'));
  const publicBaseUrl = given.publicBaseUrl ?? (contextValue(scope, 'publicBaseUrl') as string | undefined);
  const livekitUrl = given.livekitUrl ?? (contextValue(scope, 'livekitUrl') as string | undefined);
  const livekitAgentName = given.livekitAgentName ?? (contextValue(scope, 'livekitAgentName') as string | undefined);
  if (livekitAgentName !== undefined && !livekitUrl) {
    throw new Error('livekitAgentName goes with livekitUrl: without LiveKit, calls run in the sandbox and nothing is dispatched');
  }
  const allowExamples = contextValue(scope, 'allowExampleSettings') === true;

  const missing = [...(sipHost ? [] : ['sipHost']), ...(sipIpRanges?.length ? [] : ['sipIpRanges'])];
  if (missing.length && !allowExamples) {
    throw new Error(
      `Parley needs ${missing.join(' and ')} to deploy (the functions' SIP_HOST and SIP_IP_RANGES; their local defaults never reach production). ` +
        'Pass them as CDK context, e.g. `npx cdk deploy -c sipHost=<SIP servers\' host name> -c sipIpRanges=<CIDR block>,<CIDR block>`, ' +
        'or put them in cdk.json\'s "context". For an offline synth that will never be deployed, pass -c allowExampleSettings=true ' +
        '(what `npm run synth` does). See README, Deploy with CDK.',
    );
  }
  const settings: FunctionSettings = {
    sipHost: sipHost || EXAMPLE_SETTINGS.sipHost,
    sipIpRanges: sipIpRanges?.length ? sipIpRanges : EXAMPLE_SETTINGS.sipIpRanges,
    ...(publicBaseUrl ? { publicBaseUrl } : {}),
    ...(livekitUrl ? { livekitUrl: String(livekitUrl), livekitAgentName: String(livekitAgentName ?? loadConfig({}).LIVEKIT_AGENT_NAME).trim() } : {}),
  };
  // LiveKit's settings are checked whatever the SIP ones are (CI's example synth names an example server).
  if (settings.livekitUrl) checkLiveKit(settings);
  if (!missing.length) checkAsProduction(settings);
  return settings;
}

/** What the functions' environment gets for these settings. */
export function settingsEnvironment(settings: FunctionSettings, apiEndpoint: string): Record<string, string> {
  return {
    SIP_HOST: settings.sipHost,
    SIP_IP_RANGES: settings.sipIpRanges.join(','),
    PUBLIC_BASE_URL: settings.publicBaseUrl ?? apiEndpoint,
    ...(settings.livekitUrl ? { LIVEKIT_URL: settings.livekitUrl, LIVEKIT_AGENT_NAME: settings.livekitAgentName! } : {}),
  };
}

/** The LiveKit settings through the settings' own schema (a ws(s):// or http(s):// URL, a name of 1 to 128 characters). */
function checkLiveKit(settings: FunctionSettings): void {
  try {
    loadConfig({ LIVEKIT_URL: settings.livekitUrl, LIVEKIT_AGENT_NAME: settings.livekitAgentName });
  } catch (error) {
    throw new Error(`Parley deploy settings livekitUrl and livekitAgentName: ${(error as Error).message}`);
  }
}

/** Runs the functions' own production settings check on these values. */
function checkAsProduction(settings: FunctionSettings): void {
  const environment = settingsEnvironment(settings, 'https://api.example.com');
  // Deploy-time tokens (the stack's own resources) resolve to real values; the check is about the literals.
  const literal = (value: string, stand: string) => (Token.isUnresolved(value) ? stand : value);
  try {
    loadConfig({
      // Every required setting the stack fills with its own resources: a stand-in, so only
      // the deploy settings' literal values are judged.
      ...Object.fromEntries(PRODUCTION_REQUIRED_SETTINGS.map((name) => [name, 'stack-resource'])),
      PARLEY_ENV: 'production',
      ...environment,
      PUBLIC_BASE_URL: literal(environment.PUBLIC_BASE_URL!, 'https://api.example.com'),
    });
  } catch (error) {
    throw new Error(
      `Parley deploy settings (sipHost, sipIpRanges, publicBaseUrl, livekitUrl, livekitAgentName) would stop every function at start: ${(error as Error).message}`,
    );
  }
}
