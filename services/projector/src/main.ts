// The projector role alone: applies every event to the PostgreSQL read models, and seals the event log.
import { loadConfig } from '@tokenvault/platform';
import { runUntilSignalled, startProjector } from '@tokenvault/runtime';

await runUntilSignalled(() => startProjector(loadConfig()));
