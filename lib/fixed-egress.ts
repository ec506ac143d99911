import { Fn, RemovalPolicy, Tags } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as logs from 'aws-cdk-lib/aws-logs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';

/*
 * Opt-in fixed egress (context `fixedEgress: true`; docs/account-data.md, Egress): a VPC whose
 * private subnets leave the internet through NAT gateways holding Elastic IPs the stack owns,
 * so the functions that call customers' and vendors' servers (webhooks, custom functions and
 * MCP tools, workflows, custom LLMs, crawls, OAuth and CRM sync, language models) always come
 * from the same few addresses, which customers can allowlist. DynamoDB and S3 stay reachable
 * without the NAT through gateway endpoints (free, and no NAT data charge for table traffic);
 * SQS, KMS, Secrets Manager and the WebSocket API's management endpoint go through the NAT.
 *
 * The addresses are retained when the stack (or the setting) is removed, so an allowlist
 * never silently points at an address released back to AWS; an operator releases them.
 */

export interface FixedEgressProps {
  /** NAT gateways, each with its own Elastic IP, one per availability zone (1 or 2). */
  natGateways: number;
}

/** The most NAT gateways (and addresses) the setting takes: one per zone of an environment-agnostic stack. */
const MAX_EGRESS_NAT_GATEWAYS = 2;

export class FixedEgress extends Construct {
  readonly vpc: ec2.Vpc;
  readonly addresses: ec2.CfnEIP[];
  /** The functions' security group: outbound to anywhere, nothing inbound. */
  readonly securityGroup: ec2.SecurityGroup;

  constructor(scope: Construct, id: string, props: FixedEgressProps) {
    super(scope, id);
    const count = props.natGateways;
    if (!Number.isInteger(count) || count < 1 || count > MAX_EGRESS_NAT_GATEWAYS) {
      throw new Error(`fixedEgressNatGateways must be 1 or ${MAX_EGRESS_NAT_GATEWAYS} (one NAT gateway and address per availability zone), not ${count}`);
    }
    this.addresses = Array.from({ length: count }, (_, index) => {
      const address = new ec2.CfnEIP(this, `Address${index + 1}`, { domain: 'vpc' });
      address.applyRemovalPolicy(RemovalPolicy.RETAIN);
      Tags.of(address).add('Name', `parley-egress-${index + 1}`);
      return address;
    });
    const flowLogs = new logs.LogGroup(this, 'FlowLogs', { retention: logs.RetentionDays.ONE_MONTH });
    this.vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: MAX_EGRESS_NAT_GATEWAYS,
      natGateways: count,
      natGatewayProvider: ec2.NatProvider.gateway({ eipAllocationIds: this.addresses.map((address) => address.attrAllocationId) }),
      subnetConfiguration: [
        { name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
        { name: 'functions', subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 20 },
      ],
      gatewayEndpoints: {
        DynamoDb: { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB },
        S3: { service: ec2.GatewayVpcEndpointAwsService.S3 },
      },
      // Rejected traffic only: enough to see what the security group refused, at little cost.
      flowLogs: { Rejected: { trafficType: ec2.FlowLogTrafficType.REJECT, destination: ec2.FlowLogDestination.toCloudWatchLogs(flowLogs) } },
    });
    this.securityGroup = new ec2.SecurityGroup(this, 'FunctionSecurityGroup', {
      vpc: this.vpc,
      description: 'Parley functions with fixed egress: outbound only',
      allowAllOutbound: true,
    });
    NagSuppressions.addResourceSuppressions(this.securityGroup, [
      { id: 'CdkNagValidationFailure', reason: 'The group has no inbound rules; its outbound rule is what fixed egress is for.' },
    ]);
  }

  /** The addresses as the functions' EGRESS_IP_ADDRESSES setting: a comma-separated list, resolved at deploy. */
  addressList(): string {
    return Fn.join(',', this.addresses.map((address) => address.attrPublicIp));
  }
}
