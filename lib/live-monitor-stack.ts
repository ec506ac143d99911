import { Aws, NestedStack, type NestedStackProps } from 'aws-cdk-lib';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';

/** Requests a second (and burst) the WebSocket API admits across all monitors. */
const LIVE_MONITOR_THROTTLE = { rateLimit: 20, burstLimit: 40 };

export interface LiveMonitorStackProps extends NestedStackProps {
  /** functions/live-ws.ts: the authorizer and the three routes. */
  handler: lambda.IFunction;
  /** The WebSocket API's name (scoped by stage). */
  apiName: string;
}

/**
 * The WebSocket monitor of calls (docs/calls.md, Live calls) as API Gateway's WebSocket API,
 * in its own nested stack (the HTTP API's stacks keep their resource counts): $connect
 * behind a REQUEST Lambda authorizer that runs the API's own key gate (identity sources:
 * the `Authorization` header and `?call_id=`), $disconnect and $default on the live-ws
 * function, one auto-deployed stage `live`, and one invoke permission for the whole API.
 * Functions that write calls are granted `execute-api:ManageConnections` to push.
 */
export class LiveMonitorStack extends NestedStack {
  readonly api: apigwv2.CfnApi;
  readonly stage: apigwv2.CfnStage;
  /** `wss://…/live`: where clients connect (GET /v2/calls/{call_id}/ws answers it with ?call_id=). */
  readonly url: string;
  /** `https://…/live`: the management API pushes post to. */
  readonly managementUrl: string;

  constructor(scope: Construct, id: string, props: LiveMonitorStackProps) {
    super(scope, id, props);
    this.api = new apigwv2.CfnApi(this, 'Api', {
      name: props.apiName,
      description: 'Parley: WebSocket monitors of calls',
      protocolType: 'WEBSOCKET',
      routeSelectionExpression: '$request.body.action',
    });
    const apiId = this.api.ref;
    const invokeArn = `arn:${Aws.PARTITION}:apigateway:${Aws.REGION}:lambda:path/2015-03-31/functions/${props.handler.functionArn}/invocations`;
    const integration = new apigwv2.CfnIntegration(this, 'Integration', { apiId, integrationType: 'AWS_PROXY', integrationUri: invokeArn });
    const authorizer = new apigwv2.CfnAuthorizer(this, 'Authorizer', {
      apiId,
      name: 'parley-key-gate',
      authorizerType: 'REQUEST',
      authorizerUri: invokeArn,
      identitySource: ['route.request.header.Authorization', 'route.request.querystring.call_id'],
    });
    const target = `integrations/${integration.ref}`;
    const connect = new apigwv2.CfnRoute(this, 'ConnectRoute', { apiId, routeKey: '$connect', target, authorizationType: 'CUSTOM', authorizerId: authorizer.ref });
    const others = ['$disconnect', '$default'].map(
      (routeKey) => new apigwv2.CfnRoute(this, routeKey === '$default' ? 'DefaultRoute' : 'DisconnectRoute', { apiId, routeKey, target, authorizationType: 'NONE' }),
    );
    for (const route of others) {
      NagSuppressions.addResourceSuppressions(route, [
        { id: 'AwsSolutions-APIG4', reason: 'API Gateway runs a WebSocket API\'s authorizer on $connect only; $disconnect and $default belong to a connection it already authorized.' },
      ]);
    }
    // A monitor connects and asks to sync at human speed; the function's reservation (3) caps it anyway.
    this.stage = new apigwv2.CfnStage(this, 'Stage', {
      apiId,
      stageName: 'live',
      autoDeploy: true,
      defaultRouteSettings: { throttlingRateLimit: LIVE_MONITOR_THROTTLE.rateLimit, throttlingBurstLimit: LIVE_MONITOR_THROTTLE.burstLimit },
    });
    this.stage.addDependency(connect);
    NagSuppressions.addResourceSuppressions(this.stage, [
      { id: 'AwsSolutions-APIG1', reason: 'Each connection, refusal and sync is logged by the live-ws function (structured JSON with the workspace); stage access logs would repeat it.' },
      { id: 'Serverless-APIGWAccessLogging', reason: 'Each connection, refusal and sync is logged by the live-ws function (structured JSON with the workspace); stage access logs would repeat it.' },
    ]);
    new lambda.CfnPermission(this, 'InvokePermission', {
      action: 'lambda:InvokeFunction',
      functionName: props.handler.functionArn,
      principal: 'apigateway.amazonaws.com',
      sourceArn: `arn:${Aws.PARTITION}:execute-api:${Aws.REGION}:${Aws.ACCOUNT_ID}:${apiId}/*`,
    });
    this.url = `wss://${apiId}.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}/live`;
    this.managementUrl = `https://${apiId}.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}/live`;
  }

  grantManageConnections(grantee: iam.IGrantable): void {
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['execute-api:ManageConnections'],
      resourceArns: [`arn:${Aws.PARTITION}:execute-api:${Aws.REGION}:${Aws.ACCOUNT_ID}:${this.api.ref}/live/*/@connections/*`],
    });
  }
}
