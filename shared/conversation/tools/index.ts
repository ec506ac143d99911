/**
 * What a turn's tool calls reach beyond the engine (docs/conversation.md): a custom
 * function's signed HTTP request through the egress guard (custom-functions.ts), and the
 * playground's tool mocks that answer in its place (tool-mocks.ts). The model loop
 * (../engines/model-turn.ts) runs the rest of the tools itself; this is what it uses here.
 */
export { callCustomFunction, responseVariables, type CustomFunctionTool } from './custom-functions.ts';
export { findToolMock } from './tool-mocks.ts';
