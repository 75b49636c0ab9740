// `npm start`: the whole service in one process, on the local PostgreSQL and Redis.
import { loadConfig } from '@tokenvault/platform';
import { runUntilSignalled, startAllInOne } from '@tokenvault/runtime';

await runUntilSignalled(() => startAllInOne(loadConfig()));
