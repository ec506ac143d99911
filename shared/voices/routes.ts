import { defineRoutes } from '../platform/http/route.ts';
import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import {
  AddCommunityVoiceBody,
  CLONE_UPLOAD_LIMITS,
  CloneVoiceBody,
  CommunityVoiceSearch,
  CreateVoiceCloneUploadBody,
  searchFields,
  Voice,
  VoiceCloneUpload,
  voiceIdParams,
  VoicePreview,
} from './schemas.ts';

export const voiceRoutes = defineRoutes({ domain: 'voices', access: 'agents' }, {
  listVoices: {
    method: 'GET', path: '/list-voices', status: 200,
    summary: 'List the built-in catalogue voices and the workspace\'s own voices',
    response: lazySchema(() => z.array(Voice)),
  },
  getVoice: {
    method: 'GET', path: '/get-voice/{voice_id}', status: 200,
    summary: 'Get a voice',
    params: voiceIdParams, response: Voice,
  },
  getVoicePreview: {
    method: 'GET', path: '/voice-preview/{voice_id}', status: 200,
    summary: 'Get a playable preview URL for a voice',
    params: voiceIdParams, response: VoicePreview,
  },
  cloneVoice: {
    method: 'POST', path: '/clone-voice', status: 201,
    throttle: 'vendor',
    summary: 'Clone a voice from audio files (multipart/form-data: voice_name, files, voice_provider), or from presigned uploads (`upload_ids`, JSON or multipart)',
    bodyType: 'json-or-multipart', uploadLimits: CLONE_UPLOAD_LIMITS,
    body: CloneVoiceBody, response: Voice,
  },
  createVoiceCloneUpload: {
    method: 'POST', path: '/create-voice-clone-upload', status: 201,
    summary: 'A presigned URL to PUT one voice sample (audio, up to 10 MB) to, past the ~6 MB request limit; then name it in clone-voice\'s upload_ids',
    body: CreateVoiceCloneUploadBody, response: VoiceCloneUpload,
  },
  searchCommunityVoices: {
    method: 'GET', path: '/search-community-voice', status: 200,
    throttle: 'vendor',
    summary: 'Search a vendor\'s community voice library',
    query: lazySchema(searchFields), response: CommunityVoiceSearch,
  },
  searchCommunityVoicesByBody: {
    method: 'POST', path: '/search-community-voice', status: 200,
    throttle: 'vendor',
    summary: 'Search a vendor\'s community voice library (JSON body, as retell-sdk sends it)',
    body: lazySchema(searchFields), response: CommunityVoiceSearch,
  },
  addCommunityVoice: {
    method: 'POST', path: '/add-community-voice', status: 201,
    throttle: 'vendor',
    summary: 'Add a community voice to the workspace\'s voices',
    body: AddCommunityVoiceBody, response: Voice,
  },
});
