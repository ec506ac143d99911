import { badRequest, forbidden, notFound, unavailable } from '../../platform/errors.ts';
import { ATTACHMENT_READS } from '../tools/catalog.ts';
import { dispatch, type Caller } from '../tools/dispatch.ts';
import type { Attachment } from './schemas.ts';

/*
 * An attachment must be the caller's to read: each is read through its type's own read
 * route as the caller (the same dispatch as the tools), in parallel. Another workspace's
 * object is not found there, so the whole request is refused naming it and nothing is kept.
 */
export async function checkAttachments(caller: Caller, attachments: readonly Attachment[]): Promise<void> {
  const answers = await Promise.all(
    attachments.map(async (attachment) => {
      const read = ATTACHMENT_READS[attachment.type]!;
      return { attachment, answer: await dispatch(caller, undefined, read, { params: { [read.param]: attachment.id } }) };
    }),
  );
  for (const [index, { attachment, answer }] of answers.entries()) {
    if (answer.status < 300) continue;
    const message = (answer.body as { message?: string } | undefined)?.message ?? `HTTP ${answer.status}`;
    const what = `${attachment.type} ${attachment.id}`;
    if (answer.status === 404) throw notFound(`attachments.${index}: ${what} not found`);
    if (answer.status === 400) throw badRequest(`attachments.${index}: ${what} is not a valid ID (${message})`);
    if (answer.status === 403) throw forbidden(`attachments.${index}: ${what}: ${message}`);
    throw unavailable(`attachments.${index}: ${what} could not be checked (${message}); try again`, 1);
  }
}
