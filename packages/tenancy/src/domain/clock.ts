export { systemClock, type Clock } from '@tokenvault/platform';
