/**
 * Node fields that hold one edge; `edges` holds a list of them. Read by the node schemas
 * (flow-schemas.ts) and the graph rules (flow-components.ts), which what runs an agent
 * reaches through the narrow entry (agents/bindings/) without any flow schema.
 */
export const SINGLE_EDGE_FIELDS = ['always_edge', 'else_edge', 'skip_response_edge', 'edge', 'success_edge', 'failed_edge'] as const;
