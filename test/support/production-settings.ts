/**
 * What the CDK stack sets on every function, for tests that load modules with
 * PARLEY_ENV=production (loadConfig refuses production without them). The values are
 * plausible rather than local: production also refuses local and example SIP settings.
 */
export const PRODUCTION_TEST_SETTINGS = {
  PARLEY_ENV: 'production',
  TABLE_NAME: 'parley-prod',
  AWS_REGION: 'eu-west-1',
  KMS_KEY_ID: 'arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab',
  WEBHOOK_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111122223333/parley-webhooks',
  CALL_STEPS_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111122223333/parley-call-steps',
  CONTACT_JOBS_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111122223333/parley-contact-jobs',
  EXPORT_JOBS_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111122223333/parley-export-jobs',
  INTEGRATION_JOBS_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111122223333/parley-integration-jobs',
  VENDOR_SECRET_ID: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:parley-vendor',
  RECORDINGS_BUCKET: 'parley-recordings-111122223333',
  KB_JOBS_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111122223333/parley-kb-jobs',
  KNOWLEDGE_BASE_BUCKET: 'parley-knowledge-bases-111122223333',
  SIP_HOST: 'sip.parley.ai',
  SIP_IP_RANGES: '34.1.2.0/24',
  PUBLIC_BASE_URL: 'https://api.parley.ai',
} as const;

/**
 * Sets PARLEY_ENV=production (plus `settings`) with the production settings for the modules
 * imported until the returned function puts the environment back.
 */
export function useProductionSettings(settings: Record<string, string> = {}): () => void {
  const all: Record<string, string> = { ...PRODUCTION_TEST_SETTINGS, ...settings };
  const before = Object.fromEntries(Object.keys(all).map((name) => [name, process.env[name]]));
  Object.assign(process.env, all);
  return () => {
    for (const [name, value] of Object.entries(before)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}
