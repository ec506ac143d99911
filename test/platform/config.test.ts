import { describe, expect, it } from 'vitest';
import { loadConfig, PRODUCTION_REQUIRED_SETTINGS } from '../../shared/platform/config.ts';
import { PRODUCTION_TEST_SETTINGS } from '../support/production-settings.ts';

const without = (name: string) =>
  Object.fromEntries(Object.entries(PRODUCTION_TEST_SETTINGS).filter(([key]) => key !== name));

describe('settings in production', () => {
  it('refuses to start on local defaults, naming every missing setting', () => {
    expect(() => loadConfig({ PARLEY_ENV: 'production' })).toThrow(
      'Invalid Parley settings: TABLE_NAME, AWS_REGION, KMS_KEY_ID, WEBHOOK_QUEUE_URL, CALL_STEPS_QUEUE_URL, CONTACT_JOBS_QUEUE_URL, EXPORT_JOBS_QUEUE_URL, INTEGRATION_JOBS_QUEUE_URL, KB_JOBS_QUEUE_URL, VENDOR_SECRET_ID, RECORDINGS_BUCKET, KNOWLEDGE_BASE_BUCKET, SIP_HOST, SIP_IP_RANGES, PUBLIC_BASE_URL: required with PARLEY_ENV=production (the defaults only make sense locally)',
    );
    for (const name of PRODUCTION_REQUIRED_SETTINGS) {
      expect(() => loadConfig(without(name)), name).toThrow(`${name}: required with PARLEY_ENV=production`);
      expect(() => loadConfig({ ...PRODUCTION_TEST_SETTINGS, [name]: ' ' }), name).toThrow(`${name}: `);
    }
    expect(PRODUCTION_REQUIRED_SETTINGS).toEqual(expect.arrayContaining(['SIP_HOST', 'SIP_IP_RANGES', 'PUBLIC_BASE_URL']));
  });

  it('starts with every setting given', () => {
    const settings = loadConfig(PRODUCTION_TEST_SETTINGS);
    expect(settings).toMatchObject({
      PARLEY_ENV: 'production',
      SIP_HOST: 'sip.parley.ai',
      SIP_IP_RANGES: ['34.1.2.0/24'],
      PUBLIC_BASE_URL: 'https://api.parley.ai',
    });
  });

  it('refuses the local defaults and example values given explicitly', () => {
    for (const host of ['sip.parley.local', 'localhost', 'sip.example.invalid', 'sip.example', 'pbx.test.']) {
      expect(() => loadConfig({ ...PRODUCTION_TEST_SETTINGS, SIP_HOST: host }), host).toThrow(
        `SIP_HOST: ${host} is a local or example name`,
      );
    }
    for (const ranges of ['127.0.0.1/32', '34.1.2.0/24,192.0.2.0/24', '["2001:db8::/48"]', '127.0.0.0/8']) {
      expect(() => loadConfig({ ...PRODUCTION_TEST_SETTINGS, SIP_IP_RANGES: ranges }), ranges).toThrow(
        'are loopback or example addresses',
      );
    }
    // A block that contains loopback is not within it: 0.0.0.0/0 is the operator's (odd) choice.
    expect(loadConfig({ ...PRODUCTION_TEST_SETTINGS, SIP_IP_RANGES: '0.0.0.0/0' }).SIP_IP_RANGES).toEqual(['0.0.0.0/0']);
    expect(() => loadConfig({ ...PRODUCTION_TEST_SETTINGS, PUBLIC_BASE_URL: 'http://localhost:8080' })).toThrow(
      'PUBLIC_BASE_URL: must be the https:// URL of the API',
    );
  });

  it('keeps the local defaults outside production', () => {
    for (const env of ['development', 'test'] as const) {
      expect(loadConfig({ PARLEY_ENV: env })).toMatchObject({
        SIP_HOST: 'sip.parley.local',
        SIP_IP_RANGES: ['127.0.0.1/32'],
        TABLE_NAME: 'parley',
      });
    }
  });
});
