import { randomBytes } from 'node:crypto';
import { CreateTableCommand, DescribeTableCommand, DescribeTimeToLiveCommand, DynamoDBClient, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureTable } from '../../shared/platform/store/create-table.ts';

const client = new DynamoDBClient({
  endpoint: process.env.DYNAMODB_ENDPOINT,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});
afterAll(() => client.destroy());

/**
 * The client as the SDK behaves when a try times out after DynamoDB applied it: the command
 * reaches DynamoDB twice, and the caller gets the second answer.
 */
const retryingAfterApplied = {
  async send(command: unknown) {
    if (command instanceof CreateTableCommand || command instanceof UpdateTimeToLiveCommand) await client.send(command as never);
    return client.send(command as never);
  },
} as unknown as DynamoDBClient;

describe('ensureTable', () => {
  it('ends with the table and its time to live when a retried try finds them already made', async () => {
    const name = `create-${randomBytes(4).toString('hex')}`;
    await ensureTable(retryingAfterApplied, name);
    const table = await client.send(new DescribeTableCommand({ TableName: name }));
    expect(table.Table?.GlobalSecondaryIndexes?.length).toBeGreaterThan(0);
    const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: name }));
    expect(ttl.TimeToLiveDescription?.TimeToLiveStatus).toBe('ENABLED');
    // And again on the table as it is: nothing to do.
    await ensureTable(client, name);
  });
});
