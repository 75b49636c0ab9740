// The bare baseline the service is compared with: express 5 + one pg Pool, one SQL statement per
// request, nothing else (no auth, no logging, no event store, no encryption). Run as a child
// process by the bench (stack.ts) so that it has an event loop of its own, as the service does.
// Env: PORT, HOST (default 127.0.0.1), DATABASE_URL, DATABASE_POOL_SIZE (default 10),
// BASELINE_PROCESSES (default 1: as many serving processes as the service has; more are
// node:cluster workers sharing the port, each with its own pool).
import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import express from 'express';
import pg from 'pg';

const port = Number(process.env.PORT ?? 0);
const host = process.env.HOST ?? '127.0.0.1';
const connectionString = process.env.DATABASE_URL;
if (!connectionString) throw new Error('DATABASE_URL is required');

// Same pool size as the service's (each of its two pools has DATABASE_POOL_SIZE connections).
const pool = new pg.Pool({
  connectionString,
  max: Number(process.env.DATABASE_POOL_SIZE ?? 10),
  application_name: 'bench-baseline',
});
const processes = Number(process.env.BASELINE_PROCESSES ?? 1);
if (cluster.isPrimary) {
  await pool.query('CREATE TABLE IF NOT EXISTS bench_rows (id uuid PRIMARY KEY, body text NOT NULL)');
}
if (cluster.isPrimary && processes > 1) {
  await pool.end();
  const workers = Array.from({ length: processes }, () => cluster.fork());
  const stopWorkers = () => {
    for (const worker of workers) worker.kill('SIGTERM');
    cluster.on('exit', () => {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
    });
  };
  process.on('SIGTERM', stopWorkers);
  process.on('SIGINT', stopWorkers);
} else {
  await serve();
}

async function serve(): Promise<void> {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // The service's body parsing, verbatim (packages/platform/src/http-app.ts).
  app.use(express.json({ limit: '256kb', strict: false, type: ['application/json', 'application/*+json'] }));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  app.post('/rows', async (req, res) => {
    const id = randomUUID();
    await pool.query('INSERT INTO bench_rows (id, body) VALUES ($1, $2)', [id, JSON.stringify(req.body)]);
    res.status(201).json({ id });
  });

  app.get('/rows/:id', async (req, res) => {
    const result = await pool.query<{ id: string; body: string }>(
      'SELECT id, body FROM bench_rows WHERE id = $1',
      [req.params.id],
    );
    const row = result.rows[0];
    if (!row) {
      res.status(404).json({ error: 'not found' });
      return;
    }
    res.json({ id: row.id, data: JSON.parse(row.body) as unknown });
  });

  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(port, host, () => resolve(listening));
  });
  server.keepAliveTimeout = 65_000;

  const stop = () => {
    server.close();
    server.closeAllConnections();
    void pool.end().finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
