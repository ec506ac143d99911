/**
 * What other domains may use of voices: they import it from here, never from its
 * files (eslint no-restricted-imports). Keep it small: every name here can pull its module
 * into another domain's bundle.
 */
export { DEFAULT_VOICE_ID, DEFAULT_VOICE_MODEL, PREMIUM_VOICE_MODEL, VOICE_ID_PREFIX, assertVoiceUsable, catalogueVoice, voiceVendorId } from './voice-catalogue.ts';
