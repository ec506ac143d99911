import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { awsClientOptions } from '../aws/client-options.ts';
import { tagAwsClient } from '../aws/unavailable.ts';
import { config } from '../config.ts';

/**
 * One client per process, created at load so warm invocations reuse its connections;
 * every call bounded in time (shared/aws/client-options.ts), its failures to answer a 503.
 */
export const dynamo = tagAwsClient(
  new DynamoDBClient({
    region: config.AWS_REGION,
    ...awsClientOptions(),
    ...(config.DYNAMODB_ENDPOINT
      ? { endpoint: config.DYNAMODB_ENDPOINT, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {}),
  }),
  'DynamoDB',
);

export const db = DynamoDBDocumentClient.from(dynamo, {
  marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
});

export const tableName = config.TABLE_NAME;

export function isConditionFailure(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}

export function isTransactionConflict(error: unknown): boolean {
  return error instanceof Error && error.name === 'TransactionCanceledException';
}
