import * as z from 'zod';

/**
 * An environment tag's name (a voice agent's tag, and the version references that name
 * one). Its own module so the narrow entry (../bindings/) reaches no agent schema module.
 */
const TAG_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
export const tagName = () =>
  z
    .string()
    .regex(TAG_NAME, 'Must be 1 to 64 letters, digits, "_", "-" or ".", starting with a letter or digit')
    .refine((name) => !/^\d+$/.test(name), 'Must not be a number (numbers name versions)')
    .refine((name) => name !== 'latest' && name !== 'latest_published', 'Must not be "latest" or "latest_published"');
