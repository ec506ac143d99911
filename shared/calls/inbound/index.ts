/**
 * Inbound calls (docs/calls.md, Inbound calls): a caller reaching a workspace number, the
 * call_inbound webhook that may change or refuse it (inbound.ts), and, on LiveKit, the SIP
 * caller's room admitted once the call is created (sip.ts: the media webhook announces the
 * caller, the call-steps queue admits it). The rest of the calls domain imports these
 * files directly; this is what it offers of them to the others through its index.ts.
 */
export { receiveInboundCall,   } from './inbound.ts';
