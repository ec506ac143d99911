import { createHash } from 'node:crypto';
import { NestedStack, type NestedStackProps } from 'aws-cdk-lib';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';

/**
 * How many nested stacks hold the API's routes. A route's stack is chosen by a hash of its
 * route key, never by its position in the table: CloudFormation deletes a removed resource
 * only after every stack has been updated, so a route that moved to another stack would be
 * created there while its old copy still holds the key, and API Gateway rejects the
 * duplicate. For the same reason each route's logical ID comes from its key.
 *
 * At ~370 routes this is ~95 routes per stack, far from the 500-resource limit. Changing
 * the count moves most routes, so it needs two deploys (drop the routes, then re-add them).
 */
export const ROUTE_STACK_COUNT = 4;

export function routeStackIndex(routeKey: string): number {
  return createHash('sha256').update(routeKey).digest().readUInt32BE(0) % ROUTE_STACK_COUNT;
}

export interface RouteTarget {
  routeKey: string;
  integrationId: string;
}

export interface RouteStackProps extends NestedStackProps {
  apiId: string;
  routes: readonly RouteTarget[];
}

export class RouteStack extends NestedStack {
  constructor(scope: Construct, id: string, props: RouteStackProps) {
    super(scope, id, props);
    for (const route of props.routes) {
      new apigwv2.CfnRoute(this, route.routeKey.replaceAll('/', '_'), {
        apiId: props.apiId,
        routeKey: route.routeKey,
        target: `integrations/${route.integrationId}`,
        authorizationType: 'NONE',
      });
    }
    // Stack-wide rather than on each route: these stacks hold nothing but routes, and a
    // suppression per route would repeat the same metadata hundreds of times.
    NagSuppressions.addStackSuppressions(this, [
      {
        id: 'AwsSolutions-APIG4',
        reason:
          'Routes authenticate in the function with Parley API keys: key lookup, rate limiting and last-use are one DynamoDB UpdateItem, which an API Gateway authorizer would turn into a second round trip.',
      },
    ]);
  }
}
