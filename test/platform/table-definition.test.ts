import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { db, dynamo, tableName } from '../../shared/platform/store/db.ts';
import { GSI1_LISTING_ATTRIBUTES, MAX_PROJECTED_ATTRIBUTES, tableDefinition } from '../../shared/platform/store/keys.ts';

describe('the listing index', () => {
  it('projects the listing attributes only, within DynamoDB’s limit', () => {
    // DynamoDB counts an attribute projected into two indexes twice, so the limit is on the sum.
    const projected = tableDefinition.globalSecondaryIndexes.flatMap((index) => index.projection.nonKeyAttributes);
    for (const index of tableDefinition.globalSecondaryIndexes) {
      expect(new Set(index.projection.nonKeyAttributes).size, index.indexName).toBe(index.projection.nonKeyAttributes.length);
    }
    expect(projected.length).toBeLessThanOrEqual(MAX_PROJECTED_ATTRIBUTES);
    expect(GSI1_LISTING_ATTRIBUTES).toEqual(
      expect.arrayContaining(['workspace_id', 'type', 'agent_id', 'call_status', 'start_timestamp', 'batch_call_id']),
    );
    // Keys are always projected; naming one would be refused by DynamoDB.
    const keyNames: string[] = [tableDefinition.partitionKey, tableDefinition.sortKey];
    for (const index of tableDefinition.globalSecondaryIndexes) keyNames.push(index.partitionKey, index.sortKey);
    expect(projected.filter((name) => keyNames.includes(name))).toEqual([]);
  });

  it('is created the same way in DynamoDB Local (INCLUDE, never ALL)', async () => {
    const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: tableName }));
    const gsi1 = Table!.GlobalSecondaryIndexes!.find((index) => index.IndexName === 'gsi1')!;
    expect(gsi1.Projection).toEqual({ ProjectionType: 'INCLUDE', NonKeyAttributes: [...GSI1_LISTING_ATTRIBUTES] });
  });

  it('leaves the rest of a large item out of the index, to be read by key', async () => {
    const item = {
      pk: 'WS#ws_index#CALL',
      sk: 'call_1',
      gsi1pk: 'WS#ws_index#CALL',
      gsi1sk: '000000000001#call_1',
      workspace_id: 'ws_index',
      type: 'call',
      call_status: 'ended',
      transcript: 'x'.repeat(10_000),
    };
    await db.send(new PutCommand({ TableName: tableName, Item: item }));
    const { Items } = await db.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk',
        ExpressionAttributeValues: { ':pk': item.gsi1pk },
      }),
    );
    const { transcript: _transcript, ...listed } = item;
    expect(Items).toEqual([listed]);
  });
});
