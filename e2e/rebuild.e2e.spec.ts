import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { useStack } from './support/stack.ts';

const run = promisify(execFile);
const root = new URL('..', import.meta.url).pathname;

describe('rebuild-read-models CLI, while the service runs', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });

  it('replays every event into the same read models, and the running service keeps reading its writes', async () => {
    const parent = await env.tenant.client.tokens.create({ data: 'parent' });
    const ids: string[] = [];
    for (let index = 0; index < 30; index++) {
      ids.push(
        (
          await env.tenant.client.request<{ id: string }>('POST', `/tokens/${parent.id}/children`, {
            body: { data: index },
          })
        ).body.id,
      );
    }
    await env.tenant.client.tokens.delete(ids[0]!);
    await env.tenant.client.request('PUT', '/tenants/self', { body: { name: 'Before rebuild' } });
    const snapshot = async () => ({
      children: (
        await env.tenant.client.request('GET', `/tokens/${parent.id}/children`, { query: { size: 100 } })
      ).body,
      tenant: (await env.tenant.client.request('GET', '/tenants/self')).body,
      applications: (await env.tenant.client.request('GET', '/applications')).body,
      usage: (await env.tenant.client.request('GET', '/tenants/self/reports/usage')).body,
    });
    const before = await snapshot();

    const { stderr } = await run(process.execPath, ['services/admin-cli/src/rebuild-read-models.ts'], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: env.stack.database.url,
        MASTER_KEY: env.stack.config.MASTER_KEY,
        LOG_LEVEL: 'warn',
      },
    });
    expect(stderr).toContain('read models rebuilt');

    const after = await snapshot();
    // Reading children is itself audited (and counted as activity), so usage is compared as of now.
    expect(after.children).toEqual(before.children);
    expect(after.tenant).toEqual(before.tenant);
    expect(after.applications).toEqual(before.applications);
    expect(after.usage).toEqual(before.usage);

    const created = await env.tenant.client.tokens.create({ data: 'after' });
    expect(await env.tenant.client.tokens.get(created.id)).toMatchObject({ data: 'after' });
  });
});
