/**
 * Conversation flows, the other response engine, and their shared components (served by the
 * flows function). Routes: flow-routes.ts; schemas: flow-schemas.ts; logic:
 * conversation-flows.ts (flows) and flow-components.ts (shared components and the graph
 * checks); items: ../store.ts (components) and the version store.
 */
export { UpdateFlowBody } from './flow-schemas.ts';
export type { ConversationFlow } from './flow-schemas.ts';
export { createFlow, deleteFlow, getFlow, listFlows, updateFlow } from './conversation-flows.ts';
export { createComponent, deleteComponent, getComponent, listComponents, updateComponent } from './flow-components.ts';
