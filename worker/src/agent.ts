import { defineAgent, type JobContext } from '@livekit/agents';
import { RoomEvent, type RemoteParticipant, type Room } from '@livekit/rtc-node';
import { logger } from '../../shared/platform/logger.ts';
import { LIVE_CONTROL_TOPIC, type DispatchMetadata } from '../../shared/vendors/media/index.ts';
import { reportCalleeAnswer } from './callee-answer.ts';
import { prepareCall } from './call-setup.ts';
import { roomHoldTrack, roomListener } from './consult-room.ts';
import { workerSettings } from './config.ts';
import { parleyStreamTurn } from './conversation.ts';
import { BadDispatchMetadata, parseDispatchMetadata } from './dispatch.ts';
import { WorkerMetrics } from './metrics.ts';
import { ReportClient } from './reports.ts';
import { startCallSession, type CallSession } from './session.ts';

/*
 * One job per call (a child process of the worker, main.ts): read the dispatch, open the
 * call's conversation on Parley's response engine, join the room and run the voice session
 * until the call ends. A job that cannot start reports the call ended (`error_unknown`) so
 * Parley releases it rather than waiting on a silent room.
 */

export default defineAgent({
  entry: async (ctx: JobContext) => {
    let metadata: DispatchMetadata;
    try {
      metadata = parseDispatchMetadata(ctx.job.metadata);
    } catch (error) {
      if (!(error instanceof BadDispatchMetadata)) throw error;
      // Not Parley's dispatch: nothing to report to and no one to answer.
      logger.error('job refused: its dispatch metadata is not a call\'s', { job_id: ctx.job.id, room: ctx.job.room?.name, reason: error.message });
      ctx.shutdown('bad dispatch metadata');
      return;
    }
    const reports = new ReportClient({ reportUrl: metadata.report_url, token: metadata.report_token });
    const metrics = new WorkerMetrics();
    metrics.jobStarted();
    const callLog = { call_id: metadata.call_id, job_id: ctx.job.id };
    try {
      const { settings, ignored, state, stt, tts } = await prepareCall(metadata, workerSettings().WORKER_STT_VENDOR);
      if (ignored.length) logger.warn('agent fields the worker cannot use were left at their defaults', { ...callLog, fields: ignored });

      await ctx.connect();
      const room = ctx.room;
      // The session exists once started; a consultation comes long after.
      const started: { call?: CallSession } = {};
      const listenTo = roomListener(room, () => started.call!.session);
      const call = await startCallSession({
        settings,
        state,
        streamTurn: parleyStreamTurn,
        reports,
        stt,
        tts,
        room,
        publish: (topic, message) => {
          room.localParticipant
            ?.publishData(new TextEncoder().encode(JSON.stringify(message)), { reliable: true, topic })
            .catch((error: unknown) => logger.warn('a data message to the room failed', { ...callLog, topic, error }));
        },
        metrics: new WorkerMetrics(),
        listenTo,
        holdTrack: roomHoldTrack(room),
        callVariables: metadata.dynamic_variables,
        ...(metadata.call_type === 'phone_call' ? { pressDigits: (digits: string) => pressDigits(room, digits) } : {}),
      });
      started.call = call;
      listenToParley(room, call);
      // A dialled callee's answer, which only the room shows (Parley's dial does not wait for it).
      if (metadata.call_type === 'phone_call' && metadata.direction === 'outbound') reportCalleeAnswer(room, reports);
      // The room going away (Parley ended the call, the worker is shutting down) ends the session too.
      ctx.addShutdownCallback(async () => {
        await call.end('error_unknown');
      });
      void call.ended.then((reason) => {
        logger.info('call ended', { ...callLog, reason });
        if (reason.startsWith('error')) metrics.jobFailed(reason);
        ctx.shutdown(reason);
      });
      void call.takenOver.then(() => {
        logger.info('the call goes on without the agent (taken over, or a transfer bridged); the agent left', callLog);
        ctx.shutdown('agent left');
      });
    } catch (error) {
      logger.error('the call could not start', { ...callLog, error });
      metrics.jobFailed('error_unknown');
      await reports.send({ event: 'call_ended', disconnection_reason: 'error_unknown' });
      ctx.shutdown('the call could not start');
    }
  },
});

/** SIP's DTMF event codes (RFC 4733): 0-9 as themselves, * 10, # 11. */
export const dtmfCode = (digit: string): number => (digit === '*' ? 10 : digit === '#' ? 11 : Number(digit));
/** Between two keys, so the far end's menu tells them apart. */
const KEY_GAP_MS = 250;

/** Presses keys on the call: each one a DTMF event to the room's SIP participants. */
export async function pressDigits(room: Room, digits: string): Promise<void> {
  for (const [i, digit] of [...digits].entries()) {
    if (!/^[0-9*#]$/.test(digit)) continue;
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, KEY_GAP_MS));
    await room.localParticipant!.publishDtmf(dtmfCode(digit), digit);
  }
}

/**
 * Parley's live controls (`parley.live`): only the server's messages (sent with
 * RoomServiceClient.sendData, they have no participant). A participant's message on the
 * topic (a web caller can publish data) is ignored, or a caller could make the agent say anything.
 */
function listenToParley(room: Room, call: CallSession): void {
  // The caller's keys (a phone call's SIP participant); the worker's own and other agents' are not the caller's.
  room.on(RoomEvent.DtmfReceived, (_code: number, digit: string, participant: RemoteParticipant) => {
    if (participant.identity.startsWith('transfer-')) return;
    call.dtmf(digit);
  });
  room.on(RoomEvent.ParticipantConnected, (participant: RemoteParticipant) => call.participantJoined(participant.identity));
  room.on(RoomEvent.DataReceived, (payload: Uint8Array, participant?: RemoteParticipant, _kind?: unknown, topic?: string) => {
    if (topic !== LIVE_CONTROL_TOPIC || participant) return;
    try {
      call.control(JSON.parse(new TextDecoder().decode(payload)));
    } catch {
      logger.warn('a live control that is not JSON was ignored', { topic });
    }
  });
}
