export { runCallStep, type CallStepMessage } from './steps.ts';
