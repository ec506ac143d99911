import { describe, expect, it } from 'vitest';
import { SandboxMedia, mediaAdapter, sandboxMedia, type DialRequest, type TrunkStore } from '../../../shared/vendors/media/index.ts';

const noTrunks: TrunkStore = {
  get: async () => undefined,
  putIfAbsent: async () => {
    throw new Error('the sandbox keeps no trunks');
  },
};

const dial = (to_number: string): DialRequest => ({
  call_id: 'call_sandbox000000000000000001',
  from_number: '+14155550100',
  to_number,
  trunk: { address: 'sip:pbx.example.com', auth_username: 'user', auth_password: 'trunk-password-77' },
});

describe('the sandbox media layer', () => {
  it.each([
    ['+14155550001', { connected: false, status: 'not_connected', disconnection_reason: 'dial_busy' }],
    ['+14155550002', { connected: false, status: 'not_connected', disconnection_reason: 'dial_no_answer' }],
    ['+14155550003', { connected: true, voicemail: true, participant_identity: 'callee' }],
    ['+14155550004', { connected: false, status: 'not_connected', disconnection_reason: 'dial_failed' }],
    ['+14155550005', { connected: true, voicemail: false, participant_identity: 'callee' }],
    ['+14155551234', { connected: true, voicemail: false, participant_identity: 'callee' }],
    ['+442071830001', { connected: false, status: 'not_connected', disconnection_reason: 'dial_busy' }],
    ['+14150003999', { connected: true, voicemail: false, participant_identity: 'callee' }],
  ])('dialling %s answers %j', async (number, outcome) => {
    expect(await new SandboxMedia(true).dialOut(dial(number))).toEqual(outcome);
  });

  it('a warm transfer follows the same rule for the target', async () => {
    const media = new SandboxMedia(true);
    expect(await media.warmTransfer(dial('+14155550001'))).toEqual({
      connected: false,
      status: 'not_connected',
      disconnection_reason: 'dial_busy',
    });
    expect(await media.warmTransfer(dial('+14155550142'))).toEqual({
      connected: true,
      voicemail: false,
      participant_identity: 'transfer-+14155550142',
    });
  });

  it('transfer() decides both kinds by the destination, and records cold ones with their outcome', async () => {
    const media = new SandboxMedia(true);
    const cold = (to: string) => media.transfer({ kind: 'cold', call_id: 'call_sandbox000000000000000001', participant_identity: 'callee', to });
    expect(await cold('+14155550002')).toEqual({ bridged: false, reason: 'dial_no_answer' });
    expect(await cold('tel:+14155550004')).toEqual({ bridged: false, reason: 'dial_failed' });
    expect(await cold('sip:desk@pbx.example.com')).toEqual({ bridged: true, participant_identity: 'callee' });
    expect(await media.transfer({ kind: 'warm', ...dial('+14155550001') })).toEqual({ bridged: false, reason: 'dial_busy' });
    expect(await media.transfer({ kind: 'warm', ...dial('+14155550142') })).toEqual({ bridged: true, participant_identity: 'transfer-+14155550142' });
    expect(media.operations.map((op) => op.op)).toEqual(['cold_transfer', 'cold_transfer', 'cold_transfer', 'warm_transfer', 'warm_transfer']);
    expect(media.operations[0]).toEqual({
      op: 'cold_transfer',
      request: { call_id: 'call_sandbox000000000000000001', participant_identity: 'callee', to: '+14155550002' },
      outcome: { bridged: false, reason: 'dial_no_answer' },
    });
    expect(JSON.stringify(media.operations)).not.toContain('trunk-password-77');
  });

  it('records every operation in order, without the trunk’s password', async () => {
    const media = new SandboxMedia(true);
    const call = {
      call_id: 'call_sandbox000000000000000001',
      workspace_id: 'ws_1',
      agent_id: 'agent_1',
      agent_version: 0,
      call_type: 'phone_call' as const,
      direction: 'outbound' as const,
      from_number: '+14155550100',
      to_number: '+14155550002',
      dynamic_variables: {},
    };
    const session = await media.startCall(call);
    await media.dialOut(dial('+14155550002'));
    await media.coldTransfer({ call_id: call.call_id, participant_identity: 'callee', to: '+14155550142' });
    await media.endCall(call.call_id);

    expect(session.room).toBe(call.call_id);
    expect(session.dispatch_id).toMatch(/^sandbox_[0-9a-f]{12}$/);
    expect(media.operations).toEqual([
      { op: 'start_call', call },
      {
        op: 'dial_out',
        request: { call_id: call.call_id, from_number: '+14155550100', to_number: '+14155550002' },
        outcome: { connected: false, status: 'not_connected', disconnection_reason: 'dial_no_answer' },
      },
      { op: 'cold_transfer', request: { call_id: call.call_id, participant_identity: 'callee', to: '+14155550142' } },
      { op: 'end_call', room: call.call_id },
    ]);
    expect(JSON.stringify(media.operations)).not.toContain('trunk-password-77');
  });

  it('records nothing when told not to (production)', async () => {
    const media = new SandboxMedia(false);
    await media.dialOut(dial('+14155550100'));
    await media.endCall('call_x');
    expect(media.operations).toEqual([]);
  });

  it('is what the factory answers without LIVEKIT_URL: one instance per process', async () => {
    const adapter = await mediaAdapter({ trunks: noTrunks });
    expect(adapter.kind).toBe('sandbox');
    expect(adapter).toBe(sandboxMedia());
    expect(await mediaAdapter({ trunks: noTrunks })).toBe(adapter);
    await adapter.dialOut(dial('+14155550199'));
    expect(sandboxMedia().operations.map((operation) => operation.op)).toEqual(['dial_out']);
  });
});
