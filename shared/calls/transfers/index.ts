/**
 * Transfers of a call (docs/calls.md, Transfers): cold, warm and agentic, from the agent's
 * ask to the transferred leg's end (transfers.ts; the sandbox's consultation of an agentic
 * transfer's destination in agentic.ts). What the engine's steps and the live events use.
 */
export {
  consultTimedOut,
  decideTransfer,
  endTransfer,
  keepConsultPrivate,
  startTransfer,
  transferRefusal,
  transferStart,
  transferStarted,
  transferStep,
} from './transfers.ts';
