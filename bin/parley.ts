import { App } from 'aws-cdk-lib';
import { addNagPacks, addStage } from '../lib/parley-app.ts';
import { stageFromContext } from '../lib/stage.ts';

const app = new App();

// One stage per run: `-c stage=<name>` (default dev) deploys the stack Parley-<stage>, in
// the stage's account and region (context, else the CLI's credentials); prod has
// termination protection and canary deployments. Deploy settings (sipHost, sipIpRanges,
// publicBaseUrl, domainName, throttles, reserved concurrency, routesPerApiQuota) come from
// CDK context: see lib/deploy-settings.ts, lib/stage.ts and docs/operations.md.
addStage(app, stageFromContext(app), {}, { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION });

addNagPacks(app);
