/**
 * The public domain's entry (docs/browser.md): the routes a browser calls without a secret
 * key. Nothing else imports it; functions/public.ts serves it.
 */
export { endPublicChat, sendPublicChatMessage, startPublicChat, startShareChat } from './public-chats.ts';
export { getPublicShare, startShareWebCall } from './share.ts';
export { getPublicCallKbRetrievals, getPublicCallLog } from './call-log.ts';
export { widgetResponse } from './widget.ts';
