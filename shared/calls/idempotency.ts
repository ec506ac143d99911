// PLACEHOLDER until the idempotency module lands (branch slots): runs every request.
export async function withIdempotency<T>(input: { workspaceId: string; key: string | undefined; request: unknown; run: () => Promise<T> }): Promise<T> {
  return input.run();
}
