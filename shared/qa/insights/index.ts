/** QA insights: routes.ts (served by the qa function), schemas.ts, the overview and metrics (overview.ts, figures.ts), top questions (top-questions.ts). */
export { cohortOverview, workspaceMetrics } from './overview.ts';
export { topQuestions } from './top-questions.ts';
