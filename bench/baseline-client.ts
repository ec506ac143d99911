import { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/**
 * The bundle-size and import-time baseline: the least a function that talks to DynamoDB
 * has to load. Bundled with the same options as the functions (bench/cdk-bundling.ts).
 */
export const client = new DynamoDBClient({});
