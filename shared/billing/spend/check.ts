import { verificationStatus } from '../../numbers/index.ts';
import { checkSpend, type SpendAction } from './spend.ts';

/** POST /billing/check: the spend check's decision for an action, with the workspace's verification as the dialling routes give it. */
export async function checkSpendFor(workspaceId: string, action: SpendAction) {
  const decision = await checkSpend(workspaceId, action, { verificationStatus: () => verificationStatus(workspaceId) });
  return { action, ...decision };
}
