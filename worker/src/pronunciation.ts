import { createTimedString, tts, type TimedString } from '@livekit/agents';

/*
 * The agent's pronunciation dictionary (retell-sdk PronunciationDictionary: a word or phrase,
 * an alphabet, its phonemes) spoken by the voices that take inline pronunciations: the text
 * on its way to the vendor has each dictionary word, whole and in any case, replaced by the
 * vendor's markup for it. ElevenLabs takes SSML `<phoneme>` tags on its English models
 * (eleven_flash_v2, eleven_turbo_v2, eleven_monolingual_v1; IPA and CMU Arpabet); Cartesia
 * takes IPA phonemes in `<<p|h|o|n|e|s>>` on every Sonic model. Other voices say the word as
 * written. The words the vendor aligns come back with the markup replaced by the word again,
 * so the transcript and its timings show what the caller heard, never the markup.
 */

export interface PronunciationEntry {
  word: string;
  alphabet: 'ipa' | 'cmu' | 'pinyin' | 'jyutping';
  phoneme: string;
}

/** How a voice takes pronunciations inline: SSML phoneme tags (ElevenLabs) or Cartesia's `<<…>>`. */
export type PronunciationMarkup = 'ssml' | 'cartesia';

/** The ElevenLabs models that read SSML phoneme tags (ElevenLabs: English models only). */
export const ELEVENLABS_PHONEME_MODELS: readonly string[] = ['eleven_flash_v2', 'eleven_turbo_v2', 'eleven_monolingual_v1'];

/** The dictionary's usable entries: a word and phonemes, in an alphabet the voices know; anything else is left out. */
export function pronunciationEntries(value: unknown): PronunciationEntry[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((entry): PronunciationEntry[] => {
    if (typeof entry !== 'object' || entry === null) return [];
    const { word, alphabet, phoneme } = entry as Record<string, unknown>;
    if (typeof word !== 'string' || typeof phoneme !== 'string' || !word.trim() || !phoneme.trim()) return [];
    if (alphabet !== 'ipa' && alphabet !== 'cmu' && alphabet !== 'pinyin' && alphabet !== 'jyutping') return [];
    return [{ word: word.trim(), alphabet, phoneme: phoneme.trim() }];
  });
}

const WORD_CHAR = /[\p{L}\p{M}\p{N}_]/u;

const escapeRegExp = (value: string) => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const escapeXml = (value: string) => value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** A diacritic, length mark or secondary articulation: part of the phoneme before it. */
const IPA_MODIFIER = /^[\u0300-\u036fːˑʰʷʲˠˤⁿˡ˞]$/u;
/** Diphthongs and affricates written without a tie bar that Cartesia's phone sets take as one phoneme. */
const IPA_UNITS = ['aɪ', 'aʊ', 'eɪ', 'oʊ', 'ɔɪ', 'əʊ', 'tʃ', 'dʒ'];

/**
 * IPA as Cartesia's `<<…>>`: one phoneme between bars (a stress mark its own, as Cartesia's
 * examples write it: `<<k|ɑ|ɹ|ˈ|t|i|ʒ|ə>>`), syllable dots, slashes and spaces dropped.
 */
export function cartesiaPhonemes(ipa: string): string {
  const chars = [...ipa.normalize('NFD').replace(/[/[\].\s‿]/g, '')];
  const units: string[] = [];
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i]!;
    const last = units.length - 1;
    if (char === '\u0361' || char === '\u035c') {
      // A tie bar joins the phoneme before it with the next letter (t͡ʃ).
      if (last >= 0) units[last] += char + (chars[++i] ?? '');
    } else if (IPA_MODIFIER.test(char) && last >= 0 && units[last] !== 'ˈ' && units[last] !== 'ˌ') {
      units[last] += char;
    } else if (last >= 0 && IPA_UNITS.includes(units[last]! + char)) {
      units[last] += char;
    } else {
      units.push(char);
    }
  }
  return `<<${units.join('|')}>>`;
}

/** The vendor's markup for one dictionary word as written in the reply; undefined: the voice cannot take this entry. */
function markupOf(markup: PronunciationMarkup, entry: PronunciationEntry, written: string): string | undefined {
  if (markup === 'ssml') {
    if (entry.alphabet !== 'ipa' && entry.alphabet !== 'cmu') return undefined;
    const alphabet = entry.alphabet === 'ipa' ? 'ipa' : 'cmu-arpabet';
    return `<phoneme alphabet="${alphabet}" ph="${escapeXml(entry.phoneme)}">${escapeXml(written)}</phoneme>`;
  }
  return entry.alphabet === 'ipa' ? cartesiaPhonemes(entry.phoneme) : undefined;
}

/** A dictionary as one voice speaks it: what to replace and with what. */
export class Pronouncer {
  private readonly byWord = new Map<string, PronunciationEntry>();
  private readonly pattern: RegExp | undefined;
  /** The entries' words lower-cased, each with its spaces as one: what a held-back tail may be the start of. */
  private readonly words: string[];

  constructor(
    entries: PronunciationEntry[],
    readonly markup: PronunciationMarkup,
  ) {
    for (const entry of entries) {
      const key = normalise(entry.word);
      // The first entry for a word wins, as a dictionary lookup would.
      if (!this.byWord.has(key) && markupOf(markup, entry, entry.word) !== undefined) this.byWord.set(key, entry);
    }
    this.words = [...this.byWord.keys()];
    // Longest first, so a phrase wins over a word inside it; never inside another word.
    const alternatives = [...this.words].sort((a, b) => b.length - a.length).map((word) => word.split(' ').map(escapeRegExp).join('\\s+'));
    this.pattern = alternatives.length ? new RegExp(`(?<![\\p{L}\\p{M}\\p{N}_])(?:${alternatives.join('|')})(?![\\p{L}\\p{M}\\p{N}_])`, 'giu') : undefined;
  }

  get empty(): boolean {
    return this.pattern === undefined;
  }

  /** The text with every dictionary word in the voice's markup; `replaced` hears each word replaced, in order. */
  apply(text: string, replaced?: (written: string) => void): string {
    if (!this.pattern) return text;
    return text.replace(this.pattern, (written) => {
      const entry = this.byWord.get(normalise(written))!;
      replaced?.(written);
      return markupOf(this.markup, entry, written)!;
    });
  }

  /**
   * Where the text may still change once more of it comes: the start of a word it ends in (it
   * may go on), or of a tail that could begin a dictionary phrase.
   */
  holdFrom(text: string): number {
    let cut = text.length;
    while (cut > 0 && WORD_CHAR.test(text[cut - 1]!)) cut--;
    for (let i = 0; i < cut; i++) {
      if (i > 0 && WORD_CHAR.test(text[i - 1]!)) continue;
      const tail = normalise(text.slice(i));
      if (tail && this.words.some((word) => word.length > tail.length && word.startsWith(tail))) return i;
    }
    return cut;
  }
}

const normalise = (text: string) => text.toLowerCase().replace(/\s+/g, ' ');

/**
 * One synthesis stream's text on its way to the vendor: dictionary words replaced as the text
 * streams, a word held back until it is known to be whole.
 */
export class PronunciationRewriter {
  private pending = '';
  /** The words replaced with markup that names no word (Cartesia's), in order: what the aligned markup stands for. */
  readonly replaced: string[] = [];

  constructor(private readonly pronouncer: Pronouncer) {}

  push(text: string): string {
    this.pending += text;
    const cut = this.pronouncer.holdFrom(this.pending);
    const ready = this.pending.slice(0, cut);
    this.pending = this.pending.slice(cut);
    return this.apply(ready);
  }

  /** Everything held back (the text is complete up to here). */
  flush(): string {
    const ready = this.pending;
    this.pending = '';
    return this.apply(ready);
  }

  private apply(text: string): string {
    if (!text) return '';
    return this.pronouncer.apply(text, this.pronouncer.markup === 'cartesia' ? (written) => this.replaced.push(written) : undefined);
  }
}

const SSML_PHONEME = /<phoneme\b[^>]*>([\s\S]*?)<\/phoneme\s*>/g;
const CARTESIA_PHONEMES = /<<[^<>]*>>/g;

/**
 * The vendor's aligned words with the markup turned back into the words it stands for: the
 * pieces of one tag (a tag aligns as several "words") become one word spanning their time.
 */
export class AlignedWords {
  private held: TimedString[] = [];

  constructor(private readonly rewriter: PronunciationRewriter) {}

  take(words: TimedString[]): TimedString[] {
    const out: TimedString[] = [];
    for (const word of words) {
      if (!this.held.length && !word.text.includes('<')) {
        out.push(word);
        continue;
      }
      this.held.push(word);
      if (!unclosed(this.held.map((held) => held.text).join(''))) out.push(this.release());
    }
    return out;
  }

  /** The end of the stream: whatever is held goes out as it is, markup stripped. */
  drain(): TimedString[] {
    return this.held.length ? [this.release()] : [];
  }

  private release(): TimedString {
    const text = this.held.map((held) => held.text).join('');
    const first = this.held[0]!;
    const last = this.held.at(-1)!;
    this.held = [];
    const plain = text
      .replace(SSML_PHONEME, (_tag, inner: string) => unescapeXml(inner))
      .replace(CARTESIA_PHONEMES, () => this.rewriter.replaced.shift() ?? '')
      .replace(/<\/?phoneme\b[^>]*>?/g, '');
    return createTimedString({
      text: plain,
      ...(first.startTime !== undefined ? { startTime: first.startTime } : {}),
      ...(last.endTime !== undefined ? { endTime: last.endTime } : {}),
      ...(first.startTimeOffset !== undefined ? { startTimeOffset: first.startTimeOffset } : {}),
    });
  }
}

function unclosed(text: string): boolean {
  const opened = (text.match(/<phoneme\b/g) ?? []).length;
  const closed = (text.match(/<\/phoneme\s*>/g) ?? []).length;
  return opened > closed || text.lastIndexOf('<<') > text.lastIndexOf('>>');
}

const unescapeXml = (value: string) => value.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&amp;/g, '&');

/**
 * The voice with the dictionary applied to every stream and synthesis it makes: the text is
 * rewritten on its way in (pushText, flush: what the framework and the FallbackAdapter call),
 * the aligned words on their way out. The voice itself is unchanged: a fallback voice of
 * another vendor gets its own markup, or plain text.
 */
export function withPronunciations<T extends tts.TTS>(voice: T, pronouncer: Pronouncer): T {
  if (pronouncer.empty) return voice;
  const stream = voice.stream.bind(voice);
  voice.stream = (options) => {
    const synthesis = stream(options);
    const rewriter = new PronunciationRewriter(pronouncer);
    const aligned = new AlignedWords(rewriter);
    const pushText = synthesis.pushText.bind(synthesis);
    const flush = synthesis.flush.bind(synthesis);
    const next = synthesis.next.bind(synthesis);
    synthesis.pushText = (text: string) => {
      const ready = rewriter.push(text);
      if (ready) pushText(ready);
    };
    // endInput flushes through this too.
    synthesis.flush = () => {
      const ready = rewriter.flush();
      if (ready) pushText(ready);
      flush();
    };
    synthesis.next = async () => {
      const result = await next();
      if (result.done || result.value === tts.SynthesizeStream.END_OF_STREAM) return result;
      const audio = result.value;
      const words = [...aligned.take(audio.timedTranscripts ?? []), ...(audio.final ? aligned.drain() : [])];
      return { done: false, value: { ...audio, timedTranscripts: words.length ? words : undefined } };
    };
    return synthesis;
  };
  const synthesize = voice.synthesize.bind(voice);
  voice.synthesize = (text, ...rest) => synthesize(pronouncer.apply(text), ...rest);
  return voice;
}
