import { App, Aspects } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { ParleyStack } from '../lib/parley-stack.ts';

const app = new App();

// Without an account (offline synth) the stack is environment-agnostic. Deploy settings
// (sipHost, sipIpRanges, publicBaseUrl, throttles, reserved concurrency, routesPerApiQuota)
// come from CDK context: see lib/deploy-settings.ts and README, Deploy with CDK.
new ParleyStack(app, 'Parley', {
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  description: 'Parley: Retell-compatible voice and chat agent API',
});

Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));
