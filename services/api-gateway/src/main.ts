// The gateway role alone (no projector, no worker): for deployments that scale them apart.
import { loadConfig } from '@tokenvault/platform';
import { runUntilSignalled, startGateway } from '@tokenvault/runtime';

await runUntilSignalled(() => startGateway(loadConfig()));
