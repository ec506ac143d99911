import type { Stack } from 'aws-cdk-lib';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as route53 from 'aws-cdk-lib/aws-route53';
import * as route53Targets from 'aws-cdk-lib/aws-route53-targets';
import { NagSuppressions } from 'cdk-nag';
import { DOMAINS, THROTTLE_CLASSES, type Domain, type ThrottleClass } from '../shared/platform/http/route.ts';
import type { ServedRoute } from '../shared/route-table.ts';
import { contextValue } from './deploy-settings.ts';
import { API_THROTTLE_QUOTA, atTarget, checkAccountQuota, PER_CALL_REQUESTS_PER_SECOND, SCALE_TARGET, TARGET_API_REQUESTS_PER_SECOND } from './scale.ts';
import { FUNCTIONS, type FunctionName } from './functions.ts';
import { pascal } from './monitoring.ts';
import type { ParleyFunction } from './parley-function.ts';
import { ROUTE_STACK_COUNT, RouteStack, routeStackIndex, type RouteTarget } from './route-stack.ts';
import { scopedName, type StageSettings } from './stage.ts';

/** The one route of CORS preflights (the public function answers them; docs/browser.md). */
const PREFLIGHT_ROUTE_KEY = 'OPTIONS /{proxy+}';

export interface Throttle {
  /** Steady requests per second. */
  rateLimit: number;
  /** Requests API Gateway admits at once above the steady rate. */
  burstLimit: number;
}

/** API Gateway's burst of a default account (the tokens of its bucket): a route's burst above it is never reached. */
const ACCOUNT_BURST = 5000;

/** A limit of `rate` requests a second, its burst one second of it (at most the account's). */
const perSecond = (rate: number): Throttle => ({ rateLimit: rate, burstLimit: Math.min(Math.round(rate), ACCOUNT_BURST) });

/**
 * The stage's default throttle for every route (context `apiThrottle`). API Gateway counts
 * it per route across all callers, so it is a platform limit: three times what the busiest
 * key may send (lib/scale.ts), so one tenant at its own limit (the gate's, per key; the
 * concurrency counter and CPS buckets per workspace) takes at most a third of any route.
 */
export const DEFAULT_API_THROTTLE: Throttle = perSecond(Math.ceil((3 * SCALE_TARGET.keyRequestsPerSecond) / 1000) * 1000);

/**
 * Per-route throttles by the route's `throttle` class (context `routeThrottle`, e.g.
 * `{"outbound":{"rateLimit":5,"burstLimit":10}}`). Each route key gets its own bucket of
 * this size, shared by all workspaces; the per-workspace cap on concurrent outbound tests
 * keeps one workspace from taking it all.
 */
export const DEFAULT_ROUTE_THROTTLES: Record<ThrottleClass, Throttle> = {
  // Can wait up to 10 s on an address the caller chose: 2/s holds ~20 executions at worst.
  outbound: { rateLimit: 2, burstLimit: 5 },
  // Paid vendor calls that are slow and rare (voice cloning, agent generation, buying numbers,
  // payments): seconds each, and money.
  vendor: { rateLimit: 5, burstLimit: 10 },
  // Chat turns and SMS, conversation traffic: the chat turns the target plans for
  // (lib/scale.ts); the chats and public functions' reservations hold them at a turn's duration.
  conversation: perSecond(SCALE_TARGET.chatTurnsPerSecond),
  // The voice worker's reports and retrievals, each one route for every call: sized for the
  // target's calls in progress at the larger of the two per-call rates (docs/scale.md).
  worker: perSecond(atTarget(Math.max(PER_CALL_REQUESTS_PER_SECOND.workerReports, PER_CALL_REQUESTS_PER_SECOND.workerRetrievals))),
  // LiveKit's webhooks, one route for every room.
  media: perSecond(atTarget(PER_CALL_REQUESTS_PER_SECOND.mediaWebhooks)),
};

/**
 * API Gateway's "Routes per API" quota (context `routesPerApiQuota`). Synth fails above it
 * rather than the deploy failing halfway; README, Deploy with CDK, says how to raise it.
 */
const DEFAULT_ROUTES_PER_API_QUOTA = 300;

export interface ParleyApiProps {
  settings: StageSettings;
  routes: readonly ServedRoute[];
  apiThrottle?: Throttle;
  routeThrottles?: Partial<Record<ThrottleClass, Throttle>>;
}

/**
 * The HTTP API: its stage and access log, the custom domain, and (once the functions exist)
 * one integration per HTTP function, the $default and preflight routes, the route table's
 * routes in nested stacks, and per-route throttles. The functions come from the manifest
 * (lib/functions.ts, trigger `routes`). Its resources are the stack's children (see
 * lib/parley-data.ts for why).
 */
export class ParleyApi {
  readonly api: apigwv2.HttpApi;
  readonly stage: apigwv2.HttpStage;
  /** The custom domain's API Gateway name, when context domainName is set. */
  readonly domainName?: apigwv2.DomainName;
  /** The custom domain's URL, when there is one. */
  readonly publicUrl?: string;
  readonly integrations = {} as Record<Domain, apigwv2.HttpIntegration>;
  readonly routeStacks: RouteStack[] = [];
  defaultRoute!: apigwv2.CfnRoute;

  constructor(
    private readonly stack: Stack,
    private readonly props: ParleyApiProps,
  ) {
    ({ api: this.api, stage: this.stage } = this.httpApi());
    ({ domainName: this.domainName, url: this.publicUrl } = this.customDomain() ?? {});
  }

  /**
   * Holds the target's requests through API Gateway (lib/scale.ts) to the account's throttle
   * (context `apiThrottleQuota`; lib/scale.ts says when it fails and when it warns). The
   * account's throttle is shared by every API in the region, so it binds before any route's.
   */
  static checkThrottleQuota(stack: Stack, stage: string): void {
    checkAccountQuota(stack, stage, API_THROTTLE_QUOTA, TARGET_API_REQUESTS_PER_SECOND, 'The target load (requests a second through API Gateway, docs/scale.md)');
  }

  /** Fails the synth when the API would exceed API Gateway's "Routes per API" quota (before anything is built). */
  static checkRouteQuota(stack: Stack, routes: readonly ServedRoute[], given: number | undefined): void {
    const quota = Number(given ?? contextValue(stack, 'routesPerApiQuota') ?? DEFAULT_ROUTES_PER_API_QUOTA);
    if (!Number.isInteger(quota) || quota < 1) throw new Error(`routesPerApiQuota must be a whole number, not ${quota}`);
    // The route table's keys plus $default and the preflight route.
    const count = routes.length + 2;
    if (count > quota) {
      throw new Error(
        `The HTTP API would have ${count} routes (${routes.length} from the route table plus $default and ${PREFLIGHT_ROUTE_KEY}), more than ` +
          `routesPerApiQuota (${quota}), API Gateway's "Routes per API" quota, so the deploy would fail. ` +
          `Ask for a higher "Routes per API" quota for this API in Service Quotas (API Gateway, in the stack's region; ` +
          `the raise applies to an API that already exists), and once it is granted deploy with ` +
          `-c routesPerApiQuota=<the new quota> (or set it in cdk.json's "context"). See README, Deploy with CDK.`,
      );
    }
  }

  /**
   * Routes each route group to its function. HttpLambdaIntegration would add a Lambda
   * permission per route (hundreds of resources); one integration per function plus one
   * permission for the whole API. Both name the function's `live` alias, which CodeDeploy
   * moves between versions.
   */
  serve(functions: Readonly<Partial<Record<FunctionName, ParleyFunction>>>): void {
    const apiSourceArn = this.stack.formatArn({ service: 'execute-api', resource: this.api.apiId, resourceName: '*/*' });
    for (const spec of FUNCTIONS) {
      if (spec.trigger.kind !== 'routes') continue;
      const { routeGroup } = spec.trigger;
      const fn = functions[spec.name]!.live;
      this.integrations[routeGroup] = new apigwv2.HttpIntegration(this.stack, `${pascal(routeGroup)}Integration`, {
        httpApi: this.api,
        integrationType: apigwv2.HttpIntegrationType.AWS_PROXY,
        integrationUri: fn.functionArn,
        payloadFormatVersion: apigwv2.PayloadFormatVersion.VERSION_2_0,
      });
      fn.addPermission('ApiInvoke', {
        principal: new iam.ServicePrincipal('apigateway.amazonaws.com'),
        action: 'lambda:InvokeFunction',
        sourceArn: apiSourceArn,
      });
    }
    for (const domain of DOMAINS) {
      if (!this.integrations[domain]) throw new Error(`The route group ${domain} has no function: add its entry to lib/functions.ts`);
    }

    // Unmatched requests reach the catch-all function (meta), which answers 404.
    this.defaultRoute = new apigwv2.CfnRoute(this.stack, 'DefaultRoute', {
      apiId: this.api.apiId,
      routeKey: '$default',
      target: `integrations/${this.integrations[onlyRouteGroup('catchAll')].integrationId}`,
      authorizationType: 'NONE',
    });
    NagSuppressions.addResourceSuppressions(this.defaultRoute, [
      {
        id: 'AwsSolutions-APIG4',
        reason:
          'The $default route only answers 404 (after the per-IP rate limit); real routes authenticate in the function with Parley API keys, sharing one DynamoDB round trip with rate limiting.',
      },
    ]);

    // CORS preflights for every path, answered by the preflight function (public; docs/browser.md).
    const preflightRoute = new apigwv2.CfnRoute(this.stack, 'PreflightRoute', {
      apiId: this.api.apiId,
      routeKey: PREFLIGHT_ROUTE_KEY,
      target: `integrations/${this.integrations[onlyRouteGroup('preflight')].integrationId}`,
      authorizationType: 'NONE',
    });
    NagSuppressions.addResourceSuppressions(preflightRoute, [
      {
        id: 'AwsSolutions-APIG4',
        reason: 'CORS preflights carry no credentials by design (Fetch standard); the function only answers which origins public keys allow.',
      },
    ]);

    this.addRoutes();
    this.throttleRoutes();
  }

  private httpApi(): { api: apigwv2.HttpApi; stage: apigwv2.HttpStage } {
    const { stack } = this;
    const api = new apigwv2.HttpApi(stack, 'Api', {
      apiName: scopedName(this.props.settings.stage),
      description: 'Parley: Retell-compatible REST API',
      createDefaultStage: false,
      // No corsPreflight: API Gateway's CORS would replace every function's CORS headers with
      // one list, and the browser routes answer only the origins public keys allow. The
      // functions set CORS headers themselves, and `OPTIONS /{proxy+}` (below) goes to the
      // public function (shared/platform/http/cors.ts, docs/browser.md).
    });
    const accessLogs = new logs.LogGroup(stack, 'ApiAccessLogs', { retention: logs.RetentionDays.ONE_MONTH, logGroupName: `/parley/${this.props.settings.stage}/api-access` });
    const stage = new apigwv2.HttpStage(stack, 'DefaultStage', {
      httpApi: api,
      stageName: '$default',
      autoDeploy: true,
      throttle: checkedThrottle('apiThrottle', this.props.apiThrottle ?? (contextValue(stack, 'apiThrottle') as Throttle | undefined) ?? DEFAULT_API_THROTTLE),
      accessLogSettings: {
        destination: new apigwv2.LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            requestTime: '$context.requestTime',
            method: '$context.httpMethod',
            path: '$context.path',
            routeKey: '$context.routeKey',
            status: '$context.status',
            protocol: '$context.protocol',
            responseLength: '$context.responseLength',
            latencyMs: '$context.responseLatency',
            integrationLatencyMs: '$context.integrationLatency',
            integrationError: '$context.integrationErrorMessage',
            // The integration's own answer: the function's status, the Lambda
            // service's error, and the time Lambda took, beside API Gateway's view above.
            integrationStatus: '$context.integration.status',
            integrationServiceError: '$context.integration.error',
            integrationServiceLatencyMs: '$context.integration.latency',
            userAgent: '$context.identity.userAgent',
          }),
        ),
      },
    });
    return { api, stage };
  }

  /**
   * The API on a custom domain (context domainName and certificateArn; hostedZoneId and
   * zoneName for the Route 53 alias record): an API mapping of the $default stage, and the
   * execute-api endpoint switched off so the domain is the only way in.
   */
  private customDomain(): { domainName: apigwv2.DomainName; url: string } | undefined {
    const { stack } = this;
    const domain = this.props.settings.customDomain;
    if (!domain) return undefined;
    const domainName = new apigwv2.DomainName(stack, 'ApiDomain', {
      domainName: domain.domainName,
      certificate: acm.Certificate.fromCertificateArn(stack, 'ApiCertificate', domain.certificateArn),
      securityPolicy: apigwv2.SecurityPolicy.TLS_1_2,
    });
    new apigwv2.ApiMapping(stack, 'ApiMapping', { api: this.api, domainName, stage: this.stage });
    (this.api.node.defaultChild as apigwv2.CfnApi).disableExecuteApiEndpoint = true;
    if (domain.hostedZoneId && domain.zoneName) {
      const zone = route53.HostedZone.fromHostedZoneAttributes(stack, 'ApiZone', { hostedZoneId: domain.hostedZoneId, zoneName: domain.zoneName });
      const target = route53.RecordTarget.fromAlias(new route53Targets.ApiGatewayv2DomainProperties(domainName.regionalDomainName, domainName.regionalHostedZoneId));
      new route53.ARecord(stack, 'ApiAliasRecord', { zone, recordName: domain.domainName, target });
      new route53.AaaaRecord(stack, 'ApiAliasRecordIpv6', { zone, recordName: domain.domainName, target });
    }
    return { domainName, url: `https://${domain.domainName}` };
  }

  /**
   * Per-route throttles for routes with a `throttle` class. The stage names the routes by
   * key, so it is updated after the nested stacks that create them.
   */
  private throttleRoutes(): void {
    const given = this.props.routeThrottles;
    const fromContext = (contextValue(this.stack, 'routeThrottle') ?? {}) as Partial<Record<ThrottleClass, Throttle>>;
    const limits = {} as Record<ThrottleClass, Throttle>;
    for (const throttleClass of THROTTLE_CLASSES) {
      limits[throttleClass] = checkedThrottle(
        `routeThrottle.${throttleClass}`,
        given?.[throttleClass] ?? fromContext[throttleClass] ?? DEFAULT_ROUTE_THROTTLES[throttleClass],
      );
    }
    // RouteSettings is free-form JSON in the L1, so its keys are CloudFormation's own names.
    const routeSettings: Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> = {};
    for (const route of this.props.routes) {
      if (!route.route.throttle) continue;
      const limit = limits[route.route.throttle];
      routeSettings[route.key] = { ThrottlingRateLimit: limit.rateLimit, ThrottlingBurstLimit: limit.burstLimit };
    }
    if (Object.keys(routeSettings).length === 0) return;
    (this.stage.node.defaultChild as apigwv2.CfnStage).routeSettings = routeSettings;
    for (const routeStack of this.routeStacks) this.stage.node.addDependency(routeStack);
  }

  private addRoutes(): void {
    const buckets = new Map<number, RouteTarget[]>();
    const seen = new Set<string>();
    for (const route of this.props.routes) {
      if (seen.has(route.key)) throw new Error(`Route ${route.key} is served twice`);
      seen.add(route.key);
      const index = routeStackIndex(route.key);
      const bucket = buckets.get(index) ?? [];
      bucket.push({ routeKey: route.key, integrationId: this.integrations[route.domain].integrationId });
      buckets.set(index, bucket);
    }
    // A nested stack without resources is an invalid template, so empty buckets get none.
    for (let index = 0; index < ROUTE_STACK_COUNT; index++) {
      const bucket = buckets.get(index);
      if (!bucket) continue;
      this.routeStacks.push(
        new RouteStack(this.stack, `Routes${index}`, {
          apiId: this.api.apiId,
          routes: bucket,
          description: `Parley API routes, part ${index + 1} of ${ROUTE_STACK_COUNT}`,
        }),
      );
    }
  }
}

/** The route group of the one HTTP function whose manifest trigger has `flag`. */
function onlyRouteGroup(flag: 'catchAll' | 'preflight'): Domain {
  const groups = FUNCTIONS.flatMap((spec) => (spec.trigger.kind === 'routes' && spec.trigger[flag] ? [spec.trigger.routeGroup] : []));
  if (groups.length !== 1) throw new Error(`lib/functions.ts must have exactly one HTTP function with ${flag}, not ${groups.length}`);
  return groups[0]!;
}

function checkedThrottle(name: string, throttle: Throttle): Throttle {
  const { rateLimit, burstLimit } = throttle ?? {};
  if (!(typeof rateLimit === 'number' && rateLimit > 0) || !(Number.isInteger(burstLimit) && burstLimit >= 1)) {
    throw new Error(`${name} must be {"rateLimit": <requests a second, above 0>, "burstLimit": <whole number, at least 1>}`);
  }
  return { rateLimit, burstLimit };
}
