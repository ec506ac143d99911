import { Duration, RemovalPolicy, type Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { NagSuppressions } from 'cdk-nag';
import { RETENTION_RULE_DAYS } from '../shared/platform/aws/object-store.ts';
import { tableDefinition } from '../shared/platform/store/keys.ts';
import { scopedName, type StageSettings } from './stage.ts';

/**
 * What Parley keeps: the KMS key, the table, the vendor credentials' secret and the two
 * buckets, all retained when the stack is deleted.
 *
 * Like the stack's other parts (lib/parley-jobs.ts, lib/parley-api.ts,
 * lib/parley-functions.ts) this is not a construct of its own: CDK derives logical IDs from
 * construct paths, and a `Data/` level would rename (so replace) the deployed table,
 * buckets and key. Its resources are the stack's children, as they always were.
 */
export class ParleyData {
  readonly key: kms.Key;
  readonly table: dynamodb.Table;
  readonly vendorSecret: secretsmanager.Secret;
  readonly recordingsBucket: s3.Bucket;
  readonly knowledgeBaseBucket: s3.Bucket;

  constructor(stack: Stack, settings: StageSettings) {
    this.key = new kms.Key(stack, 'Key', {
      alias: `alias/${scopedName(settings.stage)}`,
      description: 'Parley: table encryption and envelope encryption of stored secrets',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.table = new dynamodb.Table(stack, 'Table', {
      partitionKey: { name: tableDefinition.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: tableDefinition.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: tableDefinition.timeToLiveAttribute,
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: this.key,
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const index of tableDefinition.globalSecondaryIndexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.indexName,
        partitionKey: { name: index.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: index.sortKey, type: dynamodb.AttributeType.STRING },
        projectionType: dynamodb.ProjectionType[index.projection.type],
        nonKeyAttributes: [...index.projection.nonKeyAttributes],
      });
    }

    // Starts as `{}`; operators fill it with `aws secretsmanager put-secret-value`.
    // CloudFormation rewrites it only if this template value changes.
    this.vendorSecret = new secretsmanager.Secret(stack, 'VendorSecret', {
      description: 'Parley vendor credentials (JSON)',
      encryptionKey: this.key,
      secretObjectValue: {},
      removalPolicy: RemovalPolicy.RETAIN,
    });
    NagSuppressions.addResourceSuppressions(this.vendorSecret, [
      {
        id: 'AwsSolutions-SMG4',
        reason:
          'Vendor credentials are issued by third parties (telephony, LLM, speech); they are rotated by hand when the vendor issues new ones, so there is no rotation Lambda to attach.',
      },
    ]);

    // Call recordings (docs/calls.md, Call artifacts): private, KMS-encrypted with the stack's
    // key, TLS only; deleted by tag (`retention_days`, one lifecycle rule per value in
    // RETENTION_RULE_DAYS), kept otherwise.
    // Browsers PUT files to presigned upload URLs (assets, voice samples and knowledge-base
    // files, with their signed retention tag and optional checksum, to uploads/) from the
    // dashboards named by context uploadOrigins; the signature still decides what is accepted
    // (key, content type, exact length, expiry). No origins, no rule.
    const uploadCors = settings.uploadOrigins.length
      ? {
          cors: [
            {
              id: 'presigned-uploads',
              allowedMethods: [s3.HttpMethods.PUT],
              allowedOrigins: [...settings.uploadOrigins],
              allowedHeaders: ['content-type', 'content-length', 'x-amz-tagging', 'x-amz-checksum-sha256'],
              exposedHeaders: ['etag'],
              maxAge: 3000,
            },
          ],
        }
      : {};
    this.recordingsBucket = new s3.Bucket(stack, 'RecordingsBucket', {
      encryption: s3.BucketEncryption.KMS,
      encryptionKey: this.key,
      bucketKeyEnabled: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: RemovalPolicy.RETAIN,
      lifecycleRules: [
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        ...RETENTION_RULE_DAYS.map((days) => ({ id: `retention-${days}d`, tagFilters: { retention_days: String(days) }, expiration: Duration.days(days) })),
      ],
      ...uploadCors,
    });
    NagSuppressions.addResourceSuppressions(this.recordingsBucket, [
      {
        id: 'AwsSolutions-S1',
        reason:
          'Recordings are fetched through presigned URLs the API hands out (each issue is in the API access log); a server-access-log bucket is listed under Not done yet in docs/calls.md.',
      },
    ]);

    // Knowledge bases (docs/knowledge-bases.md): originals, extracted text, chunks and indexes;
    // private, KMS-encrypted, TLS only. Objects of deleted sources and knowledge bases are
    // deleted by the API; noncurrent versions are not kept (no versioning) and incomplete
    // uploads are aborted after a day.
    this.knowledgeBaseBucket = new s3.Bucket(stack, 'KnowledgeBaseBucket', {
      encryption: s3.BucketEncryption.KMS,
      encryptionKey: this.key,
      bucketKeyEnabled: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: RemovalPolicy.RETAIN,
      lifecycleRules: [{ id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) }],
    });
    NagSuppressions.addResourceSuppressions(this.knowledgeBaseBucket, [
      {
        id: 'AwsSolutions-S1',
        reason: 'Knowledge-base files are fetched through presigned URLs the API hands out (each in the API access log); a server-access-log bucket is listed under Not done yet in docs/knowledge-bases.md.',
      },
    ]);
  }
}
