// The projector role alone: applies every event to the PostgreSQL read models, and signs the
// event log's tree heads.
import { loadConfig } from '@tokenvault/platform';
import { runUntilSignalled, startProjector } from '@tokenvault/runtime';

await runUntilSignalled(() => startProjector(loadConfig()));
