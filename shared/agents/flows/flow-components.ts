import { badRequest, conflict, invalidPaginationKey } from '../../platform/errors.ts';
import { idPattern, newId } from '../../platform/ids.ts';
import { definedFields } from '../../platform/objects.ts';
import type { CreateComponentInput, FlowComponent, UpdateComponentInput } from './flow-schemas.ts';
import { SINGLE_EDGE_FIELDS } from './flow-graph-fields.ts';
import { queryAll } from '../../platform/store/query.ts';
import { table, TransactionCancelled, type TransactOp } from '../../platform/store/table.ts';
import { listHeads, MAX_DATA_BYTES, type TransactItem } from '../../platform/store/versions.ts';
import { flowAppToolRefs } from '../tools/app-tools.ts';
import { assertAppTools } from '../tools/app-usages.ts';
import { assertTransferRefs, flowTransferRefs } from '../tools/transfer-checks.ts';
import { componentLinkOp, flowComponents, flowComponentsOf, type ComponentItem } from '../store.ts';

/*
 * Shared conversation flow components, and the graph rules flows and components share.
 *
 * A graph is a list of nodes with a start node. Node IDs are unique within it; the start
 * node and every edge's destination name one of its nodes; component nodes name a
 * component: `component_type: 'shared'` a shared component of this workspace (by ID),
 * `'local'` one of the flow's inline `components` (by name; only flows have those).
 * Components never contain themselves, directly or through others. A left-out start node
 * is the first node. Every problem is reported as `path: issue`, all at once.
 *
 * A draft may break these rules (a flow being built has edges to nodes not added yet):
 * saving a flow or a component stores it with its problems in `validation`. What runs a
 * graph (publishing an agent version, binding it to a number, starting a call or chat:
 * shared/agents/versions/runnable.ts) checks it whole, with the shared components it uses, through
 * `flowProblems`, and refuses it with every problem. The node schemas (types, required
 * fields, models) are refused at save as before: no draft may break those.
 *
 * Shared components are not versioned (the compatible API has no versions for them).
 * Every write that references a shared component bumps that component's `link_writes`
 * counter in the same transaction (failing if it is gone), and deleting a component is
 * conditional on the counter it read, so a reference can never be added while the
 * component is being deleted.
 */

interface GraphEdge {
  destination_node_id?: string;
}

interface GraphNode {
  id: string;
  type: string;
  component_id?: string;
  component_type?: 'local' | 'shared';
  edges?: GraphEdge[];
  global_node_setting?: { go_back_conditions?: GraphEdge[] };
  finetune_transition_examples?: GraphEdge[];
  [field: string]: unknown;
}

export interface Graph {
  nodes?: GraphNode[] | unknown[];
  start_node_id?: string | null;
}

interface InlineComponent extends Graph {
  name: string;
}

/** Most shared components one flow or component may use (each is one item in its write transaction). */
const MAX_SHARED_COMPONENTS = 50;

const nodesOf = (graph: Graph) => (graph.nodes ?? []) as GraphNode[];

/** The start node, when left out (absent or null), is the first node. */
export function withStartNode<T extends Graph>(graph: T): T {
  const first = nodesOf(graph)[0];
  if ((graph.start_node_id === undefined || graph.start_node_id === null) && first) {
    return { ...graph, start_node_id: first.id };
  }
  return graph;
}

/** Edges of a node with the path of their destination field, in field order. */
function edgesOf(node: GraphNode): [string, GraphEdge][] {
  const found: [string, GraphEdge][] = [];
  (node.edges ?? []).forEach((edge, j) => found.push([`edges.${j}`, edge]));
  for (const field of SINGLE_EDGE_FIELDS) {
    const edge = node[field] as GraphEdge | undefined;
    if (edge) found.push([field, edge]);
  }
  (node.global_node_setting?.go_back_conditions ?? []).forEach((edge, j) =>
    found.push([`global_node_setting.go_back_conditions.${j}`, edge]),
  );
  (node.finetune_transition_examples ?? []).forEach((example, j) =>
    found.push([`finetune_transition_examples.${j}`, example]),
  );
  return found;
}

interface GraphCheck {
  problems: string[];
  /** Shared component ID → paths of the `component_id` fields that name it. */
  shared: Map<string, string[]>;
}

/**
 * The synchronous rules for one graph. `localNames` are the flow's inline components;
 * null inside a shared component, which has none.
 */
function checkGraph(graph: Graph, prefix: string, localNames: Set<string> | null, check: GraphCheck): void {
  const nodes = nodesOf(graph);
  const ids = new Set<string>();
  nodes.forEach((node, i) => {
    if (ids.has(node.id)) check.problems.push(`${prefix}nodes.${i}.id: Duplicate node id "${node.id}"`);
    ids.add(node.id);
  });
  nodes.forEach((node, i) => {
    for (const [path, edge] of edgesOf(node)) {
      if (edge.destination_node_id !== undefined && !ids.has(edge.destination_node_id)) {
        check.problems.push(`${prefix}nodes.${i}.${path}.destination_node_id: No node with id "${edge.destination_node_id}"`);
      }
    }
    if (node.type !== 'component' || node.component_id === undefined) return;
    const path = `${prefix}nodes.${i}.component_id`;
    if (node.component_type === 'shared') {
      check.shared.set(node.component_id, [...(check.shared.get(node.component_id) ?? []), path]);
    } else if (localNames === null) {
      check.problems.push(`${prefix}nodes.${i}.component_type: A shared component can only use shared components`);
    } else if (!localNames.has(node.component_id)) {
      check.problems.push(`${path}: No component named "${node.component_id}" in components`);
    }
  });
  const start = graph.start_node_id;
  if (start !== undefined && start !== null && !ids.has(start)) {
    check.problems.push(`${prefix}start_node_id: No node with id "${start}"`);
  }
}

/** Shared component IDs a flow's or component's data uses (its nodes and its inline components' nodes). */
function sharedComponentsOf(data: Record<string, unknown>): Set<string> {
  const graphs = [data as Graph, ...(((data.components as InlineComponent[] | null | undefined) ?? []) as Graph[])];
  const ids = new Set<string>();
  for (const graph of graphs) {
    for (const node of nodesOf(graph)) {
      if (node.type === 'component' && node.component_type === 'shared' && node.component_id) ids.add(node.component_id);
    }
  }
  return ids;
}

/** What a graph check found: its problems, and the shared components it uses that exist (to link). */
export interface GraphReport {
  problems: string[];
  linked: string[];
}

/**
 * Checks a flow's whole graph (its nodes and its inline components): every problem, and
 * the existing shared components it uses. Using more shared components than one write
 * can link is refused (400) rather than reported.
 */
export async function flowGraph(workspaceId: string, data: Record<string, unknown>): Promise<GraphReport> {
  const check: GraphCheck = { problems: [], shared: new Map() };
  const components = (data.components as InlineComponent[] | null | undefined) ?? [];
  const names = new Set<string>();
  components.forEach((component, k) => {
    if (names.has(component.name)) check.problems.push(`components.${k}.name: Duplicate component name "${component.name}"`);
    names.add(component.name);
  });
  checkGraph(data as Graph, '', names, check);
  components.forEach((component, k) => checkGraph(component, `components.${k}.`, names, check));
  check.problems.push(...localCycles(components));
  const found = await checkShared(workspaceId, check);
  return { problems: check.problems, linked: [...found.keys()] };
}

/** Checks a shared component's graph (`selfId` when it exists already): every problem, and the other existing shared components it uses. */
async function componentGraph(workspaceId: string, data: Record<string, unknown>, selfId?: string): Promise<GraphReport> {
  const check: GraphCheck = { problems: [], shared: new Map() };
  checkGraph(data as Graph, '', null, check);
  const found = await checkShared(workspaceId, check, selfId);
  return { problems: check.problems, linked: [...found.keys()] };
}

/** Most shared components one run-time check reads, following components into the components they use. */
const MAX_COMPONENTS_CHECKED = 500;

/**
 * Every problem of a flow version as something that runs it sees it: the flow's own
 * graph, and that of each shared component it uses, directly or through others (a
 * component's problem as `<component ID>.<path>: issue`). Empty when it can run.
 */
export async function flowProblems(workspaceId: string, data: Record<string, unknown>): Promise<string[]> {
  const flow = await flowGraph(workspaceId, data);
  const problems = [...flow.problems];
  const queue = [...flow.linked];
  const seen = new Set(queue);
  for (let checked = 0; queue.length > 0 && checked < MAX_COMPONENTS_CHECKED; checked++) {
    const id = queue.shift()!;
    const item = await getComponentItem(workspaceId, id);
    if (!item) {
      problems.push(`${id}: No component with id "${id}"`);
      continue;
    }
    const report = await componentGraph(workspaceId, item.data, id);
    problems.push(...report.problems.map((problem) => `${id}.${problem}`));
    for (const next of report.linked) {
      if (!seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return problems;
}

/** A graph's data as stored: its problems in `validation` (the field is the server's; a request never sets it). */
export function withValidation<T extends Record<string, unknown>>(data: T, report: GraphReport): T & { validation: string[] } {
  return { ...data, validation: report.problems };
}

/** The data a graph check reads: without the stored `validation`. */
export function graphOf<T extends Record<string, unknown>>(data: T): Omit<T, 'validation'> {
  const { validation: _validation, ...graph } = data;
  return graph;
}

/** Inline components that contain themselves through local component nodes. */
function localCycles(components: InlineComponent[]): string[] {
  const byName = new Map(components.map((component) => [component.name, component]));
  const localRefs = (component: InlineComponent) =>
    nodesOf(component).flatMap((node, j) =>
      node.type === 'component' && node.component_type !== 'shared' && node.component_id && byName.has(node.component_id)
        ? [{ j, name: node.component_id }]
        : [],
    );
  /** A chain of names from `from` back to `target`, if there is one. */
  const chainTo = (from: string, target: string, seen: Set<string>): string[] | undefined => {
    if (from === target) return [from];
    if (seen.has(from)) return undefined;
    seen.add(from);
    for (const ref of localRefs(byName.get(from)!)) {
      const rest = chainTo(ref.name, target, seen);
      if (rest) return [from, ...rest];
    }
    return undefined;
  };
  const problems: string[] = [];
  components.forEach((component, k) => {
    for (const ref of localRefs(component)) {
      const chain = chainTo(ref.name, component.name, new Set());
      if (chain) {
        problems.push(
          `components.${k}.nodes.${ref.j}.component_id: Components cannot contain themselves (${[component.name, ...chain].map((n) => `"${n}"`).join(' → ')})`,
        );
      }
    }
  });
  return problems;
}

/**
 * Every shared component named must exist in this workspace (another workspace's is not
 * found); answers those that do, besides the component itself. More than one write can
 * link is a 400.
 */
async function checkShared(workspaceId: string, check: GraphCheck, selfId?: string): Promise<Map<string, ComponentItem>> {
  if (check.shared.size > MAX_SHARED_COMPONENTS) {
    throw badRequest(`nodes: Must use at most ${MAX_SHARED_COMPONENTS} shared components`);
  }
  const found = await readComponents(workspaceId, [...check.shared.keys()].filter((id) => id !== selfId));
  for (const [id, paths] of check.shared) {
    if (id === selfId) {
      for (const path of paths) check.problems.push(`${path}: Components cannot contain themselves (${id} → ${id})`);
    } else if (!found.has(id)) {
      for (const path of paths) check.problems.push(`${path}: No component with id "${id}"`);
    }
  }
  if (selfId !== undefined) await checkSharedCycles(workspaceId, check, found, selfId);
  return found;
}

/** A component being updated must not be reachable from the components it now uses. */
async function checkSharedCycles(
  workspaceId: string,
  check: GraphCheck,
  loaded: Map<string, ComponentItem>,
  selfId: string,
): Promise<void> {
  const queue = [...check.shared.keys()].filter((id) => id !== selfId && loaded.has(id)).map((id) => ({ id, chain: [id], origin: id }));
  const seen = new Set(queue.map((entry) => entry.id));
  const reported = new Set<string>();
  let reads = 0;
  while (queue.length > 0 && reads < 500) {
    const { id, chain, origin } = queue.shift()!;
    const item = loaded.get(id) ?? (await readComponents(workspaceId, [id])).get(id);
    reads += 1;
    if (!item) continue;
    for (const next of sharedComponentsOf(item.data)) {
      if (next === selfId && !reported.has(origin)) {
        reported.add(origin);
        for (const path of check.shared.get(origin) ?? []) {
          check.problems.push(`${path}: Components cannot contain themselves (${[selfId, ...chain, selfId].join(' → ')})`);
        }
      } else if (!seen.has(next)) {
        seen.add(next);
        queue.push({ id: next, chain: [...chain, next], origin });
      }
    }
  }
}

async function readComponents(workspaceId: string, ids: string[]): Promise<Map<string, ComponentItem>> {
  const pattern = idPattern('flowComponent');
  const items = await Promise.all(
    ids.filter((id) => pattern.test(id)).map((id) => getComponentItem(workspaceId, id)),
  );
  return new Map(items.filter((item) => item !== undefined).map((item) => [item.conversation_flow_component_id, item]));
}

/**
 * Transaction items that keep each used component in place for the write: fail when it
 * is gone, and bump its `link_writes` so a concurrent delete of it fails.
 */
export function linkItems(workspaceId: string, componentIds: Iterable<string>): TransactItem[] {
  return linkOps(workspaceId, componentIds);
}

const linkOps = (workspaceId: string, componentIds: Iterable<string>): TransactOp[] =>
  [...componentIds].map((id) => componentLinkOp(workspaceId, id));

/** Runs a component write; losing a race to another writer is a 409 the client can retry (as flows' writes). */
async function commitComponent(ops: TransactOp[]): Promise<void> {
  try {
    await table.transact(ops);
  } catch (error) {
    if (error instanceof TransactionCancelled) throw conflict('The resource was changed by another request; retry');
    throw error;
  }
}

// ---------------------------------------------------------------------------------------
// Shared components

function toComponent(item: ComponentItem, linkedFlows: string[]): FlowComponent {
  return {
    conversation_flow_component_id: item.conversation_flow_component_id,
    ...(item.data as Pick<FlowComponent, 'name' | 'nodes'>),
    // Components saved before drafts could be incomplete were checked whole: no problems.
    validation: (item.data.validation as string[] | undefined) ?? [],
    user_modified_timestamp: item.user_modified_timestamp,
    linked_conversation_flow_ids: linkedFlows,
  };
}

const getComponentItem = (workspaceId: string, componentId: string) => flowComponents.get(workspaceId, componentId);
const readComponent = (workspaceId: string, componentId: string) => flowComponents.mustGet(workspaceId, componentId);

/** Component ID → flows whose latest version uses it (what `linked_conversation_flow_ids` reports). */
async function flowLinks(workspaceId: string): Promise<Map<string, string[]>> {
  const heads = (await listHeads(workspaceId, 'conversation_flow')).sort(
    (a, b) => a.created_timestamp - b.created_timestamp || (a.id < b.id ? -1 : 1),
  );
  const links = new Map<string, string[]>();
  for (const head of heads) {
    for (const id of sharedComponentsOf(head.latest.data)) links.set(id, [...(links.get(id) ?? []), head.id]);
  }
  return links;
}

function assertSize(data: Record<string, unknown>): void {
  if (Buffer.byteLength(JSON.stringify(data), 'utf8') > MAX_DATA_BYTES) {
    throw badRequest(`Conversation flow component exceeds ${MAX_DATA_BYTES / 1000} KB`);
  }
}

export async function createComponent(
  workspaceId: string,
  input: CreateComponentInput,
  nowMs = Date.now(),
): Promise<FlowComponent> {
  const graph = withStartNode(definedFields(input) as Record<string, unknown> & Graph);
  await assertAppTools(workspaceId, flowAppToolRefs(graph));
  await assertTransferRefs(workspaceId, flowTransferRefs(graph));
  const report = await componentGraph(workspaceId, graph);
  const data = withValidation(graph, report);
  assertSize(data);
  const componentId = newId('flowComponent');
  const item: ComponentItem = {
    ...flowComponents.key(workspaceId, componentId),
    conversation_flow_component_id: componentId,
    workspace_id: workspaceId,
    created_timestamp: nowMs,
    user_modified_timestamp: nowMs,
    data,
  };
  await commitComponent([
    { Put: { Item: item, ConditionExpression: 'attribute_not_exists(pk)' } },
    ...linkOps(workspaceId, report.linked),
  ]);
  return toComponent(item, []);
}

export async function getComponent(workspaceId: string, componentId: string): Promise<FlowComponent> {
  const item = await readComponent(workspaceId, componentId);
  return toComponent(item, (await flowLinks(workspaceId)).get(componentId) ?? []);
}

export async function listComponents(
  workspaceId: string,
  options: { limit: number; pagination_key?: string; sort_order: 'ascending' | 'descending' },
): Promise<{ has_more: boolean; items: FlowComponent[]; pagination_key?: string }> {
  const [all, links] = await Promise.all([queryAll<ComponentItem>(flowComponentsOf(workspaceId)), flowLinks(workspaceId)]);
  all.sort(
    (a, b) =>
      a.created_timestamp - b.created_timestamp || (a.conversation_flow_component_id < b.conversation_flow_component_id ? -1 : 1),
  );
  if (options.sort_order === 'descending') all.reverse();
  let start = 0;
  if (options.pagination_key !== undefined) {
    const index = all.findIndex((item) => item.conversation_flow_component_id === options.pagination_key);
    if (index === -1) throw invalidPaginationKey();
    start = index + 1;
  }
  const page = all.slice(start, start + options.limit);
  const hasMore = start + options.limit < all.length;
  return {
    has_more: hasMore,
    items: page.map((item) => toComponent(item, links.get(item.conversation_flow_component_id) ?? [])),
    ...(hasMore ? { pagination_key: page.at(-1)!.conversation_flow_component_id } : {}),
  };
}

/**
 * Applies the given fields and checks the whole resulting component (a left-out start
 * node is the first node), storing its problems in `validation`.
 */
export async function updateComponent(
  workspaceId: string,
  componentId: string,
  input: UpdateComponentInput,
  nowMs = Date.now(),
): Promise<FlowComponent> {
  const item = await readComponent(workspaceId, componentId);
  const graph = withStartNode({ ...graphOf(item.data), ...definedFields(input) } as Record<string, unknown> & Graph);
  await assertAppTools(workspaceId, flowAppToolRefs(definedFields(input) as Record<string, unknown>));
  await assertTransferRefs(workspaceId, flowTransferRefs(definedFields(input) as Record<string, unknown>));
  const report = await componentGraph(workspaceId, graph, componentId);
  const data = withValidation(graph, report);
  assertSize(data);
  const updated: ComponentItem = { ...item, data, user_modified_timestamp: nowMs };
  await commitComponent([
    {
      Update: {
        Key: flowComponents.key(workspaceId, componentId),
        UpdateExpression: 'SET #data = :data, user_modified_timestamp = :now',
        ConditionExpression: 'user_modified_timestamp = :read',
        ExpressionAttributeNames: { '#data': 'data' },
        ExpressionAttributeValues: { ':data': data, ':now': nowMs, ':read': item.user_modified_timestamp },
      },
    },
    // Never itself: one transaction cannot write an item twice, and nothing else keeps it.
    ...linkOps(workspaceId, report.linked),
  ]);
  return toComponent(updated, (await flowLinks(workspaceId)).get(componentId) ?? []);
}

/**
 * Refused (409 naming them) while the latest version of a flow, or another shared
 * component, uses it; the delete is conditional on no reference having been written
 * since those were read.
 */
export async function deleteComponent(workspaceId: string, componentId: string): Promise<void> {
  const item = await readComponent(workspaceId, componentId);
  const [links, components] = await Promise.all([
    flowLinks(workspaceId),
    queryAll<ComponentItem>(flowComponentsOf(workspaceId)),
  ]);
  const users = [
    ...(links.get(componentId) ?? []).map((id) => `conversation flow ${id}`),
    ...components
      .filter((other) => other.conversation_flow_component_id !== componentId && sharedComponentsOf(other.data).has(componentId))
      .map((other) => `component ${other.conversation_flow_component_id}`),
  ];
  if (users.length > 0) {
    throw conflict(`Conversation flow component ${componentId} is used by ${users.join(', ')}; remove it from them first`);
  }
  await commitComponent([
    {
      Delete: {
        Key: flowComponents.key(workspaceId, componentId),
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(link_writes) OR link_writes = :seen)',
        ExpressionAttributeValues: { ':seen': item.link_writes ?? 0 },
      },
    },
  ]);
}
