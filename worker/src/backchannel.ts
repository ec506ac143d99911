import type { AgentSettings } from './agent-settings.ts';
import type { Timers } from './session.ts';

/*
 * Backchannel (`enable_backchannel`, `backchannel_frequency`, `backchannel_words`): while the
 * caller speaks a long turn, the agent says a short word ("mm-hmm") in one of their pauses,
 * without taking the turn. The session tells this module when the caller starts speaking,
 * pauses, and when their turn is over; the module decides whether a pause gets a word and
 * asks the session to say it (session.ts says it as a sound of its own: interruptible, never
 * in the chat, the engine's state or the transcript).
 */

/** The caller must have been talking this long in the turn before the agent backchannels. */
const BACKCHANNEL_AFTER_MS = 2000;
/** At most one backchannel in this long. */
const BACKCHANNEL_GAP_MS = 4000;
/**
 * How long a pause must last before a word is said in it: the caller's turn, when the pause
 * ends it, is usually committed by then (the final transcript arrives), and the agent answers
 * instead.
 */
const BACKCHANNEL_PAUSE_MS = 120;

/** The words when the agent lists none, by the language's primary subtag (English otherwise). */
const DEFAULT_WORDS: Record<string, string[]> = {
  en: ['yeah', 'uh-huh', 'mm-hmm'],
  es: ['sí', 'ajá', 'claro'],
  pt: ['sim', 'aham', 'claro'],
  fr: ['oui', "d'accord", 'mm-hmm'],
  de: ['ja', 'genau', 'mhm'],
  it: ['sì', 'certo', 'mm-hmm'],
  nl: ['ja', 'oké', 'mhm'],
  ja: ['はい', 'うん', 'なるほど'],
  zh: ['嗯', '对', '好的'],
  ko: ['네', '응', '그렇군요'],
  hi: ['हाँ', 'अच्छा', 'जी'],
};

/** The words the agent backchannels with: its own, else its language's defaults. */
export function backchannelWords(settings: Pick<AgentSettings, 'backchannel_words' | 'language'>): string[] {
  const own = (settings.backchannel_words ?? []).map((word) => word.trim()).filter(Boolean);
  if (own.length) return own;
  const language = Array.isArray(settings.language) ? settings.language[0] : settings.language;
  return DEFAULT_WORDS[(language ?? 'en').toLowerCase().split('-')[0]!] ?? DEFAULT_WORDS.en!;
}

interface BackchannelHost {
  /** Whether the agent is quiet: not speaking, not preparing a reply it will say. */
  agentQuiet(): boolean;
  /** Says the word as a backchannel. */
  say(word: string): void;
}

export interface BackchannelOptions {
  settings: Pick<AgentSettings, 'enable_backchannel' | 'backchannel_frequency' | 'backchannel_words' | 'language'>;
  host: BackchannelHost;
  timers: Timers;
  now: () => number;
  /** A number in [0, 1): whether a pause gets a word (below the frequency), then which word. */
  random?: () => number;
}

export class Backchannel {
  private readonly words: string[];
  private readonly random: () => number;
  /** When the caller started the turn in progress (undefined: no turn in progress). */
  private turnStartedAt: number | undefined;
  private lastAt: number | undefined;
  private pauseTimer: unknown;

  constructor(private readonly options: BackchannelOptions) {
    this.words = backchannelWords(options.settings);
    this.random = options.random ?? Math.random;
  }

  private get enabled(): boolean {
    const { enable_backchannel, backchannel_frequency } = this.options.settings;
    return enable_backchannel && backchannel_frequency > 0 && this.words.length > 0;
  }

  /** The caller's voice started (or resumed after a pause). */
  callerSpeaking(): void {
    this.cancelPause();
    this.turnStartedAt ??= this.options.now();
  }

  /** The caller's voice stopped: a pause, which may end their turn. */
  callerPaused(): void {
    this.cancelPause();
    if (!this.enabled || this.turnStartedAt === undefined) return;
    this.pauseTimer = this.options.timers.setTimeout(() => this.pause(), BACKCHANNEL_PAUSE_MS);
  }

  /** The caller's turn is over (committed), or the agent took the floor: the next voice starts a new turn. */
  turnOver(): void {
    this.cancelPause();
    this.turnStartedAt = undefined;
  }

  close(): void {
    this.turnOver();
  }

  private cancelPause(): void {
    if (this.pauseTimer !== undefined) this.options.timers.clearTimeout(this.pauseTimer);
    this.pauseTimer = undefined;
  }

  private pause(): void {
    this.pauseTimer = undefined;
    const now = this.options.now();
    if (this.turnStartedAt === undefined || now - this.turnStartedAt < BACKCHANNEL_AFTER_MS) return;
    if (this.lastAt !== undefined && now - this.lastAt < BACKCHANNEL_GAP_MS) return;
    if (!this.options.host.agentQuiet()) return;
    if (this.random() >= this.options.settings.backchannel_frequency) return;
    this.lastAt = now;
    const word = this.words[Math.min(this.words.length - 1, Math.floor(this.random() * this.words.length))]!;
    this.options.host.say(word);
  }
}
