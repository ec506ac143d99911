/*
 * The built-in offline model's scoring rules (docs/qa.md, "Scoring offline"): what the
 * offline model answers for `offlineHint: qa_score`, and the latency rule, which is
 * measured rather than judged and so applies online too. Every rule is a pure function of
 * the scoring input: the same call scores the same every time. Scores are 0 to 100, or
 * null when the call keeps nothing the rule can read.
 */

export interface Line {
  role: 'agent' | 'user';
  content: string;
}

/** What a criterion is judged on: the JSON the judging model reads (the offline model too). */
export interface ScoringInput {
  criteria: { name: string; type: string; description: string }[];
  /** Null when the call keeps no transcript (data storage setting basic_attributes_only). */
  transcript: Line[] | null;
  analysis: { call_successful?: boolean; user_sentiment?: string; call_summary?: string };
  agent: {
    /** The agent's instructions: the LLM's general and state prompts, or the flow's global prompt and node instructions. */
    prompt: string;
    /** The knowledge-base excerpts the call retrieved. */
    knowledge: string[];
    /** The call's dynamic variables' values (what the prompt was filled with). */
    variables: string[];
  };
}

export interface CriterionAnswer {
  name: string;
  score: number | null;
  reason: string;
}

const QUOTE_LIMIT = 160;

/** A line as a reason quotes it: in double quotes, cut to QUOTE_LIMIT characters. */
const quote = (text: string): string => `"${text.length > QUOTE_LIMIT ? `${text.slice(0, QUOTE_LIMIT - 1)}…` : text}"`;

const KEPT_NONE = 'The call kept no transcript (its data storage setting is basic_attributes_only)';
const NO_TRANSCRIPT = `${KEPT_NONE}: not assessed`;

/** Words that make a caller's line angry (whole words; the stems with `*` take any ending). */
const ANGRY = /\b(angry|furious|ridiculous|unacceptable|terrible|awful|worst|hate|useless|stupid|upset|incompetent|frustrat\w*|annoy\w*|outrage\w*|disgust\w*|complain\w*)\b/i;
/** What acknowledges an upset caller in the agent's next line. */
const EMPATHY = /\b(sorry|apologi[sz]e\w*|apologies|i understand|i hear you|i can see why)\b/i;

/**
 * Tone: each caller line with an angry word whose next agent line does not acknowledge it
 * (sorry, apologise, apologies, "I understand", "I hear you", "I can see why"), or that
 * the agent never answered, takes 50 off 100 (at least 0). Without a transcript: the
 * analysis' user sentiment, Negative 50, Positive or Neutral 100, else not assessed.
 */
function tone(input: ScoringInput): Omit<CriterionAnswer, 'name'> {
  const lines = input.transcript;
  if (!lines) {
    const sentiment = input.analysis.user_sentiment;
    if (sentiment === 'Negative') return { score: 50, reason: `${KEPT_NONE}: the analysis found the caller's sentiment Negative` };
    if (sentiment === 'Positive' || sentiment === 'Neutral') return { score: 100, reason: `${KEPT_NONE}: the analysis found the caller's sentiment ${sentiment}` };
    return { score: null, reason: NO_TRANSCRIPT };
  }
  const unanswered: { said: string; answer?: string }[] = [];
  let acknowledged: { said: string; answer: string } | undefined;
  lines.forEach((line, index) => {
    if (line.role !== 'user' || !ANGRY.test(line.content)) return;
    const answer = lines.slice(index + 1).find((next) => next.role === 'agent');
    if (answer && EMPATHY.test(answer.content)) acknowledged ??= { said: line.content, answer: answer.content };
    else unanswered.push({ said: line.content, ...(answer ? { answer: answer.content } : {}) });
  });
  if (unanswered.length) {
    const first = unanswered[0]!;
    const answered = first.answer === undefined ? 'the agent never answered' : `the agent answered ${quote(first.answer)} without acknowledging it`;
    const more = unanswered.length > 1 ? ` (${unanswered.length} angry lines left unacknowledged)` : '';
    return { score: Math.max(0, 100 - 50 * unanswered.length), reason: `The caller said ${quote(first.said)} and ${answered}${more}` };
  }
  if (acknowledged) return { score: 100, reason: `The caller said ${quote(acknowledged.said)} and the agent acknowledged it: ${quote(acknowledged.answer)}` };
  const first = lines.find((line) => line.role === 'user');
  return { score: 100, reason: first ? `The caller never sounded angry; they opened with ${quote(first.content)}` : 'The caller never spoke' };
}

/**
 * Resolution: the analysis' call_successful, true 100, false 0, absent not assessed; the
 * reason quotes the caller's last line.
 */
function resolution(input: ScoringInput): Omit<CriterionAnswer, 'name'> {
  const verdict = input.analysis.call_successful;
  const last = input.transcript?.filter((line) => line.role === 'user').at(-1);
  const said = last ? `; the caller's last words were ${quote(last.content)}` : '';
  if (verdict === true) return { score: 100, reason: `The call's analysis judged it successful${said}` };
  if (verdict === false) return { score: 0, reason: `The call's analysis judged it unsuccessful${said}` };
  return { score: null, reason: 'The call has no analysis verdict (call_successful): not assessed' };
}

/** A figure: digits, with `.`, `,` or `:` between digit groups (12, 12.50, 1,200, 9:30). Commas are dropped to compare. */
const FIGURE = /\d+(?:[.,:]\d+)*/g;
const figuresOf = (text: string): string[] => [...text.matchAll(FIGURE)].map((match) => match[0].replace(/,/g, ''));

/**
 * Hallucination: each distinct figure the agent stated that is in none of its prompt, the
 * knowledge-base excerpts the call retrieved, the call's dynamic variables and the
 * caller's own words takes 50 off 100 (at least 0). No transcript: not assessed.
 */
function hallucination(input: ScoringInput): Omit<CriterionAnswer, 'name'> {
  const lines = input.transcript;
  if (!lines) return { score: null, reason: NO_TRANSCRIPT };
  const grounded = new Set(
    figuresOf([input.agent.prompt, ...input.agent.knowledge, ...input.agent.variables, ...lines.filter((line) => line.role === 'user').map((line) => line.content)].join('\n')),
  );
  const unsupported = new Map<string, string>();
  for (const line of lines) {
    if (line.role !== 'agent') continue;
    for (const figure of figuresOf(line.content)) if (!grounded.has(figure) && !unsupported.has(figure)) unsupported.set(figure, line.content);
  }
  if (unsupported.size === 0) {
    const stated = lines.find((line) => line.role === 'agent' && figuresOf(line.content).length > 0);
    return {
      score: 100,
      reason: stated ? `Every figure the agent stated is grounded, e.g. ${quote(stated.content)}` : 'The agent stated no figures',
    };
  }
  const [figure, line] = [...unsupported][0]!;
  const others = unsupported.size > 1 ? ` (${unsupported.size} unsupported figures: ${[...unsupported.keys()].join(', ')})` : '';
  return {
    score: Math.max(0, 100 - 50 * unsupported.size),
    reason: `The agent said ${quote(line)}: ${figure} is in neither its prompt, its knowledge bases nor the caller's words${others}`,
  };
}

/** The phrases a text quotes ("…" or “…”), in order. */
function quotedPhrases(text: string): string[] {
  return [...text.matchAll(/"([^"]+)"|“([^“”]+)”/g)].map((match) => (match[1] ?? match[2]!).trim()).filter(Boolean);
}

interface Rule {
  sentence: string;
  never: boolean;
  phrases: string[];
}

/** The prompt's explicit rules: each sentence with "always" or "never" and at least one quoted phrase. */
function promptRules(prompt: string): Rule[] {
  return prompt
    .split(/(?<=[.!?])\s+|\n+/)
    .map((sentence) => sentence.trim())
    .flatMap((sentence): Rule[] => {
      const bare = sentence.replace(/"[^"]*"|“[^“”]*”/g, ' ');
      const never = /\bnever\b/i.test(bare);
      if (!never && !/\balways\b/i.test(bare)) return [];
      const phrases = quotedPhrases(sentence);
      return phrases.length ? [{ sentence, never, phrases }] : [];
    });
}

/**
 * Instruction following: the prompt's sentences with "always" or "never" and a quoted
 * phrase are its checkable rules; an "always" rule is kept when the agent said every
 * phrase it quotes, a "never" rule when it said none (case-insensitive, anywhere in its
 * lines). Score: 100 × kept / rules, rounded. No such rule, or no transcript: not assessed.
 */
function instructionFollowing(input: ScoringInput): Omit<CriterionAnswer, 'name'> {
  const lines = input.transcript;
  if (!lines) return { score: null, reason: NO_TRANSCRIPT };
  const rules = promptRules(input.agent.prompt);
  if (!rules.length) return { score: null, reason: 'The prompt has no "always" or "never" rule quoting a phrase: not checkable offline' };
  const said = lines.filter((line) => line.role === 'agent').map((line) => line.content);
  const saidText = said.join('\n').toLowerCase();
  const broken: string[] = [];
  let kept: string | undefined;
  for (const rule of rules) {
    const present = rule.phrases.filter((phrase) => saidText.includes(phrase.toLowerCase()));
    if (rule.never && present.length) {
      const line = said.find((text) => text.toLowerCase().includes(present[0]!.toLowerCase()))!;
      broken.push(`the prompt says ${quote(rule.sentence)} but the agent said ${quote(line)}`);
    } else if (!rule.never && present.length < rule.phrases.length) {
      broken.push(`the prompt says ${quote(rule.sentence)} but the agent never said ${rule.phrases.filter((phrase) => !present.includes(phrase)).map(quote).join(', ')}`);
    } else if (!kept) {
      const line = rule.never ? undefined : said.find((text) => text.toLowerCase().includes(rule.phrases[0]!.toLowerCase()));
      kept = line ? `${quote(rule.sentence)}: the agent said ${quote(line)}` : `${quote(rule.sentence)}`;
    }
  }
  const score = Math.round((100 * (rules.length - broken.length)) / rules.length);
  if (broken.length) return { score, reason: `${broken.length} of ${rules.length} rules broken: ${broken[0]}` };
  return { score, reason: `The agent kept all ${rules.length} rules, e.g. ${kept}` };
}

const NEGATION = /\b(never|not|no|without)\b|n't\b/i;

/**
 * A custom criterion: the phrases its description quotes must all be in what the agent
 * said (none of them when the description negates: never, not, no, without, n't): 100 or
 * 0. Without quoted phrases, or without a transcript: not assessed offline.
 */
function custom(input: ScoringInput, description: string): Omit<CriterionAnswer, 'name'> {
  const lines = input.transcript;
  const phrases = quotedPhrases(description);
  if (!phrases.length) return { score: null, reason: 'No quoted phrase in the description: not checkable offline (a configured model judges it)' };
  if (!lines) return { score: null, reason: NO_TRANSCRIPT };
  const said = lines.filter((line) => line.role === 'agent').map((line) => line.content);
  const saidText = said.join('\n').toLowerCase();
  const present = phrases.filter((phrase) => saidText.includes(phrase.toLowerCase()));
  const lineWith = (phrase: string) => quote(said.find((text) => text.toLowerCase().includes(phrase.toLowerCase()))!);
  if (NEGATION.test(description.replace(/"[^"]*"|“[^“”]*”/g, ' '))) {
    return present.length
      ? { score: 0, reason: `The agent said ${lineWith(present[0]!)}` }
      : { score: 100, reason: `The agent never said ${phrases.map(quote).join(', ')}` };
  }
  const missing = phrases.filter((phrase) => !present.includes(phrase));
  return missing.length
    ? { score: 0, reason: `The agent never said ${missing.map(quote).join(', ')}` }
    : { score: 100, reason: `The agent said ${lineWith(phrases[0]!)}` };
}

/** Every criterion by its rule, in order. */
export function offlineScores(input: ScoringInput): { criteria: CriterionAnswer[] } {
  return {
    criteria: input.criteria.map((criterion) => {
      switch (criterion.type) {
        case 'resolution':
          return { name: criterion.name, ...resolution(input) };
        case 'tone':
          return { name: criterion.name, ...tone(input) };
        case 'hallucination':
          return { name: criterion.name, ...hallucination(input) };
        case 'instruction_following':
          return { name: criterion.name, ...instructionFollowing(input) };
        default:
          return { name: criterion.name, ...custom(input, criterion.description) };
      }
    }),
  };
}

/**
 * Latency, online and offline: the call's end-to-end latency p50 at or under the bound
 * scores 100, at twice the bound or more 0, linearly between (rounded); none measured:
 * not assessed.
 */
export function latencyScore(p50: number | undefined, boundMs: number): Omit<CriterionAnswer, 'name'> {
  if (typeof p50 !== 'number') return { score: null, reason: 'The call has no latency measurement: not assessed' };
  const score = p50 <= boundMs ? 100 : p50 >= 2 * boundMs ? 0 : Math.round((100 * (2 * boundMs - p50)) / boundMs);
  return { score, reason: `The agent's median response took ${Math.round(p50)} ms (bound ${boundMs} ms)` };
}

/** The weighted mean of the assessed criteria (two decimals), or null when none was assessed. */
export function overallScore(scored: readonly { weight: number; score: number | null }[]): number | null {
  const assessed = scored.filter((item): item is { weight: number; score: number } => item.score !== null);
  const weights = assessed.reduce((sum, item) => sum + item.weight, 0);
  if (!assessed.length || weights === 0) return null;
  return Math.round((100 * assessed.reduce((sum, item) => sum + item.weight * item.score, 0)) / weights) / 100;
}
