// Entry of worker threads: registers the TypeScript loader, then loads the real entry module.
// (Node 20 applies --import hooks to a worker only after its entry module has been resolved.)
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.entry);
