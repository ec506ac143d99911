/**
 * Human review of QA results: routes.ts (served by the qa function), schemas.ts, a review
 * and a transcript correction in review.ts (WER in wer.ts), calibration in calibrate.ts.
 */
export { reviewResult, correctTranscript } from './review.ts';
export { calibrateCohort } from './calibrate.ts';
