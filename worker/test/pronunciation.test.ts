import { createTimedString, type TimedString } from '@livekit/agents';
import { describe, expect, it } from 'vitest';
import { agentSettings } from '../src/agent-settings.ts';
import { AlignedWords, cartesiaPhonemes, Pronouncer, PronunciationRewriter, type PronunciationEntry } from '../src/pronunciation.ts';
import { pronunciationMarkup, voiceModel } from '../src/vendors.ts';

/*
 * The pronunciation dictionary as text on its way to a voice: which words are replaced (whole,
 * any case, however the reply's text is cut into pieces), the markup each vendor takes, and the
 * aligned words turned back into the words. The voices themselves are in integration.test.ts.
 */

const PARLEY: PronunciationEntry = { word: 'Parley', alphabet: 'ipa', phoneme: 'ˈpɑːrli' };
const NEW_YORK: PronunciationEntry = { word: 'New York', alphabet: 'cmu', phoneme: 'N UW1 Y AO1 R K' };
const TAG = '<phoneme alphabet="ipa" ph="ˈpɑːrli">';

/** The text as a voice receives it, fed in the given pieces. */
function rewrite(pronouncer: Pronouncer, pieces: string[]): { sent: string[]; rewriter: PronunciationRewriter } {
  const rewriter = new PronunciationRewriter(pronouncer);
  const sent = pieces.map((piece) => rewriter.push(piece));
  sent.push(rewriter.flush());
  return { sent, rewriter };
}

const timed = (text: string, startTime: number, endTime: number): TimedString => createTimedString({ text, startTime, endTime });

describe('pronunciation dictionary', () => {
  it('keeps the usable entries of the agent\'s dictionary', () => {
    const { settings, ignored } = agentSettings({
      pronunciation_dictionary: [PARLEY, { word: 'x', alphabet: 'klingon', phoneme: 'k' }, { word: ' ', alphabet: 'ipa', phoneme: 'a' }, 'Parley', NEW_YORK],
    });
    expect(ignored).toEqual([]);
    expect(settings.pronunciation_dictionary).toEqual([PARLEY, NEW_YORK]);
    expect(agentSettings({}).settings.pronunciation_dictionary).toEqual([]);
    expect(agentSettings({ pronunciation_dictionary: null }).settings.pronunciation_dictionary).toEqual([]);
  });

  it('replaces whole words in any case, never inside another word, whatever pieces the text comes in', () => {
    const pronouncer = new Pronouncer([PARLEY], 'ssml');
    const { sent } = rewrite(pronouncer, ['Welcome to Par', 'ley! parleys, Parleyville and un', 'parley are not; PARLEY', ' is.']);
    expect(sent.join('')).toBe(`Welcome to ${TAG}Parley</phoneme>! parleys, Parleyville and unparley are not; ${TAG}PARLEY</phoneme> is.`);
    // A word is held back only until it is known to be whole.
    expect(sent).toEqual(['Welcome to ', `${TAG}Parley</phoneme>! parleys, Parleyville and `, `unparley are not; `, `${TAG}PARLEY</phoneme> is.`, '']);
  });

  it('replaces a phrase across pieces, CMU Arpabet as ElevenLabs names it', () => {
    const { sent } = rewrite(new Pronouncer([NEW_YORK, PARLEY], 'ssml'), ['I love New', ' ', 'York and New Jersey.']);
    expect(sent.join('')).toBe('I love <phoneme alphabet="cmu-arpabet" ph="N UW1 Y AO1 R K">New York</phoneme> and New Jersey.');
  });

  it('writes IPA as Cartesia\'s << >> phonemes, and leaves out what Cartesia cannot take', () => {
    expect(cartesiaPhonemes('kɑɹˈtiʒə')).toBe('<<k|ɑ|ɹ|ˈ|t|i|ʒ|ə>>');
    expect(cartesiaPhonemes('/ˈpɑːr.li/')).toBe('<<ˈ|p|ɑː|r|l|i>>');
    expect(cartesiaPhonemes('t͡ʃaɪ dʒoʊ')).toBe('<<t͡ʃ|aɪ|dʒ|oʊ>>');
    const { sent } = rewrite(new Pronouncer([PARLEY, NEW_YORK], 'cartesia'), ['Parley in New York']);
    expect(sent.join('')).toBe('<<ˈ|p|ɑː|r|l|i>> in New York');
  });

  it('turns the aligned markup back into the word it stands for, spanning its pieces\' time', () => {
    const ssml = new AlignedWords(new PronunciationRewriter(new Pronouncer([PARLEY], 'ssml')));
    // The plugin splits a tag into several "words".
    expect(ssml.take([timed('Welcome ', 0, 0.4), timed('to ', 0.4, 0.5), timed('<phoneme ', 0.5, 0.7)])).toEqual([timed('Welcome ', 0, 0.4), timed('to ', 0.4, 0.5)]);
    expect(ssml.take([timed('alphabet="ipa" ', 0.7, 1.2)])).toEqual([]);
    expect(ssml.take([timed('ph="ˈpɑːrli">Parley</phoneme>, ', 1.2, 2), timed('hi ', 2, 2.2)])).toEqual([timed('Parley, ', 0.5, 2), timed('hi ', 2, 2.2)]);
    expect(ssml.drain()).toEqual([]);

    const pronouncer = new Pronouncer([PARLEY], 'cartesia');
    const { rewriter } = rewrite(pronouncer, ['parley and Parley.']);
    const cartesia = new AlignedWords(rewriter);
    expect(cartesia.take([timed('<<ˈ|p|ɑː|r|l|i>> ', 0, 0.3), timed('and ', 0.3, 0.5), timed('<<ˈ|p|ɑː|r|l|i>>. ', 0.5, 0.9)])).toEqual([
      timed('parley ', 0, 0.3),
      timed('and ', 0.3, 0.5),
      timed('Parley. ', 0.5, 0.9),
    ]);
  });

  it('speaks the dictionary only on the voices that read it', () => {
    const en = agentSettings({ pronunciation_dictionary: [PARLEY] }).settings;
    expect(voiceModel('elevenlabs', en)).toBe('eleven_flash_v2');
    expect(voiceModel('elevenlabs', { ...en, voice_model: 'eleven_turbo_v2_5' })).toBe('eleven_turbo_v2_5');
    expect(voiceModel('elevenlabs', { ...en, language: 'de-DE' })).toBeUndefined();
    expect(voiceModel('elevenlabs', agentSettings({}).settings)).toBeUndefined();
    expect(voiceModel('cartesia', en)).toBeUndefined();
    expect(pronunciationMarkup('elevenlabs', 'eleven_flash_v2')).toBe('ssml');
    expect(pronunciationMarkup('elevenlabs', 'eleven_turbo_v2')).toBe('ssml');
    expect(pronunciationMarkup('elevenlabs', 'eleven_turbo_v2_5')).toBeUndefined();
    expect(pronunciationMarkup('elevenlabs', undefined)).toBeUndefined();
    expect(pronunciationMarkup('cartesia', undefined)).toBe('cartesia');
    expect(pronunciationMarkup('openai', 'gpt-4o-mini-tts')).toBeUndefined();
    expect(pronunciationMarkup('deepgram', undefined)).toBeUndefined();
  });
});
