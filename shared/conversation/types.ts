/*
 * The conversation runtime's shapes. Entries of `transcript_object` and
 * `transcript_with_tool_calls` follow retell-sdk's call types (resources/call.d.ts), so the
 * call engine (and later chats) store them as they are.
 */

export type Channel = 'voice' | 'chat';

export type DataStorageSetting = 'everything' | 'everything_except_pii' | 'basic_attributes_only';

/** A `transcript_object` entry. */
export interface TranscriptObject {
  role: 'agent' | 'user';
  content: string;
  /** Word timings; a text conversation has none (the call engine may fill them from audio). */
  words?: { word?: string; start?: number; end?: number }[];
}

export interface ToolCallInvocation {
  role: 'tool_call_invocation';
  tool_call_id: string;
  name: string;
  /** The arguments as JSON text. */
  arguments: string;
}

export interface ToolCallResult {
  role: 'tool_call_result';
  tool_call_id: string;
  content: string;
  successful?: boolean;
}

export interface NodeTransition {
  role: 'node_transition';
  former_node_id: string;
  former_node_name: string;
  new_node_id: string;
  new_node_name: string;
  transition_type?: 'normal';
}

/** A `transcript_with_tool_calls` entry. */
export type TranscriptEvent = TranscriptObject | ToolCallInvocation | ToolCallResult | NodeTransition;

/** What the engine runs, by reference: configuration is read again each turn (it is versioned, so it cannot drift). */
export type EngineRef =
  | { type: 'retell-llm'; llm_id: string; version: number }
  | { type: 'conversation-flow'; conversation_flow_id: string; version: number }
  | { type: 'custom-llm'; llm_websocket_url: string };

/**
 * A conversation between turns: plain JSON, so the call engine keeps it on the call item.
 * It holds references and the conversation so far, never a copy of the agent's
 * configuration.
 */
export interface ConversationState {
  v: 1;
  workspace_id: string;
  agent_id: string;
  agent_version: number;
  call_id: string;
  channel: Channel;
  engine: EngineRef;
  /** The caller's dynamic variables over the engine's defaults, all strings. */
  dynamic_variables: Record<string, string>;
  /** Variables the conversation collected (custom function `response_variables`). */
  collected_dynamic_variables: Record<string, string>;
  metadata?: unknown;
  from_number?: string;
  to_number?: string;
  /** The workspace LLM token limit this conversation runs under (spec Limits). */
  token_limit: number;
  /** Utterances and tool calls so far, in order (node transitions are left out: the model never sees them). */
  history: TranscriptEvent[];
  /** Multi-state Retell LLM: the current state's name. */
  llm_state?: string;
  /** Conversation flow: the current node's ID. */
  node_id?: string;
  /** Custom LLM: the last `response_id` asked for. */
  response_id?: number;
  /** Set once the agent ended the conversation; later turns say nothing. */
  ended?: boolean;
  /** This conversation's configuration over the versions it references (a call's agent_override); plain JSON, validated by the caller. */
  overrides?: ConfigOverrides;
  /** False when the conversation cannot be transferred (a web call, a chat): transfer_call answers an error and the agent goes on. */
  can_transfer?: boolean;
  /** Tool calls answered by a given output instead of running (the playground's `tool_mocks`; tools/tool-mocks.ts). */
  tool_mocks?: ToolMock[];
  /**
   * What the caller told the agent between turns (`noteToAgent`: a transfer that did not go
   * through), each after `after` history entries: the model sees it there as a system
   * message. Never part of the transcript.
   */
  agent_notes?: AgentNote[];
  /** The workspace's fallback model when the conversation opened (reliability settings); absent: none. */
  fallback_llm_model?: string;
  /**
   * The call's or chat's own data storage setting (update-call, update-live-call,
   * update-chat), laid on by its channel before each turn; absent: the agent version's.
   * What the conversation records (knowledge-base retrievals) keeps what it allows.
   */
  data_storage_setting?: DataStorageSetting;
  /**
   * The call or chat whose records (knowledge-base retrievals) this conversation's are, when
   * not `call_id`: a transfer agent's consultation belongs to its call, so it is answered and
   * deleted with it. Null: nothing is recorded (the playground stores nothing).
   */
  records_under?: string | null;
  /** Set once a model call fell back to it (engines/fallback.ts): what the call, the chat and the playground show. */
  llm_fallback?: LlmFallbackRecord;
}

/** A mocked tool (retell-sdk PlaygroundCompletionParams.ToolMock): which calls it answers, and with what. */
export interface ToolMock {
  tool_name: string;
  /** Absent: every call of the tool (as `{type: 'any'}`). */
  input_match_rule?: { type: 'any' } | { type: 'partial_match'; args: unknown };
  /** The tool result the model reads. */
  output: string;
  /** Whether the call succeeded (transfer_call: whether the transfer went through); default true. */
  result?: boolean | null;
}

/** A note to the agent from outside the conversation (the call engine), placed after `after` history entries. */
export interface AgentNote {
  after: number;
  content: string;
}

/** `llm_fallback` of a call, a chat or a playground answer: the provider failed the primary model and the fallback answered. */
export interface LlmFallbackRecord {
  primary_model: string;
  fallback_model: string;
  /** Model calls answered by the fallback model (at most one switch a model call). */
  count: number;
  /** The primary model's failure, as the provider adapter put it (no key, no provider text). */
  last_reason: string;
  last_timestamp: number;
}

/** Fields laid over the agent version, its Retell LLM version or its flow version for one conversation. */
export interface ConfigOverrides {
  agent?: Record<string, unknown>;
  llm?: Record<string, unknown>;
  flow?: Record<string, unknown>;
}

export interface OpenConversationInput {
  workspaceId: string;
  /** The agent whose version is run; a test run names its batch test here and gives `engine`. */
  agentId: string;
  agentVersion: number;
  /**
   * The response engine version to run without an agent (a test run: test cases target an
   * engine, not an agent); the agent is then not read.
   */
  engine?: EngineRef;
  callId: string;
  channel: Channel;
  dynamicVariables: Record<string, string>;
  metadata?: unknown;
  fromNumber?: string;
  toNumber?: string;
  /** The workspace LLM token limit (1,024 to 131,072); default 32,768 when the workspace sets none. */
  llmTokenLimit?: number;
  /** The workspace's fallback model (reliability settings): tried once when the provider cannot answer the primary. */
  fallbackLlmModel?: string;
  /** Configuration over the versions for this conversation only (a call's agent_override). */
  overrides?: ConfigOverrides;
  /** False: transfer_call is refused (the agent is told) and flow transfer nodes do not transfer. Default true. */
  canTransfer?: boolean;
  /** The state's `records_under`: another call's ID, or null to record nothing. Default: `callId`. */
  recordsUnder?: string | null;
  /** The state's `data_storage_setting`: the conversation's own, over the agent version's. */
  dataStorageSetting?: DataStorageSetting;
}

export type TurnEvent = { type: 'call_started' } | { type: 'user_said'; text: string };

/** A warm transfer's handoff message (retell-sdk WarmTransferPrompt / WarmTransferStaticMessage): said as written, or composed by the model from the prompt. */
export type HandoffOption = { type: 'prompt'; prompt: string } | { type: 'static_message'; message: string };

/**
 * How an agentic warm transfer decides (retell-sdk TransferOptionAgenticWarmTransfer's
 * `agentic_transfer_config`): a transfer agent talks to the destination first and bridges
 * or cancels (its `bridge_transfer` / `cancel_transfer` tools or nodes); without an answer
 * in `transfer_timeout_ms`, `action_on_timeout` decides.
 */
export interface AgenticTransferConfig {
  /** The agent that mediates (its version: a number, or a tag / version reference); absent: Parley's built-in mediator. */
  transfer_agent?: { agent_id: string; agent_version: string };
  action_on_timeout: 'bridge_transfer' | 'cancel_transfer';
  transfer_timeout_ms: number;
}

/** The transfer option's fields the call engine acts on (placeholders already filled). */
export interface TransferOptions {
  /** Set for `agentic_warm_transfer`. */
  agentic?: AgenticTransferConfig;
  /** Music the caller hears on hold: none, relaxing_sound, uplifting_beats, ringtone, custom. */
  on_hold_music?: string;
  custom_on_hold_music_asset_id?: string;
  /** Whether a cue is played when the parties are bridged (default true). */
  enable_bridge_audio_cue?: boolean;
  /** Said to both parties once bridged. */
  public_handoff?: HandoffOption;
  /** transfer_ring_duration_ms: how long the destination may ring. */
  ring_ms?: number;
  /**
   * The transfer leg shows the user's number as its caller ID (the caller of an inbound
   * call, the called number of an outbound one) rather than the agent's: warm transfers and
   * cold ones in `sip_invite` mode.
   */
  show_transferee_as_caller?: boolean;
  /** A cold transfer's mechanism: `sip_refer` (the default: the caller's leg is REFERred) or `sip_invite` (a new leg is dialled). */
  cold_transfer_mode?: 'sip_refer' | 'sip_invite';
  /** The tool's (or node's) `custom_sip_headers`, sent on the REFER or the transfer's INVITE. */
  sip_headers?: Record<string, string>;
}

/** A transfer the turn asked for. */
export interface TransferAsk {
  number: string;
  kind: 'cold' | 'warm';
  options?: TransferOptions;
  /**
   * The tool's (or node's) `transfer_option` and `custom_sip_headers` as configured, placeholders
   * unfilled: what a LiveKit worker's transfer_requested report carries, for Parley to process
   * with the call's own variables (`options` is that processing, done here for the sandbox).
   */
  transfer_option?: Record<string, unknown>;
  custom_sip_headers?: Record<string, string>;
}

export interface TurnResult {
  state: ConversationState;
  /** What the agent says this turn, in order. */
  utterances: string[];
  /** This turn's `transcript_with_tool_calls` entries (the user's line first, when there is one). */
  events: TranscriptEvent[];
  end?: { reason: 'agent_hangup' };
  transfer?: TransferAsk;
  /** A transfer agent's decision (its bridge_transfer / cancel_transfer tool, or node): the turn ends there. */
  transfer_decision?: 'bridge' | 'cancel';
  /** Keys the agent pressed (its press_digit tool), in order: a voice call sends them as DTMF after the turn's words. */
  digits?: string;
}

/** How a streaming turn runs (`streamAgentTurn`). */
export interface StreamTurnOptions {
  /** Abort: stop the model (or stop listening to a custom LLM), run no further tool. */
  signal?: AbortSignal;
  /** Awaited before the turn runs its first tool: false discards the turn (preemptive generation). */
  toolGate?: () => Promise<boolean>;
  /** Knowledge for the turn (the worker: POST /internal/calls/{id}/kb-retrieve); absent: the runtime's own retrieval. */
  retrieve?: (query: string) => Promise<{ prompt: string }>;
}

export type TurnStreamEvent =
  /** Words to speak, in order, as the model writes them. */
  | { type: 'text'; text: string }
  /** tool_call_invocation / tool_call_result / node_transition, as they happen. */
  | { type: 'event'; event: TranscriptEvent };

/** A turn in progress: what it says and does as it happens, and its result once the caller knows what was heard. */
export interface StreamingTurn {
  /** Read once; ends when the turn has finished (or stopped: aborted, discarded). Breaking out of it aborts the turn. */
  events: AsyncIterable<TurnStreamEvent>;
  /** After playout, with what the caller actually heard: the TurnResult whose state records only that. */
  commit(spoken: { text: string; interrupted: boolean }): TurnResult;
  /**
   * The model's time to first token in ms (from asking it to its first words, or to the end
   * of an answer that only calls tools; a custom LLM: from `response_required` to its first
   * content), once known; undefined when
   * no model was asked (a begin message, a static text) or the turn stopped first.
   */
  firstTokenMs: Promise<number | undefined>;
}

export interface CallAnalysis {
  call_summary: string;
  user_sentiment: 'Positive' | 'Negative' | 'Neutral' | 'Unknown';
  call_successful: boolean;
  in_voicemail: boolean;
  custom_analysis_data: Record<string, string | number | boolean | null>;
}

export interface AnalyzeConversationInput {
  workspaceId: string;
  agentId: string;
  agentVersion: number;
  transcript: TranscriptObject[];
  channel: Channel;
  inVoicemail?: boolean;
  /** Agent fields over the version's (a call's agent_override.agent): post_call_analysis_model and _data. */
  agentOverride?: Record<string, unknown>;
}
