// The worker role alone: turns invitation events into BullMQ jobs and sends the e-mails (invitation
// and sign-in), runs reactors from their BullMQ queue in sandbox child processes, and destroys
// expired tokens' keys.
import { loadConfig } from '@tokenvault/platform';
import { runUntilSignalled, startWorker } from '@tokenvault/runtime';

await runUntilSignalled(() => startWorker(loadConfig()));
