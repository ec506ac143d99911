import type * as z from 'zod';
import { customSipHeaders } from '../../platform/http/schemas.ts';
import { sipTransportProblem } from '../../platform/telephony/sip-uri.ts';

/*
 * What a transfer_call tool (or a flow's transfer_call node) must get right when the LLM,
 * flow or component is saved (docs/calls.md, Transfers), rather than a transfer refused or
 * quietly changed during a call:
 * - a predefined SIP destination's `;transport=` is udp, tcp or tls;
 * - `custom_sip_headers` follow a call's rules (shared/platform/telephony/sip-headers.ts);
 * - a cold transfer's `cold_transfer_mode` is `sip_refer` (the default) or `sip_invite`, and
 *   `show_transferee_as_caller: true` needs `sip_invite`: a REFER hands the caller's own
 *   leg to the carrier, which decides the caller ID (retell-sdk: "not available" with
 *   `sip_refer`);
 * - `on_hold_music: "custom"` names its `custom_on_hold_music_asset_id`.
 * That the asset and an agentic transfer's `transfer_agent` exist in the workspace is
 * checked by transfer-checks.ts (it reads the table).
 */

const COLD_TRANSFER_MODES = ['sip_refer', 'sip_invite'] as const;

type Issue = Parameters<z.RefinementCtx['addIssue']>[0];

export function refineTransferCall(tool: { type?: unknown; transfer_destination?: unknown; transfer_option?: unknown; custom_sip_headers?: unknown }, ctx: z.RefinementCtx): void {
  if (tool.type !== 'transfer_call') return;
  const number = (tool.transfer_destination as { number?: unknown } | undefined)?.number;
  if (typeof number === 'string' && /^\s*sips?:/i.test(number)) {
    const problem = sipTransportProblem(number);
    if (problem) ctx.addIssue({ code: 'custom', path: ['transfer_destination', 'number'], message: problem, input: number });
  }
  if (tool.custom_sip_headers !== undefined && tool.custom_sip_headers !== null) {
    const headers = customSipHeaders().safeParse(tool.custom_sip_headers, { reportInput: true });
    if (!headers.success) for (const issue of headers.error.issues) ctx.addIssue({ ...issue, path: ['custom_sip_headers', ...issue.path] } as Issue);
  }
  const option = tool.transfer_option;
  if (!option || typeof option !== 'object') return;
  const { type, cold_transfer_mode: mode, on_hold_music: music, custom_on_hold_music_asset_id: assetId } = option as Record<string, unknown>;
  const at = (field: string, message: string, input: unknown) => ctx.addIssue({ code: 'custom', path: ['transfer_option', field], message, input });
  // show_transferee_as_caller with sip_refer (the default) is accepted and has no effect, as
  // retell-sdk documents it: a REFER keeps the caller's own ID (shared/calls/engine/media.ts).
  if (type === 'cold_transfer') {
    if (mode !== undefined && !(COLD_TRANSFER_MODES as readonly unknown[]).includes(mode)) {
      at('cold_transfer_mode', `Expected one of ${COLD_TRANSFER_MODES.map((m) => JSON.stringify(m)).join(', ')}`, mode);
    }
  }
  if ((type === 'warm_transfer' || type === 'agentic_warm_transfer') && music === 'custom' && (typeof assetId !== 'string' || !assetId)) {
    at('custom_on_hold_music_asset_id', 'Required when on_hold_music is custom', assetId);
  }
}
