import { isDeepStrictEqual } from 'node:util';
import type { ToolMock } from '../types.ts';

/*
 * Tool mocks (the agent playground's `tool_mocks`, retell-sdk PlaygroundCompletionParams.ToolMock):
 * a mocked tool call answers the given output instead of running the tool, so testing an
 * agent never reaches a custom function's URL (or transfers anything).
 */

/** The first mock for this call: same tool name, and its rule matches (`any`, or every listed argument equal: a subset match). */
export function findToolMock(mocks: readonly ToolMock[] | undefined, name: string, args: Record<string, unknown>): ToolMock | undefined {
  return mocks?.find((mock) => {
    if (mock.tool_name !== name) return false;
    const rule = mock.input_match_rule;
    if (!rule || rule.type === 'any') return true;
    const wanted = rule.args;
    if (typeof wanted !== 'object' || wanted === null || Array.isArray(wanted)) return false;
    return Object.entries(wanted).every(([key, value]) => isDeepStrictEqual(args[key], value));
  });
}
