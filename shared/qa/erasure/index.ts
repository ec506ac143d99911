/**
 * The QA domain's narrow entry for what deletes calls (the calls domain's deleteCall:
 * delete-call, privacy erases, retention): a call's QA results go with it, in every cohort
 * and rubric version. It reaches only the results' items (results/store.ts), never the
 * scorer or the language-model adapter.
 */
export { deleteCallResults } from '../results/store.ts';
