import '../../local/quiet-aws-sdk.ts';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { ensureTable } from '../../shared/platform/store/create-table.ts';

/**
 * Runs before each test file, before it imports anything that reads settings: points the
 * file at the shared DynamoDB Local with a table of its own and a fresh data folder, and
 * its temporary files (and those of the processes it starts) into the run's folder, which
 * the global teardown removes.
 */
process.env.TMPDIR = inject('runTmp');
process.env.PARLEY_ENV = 'test';
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.DYNAMODB_ENDPOINT = inject('dynamoEndpoint');
process.env.TABLE_NAME = `test-${randomBytes(6).toString('hex')}`;
process.env.DATA_DIR = mkdtempSync(join(tmpdir(), 'parley-test-'));
process.env.AWS_REGION = 'us-east-1';
// aws-cdk-lib checks every synthesized template with its built-in CloudFormation validator (a
// WebAssembly rule engine): about 20 s of one blocking synth on CI's 2 CPUs, enough to hold a
// test fork past vitest's fixed 60 s report timeout. The CDK tests assert the templates
// themselves; CI's `npm run synth` of the real app keeps the validator on.
process.env.CDK_VALIDATION = 'false';
// The production bound (3 s a try) is for DynamoDB in-region; the one DynamoDB Local shared by
// the run's test files, on CI's 2 CPUs, has taken longer than that to answer a busy moment.
// Tests of the bound itself set their own.
process.env.AWS_REQUEST_TIMEOUT_MS ??= '10000';
// Likewise connecting: DynamoDB Local accepting a connection has taken past the production
// second when the run's forks all wait on it at once.
process.env.AWS_CONNECTION_TIMEOUT_MS ??= '5000';
// And a request's deadline: writing a 10,000-task batch (20,000 items) to the shared DynamoDB
// Local has taken past API Gateway's 29 s on CI's 2 busy CPUs; DynamoDB takes a few seconds.
process.env.LOCAL_REQUEST_TIMEOUT_MS ??= '60000';

const client = new DynamoDBClient({
  endpoint: process.env.DYNAMODB_ENDPOINT,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});
await ensureTable(client, process.env.TABLE_NAME);
client.destroy();
