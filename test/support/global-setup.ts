import '../../local/quiet-aws-sdk.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../local/dynamodb.ts';

/**
 * One in-memory DynamoDB Local for the whole run; every test file creates its own table in
 * it. Every temporary file of the run (data folders, cdk.out*, anything a test or a process
 * it starts puts in the temp folder) goes under one folder, removed when the run ends:
 * test/support/setup.ts points each test file's TMPDIR there.
 */
export default async function setup(project: TestProject) {
  const runTmp = mkdtempSync(join(tmpdir(), 'parley-test-run-'));
  project.provide('runTmp', runTmp);
  try {
    // C1 only (no C2 JIT): the suite keeps both of CI's 2 cores busy, and DynamoDB Local's C2
    // compilations cost more CPU than its C2 code saves over a run. Measured over 100 tests at
    // once, the whole run's CPU: 204 s against 246 s with the default tiers.
    const dynamo = await startDynamoDbLocal({ jvmOptions: ['-XX:TieredStopAtLevel=1'] });
    project.provide('dynamoEndpoint', dynamo.endpoint);
    return async () => {
      await dynamo.stop();
      rmSync(runTmp, { recursive: true, force: true });
    };
  } catch (error) {
    rmSync(runTmp, { recursive: true, force: true });
    throw error;
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
    runTmp: string;
  }
}
