import { readFileSync } from 'node:fs';
import { App, Aspects, type CfnResource } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { EGRESS_FUNCTIONS, type FunctionName } from '../../lib/functions.ts';
import { ParleyStack } from '../../lib/parley-stack.ts';
import type { ParleyFunction } from '../../lib/parley-function.ts';

/** Opt-in fixed egress (lib/fixed-egress.ts): the resources appear only with context fixedEgress. */

const SETTINGS = { sipHost: 'sip.parley.ai', sipIpRanges: ['34.1.2.0/24'] };
const PROJECT_CONTEXT = (JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context: Record<string, unknown> }).context;

function synth(context: Record<string, unknown>, nag = false) {
  const app = new App({ context: { ...PROJECT_CONTEXT, 'aws:cdk:bundling-stacks': [], ...context } });
  const stack = new ParleyStack(app, 'Parley', { settings: SETTINGS });
  if (nag) Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));
  return { stack, template: Template.fromStack(stack) };
}

type Synth = ReturnType<typeof synth>;

const functions = ({ stack }: Synth): [FunctionName, ParleyFunction][] => [
  ...(Object.entries(stack.domainFunctions) as [FunctionName, ParleyFunction][]),
  ...(Object.entries(stack.backgroundFunctions) as [FunctionName, ParleyFunction][]),
  ['live-ws', stack.liveMonitorFunction],
];

const functionProperties = (synthed: Synth, fn: ParleyFunction) =>
  synthed.template.findResources('AWS::Lambda::Function')[synthed.stack.getLogicalId(fn.node.defaultChild as CfnResource)]!.Properties;

describe('fixed egress', () => {
  it('is off by default: no VPC, no NAT, no address, every function on Lambda\'s own network', () => {
    const off = synth({});
    for (const type of ['AWS::EC2::VPC', 'AWS::EC2::NatGateway', 'AWS::EC2::EIP', 'AWS::EC2::VPCEndpoint', 'AWS::EC2::SecurityGroup']) {
      off.template.resourceCountIs(type, 0);
    }
    for (const [name, fn] of functions(off)) {
      const properties = functionProperties(off, fn);
      expect(properties.VpcConfig, name).toBeUndefined();
      expect(properties.Environment.Variables.EGRESS_IP_ADDRESSES, name).toBeUndefined();
    }
    expect(Object.keys(off.template.findOutputs('EgressAddresses'))).toEqual([]);
  });

  const on = synth({ fixedEgress: 'true' }, true);

  it('creates a VPC with two NAT gateways holding two retained Elastic IPs, and gateway endpoints for DynamoDB and S3', () => {
    on.template.resourceCountIs('AWS::EC2::VPC', 1);
    on.template.resourceCountIs('AWS::EC2::NatGateway', 2);
    const addresses = on.template.findResources('AWS::EC2::EIP');
    expect(Object.keys(addresses)).toHaveLength(2);
    for (const address of Object.values(addresses)) expect(address).toMatchObject({ DeletionPolicy: 'Retain', Properties: { Domain: 'vpc' } });
    // Each NAT gateway holds one of the stack's own addresses (not one CDK would allocate and release).
    const allocations = Object.values(on.template.findResources('AWS::EC2::NatGateway')).map((nat) => nat.Properties.AllocationId);
    expect(allocations.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual(
      Object.keys(addresses)
        .sort()
        .map((id) => ({ 'Fn::GetAtt': [id, 'AllocationId'] })),
    );
    const endpoints = Object.values(on.template.findResources('AWS::EC2::VPCEndpoint')).map((endpoint) => endpoint.Properties);
    expect(endpoints).toHaveLength(2);
    expect(endpoints.every((endpoint) => endpoint.VpcEndpointType === 'Gateway')).toBe(true);
    expect(JSON.stringify(endpoints.map((endpoint) => endpoint.ServiceName))).toMatch(/dynamodb.*s3|s3.*dynamodb/);
    on.template.hasResourceProperties('AWS::EC2::FlowLog', { TrafficType: 'REJECT' });
  });

  it('puts exactly the functions that call out in the private subnets, with the outbound-only security group', () => {
    const inVpc = functions(on)
      .filter(([, fn]) => functionProperties(on, fn).VpcConfig !== undefined)
      .map(([name]) => name)
      .sort();
    expect(inVpc).toEqual([...EGRESS_FUNCTIONS].sort());
    const groups = on.template.findResources('AWS::EC2::SecurityGroup');
    expect(Object.keys(groups)).toHaveLength(1);
    const [groupId] = Object.keys(groups);
    expect(groups[groupId!]!.Properties.SecurityGroupIngress).toBeUndefined();
    const privateSubnets = Object.entries(on.template.findResources('AWS::EC2::Subnet'))
      .filter(([, subnet]) => JSON.stringify(subnet.Properties.Tags).includes('Private'))
      .map(([id]) => ({ Ref: id }));
    expect(privateSubnets).toHaveLength(2);
    for (const name of EGRESS_FUNCTIONS) {
      const fn = functions(on).find(([each]) => each === name)![1];
      expect(functionProperties(on, fn).VpcConfig, name).toEqual({
        SubnetIds: expect.arrayContaining(privateSubnets),
        SecurityGroupIds: [{ 'Fn::GetAtt': [groupId, 'GroupId'] }],
      });
    }
  });

  it('gives every function the addresses as EGRESS_IP_ADDRESSES (GET /workspace/egress) and outputs them', () => {
    const addressIds = Object.keys(on.template.findResources('AWS::EC2::EIP')).sort();
    const expected = { 'Fn::Join': [',', addressIds.map((id) => ({ 'Fn::GetAtt': [id, 'PublicIp'] }))] };
    for (const [name, fn] of functions(on)) {
      if (name === 'live-ws') continue;
      const value = functionProperties(on, fn).Environment.Variables.EGRESS_IP_ADDRESSES;
      expect({ 'Fn::Join': [value['Fn::Join'][0], [...value['Fn::Join'][1]].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))] }, name).toEqual(expected);
    }
    on.template.hasOutput('EgressAddresses', { Value: Match.objectLike({ 'Fn::Join': [',', Match.anyValue()] }) });
  });

  it('reports no unsuppressed cdk-nag errors with the VPC', () => {
    const errors = Annotations.fromStack(on.stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*'));
    expect(errors.map((error) => `${error.id}: ${String(error.entry.data)}`)).toEqual([]);
  });

  it('takes one NAT gateway when told, and refuses more than one per zone', () => {
    const one = synth({ fixedEgress: true, fixedEgressNatGateways: '1' });
    one.template.resourceCountIs('AWS::EC2::NatGateway', 1);
    one.template.resourceCountIs('AWS::EC2::EIP', 1);
    expect(() => synth({ fixedEgress: true, fixedEgressNatGateways: 3 })).toThrow('fixedEgressNatGateways must be 1 or 2');
  });
});
