import {
  CreateTableCommand,
  DescribeTableCommand,
  UpdateTimeToLiveCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { tableDefinition } from './keys.ts';

/** Creates the single table as CDK defines it (used by the local runtime and the tests). */
export async function ensureTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
    return;
  } catch (error) {
    if (!(error instanceof Error) || error.name !== 'ResourceNotFoundException') throw error;
  }
  const indexAttributes = tableDefinition.globalSecondaryIndexes.flatMap((index) => [
    index.partitionKey,
    index.sortKey,
  ]);
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [tableDefinition.partitionKey, tableDefinition.sortKey, ...indexAttributes].map(
          (name) => ({ AttributeName: name, AttributeType: 'S' }),
        ),
        KeySchema: [
          { AttributeName: tableDefinition.partitionKey, KeyType: 'HASH' },
          { AttributeName: tableDefinition.sortKey, KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: tableDefinition.globalSecondaryIndexes.map((index) => ({
          IndexName: index.indexName,
          KeySchema: [
            { AttributeName: index.partitionKey, KeyType: 'HASH' },
            { AttributeName: index.sortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: index.projection.type, NonKeyAttributes: [...index.projection.nonKeyAttributes] },
        })),
      }),
    );
  } catch (error) {
    // A try that timed out after DynamoDB (Local, on a loaded machine) created the table is
    // retried by the SDK and answered "preexisting": the table is there, which is the point.
    if (!(error instanceof Error) || error.name !== 'ResourceInUseException') throw error;
  }
  try {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: tableDefinition.timeToLiveAttribute, Enabled: true },
      }),
    );
  } catch (error) {
    // Likewise for the time-to-live setting, which a retried try finds already on.
    if (!(error instanceof Error) || !/already enabled/i.test(error.message)) throw error;
  }
}
