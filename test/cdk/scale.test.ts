import { readFileSync } from 'node:fs';
import { App, type CfnResource } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { functionNamed } from '../../lib/functions.ts';
import { DEFAULT_API_THROTTLE, DEFAULT_ROUTE_THROTTLES } from '../../lib/parley-api.ts';
import { ParleyStack } from '../../lib/parley-stack.ts';
import { CHAT_TURN_SECONDS, PER_CALL_REQUESTS_PER_SECOND, SCALE_TARGET, TARGET_API_REQUESTS_PER_SECOND } from '../../lib/scale.ts';
import { servedRoutes } from '../../shared/route-table.ts';

/**
 * The platform's shared limits against the target of docs/scale.md: the calls-media function
 * and its routes, the route limits every tenant shares, the reservations sized from the
 * target, and the account quotas checked at synth.
 */
vi.setConfig({ testTimeout: 300_000 });

/** Yields between syntheses so vitest's worker hears its main process (test/cdk/stack.test.ts says why). */
const breathe = () => new Promise<void>((resolve) => setTimeout(resolve, 100));
beforeEach(breathe);

const SETTINGS = { sipHost: 'sip.parley.ai', sipIpRanges: ['34.1.2.0/24'] };
const PROJECT_CONTEXT = (JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context: Record<string, unknown> }).context;

/** The stack as `cdk synth` builds it from cdk.json, plus `context`; constructing it runs every synth-time check. */
function build(context: Record<string, unknown> = {}) {
  const app = new App({ context: { ...PROJECT_CONTEXT, 'aws:cdk:bundling-stacks': [], ...context } });
  return new ParleyStack(app, 'Parley', { settings: SETTINGS });
}

/** The synth's warnings (Annotations.fromStack would synthesize the app again). */
const warningsOf = (stack: ParleyStack) =>
  stack.node.metadata.filter((entry) => entry.type === 'aws:cdk:warning').map((entry) => String(entry.data));

const WORKER_ROUTES = ['POST /internal/calls/{call_id}/events', 'POST /internal/calls/{call_id}/kb-retrieve'];
const MEDIA_ROUTES = ['POST /livekit/webhook'];

const stack = build();
const template = Template.fromStack(stack);
const stage = Object.values(template.findResources('AWS::ApiGatewayV2::Stage'))[0]!.Properties as {
  DefaultRouteSettings: Record<string, number>;
  RouteSettings: Record<string, Record<string, number>>;
};
const reservationOf = (name: 'calls' | 'calls-media' | 'chats' | 'public') => {
  const fn = stack.functions.byName[name];
  return template.toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as CfnResource)].Properties.ReservedConcurrentExecutions as number;
};

describe('worker and media traffic', () => {
  it('runs in its own function, calls-media, which serves exactly the media server\'s and the worker\'s routes', () => {
    const mine = servedRoutes().filter((route) => route.domain === 'calls-media').map((route) => route.key);
    expect(mine.sort()).toEqual([...WORKER_ROUTES, ...MEDIA_ROUTES].sort());
    const integration = stack.getLogicalId(stack.integrations['calls-media'].node.defaultChild as CfnResource);
    const targets = stack.routeStacks.flatMap((routeStack) => {
      const nested = Template.fromStack(routeStack).findResources('AWS::ApiGatewayV2::Route');
      const parameters = template.toJSON().Resources[stack.getLogicalId(routeStack.nestedStackResource as CfnResource)].Properties.Parameters as Record<string, { Ref: string }>;
      return Object.values(nested).map((route) => {
        const ref = (route.Properties.Target as { 'Fn::Join': [string, [string, { Ref: string }]] })['Fn::Join'][1][1].Ref;
        return [route.Properties.RouteKey as string, parameters[ref]!.Ref] as const;
      });
    });
    for (const key of mine) expect(targets.filter(([routeKey]) => routeKey === key), key).toEqual([[key, integration]]);
    expect(template.toJSON().Resources[integration].Properties.IntegrationUri).toEqual({
      Ref: stack.getLogicalId(stack.functions.byName['calls-media'].live.node.defaultChild as CfnResource),
    });
    expect(functionNamed('calls-media')).toMatchObject({ domain: 'calls', trigger: { kind: 'routes', routeGroup: 'calls-media' } });
  });

  it('limits each of its routes for the target\'s calls in progress (requests per call per second × calls)', () => {
    const { concurrentCalls } = SCALE_TARGET;
    expect(concurrentCalls).toBe(10_000);
    const reports = PER_CALL_REQUESTS_PER_SECOND.workerReports * concurrentCalls;
    const retrievals = PER_CALL_REQUESTS_PER_SECOND.workerRetrievals * concurrentCalls;
    const webhooks = PER_CALL_REQUESTS_PER_SECOND.mediaWebhooks * concurrentCalls;
    expect(DEFAULT_ROUTE_THROTTLES.worker.rateLimit).toBe(Math.max(reports, retrievals));
    expect(DEFAULT_ROUTE_THROTTLES.media.rateLimit).toBe(webhooks);
    for (const key of WORKER_ROUTES) expect(stage.RouteSettings[key], key).toEqual({ ThrottlingRateLimit: 5000, ThrottlingBurstLimit: 5000 });
    for (const key of MEDIA_ROUTES) expect(stage.RouteSettings[key], key).toEqual({ ThrottlingRateLimit: 2000, ThrottlingBurstLimit: 2000 });
    // The old single route at 500 a second held about 1,500 calls at 0.33 reports a call a second.
    expect(stage.RouteSettings['POST /internal/calls/{call_id}/events']!.ThrottlingRateLimit! / PER_CALL_REQUESTS_PER_SECOND.workerReports).toBeGreaterThanOrEqual(concurrentCalls);
  });

  it('reserves the executions those rates hold at their planned durations, apart from the API\'s', () => {
    const held = 5000 * 0.1 + 2000 * 0.2 + 2000 * 0.1;
    expect(reservationOf('calls-media')).toBe(held);
    expect(reservationOf('calls')).toBeGreaterThanOrEqual(2 * Math.ceil(SCALE_TARGET.keyRequestsPerSecond * 0.1));
  });
});

describe('shared route limits', () => {
  it('leaves create-phone-call (and its alias) to the per-workspace limits and the stage default, well above one key', () => {
    for (const key of ['POST /v2/create-phone-call', 'POST /create-phone-call']) expect(stage.RouteSettings[key], key).toBeUndefined();
    expect(stage.DefaultRouteSettings).toEqual({ ThrottlingRateLimit: DEFAULT_API_THROTTLE.rateLimit, ThrottlingBurstLimit: DEFAULT_API_THROTTLE.burstLimit });
    expect(DEFAULT_API_THROTTLE.rateLimit).toBeGreaterThanOrEqual(3 * SCALE_TARGET.keyRequestsPerSecond);
  });
});

describe('conversation traffic', () => {
  // Chat turns and SMS: conversation traffic at scale, apart from the slow and rare vendor routes.
  const CONVERSATION_ROUTES = [
    'POST /create-chat',
    'POST /create-chat-completion',
    'POST /create-sms-chat',
    'POST /send-sms',
    'POST /public/chat/start',
    'POST /public/chat/{chat_id}/message',
  ];
  const SLOW_AND_RARE = ['POST /clone-voice', 'POST /billing/checkout', 'POST /generate-agent', 'POST /create-phone-number', 'POST /sms-chats/{chat_id}/simulate-inbound'];

  it('limits each chat and SMS route at the target\'s chat turns, and keeps the slow and rare vendor routes low', () => {
    const classed = servedRoutes().filter((route) => route.route.throttle === 'conversation').map((route) => route.key);
    expect(classed.sort()).toEqual([...CONVERSATION_ROUTES].sort());
    expect(SCALE_TARGET.chatTurnsPerSecond).toBe(500);
    for (const key of CONVERSATION_ROUTES) expect(stage.RouteSettings[key], key).toEqual({ ThrottlingRateLimit: 500, ThrottlingBurstLimit: 500 });
    for (const key of SLOW_AND_RARE) expect(stage.RouteSettings[key], key).toEqual({ ThrottlingRateLimit: 5, ThrottlingBurstLimit: 10 });
    expect(DEFAULT_ROUTE_THROTTLES.conversation.rateLimit).toBeGreaterThanOrEqual(100 * DEFAULT_ROUTE_THROTTLES.vendor.rateLimit);
  });

  it('reserves the executions the chat turns hold while they wait on the model: rate × duration', () => {
    expect(CHAT_TURN_SECONDS).toBe(3);
    const publicTurns = SCALE_TARGET.publicChatTurnsPerSecond;
    expect(reservationOf('chats')).toBe((SCALE_TARGET.chatTurnsPerSecond - publicTurns) * CHAT_TURN_SECONDS);
    expect(reservationOf('chats')).toBe(1350);
    // The public function's short requests (preflights, share links, the widget's script) keep their 5.
    expect(reservationOf('public')).toBe(publicTurns * CHAT_TURN_SECONDS + 5);
    // The chat turns are within the keyed API traffic the account's throttle is checked against.
    expect(SCALE_TARGET.chatTurnsPerSecond).toBeLessThanOrEqual(SCALE_TARGET.apiRequestsPerSecond / 10);
  });
});

describe('account quotas', () => {
  it('warns, naming each quota to request, when the context does not state it and the stack needs more than AWS\'s default', () => {
    const warnings = warningsOf(stack);
    expect(warnings.find((text) => text.includes('accountConcurrency'))).toMatch(
      /reserve \d+ concurrent executions .* needs \d+, more than AWS's default of 1000 .*"Concurrent executions" \(L-B99A9384\)/,
    );
    expect(warnings.find((text) => text.includes('apiThrottleQuota'))).toMatch(
      new RegExp(`needs ${TARGET_API_REQUESTS_PER_SECOND}, more than AWS's default of 10000 .*"Throttle rate" \\(L-8A5B8E43`),
    );
  });

  it('fails the synth, naming the quota to request, when the context says the account has less than the stack needs', async () => {
    expect(() => build({ accountConcurrency: '1000', apiThrottleQuota: '20000' })).toThrow(
      /reserve \d+ concurrent executions and AWS keeps 100 unreserved, so the account needs \d+, more than accountConcurrency \(1000\) says the account has\. Ask for at least \d+ in Service Quotas \(AWS Lambda "Concurrent executions"/,
    );
    await breathe();
    // A quota is a fact of the stage's account, so the stage's own value counts first.
    expect(() => build({ accountConcurrency: '5000', apiThrottleQuota: '20000', stages: { dev: { accountConcurrency: 1000 } } })).toThrow(
      'more than accountConcurrency (1000) says the account has',
    );
    await breathe();
    expect(() => build({ accountConcurrency: '5000', apiThrottleQuota: '10000' })).toThrow(
      `needs ${TARGET_API_REQUESTS_PER_SECOND}, more than apiThrottleQuota (10000) says the account has. Ask for at least ${TARGET_API_REQUESTS_PER_SECOND} in Service Quotas (Amazon API Gateway "Throttle rate"`,
    );
  });

  it('passes without warnings when the context states quotas that hold the stack', async () => {
    const enough = build({ accountConcurrency: '5000', apiThrottleQuota: '20000' });
    expect(warningsOf(enough).filter((text) => /accountConcurrency|apiThrottleQuota/.test(text))).toEqual([]);
  });
});
