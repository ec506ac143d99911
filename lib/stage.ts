import type { Construct } from 'constructs';
import { contextValue } from './deploy-settings.ts';

/**
 * A stage is one deployment of Parley (dev, staging, prod, a developer's own): its own stack
 * (`Parley-<stage>`), table, key, queues and API. Several stages live side by side in one
 * account and region, so every name that must be unique there carries the stage
 * (`scopedName`). Settings come from the stack's props, else from the context object
 * `stages.<stage>` (cdk.json can hold one per stage), else from plain context, else a default.
 */
const DEFAULT_STAGE = 'dev';

/** The production stage: canary deployments and termination protection by default. */
export const PRODUCTION_STAGE = 'prod';

/** Short, lower case, DNS- and CloudFormation-safe: it ends up in stack, alias and log group names. */
const STAGE_PATTERN = /^[a-z][a-z0-9-]{0,19}$/;

/**
 * How CodeDeploy shifts an alias to a new version: `canary` (10 % for 5 minutes, then all),
 * `linear` (10 % more every minute) or `allAtOnce`. A shift rolls back when the function's
 * error alarm fires while it runs.
 */
const DEPLOYMENT_STRATEGIES = ['canary', 'linear', 'allAtOnce'] as const;
export type DeploymentStrategy = (typeof DEPLOYMENT_STRATEGIES)[number];

/** An API custom domain: a regional ACM certificate, and optionally the Route 53 zone to put its alias record in. */
interface CustomDomain {
  /** e.g. `api.parley.ai`. */
  domainName: string;
  /** ACM certificate covering domainName, in the stack's region. */
  certificateArn: string;
  /** The hosted zone to add the alias record to; without it, point DNS at the `ApiDomainTarget` output yourself. */
  hostedZoneId?: string;
  /** That zone's name, e.g. `parley.ai`. */
  zoneName?: string;
}

export interface StageSettings {
  stage: string;
  deployment: DeploymentStrategy;
  customDomain?: CustomDomain;
  /** An existing SNS topic the alarms notify as well as the stack's own. */
  alarmTopicArn?: string;
  /** Emails subscribed to the stack's alarm topic at deploy time (each confirms by email). */
  alarmEmails: readonly string[];
  /**
   * Browser origins allowed to PUT files to presigned upload URLs (assets, voice samples and knowledge-base files, to the recordings bucket's uploads/)
   * (context `uploadOrigins`: a JSON array or comma list of `https://host[:port]`); none
   * (the default) means no CORS rule: curl and servers upload, browsers cannot.
   */
  uploadOrigins: readonly string[];
}

export interface StageProps {
  stage?: string;
  deployment?: DeploymentStrategy;
  customDomain?: CustomDomain;
  alarmTopicArn?: string;
  uploadOrigins?: readonly string[];
}

export function checkStageName(stage: unknown): string {
  if (typeof stage !== 'string' || !STAGE_PATTERN.test(stage)) {
    throw new Error(
      `The stage name must be 1 to 20 lower-case letters, digits or hyphens, starting with a letter (context stage), not ${JSON.stringify(stage)}`,
    );
  }
  return stage;
}

/** The stage named by context `stage` (default dev). */
export function stageFromContext(scope: Construct): string {
  return checkStageName(contextValue(scope, 'stage') ?? DEFAULT_STAGE);
}

/** A context setting of this stage: `stages.<stage>.<name>`, else `<name>`. */
export function stageContext(scope: Construct, stage: string, name: string): unknown {
  const stages = contextValue(scope, 'stages');
  if (stages !== undefined && (typeof stages !== 'object' || stages === null || Array.isArray(stages))) {
    throw new Error('Context stages must be an object of stage name → settings, e.g. {"prod":{"domainName":"api.parley.ai"}}');
  }
  const own = (stages as Record<string, Record<string, unknown>> | undefined)?.[stage]?.[name];
  return own ?? contextValue(scope, name);
}

/** `parley-<stage>-<name>`: a name that must be unique in the account and region. */
export const scopedName = (stage: string, name?: string): string => (name ? `parley-${stage}-${name}` : `parley-${stage}`);

const text = (value: unknown): string | undefined => (value === undefined || value === null || value === '' ? undefined : String(value));

export function stageSettings(scope: Construct, given: StageProps): StageSettings {
  const stage = checkStageName(given.stage ?? contextValue(scope, 'stage') ?? DEFAULT_STAGE);
  const read = (name: string) => stageContext(scope, stage, name);

  const deployment = (given.deployment ?? read('deployment') ?? (stage === PRODUCTION_STAGE ? 'canary' : 'allAtOnce')) as DeploymentStrategy;
  if (!DEPLOYMENT_STRATEGIES.includes(deployment)) {
    throw new Error(`deployment must be one of ${DEPLOYMENT_STRATEGIES.join(', ')}, not ${JSON.stringify(deployment)}`);
  }

  let customDomain = given.customDomain;
  if (!customDomain) {
    const domainName = text(read('domainName'));
    const certificateArn = text(read('certificateArn'));
    const hostedZoneId = text(read('hostedZoneId'));
    const zoneName = text(read('zoneName'));
    if (domainName || certificateArn || hostedZoneId || zoneName) {
      customDomain = { domainName: domainName!, certificateArn: certificateArn!, hostedZoneId, zoneName };
    }
  }
  if (customDomain) checkCustomDomain(customDomain);

  const emails = read('alarmEmails');
  const alarmEmails = emails === undefined ? [] : Array.isArray(emails) ? emails.map(String) : String(emails).split(',').map((e) => e.trim()).filter(Boolean);
  for (const email of alarmEmails) {
    if (!/^[^@\s]+@[^@\s.]+(\.[^@\s.]+)+$/.test(email)) throw new Error(`alarmEmails: ${JSON.stringify(email)} is not an email address`);
  }

  const origins = given.uploadOrigins ?? read('uploadOrigins');
  const uploadOrigins = checkUploadOrigins(
    origins === undefined || origins === null || origins === '' ? [] : Array.isArray(origins) ? origins.map(String) : String(origins).split(',').map((o) => o.trim()).filter(Boolean),
  );

  return {
    stage,
    deployment,
    uploadOrigins,
    ...(customDomain ? { customDomain } : {}),
    ...(text(given.alarmTopicArn ?? read('alarmTopicArn')) ? { alarmTopicArn: text(given.alarmTopicArn ?? read('alarmTopicArn')) } : {}),
    alarmEmails,
  };
}

/**
 * Browser origins for the knowledge-base bucket's CORS rule: exact origins only
 * (`https://host[:port]`, or `http://localhost[:port]` / `http://127.0.0.1[:port]` for a
 * dashboard under development), no wildcard, no path: a presigned URL is a bearer
 * capability, and the rule should name the dashboards that hand it to a browser.
 */
function checkUploadOrigins(origins: readonly string[]): string[] {
  const checked = origins.map((origin) => {
    let url: URL | undefined;
    try {
      url = new URL(origin);
    } catch {
      url = undefined;
    }
    const local = url?.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname === '127.0.0.1');
    if (!url || url.origin !== origin || origin.includes('*') || !(url.protocol === 'https:' || local)) {
      throw new Error(
        `uploadOrigins: ${JSON.stringify(origin)} is not an origin; give https://host[:port] (no path, no trailing slash, no wildcard), or http://localhost[:port]`,
      );
    }
    return origin;
  });
  return [...new Set(checked)];
}

function checkCustomDomain(domain: CustomDomain): void {
  const problems: string[] = [];
  if (!domain.domainName || !/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/.test(domain.domainName)) {
    problems.push(`domainName must be a lower-case DNS name such as api.parley.ai (given ${JSON.stringify(domain.domainName)})`);
  }
  if (!domain.certificateArn || !/^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate\/[A-Za-z0-9-]+$/.test(domain.certificateArn)) {
    problems.push('certificateArn must be the ARN of an ACM certificate for domainName in the stack\'s region');
  }
  if (Boolean(domain.hostedZoneId) !== Boolean(domain.zoneName)) {
    problems.push('hostedZoneId and zoneName go together (the Route 53 zone the alias record goes in), or neither');
  }
  if (domain.zoneName && domain.domainName && domain.domainName !== domain.zoneName && !domain.domainName.endsWith(`.${domain.zoneName}`)) {
    problems.push(`domainName ${domain.domainName} is not in the zone ${domain.zoneName}`);
  }
  if (problems.length) throw new Error(`Custom domain: ${problems.join('; ')}. See docs/operations.md, Custom domain.`);
}
