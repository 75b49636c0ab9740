// Records when each projector checkpoint NOTIFY reaches a client. Runs as a child process of
// projection-lag.ts (forked with an IPC channel) so that the load generator's busy event loop
// cannot delay the receive timestamps. On the message 'dump' it sends every observation back and
// exits. Env: DATABASE_URL.
import pg from 'pg';
import type { ListenerReply } from '../support/processes.ts';

export interface CheckpointObservation {
  /** Wall-clock receive time, ms since the epoch, sub-millisecond resolution. */
  receivedAtMs: number;
  commit: string;
  prepare: string;
}

const connectionString = process.env.DATABASE_URL;
if (!connectionString) throw new Error('DATABASE_URL is required');
if (!process.send) throw new Error('projection-lag-listener must be started with an IPC channel');
const send = (message: ListenerReply<CheckpointObservation>) => process.send?.(message);

const observations: CheckpointObservation[] = [];
const client = new pg.Client({ connectionString, application_name: 'bench-lag-listener' });
client.on('notification', (message) => {
  // performance.now() is monotonic and finer than Date.now(); anchored to the wall clock, so it
  // is comparable with PostgreSQL's now() on the same machine.
  const receivedAtMs = performance.timeOrigin + performance.now();
  const [name, commit, prepare] = (message.payload ?? '').split(':');
  if (name === 'read-models' && commit && prepare) observations.push({ receivedAtMs, commit, prepare });
});
await client.connect();
await client.query('LISTEN projection_checkpoint');
send({ type: 'ready' });

process.on('message', (message) => {
  if (message !== 'dump') return;
  send({ type: 'observations', observations });
  void client.end().finally(() => process.disconnect());
});
// The parent went away without asking: do not linger.
process.on('disconnect', () => void client.end().finally(() => process.exit(0)));
