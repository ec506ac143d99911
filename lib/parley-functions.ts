import { Duration, type Stack } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as codedeploy from 'aws-cdk-lib/aws-codedeploy';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import { NagSuppressions } from 'cdk-nag';
import { fileURLToPath } from 'node:url';
import type { JobSpec } from '../shared/jobs.ts';
import { contextValue } from './deploy-settings.ts';
import { DEFAULT_RESERVED_CONCURRENCY, FUNCTIONS, type FunctionName, type FunctionSpec } from './functions.ts';
import { pascal } from './monitoring.ts';
import { ParleyFunction, type ParleyResources } from './parley-function.ts';
import { checkAccountQuota, LAMBDA_CONCURRENCY_QUOTA } from './scale.ts';
import type { DeploymentStrategy } from './stage.ts';

const FUNCTIONS_DIR = fileURLToPath(new URL('../functions/', import.meta.url));

/** What a default AWS account may run at once, and what AWS keeps unreserved of it. */
export const DEFAULT_ACCOUNT_CONCURRENCY = LAMBDA_CONCURRENCY_QUOTA.awsDefault;
export const UNRESERVED_CONCURRENCY_MINIMUM = 100;

/** CodeDeploy's traffic shifting for each strategy (lib/stage.ts). */
const DEPLOYMENT_CONFIGS: Record<DeploymentStrategy, codedeploy.ILambdaDeploymentConfig> = {
  canary: codedeploy.LambdaDeploymentConfig.CANARY_10PERCENT_5MINUTES,
  linear: codedeploy.LambdaDeploymentConfig.LINEAR_10PERCENT_EVERY_1MINUTE,
  allAtOnce: codedeploy.LambdaDeploymentConfig.ALL_AT_ONCE,
};

export interface ParleyFunctionsProps {
  stage: string;
  resources: ParleyResources;
  /** The jobs' runtime facts (shared/jobs.ts): their descriptions and timeouts. */
  jobs: readonly JobSpec[];
  /** Overrides of the manifest's reservations, or false for none (else context `reservedConcurrency`). */
  reservedConcurrency?: Partial<Record<FunctionName, number>> | false;
}

/**
 * The Lambda functions, each built from its manifest entry (lib/functions.ts) as a
 * ParleyFunction (`<Name>Function`), and their CodeDeploy deployment groups. Its resources
 * are the stack's children (see lib/parley-data.ts for why).
 */
export class ParleyFunctions {
  readonly byName = {} as Record<FunctionName, ParleyFunction>;
  /** Each function's reserved concurrency; undefined when nothing is reserved. */
  readonly reserved: Record<FunctionName, number> | undefined;
  readonly deploymentGroups = {} as Record<FunctionName, codedeploy.LambdaDeploymentGroup>;

  constructor(
    private readonly stack: Stack,
    private readonly props: ParleyFunctionsProps,
  ) {
    this.reserved = this.reservedConcurrency(props.reservedConcurrency);
  }

  /** Builds one manifest entry's function with the environment and network the stack gives it. */
  add(spec: FunctionSpec, environment: Record<string, string>, network?: { vpc: ec2.IVpc; securityGroup: ec2.ISecurityGroup }): ParleyFunction {
    const job = spec.trigger.kind === 'queue' || spec.trigger.kind === 'schedule' ? this.jobSpec(spec.name) : undefined;
    const timeoutSeconds = job ? job.timeoutSeconds : spec.timeoutSeconds;
    if (timeoutSeconds === undefined) throw new Error(`${spec.name} has no timeoutSeconds in lib/functions.ts`);
    const description = spec.description ?? job?.description ?? (spec.trigger.kind === 'routes' ? `Parley ${spec.trigger.routeGroup} routes` : undefined);
    const fn = new ParleyFunction(this.stack, `${pascal(spec.name)}Function`, {
      entry: `${FUNCTIONS_DIR}${spec.name}.ts`,
      description,
      timeout: Duration.seconds(timeoutSeconds),
      memorySize: spec.memoryMb,
      // Named by stage, so two stages in one account never collide and operators find them.
      logGroupName: `/parley/${this.props.stage}/${spec.name}`,
      resources: this.props.resources,
      access: spec.access,
      files: spec.files,
      directories: spec.directories,
      workers: spec.workers,
      environment,
      reservedConcurrency: this.reserved?.[spec.name],
      network,
    });
    this.byName[spec.name] = fn;
    return fn;
  }

  /** The functions in manifest order, named. */
  entries(): [FunctionName, ParleyFunction][] {
    return FUNCTIONS.map((spec) => [spec.name, this.byName[spec.name]]);
  }

  /**
   * Every function deploys through CodeDeploy: a change publishes a version, and the `live`
   * alias moves to it by the stage's strategy (canary in prod, all at once in dev), rolling
   * back when the function's error alarm fires meanwhile. One application and one service
   * role for all groups; the role gets an inline policy on these functions only, rather than
   * AWSCodeDeployRoleForLambdaLimited's `*` (the group is handed an immutable reference, so
   * CDK cannot attach the managed policy).
   */
  safeDeploys(strategy: DeploymentStrategy, errorAlarms: ReadonlyMap<string, cloudwatch.IAlarm>): void {
    const { stack } = this;
    const application = new codedeploy.LambdaApplication(stack, 'DeployApplication');
    const role = new iam.Role(stack, 'DeployRole', {
      assumedBy: new iam.ServicePrincipal('codedeploy.amazonaws.com'),
      description: 'CodeDeploy shifting Parley functions\' live aliases',
    });
    const functions = this.entries();
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['lambda:GetAlias', 'lambda:UpdateAlias', 'lambda:GetProvisionedConcurrencyConfig'],
        resources: functions.map(([, fn]) => `${fn.functionArn}:${fn.live.aliasName}`),
      }),
    );
    role.addToPolicy(new iam.PolicyStatement({ actions: ['cloudwatch:DescribeAlarms'], resources: ['*'] }));
    NagSuppressions.addResourceSuppressions(
      role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason: 'cloudwatch:DescribeAlarms takes no resource: CodeDeploy reads the rollback alarms\' states during a deployment.',
          appliesTo: ['Resource::*'],
        },
      ],
      true,
    );
    const deployRole = iam.Role.fromRoleArn(stack, 'DeployRoleReference', role.roleArn, { mutable: false });
    const config = DEPLOYMENT_CONFIGS[strategy];
    for (const [name, fn] of functions) {
      this.deploymentGroups[name] = new codedeploy.LambdaDeploymentGroup(stack, `${pascal(name)}Deployment`, {
        application,
        alias: fn.live,
        deploymentConfig: config,
        role: deployRole,
        alarms: [errorAlarms.get(name)!],
        autoRollback: { failedDeployment: true, stoppedDeployment: true, deploymentInAlarm: true },
      });
      this.deploymentGroups[name].node.addDependency(role);
    }
  }

  private jobSpec(name: FunctionName): JobSpec {
    const job = this.props.jobs.find((candidate) => candidate.name === name);
    if (!job) throw new Error(`${name} is a job in lib/functions.ts but not in shared/jobs.ts`);
    return job;
  }

  /** Reservations by function (props, else context `reservedConcurrency`, over the manifest's), checked against the account's quota (lib/scale.ts). */
  private reservedConcurrency(given: ParleyFunctionsProps['reservedConcurrency']): Record<FunctionName, number> | undefined {
    const overrides = given ?? contextValue(this.stack, 'reservedConcurrency') ?? {};
    if (overrides === false) return undefined;
    if (typeof overrides !== 'object' || Array.isArray(overrides)) {
      throw new Error('reservedConcurrency must be false or an object of function name → executions, e.g. {"agents":200}');
    }
    const reserved = { ...DEFAULT_RESERVED_CONCURRENCY };
    for (const [name, value] of Object.entries(overrides as Record<string, unknown>)) {
      if (!(name in reserved)) {
        throw new Error(`reservedConcurrency names ${name}, which is not a Parley function (${Object.keys(reserved).join(', ')})`);
      }
      if (!Number.isInteger(value) || (value as number) < 1) {
        throw new Error(`reservedConcurrency.${name} must be a whole number of executions, at least 1`);
      }
      reserved[name as FunctionName] = value as number;
    }
    const total = Object.values(reserved).reduce((sum, value) => sum + value, 0);
    checkAccountQuota(
      this.stack,
      this.props.stage,
      LAMBDA_CONCURRENCY_QUOTA,
      total + UNRESERVED_CONCURRENCY_MINIMUM,
      `Parley's functions reserve ${total} concurrent executions and AWS keeps ${UNRESERVED_CONCURRENCY_MINIMUM} unreserved, so the account`,
      'or lower -c reservedConcurrency, or pass -c reservedConcurrency=false',
    );
    return reserved;
  }
}
