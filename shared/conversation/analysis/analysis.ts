import { DEFAULT_LLM_MODEL, getAgent, getChatAgent } from '../../agents/index.ts';
import { defineOfflineShape, lineHasKeyword, lineWords, languageModel, type OfflineInput } from '../../vendors/llm/index.ts';
import type { AnalyzeConversationInput, CallAnalysis, TranscriptObject } from '../types.ts';

/*
 * Post-call (and post-chat) analysis: one JSON-mode request to the agent version's
 * analysis model (`post_call_analysis_model`, chats `post_chat_analysis_model`, else the
 * default model) for the summary, the user's sentiment, whether the call succeeded, and
 * one value per item of `post_call_analysis_data` (string, enum, boolean and number
 * items; the system presets are the three standard fields, always asked for). The
 * answer is checked field by field: a value of the wrong type is left out, a sentiment
 * outside the four is `Unknown`. `in_voicemail` is what the call engine knows when it
 * says so, else the model's answer.
 */

type Item = { name: string; type: 'string' | 'enum' | 'boolean' | 'number'; description?: string; choices?: string[] };

const SENTIMENTS = ['Positive', 'Negative', 'Neutral', 'Unknown'] as const;
const ITEMS_MARKER = 'custom_analysis_data items (JSON):';
const ANALYSIS_TIMEOUT_MS = 25_000;

export async function analyzeConversation(input: AnalyzeConversationInput): Promise<CallAnalysis> {
  const chat = input.agentId.startsWith('chat_agent_');
  const version = chat
    ? await getChatAgent(input.workspaceId, input.agentId, input.agentVersion)
    : await getAgent(input.workspaceId, input.agentId, input.agentVersion);
  const agent = (input.agentOverride ? { ...version, ...input.agentOverride } : version) as typeof version;
  const rawItems = (chat ? agent.post_chat_analysis_data : (agent as { post_call_analysis_data?: unknown }).post_call_analysis_data) ?? [];
  const chosen = chat ? agent.post_chat_analysis_model : (agent as { post_call_analysis_model?: string | null }).post_call_analysis_model;
  const model = typeof chosen === 'string' ? chosen : DEFAULT_LLM_MODEL;
  const items = analysisItems(rawItems);
  const what = input.channel === 'chat' ? 'chat' : 'call';

  const answer = await languageModel().complete({
    model,
    responseFormat: 'json',
    offlineHint: 'call_analysis',
    temperature: 0,
    timeoutMs: ANALYSIS_TIMEOUT_MS,
    messages: [
      {
        role: 'system',
        content: [
          `You analyse a finished ${what} between an AI agent and a user. Answer with one JSON object with exactly these fields:`,
          `- call_summary: string, two or three sentences on what happened in the ${what};`,
          '- user_sentiment: "Positive", "Negative", "Neutral" or "Unknown";',
          `- call_successful: boolean, whether the agent did what the ${what} was for;`,
          '- in_voicemail: boolean, whether the agent only reached a voicemail;',
          '- custom_analysis_data: an object with one field per item below (the item\'s name), of the item\'s type (an enum takes one of its choices); leave out an item the transcript does not answer.',
          `${ITEMS_MARKER} ${JSON.stringify(items)}`,
        ].join('\n'),
      },
      { role: 'user', content: `Transcript:\n${transcriptText(input.transcript) || '(nobody spoke)'}` },
    ],
  });
  return checkedAnalysis(JSON.parse(answer.content) as unknown, items, input.inVoicemail);
}

function analysisItems(raw: unknown): Item[] {
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((entry): Item[] => {
    const item = entry as Record<string, unknown>;
    if (typeof item.name !== 'string' || !['string', 'enum', 'boolean', 'number'].includes(item.type as string)) return [];
    return [
      {
        name: item.name,
        type: item.type as Item['type'],
        ...(typeof item.description === 'string' ? { description: item.description } : {}),
        ...(item.type === 'enum' && Array.isArray(item.choices) ? { choices: item.choices.filter((c): c is string => typeof c === 'string') } : {}),
      },
    ];
  });
}

function transcriptText(transcript: readonly TranscriptObject[]): string {
  return transcript.map((entry) => `${entry.role === 'agent' ? 'Agent' : 'User'}: ${entry.content}`).join('\n');
}

function checkedAnalysis(raw: unknown, items: Item[], inVoicemail: boolean | undefined): CallAnalysis {
  const answer = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const data = (typeof answer.custom_analysis_data === 'object' && answer.custom_analysis_data !== null ? answer.custom_analysis_data : {}) as Record<string, unknown>;
  const custom: CallAnalysis['custom_analysis_data'] = {};
  for (const item of items) {
    const value = checkedValue(item, data[item.name]);
    if (value !== undefined) custom[item.name] = value;
  }
  return {
    call_summary: typeof answer.call_summary === 'string' ? answer.call_summary : '',
    user_sentiment: SENTIMENTS.includes(answer.user_sentiment as never) ? (answer.user_sentiment as CallAnalysis['user_sentiment']) : 'Unknown',
    call_successful: answer.call_successful === true,
    in_voicemail: inVoicemail ?? answer.in_voicemail === true,
    custom_analysis_data: custom,
  };
}

function checkedValue(item: Item, value: unknown): string | number | boolean | undefined {
  switch (item.type) {
    case 'string':
      return typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
    case 'enum':
      return typeof value === 'string' && (item.choices ?? []).includes(value) ? value : undefined;
    case 'boolean':
      return typeof value === 'boolean' ? value : value === 'true' ? true : value === 'false' ? false : undefined;
    case 'number': {
      const number = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
      return Number.isFinite(number) ? number : undefined;
    }
  }
}

const POSITIVE_WORDS = ['thank', 'great', 'perfect', 'good', 'happy', 'excellent', 'love', 'wonderful', 'awesome', 'helpful'];
const NEGATIVE_WORDS = ['angry', 'terrible', 'awful', 'upset', 'frustrat', 'complain', 'hate', 'useless', 'annoy', 'disappoint'];

/**
 * `call_analysis` for the offline model, from the transcript in the request:
 * - call_summary: how many turns each side took, and the user's first line;
 * - user_sentiment: Unknown when the user never spoke; else Positive or Negative by which
 *   list of words (thank, great, perfect, good, happy, … / angry, terrible, awful, upset,
 *   frustrat…, …) starts more of the user's words, Neutral on a tie;
 * - call_successful: the user spoke and was not Negative;
 * - in_voicemail: false (the call engine says when it knows better);
 * - custom items: a string is the user's last line; an enum the first choice the
 *   transcript contains (else its first choice); a boolean whether the user's words
 *   contain a word of 4+ letters of the item's name; a number the count of user turns.
 */
function offlineCallAnalysis({ request, system }: OfflineInput): Record<string, unknown> {
  const transcript = request.messages.find((message) => message.role === 'user')?.content ?? '';
  const lines = transcript.split('\n').slice(1);
  const userLines = lines.filter((line) => line.startsWith('User: ')).map((line) => line.slice(6));
  const agentLines = lines.filter((line) => line.startsWith('Agent: '));
  const userWords = lineWords(userLines.join(' '));
  const score = (list: string[]) => userWords.filter((word) => list.some((stem) => word.startsWith(stem))).length;
  const positive = score(POSITIVE_WORDS);
  const negative = score(NEGATIVE_WORDS);
  const sentiment = userLines.length === 0 ? 'Unknown' : positive > negative ? 'Positive' : negative > positive ? 'Negative' : 'Neutral';
  const markerAt = system.indexOf(ITEMS_MARKER);
  const items = markerAt < 0 ? [] : analysisItems(JSON.parse(system.slice(markerAt + ITEMS_MARKER.length)) as unknown);
  const allWords = lineWords(lines.join(' '));
  const custom: Record<string, unknown> = {};
  for (const item of items) {
    if (item.type === 'string') custom[item.name] = userLines.at(-1) ?? '';
    else if (item.type === 'number') custom[item.name] = userLines.length;
    else if (item.type === 'boolean') {
      custom[item.name] = lineWords(item.name.replace(/_/g, ' '))
        .filter((word) => word.length >= 4)
        .some((word) => lineHasKeyword(userWords, word));
    } else {
      const choices = item.choices ?? [];
      custom[item.name] = choices.find((choice) => lineWords(choice).length > 0 && lineHasKeyword(allWords, lineWords(choice).join(' '))) ?? choices[0] ?? '';
    }
  }
  const first = userLines[0];
  return {
    call_summary:
      first === undefined
        ? `The agent spoke ${agentLines.length} time${agentLines.length === 1 ? '' : 's'}; the user did not speak.`
        : `The user and the agent talked (${userLines.length} user and ${agentLines.length} agent turns). The user first said: "${first.length > 120 ? `${first.slice(0, 119)}…` : first}".`,
    user_sentiment: sentiment,
    call_successful: userLines.length > 0 && sentiment !== 'Negative',
    in_voicemail: false,
    custom_analysis_data: custom,
  };
}

defineOfflineShape('call_analysis', offlineCallAnalysis);
