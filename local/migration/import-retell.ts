import type Retell from 'retell-sdk';
import { toFile } from 'retell-sdk';
import { caller, clientFor, FatalError, messageOf, realSleep, statusOf, type Caller, type Sleep } from './client.ts';
import { readMapping, readState, removeState, writeMapping, writeState, type MappingEntry, type StateFile } from './files.ts';
import { covers, referencedIds, remapped, without } from './references.ts';
import { Progress, type ProgressStream, type Row } from './report.ts';

/*
 * `npm run cli -- import-retell`: reads an account through the compatible API (retell-sdk
 * pointed at Retell, or at another Parley) and writes it into a Parley workspace through the
 * same public API, so it works against a local or a deployed Parley alike (docs/migration.md).
 *
 * Order: an object is written only once everything it references exists in the target
 * (knowledge bases and shared components before the engines that name them, engines before
 * the agents that run them, agents before the flows whose transfer nodes name them, agents
 * before the numbers bound to them), so nothing is ever written pointing at an object that
 * is not there. Idempotent by `imported_from`, the source ID Parley keeps on each object it
 * imports: a rerun finds what an earlier run made, updates what changed at the source and
 * creates only what is new.
 */

export const KINDS = ['knowledge-bases', 'components', 'llms', 'flows', 'agents', 'chat-agents', 'numbers', 'tests'] as const;
export type Kind = (typeof KINDS)[number];

export interface ImportOptions {
  from: { url: string; key: string };
  to: { url: string; key: string };
  only?: readonly Kind[];
  dryRun?: boolean;
  /** Files `<prefix>.json`, `<prefix>.csv` and, during a run, `<prefix>.state.json`. */
  mappingPrefix: string;
  sleep?: Sleep;
  now?: () => number;
  /** Progress and notes (stderr); the progress line only when it is a terminal. */
  stderr?: ProgressStream;
  /** Downloads a knowledge base's text or file source by its URL. */
  download?: (url: string) => Promise<Buffer>;
  /** Called before each write to the target with the number of writes so far including this one (a test interrupts a run here). */
  beforeWrite?: (count: number, what: string) => void | Promise<void>;
  /** Called once the source has been read, before anything is written. */
  afterRead?: () => void | Promise<void>;
}

export interface ImportResult {
  rows: Row[];
  /** Dry run: what would be done, one line an object. */
  plan: string[];
  mapping: MappingEntry[];
  /** 1 when anything failed. */
  exitCode: 0 | 1;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- objects of either API are read as plain JSON
type Json = Record<string, any>;

/** Row kinds, as the table and the mapping name them. */
const LABEL = {
  'knowledge-bases': 'knowledge base',
  components: 'component',
  llms: 'llm',
  flows: 'flow',
  agents: 'agent',
  'chat-agents': 'chat agent',
  numbers: 'number',
  tests: 'test case',
} as const satisfies Record<Kind, string>;

/** Fields a response carries that describe the stored object rather than configure it. */
const READ_ONLY = {
  llm: ['llm_id', 'version', 'is_published', 'last_modification_timestamp', 'imported_from'],
  flow: ['conversation_flow_id', 'version', 'is_published', 'last_modification_timestamp', 'validation', 'imported_from'],
  component: ['conversation_flow_component_id', 'user_modified_timestamp', 'linked_conversation_flow_ids', 'validation', 'imported_from'],
  agent: [
    'agent_id', 'version', 'is_published', 'last_modification_timestamp', 'base_version', 'published_timestamp',
    'user_modified_timestamp', 'channel', 'response_engine', 'imported_from',
  ],
  test: ['test_case_definition_id', 'type', 'creation_timestamp', 'user_modified_timestamp', 'imported_from'],
};

interface AgentSource {
  kind: 'agents' | 'chat-agents';
  id: string;
  /** Every version, oldest first. */
  versions: Json[];
  tags: Record<string, { version?: number; dynamic_variables?: Record<string, string> }>;
}

interface Snapshot {
  kbs: Json[];
  components: Json[];
  llms: Json[];
  flows: Json[];
  agents: AgentSource[];
  numbers: Json[];
  tests: Json[];
  /** `--only`: IDs of the source's objects of kinds this run does not move, with their row kind. */
  leftOut: Map<string, string>;
}

interface Item {
  kind: Kind;
  id: string;
  name: string;
  /** Source IDs of other objects of this run it references. */
  deps: Set<string>;
  run: () => Promise<Row>;
}

export async function importRetell(options: ImportOptions): Promise<ImportResult> {
  const selected = new Set<Kind>(options.only?.length ? options.only : KINDS);
  const now = options.now ?? Date.now;
  const stderr = options.stderr ?? { isTTY: false, write: () => true };
  const source = clientFor(options.from.url, options.from.key);
  const target = clientFor(options.to.url, options.to.key);
  const call = caller({
    sleep: options.sleep ?? realSleep,
    now,
    urls: { source: options.from.url, target: options.to.url },
    onWait: (ms, end) => stderr.write(`The ${end} is rate limiting (429): waiting ${Math.ceil(ms / 1000)} s as its Retry-After asks\n`),
  });
  const download = options.download ?? defaultDownload;
  const dryRun = options.dryRun ?? false;
  const plan: string[] = [];

  // Both keys are tried before anything else: a wrong key stops the run with nothing written.
  await call('source', () => source.llm.list({ limit: 1 }));
  await call('target', () => target.llm.list({ limit: 1 }));

  const snapshot = await readSource(source, call, selected);
  await options.afterRead?.();

  /** Source ID → Parley ID: what earlier runs made (found by imported_from), then what this run makes. */
  const ids = new Map<string, string>();
  const index = await readTarget(target, call);
  for (const [sourceId, object] of index.byImport) ids.set(sourceId, object.id);

  const previous = readMapping(options.mappingPrefix);
  const sameEnds = (file: { source_url: string; target_url: string } | undefined) =>
    file?.source_url === options.from.url && file.target_url === options.to.url;
  const state: StateFile =
    !dryRun && sameEnds(readState(options.mappingPrefix))
      ? readState(options.mappingPrefix)!
      : { source_url: options.from.url, target_url: options.to.url, done: {}, mapping: [] };
  const mapping = new Map<string, MappingEntry>();
  for (const entry of sameEnds(previous) ? previous!.objects : []) mapping.set(entry.source_id, entry);
  for (const entry of state.mapping) {
    mapping.set(entry.source_id, entry);
    ids.set(entry.source_id, entry.parley_id);
  }

  let writes = 0;
  /** One write to the target; never reached in a dry run. */
  const write = async (what: string, request: () => PromiseLike<unknown>): Promise<Json> => {
    if (dryRun) throw new Error(`dry run reached a write (${what})`);
    writes += 1;
    try {
      await options.beforeWrite?.(writes, what);
    } catch (error) {
      throw new FatalError(`interrupted before ${what}: ${messageOf(error)}`);
    }
    return call('target', request);
  };

  const rows: Row[] = [];
  const remember = (entry: MappingEntry) => {
    mapping.set(entry.source_id, entry);
    ids.set(entry.source_id, entry.parley_id);
  };

  // ----------------------------------------------------------------------------------
  // Voices: a voice the target does not have (cloned at the source, or added from a
  // library) cannot be copied; the closest catalogue voice stands in, named in the report.
  const targetVoices = selected.has('agents') && snapshot.agents.some((a) => a.kind === 'agents')
    ? ((await call('target', () => target.voice.list())) as Json[])
    : [];
  const voiceChoices = new Map<string, string>();
  async function voiceFor(voiceId: unknown): Promise<unknown> {
    if (typeof voiceId !== 'string' || targetVoices.some((voice) => voice.voice_id === voiceId)) return voiceId;
    const known = voiceChoices.get(voiceId);
    if (known) return known;
    let original: Json | undefined;
    try {
      original = (await call('source', () => source.voice.retrieve(voiceId))) as Json;
    } catch (error) {
      if (error instanceof FatalError) throw error;
    }
    const chosen = closestVoice(original, targetVoices);
    voiceChoices.set(voiceId, chosen.voice_id);
    rows.push({
      kind: 'voice',
      name: String(original?.voice_name ?? voiceId),
      source_id: voiceId,
      parley_id: chosen.voice_id,
      status: 'not movable',
      detail: `not in Parley's catalogue (a cloned or library voice): agents use ${chosen.voice_name} (${chosen.voice_id}) instead; re-clone it (POST /clone-voice) and set voice_id to keep the original voice`,
    });
    return chosen.voice_id;
  }

  // ----------------------------------------------------------------------------------
  // Reading the source's engines at the versions agents run, once each.
  const engineVersions = new Map<string, Promise<Json>>();
  const sourceEngine = (engine: Json): Promise<Json> | undefined => {
    const ref = engineRef(engine);
    if (!ref) return undefined;
    const key = `${ref.id}@${engine.version ?? 'latest'}`;
    if (!engineVersions.has(key)) {
      const query = typeof engine.version === 'number' ? { version: engine.version } : {};
      engineVersions.set(
        key,
        call('source', () => (ref.kind === 'llm' ? source.llm.retrieve(ref.id, query) : source.conversationFlow.retrieve(ref.id, query))) as Promise<Json>,
      );
    }
    return engineVersions.get(key)!;
  };

  // The body Parley is sent for each kind: the source object without what describes the stored
  // object, its references rewritten, and the source ID kept.
  const llmBody = (llm: Json, sourceId: string) => ({ ...remapped(without(llm, READ_ONLY.llm), ids), imported_from: sourceId });
  const flowBody = (flow: Json, sourceId: string) => ({ ...remapped(without(flow, READ_ONLY.flow), ids), imported_from: sourceId });
  const engineBody = (engine: Json, content: Json) =>
    engineRef(engine)!.kind === 'llm' ? llmBody(content, engineRef(engine)!.id) : flowBody(content, engineRef(engine)!.id);
  const targetEngineApi = (kind: 'llm' | 'flow') => ({
    retrieve: (id: string, version?: number) =>
      call('target', () => (kind === 'llm' ? target.llm.retrieve(id, version === undefined ? {} : { version }) : target.conversationFlow.retrieve(id, version === undefined ? {} : { version }))) as Promise<Json>,
    update: (id: string, body: Json, version?: number) =>
      write(`update ${kind} ${id}`, () =>
        kind === 'llm'
          ? target.llm.update(id, { ...body, ...(version === undefined ? {} : { version }) } as never)
          : target.conversationFlow.update(id, { ...body, ...(version === undefined ? {} : { version }) } as never),
      ) as Promise<Json>,
  });

  /** Engines some agent of this run runs: their versions move with those agents, version by version. */
  const enginesOfAgents = new Set(
    snapshot.agents.flatMap((agent) => agent.versions.map((version) => engineRef(version.response_engine ?? {})?.id).filter((id): id is string => Boolean(id))),
  );

  // ----------------------------------------------------------------------------------
  // Handlers, one per kind. Each answers the row of its object; a refusal of the target
  // becomes a failed row (the run goes on), a fatal problem stops the run.

  async function importKnowledgeBase(kb: Json): Promise<Row[]> {
    const sourceId = kb.knowledge_base_id as string;
    const row: Row = { kind: LABEL['knowledge-bases'], name: kb.knowledge_base_name, source_id: sourceId, status: 'moved' };
    const sources = (kb.knowledge_base_sources ?? []) as Json[];
    const existing = index.byImport.get(sourceId)?.object;
    const have = (existing?.knowledge_base_sources ?? []) as Json[];
    const missing = sources.filter((s) =>
      s.type === 'text' ? !have.some((h) => h.type === 'text' && h.title === s.title)
        : s.type === 'url' ? !have.some((h) => h.type === 'url' && h.url === s.url)
          : !have.some((h) => h.type === 'document' && h.filename === s.filename),
    );
    // A file the source offers no download for needs a person, not a rerun: a row of its own, not a failure.
    const undownloadable = missing.filter((s) => s.type !== 'text' && s.type !== 'url' && typeof s.file_url !== 'string');
    const notMovable: Row[] = undownloadable.map((s) => ({
      kind: 'file',
      name: String(s.filename ?? s.source_id),
      source_id: sourceId,
      status: 'not movable',
      detail: `file of knowledge base "${kb.knowledge_base_name}": the source offers no download; add it with add-knowledge-base-sources`,
    }));
    const movable = missing.filter((s) => !undownloadable.includes(s));
    const skippedNotes: string[] = [];
    const texts: { title: string; text: string }[] = [];
    const urls: string[] = [];
    const files: File[] = [];
    if (!dryRun) {
      for (const s of movable) {
        if (s.type === 'url') urls.push(s.url);
        else if (s.type === 'text') {
          const text = await sourceText(kb, s);
          if (text === undefined) skippedNotes.push(`text "${s.title}" could not be read from the source`);
          else texts.push({ title: s.title, text });
        } else {
          try {
            files.push(await toFile(await download(s.file_url), s.filename));
          } catch (error) {
            skippedNotes.push(`file "${s.filename}" could not be downloaded (${messageOf(error)}): add it by hand`);
          }
        }
      }
    }
    const sourcesBody = {
      ...(texts.length ? { knowledge_base_texts: texts } : {}),
      ...(urls.length ? { knowledge_base_urls: urls } : {}),
      ...(files.length ? { knowledge_base_files: files } : {}),
    };
    if (!existing) {
      if (dryRun) {
        ids.set(sourceId, '(new knowledge base)');
        return [planned(row, `create knowledge base "${kb.knowledge_base_name}" with ${sources.length - undownloadable.length} sources`), ...notMovable];
      }
      const created = (await write(`create knowledge base ${sourceId}`, () =>
        target.knowledgeBase.create({
          knowledge_base_name: kb.knowledge_base_name,
          ...(kb.enable_auto_refresh !== undefined ? { enable_auto_refresh: kb.enable_auto_refresh } : {}),
          ...(kb.max_chunk_size !== undefined ? { max_chunk_size: kb.max_chunk_size } : {}),
          ...(kb.min_chunk_size !== undefined ? { min_chunk_size: kb.min_chunk_size } : {}),
          imported_from: sourceId,
          ...sourcesBody,
        } as never),
      )) as Json;
      row.parley_id = created.knowledge_base_id;
    } else {
      row.parley_id = existing.knowledge_base_id;
      if (!movable.length) return [{ ...row, status: 'skipped', detail: 'unchanged' }, ...notMovable];
      if (dryRun) return [planned({ ...row, status: 'updated' }, `add ${movable.length} sources to knowledge base "${kb.knowledge_base_name}"`), ...notMovable];
      if (Object.keys(sourcesBody).length) {
        await write(`add sources to ${row.parley_id}`, () => target.knowledgeBase.addSources(row.parley_id!, sourcesBody as never));
      }
      row.status = 'updated';
      row.detail = `added ${Object.keys(sourcesBody).length ? texts.length + urls.length + files.length : 0} sources`;
    }
    remember({ kind: row.kind, name: row.name, source_id: sourceId, parley_id: row.parley_id! });
    if (skippedNotes.length) return [{ ...row, status: 'failed', detail: [row.detail, ...skippedNotes].filter(Boolean).join('; ') }, ...notMovable];
    return [row, ...notMovable];
  }

  /** A text source's text: its content_url (Retell), else Parley's source-content endpoint. */
  async function sourceText(kb: Json, s: Json): Promise<string | undefined> {
    if (typeof s.content_url === 'string') {
      try {
        return (await download(s.content_url)).toString('utf8');
      } catch {
        // Falls through to the endpoint.
      }
    }
    try {
      const content = (await call('source', () => source.get(`/get-knowledge-base-source-content/${kb.knowledge_base_id}/${s.source_id}`))) as Json;
      return typeof content.content === 'string' ? content.content : undefined;
    } catch (error) {
      if (error instanceof FatalError) throw error;
      return undefined;
    }
  }

  async function importComponent(component: Json): Promise<Row> {
    const sourceId = component.conversation_flow_component_id as string;
    const body = { ...remapped(without(component, READ_ONLY.component), ids), imported_from: sourceId };
    return createOrUpdate({
      kind: LABEL.components,
      name: component.name,
      sourceId,
      body,
      existing: index.byImport.get(sourceId)?.object,
      idOf: (object) => object.conversation_flow_component_id,
      create: () => target.conversationFlowComponent.create(body as never),
      update: (id) => target.conversationFlowComponent.update(id, body as never),
    });
  }

  async function importEngine(kind: 'llms' | 'flows', engine: Json): Promise<Row> {
    const llm = kind === 'llms';
    const sourceId = (llm ? engine.llm_id : engine.conversation_flow_id) as string;
    const body = llm ? llmBody(engine, sourceId) : flowBody(engine, sourceId);
    const existing = index.byImport.get(sourceId)?.object;
    const name = engineName(sourceId, snapshot);
    // An engine an agent runs moves version by version with that agent; here it is only made to exist.
    const withAgents = enginesOfAgents.has(sourceId) && (selected.has('agents') || selected.has('chat-agents'));
    if (existing && withAgents) {
      return { kind: LABEL[kind], name, source_id: sourceId, parley_id: idOfEngine(existing), status: 'skipped', detail: 'its versions move with the agents that run it' };
    }
    return createOrUpdate({
      kind: LABEL[kind],
      name,
      sourceId,
      body,
      existing,
      idOf: idOfEngine,
      create: () => (llm ? target.llm.create(body as never) : target.conversationFlow.create(body as never)),
      update: (id) => (llm ? target.llm.update(id, body as never) : target.conversationFlow.update(id, body as never)),
    });
  }

  async function createOrUpdate(spec: {
    kind: string;
    name: string;
    sourceId: string;
    body: Json;
    existing: Json | undefined;
    idOf: (object: Json) => string;
    create: () => PromiseLike<unknown>;
    update: (id: string) => PromiseLike<unknown>;
  }): Promise<Row> {
    const row: Row = { kind: spec.kind, name: spec.name, source_id: spec.sourceId, status: 'moved' };
    if (!spec.existing) {
      if (dryRun) {
        ids.set(spec.sourceId, `(new ${spec.kind})`);
        return planned(row, `create ${spec.kind} ${spec.name}`);
      }
      const created = (await write(`create ${spec.kind} ${spec.sourceId}`, spec.create)) as Json;
      row.parley_id = spec.idOf(created);
    } else {
      row.parley_id = spec.idOf(spec.existing);
      const changed = changedFields(spec.existing, spec.body);
      if (!changed.length) {
        row.status = 'skipped';
        row.detail = 'unchanged';
      } else {
        row.status = 'updated';
        row.detail = `changed: ${changed.join(', ')}`;
        if (dryRun) return planned(row, `update ${spec.kind} ${spec.name} (${changed.join(', ')})`);
        await write(`update ${spec.kind} ${row.parley_id}`, () => spec.update(row.parley_id!));
      }
    }
    remember({ kind: spec.kind, name: spec.name, source_id: spec.sourceId, parley_id: row.parley_id! });
    return row;
  }

  /**
   * A voice or chat agent, version by version: each published version of the source, then
   * its latest draft, is written as a draft of the target (with the engine version it runs
   * written beside it) and published when the source's is. A rerun finds the versions an
   * earlier run published (the n-th published version of each side correspond) and writes
   * only the rest, and brings the latest draft up to date.
   */
  async function importAgent(agent: AgentSource): Promise<Row> {
    const voice = agent.kind === 'agents';
    const api = voice
      ? {
          create: (body: Json) => target.agent.create(body as never),
          update: (id: string, body: Json) => target.agent.update(id, body as never),
          retrieve: (id: string) => target.agent.retrieve(id),
          versions: (id: string) => target.agent.getVersions(id),
          publish: (id: string, body: Json) => target.agent.publish(id, body as never),
        }
      : {
          create: (body: Json) => target.chatAgent.create(body as never),
          update: (id: string, body: Json) => target.chatAgent.update(id, body as never),
          retrieve: (id: string) => target.chatAgent.retrieve(id),
          versions: (id: string) => target.chatAgent.getVersions(id),
          publish: (id: string, body: Json) => target.chatAgent.publish(id, body as never),
        };
    const latest = agent.versions.at(-1)!;
    const row: Row = { kind: LABEL[agent.kind], name: String(latest.agent_name ?? agent.id), source_id: agent.id, status: 'moved' };
    const sequence = agent.versions.filter((version) => version.is_published);
    if (!latest.is_published) sequence.push(latest);
    const existing = index.byImport.get(agent.id)?.object;
    let targetId: string | undefined = existing?.agent_id;
    const published = targetId ? ((await call('target', () => api.versions(targetId!))) as Json[]).filter((v) => v.is_published).sort(byVersion) : [];
    const versionMap: Record<string, number> = {};
    const changes = new Set<string>();
    let publishedSeen = 0;
    const plannedSteps: string[] = [];

    for (const sourceVersion of sequence) {
      if (sourceVersion.is_published) {
        const counterpart = published[publishedSeen++];
        if (counterpart) {
          versionMap[sourceVersion.version] = counterpart.version;
          continue;
        }
      }
      const body: Json = remapped(without(sourceVersion, READ_ONLY.agent), ids);
      body.imported_from = agent.id;
      if (voice) {
        body.voice_id = await voiceFor(body.voice_id);
        if (Array.isArray(body.fallback_voice_ids)) body.fallback_voice_ids = await Promise.all(body.fallback_voice_ids.map(voiceFor));
      }
      const engine = (sourceVersion.response_engine ?? {}) as Json;
      const ref = engineRef(engine);
      const mappedEngine: Json = { ...remapped(engine, ids) };
      delete mappedEngine.version;
      if (ref && !ids.has(ref.id)) throw new Error(`its ${ref.kind === 'llm' ? 'Retell LLM' : 'conversation flow'} ${ref.id} was not imported`);
      const content = ref ? engineBody(engine, await sourceEngine(engine)!) : undefined;
      const engines = ref ? targetEngineApi(ref.kind) : undefined;
      const targetEngineId = ref ? ids.get(ref.id)! : undefined;

      if (dryRun) {
        plannedSteps.push(`${sourceVersion.is_published ? 'publish' : 'draft'} ${sourceVersion.version}`);
        continue;
      }

      /** The engine's latest version holding `content` (edited or a new draft when it differs): its version number. */
      const engineAtLatest = async (): Promise<number | undefined> => {
        if (!engines || !content) return undefined;
        const current = await engines.retrieve(targetEngineId!);
        if (covers(current, content)) return current.version as number;
        return ((await engines.update(targetEngineId!, content)) as Json).version as number;
      };

      let current: Json;
      if (!targetId) {
        const version = await engineAtLatest();
        current = (await write(`create ${row.kind} ${agent.id}`, () =>
          api.create({ ...body, response_engine: { ...mappedEngine, ...(version === undefined ? {} : { version }) } }),
        )) as Json;
        targetId = current.agent_id as string;
      } else {
        current = (await call('target', () => api.retrieve(targetId!))) as Json;
        const engineMoved = engineRef(current.response_engine ?? {})?.id !== targetEngineId || (!ref && !covers(current.response_engine, mappedEngine));
        const changed = changedFields(current, body);
        if (changed.length || engineMoved || current.is_published) {
          const update: Json = { ...body };
          if (engineMoved) {
            const version = await engineAtLatest();
            update.response_engine = { ...mappedEngine, ...(version === undefined ? {} : { version }) };
            changes.add('response_engine');
          }
          for (const field of changed) changes.add(field);
          current = (await write(`update ${row.kind} ${targetId}`, () => api.update(targetId!, update))) as Json;
        }
        if (engines && content && !engineMoved) {
          const pinned = current.response_engine?.version as number | undefined;
          const engineNow = await engines.retrieve(targetEngineId!, pinned);
          const engineChanged = changedFields(engineNow, content);
          if (engineChanged.length) {
            await engines.update(targetEngineId!, content, pinned);
            for (const field of engineChanged) changes.add(`engine ${field}`);
          }
        }
      }
      if (sourceVersion.is_published) {
        await write(`publish ${row.kind} ${targetId} version ${current.version}`, () =>
          api.publish(targetId!, {
            version: current.version,
            ...(sourceVersion.version_title ? { version_title: sourceVersion.version_title } : {}),
            ...(sourceVersion.version_description ? { version_description: sourceVersion.version_description } : {}),
          }),
        );
        changes.add(`published version ${sourceVersion.version}`);
      }
      versionMap[sourceVersion.version] = current.version as number;
    }

    if (dryRun) {
      if (!existing) {
        ids.set(agent.id, `(new ${row.kind})`);
        return planned(row, `create ${row.kind} ${row.name} (${plannedSteps.join(', ')}${tagNote(agent)})`);
      }
      row.parley_id = existing.agent_id;
      return planned({ ...row, status: 'updated' }, `check ${row.kind} ${row.name} for changes (${sequence.length} versions${tagNote(agent)})`);
    }
    row.parley_id = targetId!;

    // Environment tags (voice agents), pointed at the corresponding versions.
    const tagProblems: string[] = [];
    if (voice && Object.keys(agent.tags).length) {
      const have = (await call('target', () => target.get(`/agents/${targetId}/tags`))) as Json[];
      for (const [name, tag] of Object.entries(agent.tags)) {
        const version = typeof tag.version === 'number' ? versionMap[tag.version] : undefined;
        if (version === undefined) {
          tagProblems.push(`tag "${name}" names version ${tag.version ?? '?'}, which is neither published nor the latest draft`);
          continue;
        }
        const wanted = { version, variables: tag.dynamic_variables ?? {} };
        const found = have.find((t) => t.name === name);
        if (!found) {
          await write(`tag ${targetId} ${name}`, () => target.post(`/agents/${targetId}/tags`, { body: { name, ...wanted } }));
          changes.add(`tag ${name}`);
        } else if (!covers(found, wanted)) {
          await write(`tag ${targetId} ${name}`, () => target.patch(`/agents/${targetId}/tags/${encodeURIComponent(name)}`, { body: wanted }));
          changes.add(`tag ${name}`);
        }
      }
    }

    remember({ kind: row.kind, name: row.name, source_id: agent.id, parley_id: targetId!, versions: versionMap });
    const versionsNote = `versions ${Object.entries(versionMap).map(([from, to]) => (from === String(to) ? from : `${from}→${to}`)).join(', ')}`;
    if (existing) {
      row.status = changes.size ? 'updated' : 'skipped';
      row.detail = changes.size ? `changed: ${[...changes].join(', ')}` : 'unchanged';
    } else {
      row.detail = `${versionsNote}${tagNote(agent)}`;
    }
    if (tagProblems.length) return { ...row, status: 'failed', detail: [row.detail, ...tagProblems].join('; ') };
    return row;
  }

  async function importNumber(number: Json): Promise<Row[]> {
    const phone = number.phone_number as string;
    const row: Row = { kind: LABEL.numbers, name: String(number.nickname ?? phone), source_id: phone, status: 'moved' };
    if (number.phone_number_type !== 'custom') {
      return [{
        ...row,
        status: 'not movable',
        detail: "bought on the source's carrier account: port it to a carrier of yours and import it over SIP (import-phone-number), or buy a number in Parley, then bind it",
      }];
    }
    const trunk = (number.sip_outbound_trunk_config ?? {}) as Json;
    const settings: Json = without(
      {
        nickname: number.nickname,
        inbound_webhook_url: number.inbound_webhook_url,
        allowed_inbound_country_list: number.allowed_inbound_country_list,
        allowed_outbound_country_list: number.allowed_outbound_country_list,
        fallback_number: number.fallback_number,
      },
      [],
    );
    for (const [key, value] of Object.entries(settings)) if (value === null) delete settings[key];
    const bindings: Json = {};
    const unmapped: string[] = [];
    for (const field of ['inbound_agents', 'outbound_agents', 'inbound_sms_agents', 'outbound_sms_agents'] as const) {
      const list = number[field] as Json[] | null | undefined;
      if (!Array.isArray(list)) continue;
      bindings[field] = list.map((entry) => {
        if (!ids.has(entry.agent_id)) unmapped.push(entry.agent_id);
        return without({ agent_id: ids.get(entry.agent_id) ?? entry.agent_id, weight: entry.weight, agent_version: entry.agent_version }, []);
      });
    }
    for (const field of ['inbound_agent_version', 'outbound_agent_version'] as const) {
      if (number[field] !== null && number[field] !== undefined) bindings[field] = number[field];
    }
    if (!('inbound_agents' in bindings) && typeof number.inbound_agent_id === 'string') {
      if (!ids.has(number.inbound_agent_id)) unmapped.push(number.inbound_agent_id);
      bindings.inbound_agents = [{ agent_id: ids.get(number.inbound_agent_id) ?? number.inbound_agent_id, weight: 1 }];
    }
    if (!('outbound_agents' in bindings) && typeof number.outbound_agent_id === 'string') {
      if (!ids.has(number.outbound_agent_id)) unmapped.push(number.outbound_agent_id);
      bindings.outbound_agents = [{ agent_id: ids.get(number.outbound_agent_id) ?? number.outbound_agent_id, weight: 1 }];
    }
    const secretRow: Row[] = trunk.auth_username
      ? [{
          kind: 'secret',
          name: `SIP password of ${phone}`,
          source_id: phone,
          parley_id: phone,
          status: 'not movable',
          detail: 'the source never returns SIP trunk passwords: set it with update-phone-number auth_password',
        }]
      : [];
    let existing: Json | undefined;
    try {
      existing = (await call('target', () => target.phoneNumber.retrieve(phone))) as Json;
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
    }
    if (dryRun) {
      return [planned({ ...row, parley_id: phone, status: existing ? 'updated' : 'moved' }, `${existing ? 'check' : 'import'} number ${phone} over SIP, then bind it`), ...secretRow];
    }
    row.parley_id = phone;
    const changes: string[] = [];
    if (!existing) {
      // Created unbound, then bound: a number never points at an agent that is not there.
      existing = (await write(`import number ${phone}`, () =>
        target.phoneNumber.import({
          phone_number: phone,
          termination_uri: trunk.termination_uri,
          ...(trunk.auth_username ? { sip_trunk_auth_username: trunk.auth_username } : {}),
          ...(trunk.transport ? { transport: trunk.transport } : {}),
          ...settings,
        } as never),
      )) as Json;
    } else {
      const changed = changedFields(existing, settings);
      if (changed.length) {
        existing = (await write(`update number ${phone}`, () => target.phoneNumber.update(phone, settings as never))) as Json;
        changes.push(...changed);
      }
    }
    remember({ kind: row.kind, name: row.name, source_id: phone, parley_id: phone });
    if (unmapped.length) {
      return [{ ...row, status: 'failed', detail: `imported but not bound: agent ${[...new Set(unmapped)].join(', ')} was not imported; bind it by hand (update-phone-number)` }, ...secretRow];
    }
    const boundChanges = changedFields(existing, bindings);
    if (boundChanges.length) {
      await write(`bind number ${phone}`, () => target.phoneNumber.update(phone, bindings as never));
      changes.push(...boundChanges);
    }
    if (!index.numbers.has(phone)) return [row, ...secretRow];
    return [{ ...row, ...(changes.length ? { status: 'updated', detail: `changed: ${changes.join(', ')}` } : { status: 'skipped', detail: 'unchanged' }) }, ...secretRow];
  }

  async function importTest(test: Json): Promise<Row> {
    const sourceId = test.test_case_definition_id as string;
    const body = { ...remapped(without(test, READ_ONLY.test), ids), imported_from: sourceId };
    const ref = engineRef(test.response_engine ?? {});
    if (ref && !ids.has(ref.id)) throw new Error(`its ${ref.kind === 'llm' ? 'Retell LLM' : 'conversation flow'} ${ref.id} was not imported`);
    return createOrUpdate({
      kind: LABEL.tests,
      name: test.name,
      sourceId,
      body,
      existing: index.byImport.get(sourceId)?.object,
      idOf: (object) => object.test_case_definition_id,
      create: () => target.tests.createTestCaseDefinition(body as never),
      update: (id) => target.tests.updateTestCaseDefinition(id, body as never),
    });
  }

  // ----------------------------------------------------------------------------------
  // The run: every object once, each after what it references.
  const items: Item[] = [];
  const add = (kind: Kind, id: string, name: string, object: unknown, run: () => Promise<Row | Row[]>) =>
    items.push({ kind, id, name, deps: new Set(), run: run as () => Promise<Row>, ...{ object } });
  for (const kb of snapshot.kbs) add('knowledge-bases', kb.knowledge_base_id, kb.knowledge_base_name, kb, () => importKnowledgeBase(kb));
  for (const c of snapshot.components) add('components', c.conversation_flow_component_id, c.name, without(c, READ_ONLY.component), () => importComponent(c));
  for (const llm of snapshot.llms) add('llms', llm.llm_id, engineName(llm.llm_id, snapshot), without(llm, READ_ONLY.llm), () => importEngine('llms', llm));
  for (const flow of snapshot.flows) add('flows', flow.conversation_flow_id, engineName(flow.conversation_flow_id, snapshot), without(flow, READ_ONLY.flow), () => importEngine('flows', flow));
  for (const agent of snapshot.agents) add(agent.kind, agent.id, String(agent.versions.at(-1)?.agent_name ?? agent.id), agent.versions, () => importAgent(agent));
  for (const number of snapshot.numbers) add('numbers', number.phone_number, number.nickname ?? number.phone_number, number, () => importNumber(number));
  for (const test of snapshot.tests) add('tests', test.test_case_definition_id, test.name, test, () => importTest(test));
  const inRun = new Set(items.map((item) => item.id));
  const leftOutIds = new Set([...snapshot.leftOut.keys()].filter((id) => !inRun.has(id)));
  for (const item of items) {
    for (const id of referencedIds((item as unknown as { object: unknown }).object, inRun)) if (id !== item.id) item.deps.add(id);
  }

  const progress = new Progress(stderr, items.length);
  const finished = new Set<string>();
  const failed = new Set<string>();
  let pending = items;
  let done = 0;
  while (pending.length) {
    const ready = pending.filter((item) => [...item.deps].every((id) => finished.has(id)));
    if (!ready.length) {
      for (const item of pending) {
        const blocking = [...item.deps].filter((id) => !finished.has(id));
        rows.push({
          kind: LABEL[item.kind],
          name: item.name,
          source_id: item.id,
          status: 'failed',
          detail: `references ${blocking.join(', ')}, which ${blocking.length === 1 ? 'refers' : 'refer'} back to it or could not be imported; import it, then set that reference by hand`,
        });
      }
      break;
    }
    for (const item of ready) {
      progress.step(done, `${LABEL[item.kind]} ${item.name}`);
      const key = `${item.kind}:${item.id}`;
      const blockedBy = [...item.deps].filter((id) => failed.has(id));
      // A reference to an object this run leaves out (--only) that no earlier run moved would
      // dangle in the target: the object is not written, and the row says what to move first.
      const leftOut = [...referencedIds((item as unknown as { object: unknown }).object, leftOutIds)].filter((id) => !ids.has(id));
      let produced: Row[];
      if (state.done[key]) {
        produced = [state.done[key]!];
      } else if (leftOut.length) {
        produced = [{
          kind: LABEL[item.kind],
          name: item.name,
          source_id: item.id,
          status: 'failed',
          detail: `references ${leftOut.map((id) => `${snapshot.leftOut.get(id)} ${id}`).join(', ')}, which this run leaves out (--only) and no earlier run moved: move ${leftOut.length === 1 ? 'it' : 'them'} first (or in the same run)`,
        }];
      } else if (blockedBy.length) {
        produced = [{ kind: LABEL[item.kind], name: item.name, source_id: item.id, status: 'failed', detail: `references ${blockedBy.join(', ')}, which failed` }];
      } else {
        try {
          const result = await item.run();
          produced = Array.isArray(result) ? result : [result];
        } catch (error) {
          if (error instanceof FatalError) {
            progress.end();
            throw error;
          }
          const status = statusOf(error);
          produced = [{
            kind: LABEL[item.kind],
            name: item.name,
            source_id: item.id,
            status: 'failed',
            detail: status ? `Parley refused it: ${status} ${messageOf(error)}` : messageOf(error),
          }];
        }
        if (!dryRun && produced[0]!.status !== 'failed') {
          state.done[key] = produced[0]!;
          state.mapping = [...mapping.values()];
          writeState(options.mappingPrefix, state);
        }
      }
      rows.push(...produced);
      if (produced[0]!.status === 'failed' && !produced[0]!.parley_id) failed.add(item.id);
      finished.add(item.id);
      done += 1;
    }
    pending = pending.filter((item) => !finished.has(item.id));
  }
  progress.end();

  const entries = [...mapping.values()];
  if (!dryRun) {
    writeMapping(options.mappingPrefix, { source_url: options.from.url, target_url: options.to.url, objects: entries });
    removeState(options.mappingPrefix);
  }
  return { rows, plan, mapping: entries, exitCode: rows.some((row) => row.status === 'failed') ? 1 : 0 };

  function planned(row: Row, line: string): Row {
    plan.push(line);
    return row;
  }
}

// ------------------------------------------------------------------------------------
// Reading both ends.

async function pages<T>(fetchPage: (paginationKey?: string) => Promise<{ items: T[]; has_more?: boolean; pagination_key?: string }>): Promise<T[]> {
  const all: T[] = [];
  let key: string | undefined;
  for (;;) {
    const page = await fetchPage(key);
    all.push(...page.items);
    if (!page.has_more || !page.pagination_key) return all;
    key = page.pagination_key;
  }
}

/** A list answer as items: a page `{items}` or a bare array (older list endpoints). */
const itemsOf = (answer: unknown): Json[] => (Array.isArray(answer) ? answer : ((answer as { items?: Json[] })?.items ?? []));

async function readSource(source: Retell, call: Caller, selected: Set<Kind>): Promise<Snapshot> {
  const listed = <T>(request: (key?: string) => PromiseLike<unknown>) =>
    pages<T>(async (key) => {
      const answer = await call('source', () => request(key));
      return Array.isArray(answer) ? { items: answer as T[] } : (answer as { items: T[]; has_more?: boolean; pagination_key?: string });
    });
  // Kinds left out (--only) are listed too, for their IDs alone: a moved object referencing one
  // of them is then recognised (docs/migration.md, --only), where a dangling ID would be written.
  // (Numbers and test cases are referenced by nothing, so they are listed only when they move.)
  const leftOut = new Map<string, string>();
  const [kbs, components, llms, flows, agentItems, numbers] = await Promise.all([
    listed<Json>(() => source.knowledgeBase.list()),
    listed<Json>((key) => source.conversationFlowComponent.list({ limit: 1000, ...(key ? { pagination_key: key } : {}) })),
    listed<Json>((key) => source.llm.list({ limit: 1000, ...(key ? { pagination_key: key } : {}) })),
    listed<Json>((key) => source.conversationFlow.list({ limit: 1000, ...(key ? { pagination_key: key } : {}) })),
    listed<Json>((key) => source.agent.list({ limit: 1000, ...(key ? { pagination_key: key } : {}) })),
    selected.has('numbers') ? listed<Json>((key) => source.phoneNumber.list({ limit: 1000, ...(key ? { pagination_key: key } : {}) } as never)) : [],
  ]);
  const keepLeftOut = (kind: Kind, objects: Json[], idField: string) => {
    if (!selected.has(kind)) for (const object of objects) if (typeof object[idField] === 'string') leftOut.set(object[idField], LABEL[kind]);
  };
  keepLeftOut('knowledge-bases', kbs, 'knowledge_base_id');
  keepLeftOut('components', components, 'conversation_flow_component_id');
  keepLeftOut('llms', llms, 'llm_id');
  keepLeftOut('flows', flows, 'conversation_flow_id');
  const agents: AgentSource[] = [];
  for (const item of agentItems) {
    const kind = item.channel === 'chat' || String(item.agent_id).startsWith('chat_') ? 'chat-agents' : 'agents';
    keepLeftOut(kind, [item], 'agent_id');
    if (!selected.has(kind)) continue;
    const versions = (await call('source', () =>
      kind === 'agents' ? source.agent.getVersions(item.agent_id) : source.chatAgent.getVersions(item.agent_id),
    )) as Json[];
    if (!versions.length) continue;
    agents.push({ kind, id: item.agent_id, versions: [...versions].sort(byVersion), tags: kind === 'agents' ? (item.tags ?? {}) : {} });
  }
  const tests: Json[] = [];
  if (selected.has('tests')) {
    const engines = [
      ...llms.map((llm) => ({ type: 'retell-llm' as const, llm_id: llm.llm_id as string })),
      ...flows.map((flow) => ({ type: 'conversation-flow' as const, conversation_flow_id: flow.conversation_flow_id as string })),
    ];
    for (const engine of engines) {
      tests.push(...(await listed<Json>((key) => source.tests.listTestCaseDefinitions({ ...engine, limit: 1000, ...(key ? { pagination_key: key } : {}) } as never))));
    }
  }
  return {
    kbs: selected.has('knowledge-bases') ? kbs : [],
    components: selected.has('components') ? components : [],
    llms: selected.has('llms') ? llms : [],
    flows: selected.has('flows') ? flows : [],
    agents,
    numbers,
    tests,
    leftOut,
  };
}

interface TargetIndex {
  /** Objects an earlier import made, by the source ID they keep. */
  byImport: Map<string, { id: string; object: Json }>;
  numbers: Set<string>;
}

/** What the target holds already: each object carrying imported_from, and the numbers. */
async function readTarget(target: Retell, call: Caller): Promise<TargetIndex> {
  const listed = (request: (key?: string) => PromiseLike<unknown>) =>
    pages<Json>(async (key) => {
      const answer = await call('target', () => request(key));
      return Array.isArray(answer) ? { items: answer as Json[] } : (answer as { items: Json[]; has_more?: boolean; pagination_key?: string });
    });
  const page = (key?: string) => ({ limit: 1000, ...(key ? { pagination_key: key } : {}) });
  const [kbs, components, llms, flows, agents, chatSummaries, numbers] = await Promise.all([
    listed(() => target.knowledgeBase.list()),
    listed((key) => target.conversationFlowComponent.list(page(key))),
    listed((key) => target.llm.list(page(key))),
    listed((key) => target.conversationFlow.list(page(key))),
    listed((key) => target.get('/list-agents', { query: page(key) })),
    listed((key) => target.get('/list-chat-agents', { query: page(key) })),
    listed((key) => target.phoneNumber.list(page(key) as never)),
  ]);
  // The chat agent list holds summaries; the source ID is on each chat agent itself.
  const chatAgents = await Promise.all(chatSummaries.map((summary) => call('target', () => target.chatAgent.retrieve(summary.agent_id)) as Promise<Json>));
  const tests: Json[] = [];
  for (const engine of [
    ...llms.map((llm) => ({ type: 'retell-llm', llm_id: llm.llm_id })),
    ...flows.map((flow) => ({ type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id })),
  ]) {
    tests.push(...itemsOf(await call('target', () => target.tests.listTestCaseDefinitions({ ...engine, limit: 1000 } as never))));
  }
  const byImport = new Map<string, { id: string; object: Json }>();
  const keep = (objects: Json[], idField: string) => {
    for (const object of objects) if (typeof object.imported_from === 'string') byImport.set(object.imported_from, { id: object[idField], object });
  };
  keep(kbs, 'knowledge_base_id');
  keep(components, 'conversation_flow_component_id');
  keep(llms, 'llm_id');
  keep(flows, 'conversation_flow_id');
  keep(agents, 'agent_id');
  keep(chatAgents, 'agent_id');
  keep(tests, 'test_case_definition_id');
  return { byImport, numbers: new Set(numbers.map((number) => number.phone_number as string)) };
}

// ------------------------------------------------------------------------------------
// Small helpers.

function engineRef(engine: Json): { kind: 'llm' | 'flow'; id: string } | undefined {
  if (typeof engine.llm_id === 'string') return { kind: 'llm', id: engine.llm_id };
  if (typeof engine.conversation_flow_id === 'string') return { kind: 'flow', id: engine.conversation_flow_id };
  return undefined;
}

const idOfEngine = (object: Json): string => object.llm_id ?? object.conversation_flow_id;

const byVersion = (a: Json, b: Json) => (a.version as number) - (b.version as number);

/** An engine has no name of its own: it is named by the agents that run it. */
function engineName(id: string, snapshot: Snapshot): string {
  const names = snapshot.agents
    .filter((agent) => agent.versions.some((version) => engineRef(version.response_engine ?? {})?.id === id))
    .map((agent) => String(agent.versions.at(-1)?.agent_name ?? agent.id));
  return names.length ? `engine of ${names.join(', ')}` : id;
}

const tagNote = (agent: AgentSource) => (Object.keys(agent.tags).length ? `; tags ${Object.keys(agent.tags).join(', ')}` : '');

/** Fields of `wanted` that `current` does not hold as given. */
function changedFields(current: Json, wanted: Json): string[] {
  return Object.keys(wanted).filter((key) => wanted[key] !== undefined && !covers(current[key], wanted[key]));
}

/** The catalogue voice closest to `original`: same provider, gender and accent when there is one, then fewer of them. */
function closestVoice(original: Json | undefined, voices: Json[]): Json {
  const score = (voice: Json) =>
    (voice.gender === original?.gender ? 4 : 0) + (voice.accent && voice.accent === original?.accent ? 2 : 0) + (voice.provider === original?.provider ? 1 : 0);
  return [...voices].sort((a, b) => score(b) - score(a))[0] ?? { voice_id: '11labs-Chloe', voice_name: 'Chloe' };
}

async function defaultDownload(url: string): Promise<Buffer> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${response.status} from ${new URL(url).host}`);
  return Buffer.from(await response.arrayBuffer());
}
