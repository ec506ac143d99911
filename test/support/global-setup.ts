import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../local/dynamodb.ts';

/** One in-memory DynamoDB Local for the whole run; every test file creates its own table in it. */
export default async function setup(project: TestProject) {
  const dynamo = await startDynamoDbLocal();
  project.provide('dynamoEndpoint', dynamo.endpoint);
  return () => dynamo.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}
