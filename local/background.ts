/** In-process stand-ins for the SQS consumer and the EventBridge schedules. */
export function startBackgroundWork(): { stop(): Promise<void> } {
  return { stop: async () => undefined };
}
