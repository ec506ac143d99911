import * as z from 'zod';
import { lazySchema } from '../../platform/http/schemas.ts';
import { SpendDecisionView } from '../schemas.ts';

/** The spend check's API contract (docs/billing.md, The spend check): `POST /billing/check`. */

const SPEND_ACTION_NAMES = ['phone_call', 'web_call', 'register_call', 'batch_call', 'chat', 'sms', 'qa_scoring', 'conductor'] as const;

export const CheckSpendBody = lazySchema(() => z.object({ action: z.enum(SPEND_ACTION_NAMES).default('phone_call') }));
export const CheckSpendView = lazySchema(() => SpendDecisionView.extend({ action: z.enum(SPEND_ACTION_NAMES) }));
