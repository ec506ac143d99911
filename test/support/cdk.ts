import type { Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { ParleyResources } from '../../lib/parley-function.ts';

/**
 * The shared resources a ParleyFunction is told about, in a bare stack (a test of one
 * function, not of the Parley stack). `encrypted`: the table, the secret and the buckets use
 * the key, as the stack's do, for tests of the grants that depend on it.
 */
export function parleyResources(stack: Stack, { encrypted = false } = {}): ParleyResources {
  const key = new kms.Key(stack, 'Key');
  return {
    key,
    table: new dynamodb.Table(stack, 'Table', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      ...(encrypted ? { encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED, encryptionKey: key } : {}),
    }),
    webhookQueue: new sqs.Queue(stack, 'Queue'),
    callStepsQueue: new sqs.Queue(stack, 'CallStepsQueue'),
    contactJobsQueue: new sqs.Queue(stack, 'ContactJobsQueue'),
    exportJobsQueue: new sqs.Queue(stack, 'ExportJobsQueue'),
    integrationJobsQueue: new sqs.Queue(stack, 'IntegrationJobsQueue'),
    kbJobsQueue: new sqs.Queue(stack, 'KbJobsQueue'),
    vendorSecret: new secretsmanager.Secret(stack, 'Secret', encrypted ? { encryptionKey: key } : {}),
    recordingsBucket: new s3.Bucket(stack, 'Recordings', encrypted ? { encryption: s3.BucketEncryption.KMS, encryptionKey: key } : {}),
    knowledgeBaseBucket: new s3.Bucket(stack, 'KnowledgeBases', encrypted ? { encryption: s3.BucketEncryption.KMS, encryptionKey: key } : {}),
  };
}
