/*
 * The assistant's credits (docs/assistant.md): a stand-in with the interface the credits
 * module keeps (its routes, allowance, ledger and the two 402s live there). Until it lands,
 * every workspace may spend and a message costs nothing.
 */

/** Throws 402 (`conductor_credits_exhausted`, `conductor_limit_reached`) when the workspace may not run the assistant now. */
export async function assertAssistantCanSpend(_workspaceId: string, _nowMs: number): Promise<void> {}

/** Charges one message by its tokens; once per messageId. */
export async function chargeAssistantMessage(_input: {
  workspaceId: string;
  sessionId: string;
  messageId: string;
  inputTokens: number;
  outputTokens: number;
  nowMs: number;
}): Promise<{ credits: number }> {
  return { credits: 0 };
}
