import type { ConversationState } from './types.ts';

/*
 * `{{name}}` placeholders in prompts, messages and transfer numbers. A placeholder with no
 * value is left as it is (as the compatible API does in prompts), so a prompt author sees
 * what was missing rather than a silently shortened sentence.
 */
const PLACEHOLDER = /\{\{\s*([\w.-]{1,128})\s*\}\}/g;

/** The values a conversation fills: the current time, the caller's, collected ones, then the identity ones (platform/system-variables.ts) over them. */
export function variablesOf(state: ConversationState, nowMs = Date.now()): Record<string, string> {
  return {
    current_time: new Date(nowMs).toISOString(),
    ...state.dynamic_variables,
    ...state.collected_dynamic_variables,
    call_id: state.call_id,
    session_type: state.channel,
    ...(state.from_number ? { from_number: state.from_number } : {}),
    ...(state.to_number ? { to_number: state.to_number } : {}),
  };
}

export function fillTemplate(text: string, variables: Record<string, string>): string {
  return text.replace(PLACEHOLDER, (whole, name: string) => (Object.hasOwn(variables, name) ? variables[name]! : whole));
}
