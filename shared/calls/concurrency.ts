// PLACEHOLDER until the concurrency module lands (branch slots): admits everything.
export async function acquireSlot(_input: { workspaceId: string; callId: string; kind: 'inbound' | 'outbound' | 'web' | 'batch' }): Promise<{ burst: boolean }> {
  return { burst: false };
}
export async function releaseSlot(_workspaceId: string, _callId: string): Promise<boolean> {
  return true;
}
