export { walkthrough, Walkthrough } from './walkthrough.ts';
