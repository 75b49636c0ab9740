// The console as a management tool, in Chromium (playwright-core, support/browser.ts): each flow
// a member uses to manage what the API manages, reviewed at 1280 px by support/console.ts's
// reviewPage (axe-core: nothing serious or critical; no word of a table broken across lines; a
// screenshot under .data/e2e-output/console/).
import { beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { eventually } from '@tokenvault/platform/testing';
import { reviewPage, signInThroughConsole, useConsoleStack } from './support/console.ts';
import { ownerEmailOf } from './support/sign-in.ts';
import type { TestTenant } from './support/stack.ts';

interface Application {
  id: string;
  name: string;
  type: string;
  permissions: string[];
  rules: {
    description?: string;
    priority?: number;
    container: string;
    transform: string;
    permissions: string[];
  }[];
}

describe('the console manages what the API manages', () => {
  // The proxy's destination in these tests is on this machine (a port nothing listens on).
  const env = useConsoleStack({ PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1' });
  let tenant: TestTenant;
  let ownerEmail: string;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    tenant = await env.stack.createTenant('Management Corp');
    ownerEmail = await ownerEmailOf(tenant);
    page = await env.newPage();
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('dialog', (dialog) => void dialog.accept());
    await signInThroughConsole(page, env.stack.url, env.smtp, ownerEmail);
  }, 120_000);

  const applicationNamed = async (name: string) => {
    const listed = await tenant.client.request<{ data: Application[] }>('GET', '/applications', {
      query: { size: 100 },
    });
    return listed.body.data.find((application) => application.name === name);
  };

  it('an unknown address shows a "Page not found" page, not another page in its place', async () => {
    await page.goto(`${env.stack.url}/console#/no-such-page`);
    await page.locator('main h1', { hasText: 'Page not found' }).waitFor();
    expect(await page.locator('main').innerText()).toContain('#/no-such-page');
    await reviewPage(page, 'not-found');
    await page.getByRole('link', { name: 'Go to the tenant’s page' }).click();
    await page.locator('main h1', { hasText: 'Management Corp' }).waitFor();
  });

  it('creates an application from a preset with a container rule, edits it, and names its creator', async () => {
    await page.getByRole('link', { name: 'Applications' }).click();
    await page.getByRole('heading', { name: 'New application' }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Reader of PCI');
    // The read-only preset ticks every read and nothing that writes.
    await page.getByRole('button', { name: 'Read-only' }).click();
    expect(await page.getByLabel('token:read', { exact: true }).isChecked()).toBe(true);
    expect(await page.getByLabel('log:read', { exact: true }).isChecked()).toBe(true);
    expect(await page.getByLabel('token:create', { exact: true }).isChecked()).toBe(false);
    // Tenant-wide, only the logs; tokens through a rule, masked, in /pci/.
    await page.getByRole('button', { name: 'None' }).click();
    await page.getByLabel('log:read', { exact: true }).check();
    await page.getByRole('button', { name: 'Add a container rule' }).click();
    await page.getByLabel('Rule 1: description').fill('Support reads cards masked');
    await page.getByLabel('Rule 1: priority').fill('5');
    await page.getByLabel('Rule 1: container').fill('/pci/');
    await page.getByLabel('Rule 1: transform').selectOption('mask');
    await page.getByLabel('Rule 1: token:search').check();
    await reviewPage(page, 'applications-new');
    await page.getByRole('button', { name: 'Create application' }).click();
    await page.locator('#new-key').waitFor();
    const key = await page.locator('#new-key').innerText();
    await page.getByRole('button', { name: 'Copy the key' }).click();
    await page.getByText('Copied.').waitFor();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(key);

    const created = await applicationNamed('Reader of PCI');
    expect(created).toMatchObject({
      type: 'private',
      permissions: ['log:read'],
      rules: [
        {
          description: 'Support reads cards masked',
          priority: 5,
          container: '/pci/',
          transform: 'mask',
          permissions: ['token:read', 'token:search'],
        },
      ],
    });
    // An application whose token access is all rules still says what it may do.
    const row = page.getByRole('row').filter({ hasText: 'Reader of PCI' });
    expect(await row.getByRole('cell').nth(2).innerText()).toBe(
      'log:read; token:read, token:search in /pci/ (mask)',
    );
    // Its creator by e-mail, linked to the members.
    expect(await row.getByRole('cell').nth(3).getByRole('link').innerText()).toBe(ownerEmail);
    await reviewPage(page, 'applications');

    // Edited: renamed, the rule now redacts, a second rule reveals /public/.
    await row.getByRole('link', { name: 'Reader of PCI' }).click();
    await page.locator('main h1', { hasText: 'Reader of PCI' }).waitFor();
    expect(await page.getByLabel('Rule 1: transform').inputValue()).toBe('mask');
    await page.getByLabel('Name', { exact: true }).fill('Support desk');
    await page.getByLabel('Rule 1: transform').selectOption('redact');
    await page.getByRole('button', { name: 'Add a container rule' }).click();
    await page.getByLabel('Rule 2: container').fill('/public/');
    await reviewPage(page, 'application-edit');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved “Support desk”.').waitFor();
    const edited = await applicationNamed('Support desk');
    expect(edited?.id).toBe(created?.id);
    expect(edited?.rules).toEqual([
      expect.objectContaining({ container: '/pci/', transform: 'redact', priority: 5 }),
      expect.objectContaining({ container: '/public/', transform: 'reveal', permissions: ['token:read'] }),
    ]);
    expect(problems).toEqual([]);
  });

  it('rotates an application’s key: a new key shown once with a copy button, the old one deleted', async () => {
    const created = await tenant.client.request<Application & { key: string }>('POST', '/applications', {
      body: { name: 'Rotated app', type: 'private', permissions: ['token:read'] },
    });
    expect(created.status).toBe(201);
    const oldKey = created.body.key;
    const [oldKeyEntry] = (
      await tenant.client.request<{ id: string }[]>('GET', `/applications/${created.body.id}/keys`)
    ).body;
    await page.goto(`${env.stack.url}/console#/applications/${created.body.id}`);
    await page.locator('main h1', { hasText: 'Rotated app' }).waitFor();
    await page.getByRole('cell', { name: oldKeyEntry!.id, exact: true }).waitFor();
    await page.getByRole('button', { name: 'Create a key' }).click();
    await page.locator('#new-key').waitFor();
    const newKey = await page.locator('#new-key').innerText();
    await page.getByRole('button', { name: 'Copy the key' }).click();
    await page.getByText('Copied.').waitFor();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(newKey);
    expect(await page.locator('tbody tr').count()).toBe(2);
    await reviewPage(page, 'application-keys');
    // Both work until the old one is deleted.
    for (const key of [oldKey, newKey]) {
      expect((await env.stack.client.request('GET', '/tokens', { apiKey: key })).status).toBe(200);
    }
    await page.getByRole('button', { name: `Delete key ${oldKeyEntry!.id}` }).click();
    await page.getByText('Key deleted.').waitFor();
    expect(await page.locator('tbody tr').count()).toBe(1);
    expect((await env.stack.client.request('GET', '/tokens', { apiKey: oldKey })).status).toBe(401);
    expect((await env.stack.client.request('GET', '/tokens', { apiKey: newKey })).status).toBe(200);
    // Shown once: not after a reload.
    await page.reload();
    await page.locator('main h1', { hasText: 'Rotated app' }).waitFor();
    expect(await page.content()).not.toContain(newKey);
  });

  it('the log names actors: a member by e-mail and an application by name, each a link', async () => {
    await tenant.client.request('POST', '/tokens', { body: { type: 'token', data: 'by the key' } });
    await page.goto(`${env.stack.url}/console#/logs`);
    await page.locator('main tbody tr').first().waitFor();
    const actors = page.locator('main tbody tr td:nth-child(5)');
    await expect.poll(() => actors.getByRole('link', { name: ownerEmail }).count()).toBeGreaterThan(0);
    const applicationActor = actors.getByRole('link', { name: /^Application / }).first();
    await applicationActor.waitFor();
    expect(await actors.allInnerTexts()).not.toContainEqual(
      expect.stringMatching(/^(user|application) [0-9a-f-]{36}$/),
    );
    await reviewPage(page, 'logs-actors');
    await applicationActor.click();
    await page.getByRole('heading', { name: 'Keys' }).waitFor();
    expect(problems).toEqual([]);
  });

  it('edits the tenant’s settings, and charts its usage (Chart.js, bundled, under the CSP)', async () => {
    for (const type of ['card_number', 'token', 'token']) {
      const data = type === 'card_number' ? '4242424242424242' : `usage ${Math.random()}`;
      expect((await tenant.client.request('POST', '/tokens', { body: { type, data } })).status).toBe(201);
    }
    const cspRefusals: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspRefusals.push(message.text());
    });
    await page.goto(`${env.stack.url}/console#/tenant`);
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    const usage = await tenant.client.request<{
      token_report: { monthly_active_tokens: number; included_monthly_active_tokens: number };
    }>('GET', '/tenants/self/reports/usage');
    const { monthly_active_tokens: active, included_monthly_active_tokens: included } =
      usage.body.token_report;
    expect(active).toBeGreaterThanOrEqual(3);
    expect(await page.locator('#monthly-active').innerText()).toMatch(
      new RegExp(`^${active} of the ${included} included in the plan this month`),
    );
    const byType = page.getByRole('img', { name: /^Tokens by type:/ });
    expect(await byType.getAttribute('aria-label')).toContain('card_number 1');
    expect(await byType.getAttribute('aria-label')).toContain('token 3');
    // The 30-day series: today (UTC) last, with the tokens just created.
    const series = (
      await tenant.client.request<{
        token_report: { daily_created_by_type: { date: string; counts: Record<string, number> }[] };
      }>('GET', '/tenants/self/reports/usage')
    ).body.token_report.daily_created_by_type;
    expect(series).toHaveLength(30);
    const today = series.at(-1);
    expect(today?.date).toBe(new Date().toISOString().slice(0, 10));
    expect(today?.counts.card_number).toBeGreaterThanOrEqual(1);
    expect(today?.counts.token).toBeGreaterThanOrEqual(2);
    const perDay = page.getByRole('img', { name: /^Tokens created per day, last 30 days:/ });
    expect(await perDay.getAttribute('aria-label')).toMatch(/, card_number \d+/);
    expect(await perDay.getAttribute('aria-label')).toMatch(/, token \d+/);
    // The charts are drawn: their canvases hold coloured pixels.
    for (const name of ['Tokens by type:', 'Monthly active tokens:', 'Tokens created per day']) {
      await expect
        .poll(() =>
          page.evaluate<number>(`(() => {
            const canvas = document.querySelector('canvas[aria-label^="${name}"]');
            const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
            let coloured = 0;
            for (let index = 0; index < pixels.length; index += 4)
              if (pixels[index + 3] > 0 && pixels[index + 2] > pixels[index] + 50) coloured++;
            return coloured;
          })()`),
        )
        .toBeGreaterThan(100);
    }
    // The chart library is in the console's own script; nothing comes from elsewhere.
    const script = await (await fetch(`${env.stack.url}/console/assets/console.js`)).text();
    expect(script).toContain('chartjs'); // Chart.js's own names (its events, its classes).
    // Its one absolute address is the example in the proxy form's destination field.
    expect(new Set(script.match(/https?:\/\/[^\s"'`]+/g))).toEqual(
      new Set(['https://api.example.com/payments']),
    );
    expect(cspRefusals).toEqual([]);
    await reviewPage(page, 'tenant-usage');

    await page.getByLabel('Name', { exact: true }).fill('Management Corp Renamed');
    await page.getByLabel(/^Deduplicate tokens/).check();
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Settings saved.').waitFor();
    await page.locator('main h1', { hasText: 'Management Corp Renamed' }).waitFor();
    const saved = await tenant.client.request<{ name: string; settings: { deduplicate_tokens: string } }>(
      'GET',
      '/tenants/self',
    );
    expect(saved.body).toMatchObject({
      name: 'Management Corp Renamed',
      settings: { deduplicate_tokens: 'true' },
    });
    expect(await page.getByLabel(/^Deduplicate tokens/).isChecked()).toBe(true);
    expect(problems).toEqual([]);
  });

  it('creates and edits a formula and a reactor; "Try" lays out the formula’s parameters', async () => {
    await page.goto(`${env.stack.url}/console#/reactors`);
    await page.getByRole('heading', { name: 'New formula' }).waitFor();
    await page.getByLabel('Formula name').fill('Greeter');
    await page
      .locator('textarea[name="code"]')
      .fill(
        'module.exports = async function (req) { return { raw: { greeting: req.configuration.greeting + " " + req.args.person.name, count: req.args.count } }; };',
      );
    await page.getByLabel(/^Request parameters/).fill(
      JSON.stringify([
        { name: 'person.name', type: 'string', description: 'Who is greeted' },
        { name: 'count', type: 'number', optional: true },
      ]),
    );
    await page
      .getByLabel(/^Configuration declarations/)
      .fill(JSON.stringify([{ name: 'greeting', type: 'string' }]));
    await page.getByRole('button', { name: 'Create the formula' }).click();
    await page.getByText('Created the formula “Greeter”.').waitFor();
    await page.getByLabel('Reactor name').fill('Hello reactor');
    await page.locator('select[name="formula"]').selectOption({ label: 'Greeter' });
    await page.getByLabel('Configuration (JSON object)').fill('{"greeting": "Hello"}');
    await reviewPage(page, 'reactors-new');
    await page.getByRole('button', { name: 'Create the reactor' }).click();
    await page.locator('main h1', { hasText: 'Hello reactor' }).waitFor();
    // "Try" names each parameter and starts from a template of them, not from {}.
    const parameters = page.getByRole('region', { name: /^Table: Parameter/ });
    expect(await parameters.innerText()).toContain('person.name');
    expect(await parameters.innerText()).toContain('Who is greeted');
    expect(JSON.parse(await page.getByLabel('Arguments (JSON)').inputValue())).toEqual({
      person: { name: '' },
      count: 0,
    });
    await reviewPage(page, 'reactor-try');
    await page.getByLabel('Arguments (JSON)').fill('{"person": {"name": "Ada"}, "count": 2}');
    await page.getByRole('button', { name: 'Invoke' }).click();
    await page.getByText('"greeting": "Hello Ada"').waitFor({ timeout: 30_000 });

    // Edited: the reactor's configuration, then the formula's description.
    await page.getByLabel('Configuration (JSON object)').fill('{"greeting": "Hi"}');
    await page.getByRole('button', { name: 'Save the reactor' }).click();
    await page.getByText('Saved the reactor “Hello reactor”.').waitFor();
    await page.getByLabel('Arguments (JSON)').fill('{"person": {"name": "Ada"}}');
    await page.getByRole('button', { name: 'Invoke' }).click();
    await page.getByText('"greeting": "Hi Ada"').waitFor({ timeout: 30_000 });
    await page.getByRole('link', { name: 'All reactors' }).click();
    await page.getByRole('link', { name: 'Greeter' }).click();
    // The formula's page renders once its GET answers: filling before then would fill the list's form.
    await page.getByRole('heading', { name: 'Formula Greeter' }).waitFor();
    await page.getByLabel('Description', { exact: true }).fill('Greets a person');
    await page.getByRole('button', { name: 'Save the formula' }).click();
    await page.getByText('Saved the formula “Greeter”.').waitFor();
    await reviewPage(page, 'formula-edit');
    // The API key's list reads the read model, which may still be catching up (PROJECTIONS=async).
    await eventually(async () => {
      const formulas = await tenant.client.request<{ data: { name: string; description?: string }[] }>(
        'GET',
        '/reactor-formulas',
      );
      expect(formulas.body.data.find((formula) => formula.name === 'Greeter')?.description).toBe(
        'Greets a person',
      );
    }, 30_000);
    expect(problems).toEqual([]);
  });

  it('lists, creates, edits and deletes proxies', async () => {
    await page.goto(`${env.stack.url}/console#/proxies`);
    await page.getByRole('heading', { name: 'New proxy' }).waitFor();
    await page.getByLabel('Proxy name').fill('Payments');
    await page.getByLabel('Destination URL').fill('http://127.0.0.1:9/charge');
    await page.getByLabel('Timeout in seconds', { exact: false }).fill('20');
    await page.getByRole('button', { name: 'Create the proxy' }).click();
    await page.getByText('Created the proxy “Payments”.').waitFor();
    await page.getByRole('link', { name: 'Payments' }).waitFor();
    await reviewPage(page, 'proxies');
    const listed = async () =>
      (
        await tenant.client.request<{
          data: {
            id: string;
            name: string;
            destination_url: string;
            require_auth: boolean;
            timeout?: number;
          }[];
        }>('GET', '/proxies')
      ).body.data;
    expect(await listed()).toEqual([
      expect.objectContaining({
        name: 'Payments',
        destination_url: 'http://127.0.0.1:9/charge',
        require_auth: true,
        timeout: 20,
      }),
    ]);

    await page.getByRole('link', { name: 'Payments' }).click();
    await page.locator('main h1', { hasText: 'Payments' }).waitFor();
    await page.getByLabel('Destination URL').fill('http://127.0.0.1:9/v2/charge');
    await page.getByLabel(/require_auth/).uncheck();
    await reviewPage(page, 'proxy-edit');
    await page.getByRole('button', { name: 'Save the proxy' }).click();
    await page.getByText('Saved the proxy “Payments”.').waitFor();
    expect(await listed()).toEqual([
      expect.objectContaining({
        destination_url: 'http://127.0.0.1:9/v2/charge',
        require_auth: false,
      }),
    ]);

    await page.getByRole('link', { name: 'All proxies' }).click();
    await page.getByRole('button', { name: 'Delete Payments' }).click();
    await page.getByText('Proxy deleted.').waitFor();
    expect(await listed()).toEqual([]);
    expect(problems).toEqual([]);
  });
});
