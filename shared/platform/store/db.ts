import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { awsClientOptions } from '../aws/client-options.ts';
import { tagAwsClient } from '../aws/unavailable.ts';
import { config, settingAsGiven } from '../config.ts';
import { onFirstUse } from '../lazy.ts';

/**
 * One client per process, created on the first table call (not at import, so a cold start
 * does not parse the settings before its first request) and then reused by every warm
 * invocation; every call bounded in time (shared/platform/aws/client-options.ts), its
 * failures to answer a 503.
 */
let client: { dynamo: DynamoDBClient; db: DynamoDBDocumentClient } | undefined;

function clients() {
  if (!client) {
    const dynamo = tagAwsClient(
      new DynamoDBClient({
        region: config.AWS_REGION,
        ...awsClientOptions(),
        ...(config.DYNAMODB_ENDPOINT
          ? { endpoint: config.DYNAMODB_ENDPOINT, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
          : {}),
      }),
      'DynamoDB',
    );
    const db = DynamoDBDocumentClient.from(dynamo, {
      marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
    });
    client = { dynamo, db };
  }
  return client;
}

export const dynamo: DynamoDBClient = onFirstUse(() => clients().dynamo, { bindMethods: true });

export const db: DynamoDBDocumentClient = onFirstUse(() => clients().db, { bindMethods: true });

/** TABLE_NAME, validated with every other setting before the first table call (config.ts). */
export const tableName = settingAsGiven('TABLE_NAME', 'parley');

export function isConditionFailure(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}

export function isTransactionConflict(error: unknown): boolean {
  return error instanceof Error && error.name === 'TransactionCanceledException';
}
