import { defineRoutes } from '../../platform/http/route.ts';
import { RecordingUrlView, SipTrace } from './schemas.ts';
import { Call, callIdParams } from '../schemas.ts';

/*
 * A call's artifacts (docs/calls.md, Call artifacts): its recording, sensitive-data
 * scrubbing, the SIP trace and pcap. A route module of its own beside routes.ts; the calls
 * function serves both.
 */
export const callArtifactRoutes = defineRoutes({ domain: 'calls', access: 'calls' }, {
  getCallRecordingUrl: {
    method: 'GET', path: '/get-call-recording-url/{call_id}', status: 200,
    summary: 'A signed URL of the call\'s recording, valid for the agent\'s signed_url_expiration_ms (404 without a recording)',
    params: callIdParams,
    response: RecordingUrlView,
  },
  removeCallSensitiveData: {
    method: 'POST', path: '/v2/remove-call-sensitive-data/{call_id}', status: 200,
    summary: 'Scrub personal data (agent pii_config) from an ended call\'s transcripts, variables and recording; idempotent',
    params: callIdParams, response: Call,
  },
  getCallUnscrubbed: {
    method: 'GET', path: '/v2/get-call-unscrubbed/{call_id}', status: 200, access: 'admin', role: 'admin',
    summary: 'The call as it was before scrubbing (scope admin; 404 when its data storage setting keeps no copy)',
    params: callIdParams, response: Call,
  },
  getCallSipTrace: {
    method: 'GET', path: '/v2/get-call-sip-trace/{call_id}', status: 200,
    summary: 'The SIP dialog of a phone call as JSON (reconstructed: synthetic true)',
    params: callIdParams,
    response: SipTrace,
  },
  getCallPcap: {
    method: 'GET', path: '/get-call-pcap/{call_id}', status: 200, produces: 'application/vnd.tcpdump.pcap',
    summary: 'The SIP dialog of a phone call as a libpcap file (UDP/IPv4 frames carrying the SIP messages)',
    params: callIdParams,
  },
});
