import { findCredential, type CredentialItem } from '../platform/auth/credentials.ts';
import { notFound } from '../platform/errors.ts';
import { keys } from '../platform/store/keys.ts';
import { defineEntity, table } from '../platform/store/table.ts';

/*
 * The public domain's items, each declared once with its key: a public chat's pointer (its
 * secret's hash, what started it). The chat itself is the chats domain's.
 */

/** What started a public chat: a public key (its ID; the chat answers only from that key's origins) or a share link. */
export type PublicChatOrigin =
  | { kind: 'public_key'; public_key_id: string }
  | { kind: 'share_link'; share_link_id: string }
  /** A secret key or a session started it through /public/chat/start (a server, not a browser). */
  | { kind: 'secret_key' };

export interface PublicChatItem {
  pk: string;
  sk: string;
  chat_id: string;
  workspace_id: string;
  agent_id: string;
  /** SHA-256 (hex) of the chat secret: the secret itself is never stored. */
  secret_sha256: string;
  started_by: PublicChatOrigin;
  created_timestamp: number;
  /** TTL: the secret stops working a week after the chat started. */
  expires_at: number;
}

/** How long a public chat's secret works. */
export const PUBLIC_CHAT_TTL_SECONDS = 7 * 24 * 3600;

export const publicChats = defineEntity<PublicChatItem, [chatId: string]>({
  key: keys.publicChat,
  notFound: () => notFound('Chat not found'),
});

/** Writes a new chat's pointer before the chat exists (the chat is started under this ID). */
export async function putPublicChat(item: PublicChatItem): Promise<void> {
  await table.put({ Item: item, ConditionExpression: 'attribute_not_exists(pk)' });
}

export async function removePublicChat(chatId: string): Promise<void> {
  await table.delete({ Key: keys.publicChat(chatId) });
}

/** A public key of a workspace by its ID (its record, with its allowed origins), or undefined once deleted. */
export async function findPublicKey(workspaceId: string, publicKeyId: string): Promise<CredentialItem | undefined> {
  const credential = await findCredential(keys.publicKeyRef(workspaceId, publicKeyId));
  return credential?.kind === 'public' ? credential : undefined;
}
