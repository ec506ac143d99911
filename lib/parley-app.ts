import { Aspects, type App, type Environment } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { ParleyStack, type ParleyStackProps } from './parley-stack.ts';
import { PRODUCTION_STAGE, stageContext } from './stage.ts';

/** The stack's id and CloudFormation name for a stage: `Parley-dev`, `Parley-prod`. */
export const stackIdOf = (stage: string): string => `Parley-${stage}`;

/**
 * The account and region a stage deploys to: `stages.<stage>.account`/`region` context, else
 * `account`/`region` context, else the CLI's current credentials (CDK_DEFAULT_*). Production
 * must name both (context or credentials): an environment-agnostic prod stack would deploy
 * wherever the operator's shell happens to point.
 */
export function stageEnvironment(app: App, stage: string, defaults: Environment = {}): Environment {
  const account = (stageContext(app, stage, 'account') as string | undefined) ?? defaults.account;
  const region = (stageContext(app, stage, 'region') as string | undefined) ?? defaults.region;
  if (account !== undefined && !/^\d{12}$/.test(String(account))) throw new Error(`Stage ${stage}: account must be 12 digits, not ${JSON.stringify(account)}`);
  if (region !== undefined && !/^[a-z]{2}(-[a-z]+)+-\d$/.test(String(region))) throw new Error(`Stage ${stage}: region must be an AWS region such as us-east-1, not ${JSON.stringify(region)}`);
  if (stage === PRODUCTION_STAGE && (!account || !region)) {
    throw new Error(
      `Stage ${stage} needs an explicit account and region: pass -c account=<12 digits> -c region=<region> (or set stages.${stage}.account/region in cdk.json), or deploy with credentials that name them (CDK_DEFAULT_ACCOUNT/REGION).`,
    );
  }
  return { account: account === undefined ? undefined : String(account), region: region === undefined ? undefined : String(region) };
}

/** One stage's stack, named and placed for that stage. */
export function addStage(app: App, stage: string, props: Omit<ParleyStackProps, 'stage' | 'env'> = {}, defaults: Environment = {}): ParleyStack {
  return new ParleyStack(app, stackIdOf(stage), {
    description: `Parley (${stage}): Retell-compatible voice and chat agent API`,
    ...props,
    stage,
    env: stageEnvironment(app, stage, defaults),
  });
}

/**
 * cdk-nag on every synth: AWS Solutions (security and operations) and the Serverless pack
 * (Lambda, API Gateway, SQS, EventBridge practice). Each suppression carries its reason
 * beside the resource it applies to.
 */
export function addNagPacks(app: App): void {
  Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));
  Aspects.of(app).add(new ServerlessChecks({ verbose: true }));
}
