import { domainHandler } from '../shared/platform/http/handler.ts';
import { parseMultipart } from '../shared/platform/http/multipart.ts';
import { voiceRoutes } from '../shared/voices/routes.ts';
import * as voices from '../shared/voices/voices.ts';

export const handler = domainHandler(voiceRoutes, {
  listVoices: ({ principal }) => voices.listVoices(principal.workspaceId),
  getVoice: ({ principal, params }) => voices.getVoice(principal.workspaceId, params.voice_id),
  getVoicePreview: ({ principal, params }) => voices.previewVoice(principal.workspaceId, params.voice_id),
  cloneVoice: ({ principal, body }) => voices.cloneVoice(principal, body),
  createVoiceCloneUpload: ({ principal, body }) => voices.createVoiceCloneUpload(principal.workspaceId, body),
  searchCommunityVoices: ({ query }) => voices.searchCommunityVoices(query),
  searchCommunityVoicesByBody: ({ body }) => voices.searchCommunityVoices(body),
  addCommunityVoice: ({ principal, body }) => voices.addCommunityVoice(principal, body),
}, { multipart: parseMultipart });
