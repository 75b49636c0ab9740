// The console's page script (bundled by esbuild, see ../src/index.ts; type-checked with the DOM
// library by app/tsconfig.json). It talks to the same API as every client, with the session cookie (HttpOnly: this script never sees it) and SVC-TENANT-ID.
// Every text from the API goes into the page as text (textContent), never as markup.
import { consolePermissions } from './permissions.ts';

type Child = Node | string | null | undefined | false;
type Attributes = Record<string, string | boolean | EventListener | undefined>;

function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children) if (child) element.append(child);
  return element;
}

class ApiError extends Error {
  readonly status: number;
  constructor(status: number, detail: string) {
    super(detail);
    this.status = status;
  }
}

interface Membership {
  tenant_id: string;
  tenant_name: string;
  role: string;
}
interface Session {
  expires_at: string;
  user: { id: string; email: string; first_name?: string; last_name?: string };
  memberships: Membership[];
}
interface Page<T> {
  pagination: { next?: string | null; total_pages?: number; page_number?: number | null };
  data: T[];
}

const main = document.getElementById('main')!;
const nav = document.getElementById('nav')!;
let session: Session | undefined;
let tenantId = sessionStorage.getItem('tenant') ?? undefined;

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (tenantId && !path.startsWith('/sessions')) headers['svc-tenant-id'] = tenantId;
  const response = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  const parsed = (text ? JSON.parse(text) : undefined) as { detail?: string } | undefined;
  if (!response.ok) {
    if (response.status === 401 && !path.startsWith('/sessions')) void start();
    throw new ApiError(response.status, parsed?.detail ?? `The request failed (${response.status}).`);
  }
  return parsed as T;
}

function notice(text: string, kind: 'ok' | 'error' = 'ok'): HTMLElement {
  return h(
    'p',
    { class: kind === 'error' ? 'notice error' : 'notice', role: kind === 'error' ? 'alert' : 'status' },
    text,
  );
}

/** Runs an action; its failure is shown in `where` instead of being lost. */
async function attempt(where: HTMLElement, action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (error) {
    where.replaceChildren(notice(error instanceof Error ? error.message : String(error), 'error'));
  }
}

function table(headings: string[], rows: Child[][]): HTMLElement {
  return h(
    'div',
    { class: 'table' },
    h(
      'table',
      {},
      h('thead', {}, h('tr', {}, ...headings.map((heading) => h('th', { scope: 'col' }, heading)))),
      h('tbody', {}, ...rows.map((cells) => h('tr', {}, ...cells.map((cell) => h('td', {}, cell))))),
    ),
  );
}

function field(label: string, control: HTMLElement): HTMLElement {
  return h('label', {}, label, control);
}

function page(title: string, ...children: Child[]): void {
  document.title = `${title} · Tokenvault console`;
  main.replaceChildren(h('h1', {}, title), ...children.filter((child): child is Node | string => !!child));
  main.focus();
}

// --- Sign-in -----------------------------------------------------------------------------------

function signInPage(message?: HTMLElement): void {
  nav.replaceChildren();
  const status = h('div', {});
  if (message) status.append(message);
  const email = h('input', { type: 'email', name: 'email', required: true, autocomplete: 'email' });
  const form = h(
    'form',
    {
      onsubmit: (event: Event) => {
        event.preventDefault();
        void attempt(status, async () => {
          await api('POST', '/sessions/email', { email: email.value.trim() });
          status.replaceChildren(
            notice(
              'Check your inbox: if this address belongs to a member, a sign-in link is on its way (valid 15 minutes).',
            ),
          );
        });
      },
    },
    field('E-mail address', email),
    h('button', { type: 'submit' }, 'E-mail me a sign-in link'),
  );
  page('Sign in', h('p', {}, 'Members sign in with a link sent by e-mail: no password.'), form, status);
}

/**
 * The page of an e-mailed link (`/sign-in#token=…`). The service takes a link only from the
 * browser that asked for it; where someone is signed in already, the member is asked first (the
 * link could be anyone's, sent to switch them into another account).
 */
async function openSignInLink(): Promise<void> {
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  // The token leaves the address bar (and the history) before anything else happens.
  history.replaceState(null, '', '/console#/tenant');
  if (!token) return start();
  const current = await api<Session>('GET', '/sessions/self').catch(() => undefined);
  if (!current) return signInWith(token, signInPage);
  const email = current.user.email;
  const back = () =>
    h(
      'button',
      { type: 'button', class: 'secondary', onclick: () => void start() },
      `Stay signed in as ${email}`,
    );
  page(
    'Switch account?',
    h(
      'p',
      {},
      `You are signed in as ${email}. This sign-in link signs you in as the user it was sent to instead.`,
    ),
    h('p', {}, 'Use it only if you asked for it yourself, in this browser.'),
    h(
      'div',
      { class: 'actions' },
      h(
        'button',
        {
          type: 'button',
          onclick: () => void signInWith(token, (refusal) => page('Sign-in link refused', refusal, back())),
        },
        'Use the link',
      ),
      back(),
    ),
  );
}

/** Signs in with a link's token, then opens the console; a refusal is shown by `refused`. */
async function signInWith(token: string, refused: (message: HTMLElement) => void): Promise<void> {
  try {
    await api('POST', '/sessions', { token });
  } catch (error) {
    refused(notice(error instanceof Error ? error.message : 'The link did not work.', 'error'));
    return;
  }
  await start();
}

// --- Navigation --------------------------------------------------------------------------------

const pages: Record<string, [string, () => Promise<void>]> = {
  tenant: ['Tenant', tenantPage],
  applications: ['Applications', applicationsPage],
  members: ['Members', membersPage],
  logs: ['Logs', logsPage],
  tokens: ['Tokens', tokensPage],
  reactors: ['Reactors', reactorsPage],
};

function currentPage(): string {
  const name = location.hash.replace(/^#\//, '');
  return name in pages ? name : 'tenant';
}

function renderNav(): void {
  if (!session) return;
  const here = currentPage();
  const links = Object.entries(pages).map(([name, [title]]) =>
    h('li', {}, h('a', { href: `#/${name}`, 'aria-current': name === here ? 'page' : undefined }, title)),
  );
  const parts: HTMLElement[] = [h('ul', {}, ...links)];
  if (session.memberships.length > 1) {
    const select = h(
      'select',
      {
        onchange: (event: Event) => {
          tenantId = (event.target as HTMLSelectElement).value;
          sessionStorage.setItem('tenant', tenantId);
          void route();
        },
      },
      ...session.memberships.map((membership) =>
        h(
          'option',
          { value: membership.tenant_id, selected: membership.tenant_id === tenantId },
          `${membership.tenant_name} (${membership.role})`,
        ),
      ),
    );
    parts.push(field('Tenant', select));
  }
  parts.push(
    h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        onclick: () => {
          void api('DELETE', '/sessions/self').finally(() => {
            session = undefined;
            signInPage(notice('Signed out.'));
          });
        },
      },
      `Sign out ${session.user.email}`,
    ),
  );
  nav.replaceChildren(...parts);
}

async function route(): Promise<void> {
  if (!session) return;
  renderNav();
  const [, render] = pages[currentPage()]!;
  await attempt(main, render);
}

async function start(): Promise<void> {
  try {
    session = await api<Session>('GET', '/sessions/self');
  } catch {
    session = undefined;
    signInPage();
    return;
  }
  const tenants = session.memberships.map((membership) => membership.tenant_id);
  if (!tenantId || !tenants.includes(tenantId)) tenantId = tenants[0];
  if (tenantId) sessionStorage.setItem('tenant', tenantId);
  if (!tenantId) {
    page('No tenant', h('p', {}, 'You are not a member of any tenant.'));
    return;
  }
  await route();
}

// --- Tenant and usage --------------------------------------------------------------------------

function facts(object: Record<string, unknown>): HTMLElement {
  return table(
    ['Field', 'Value'],
    Object.entries(object).map(([name, value]) => [
      name,
      typeof value === 'object' && value !== null ? h('code', {}, JSON.stringify(value)) : String(value),
    ]),
  );
}

async function tenantPage(): Promise<void> {
  const [tenant, usage] = await Promise.all([
    api<Record<string, unknown>>('GET', '/tenants/self'),
    api<Record<string, unknown>>('GET', '/tenants/self/reports/usage'),
  ]);
  page(
    typeof tenant.name === 'string' ? tenant.name : 'Tenant',
    h('h2', {}, 'Tenant'),
    facts(tenant),
    h('h2', {}, 'Usage'),
    facts(usage),
  );
}

// --- Applications and keys ---------------------------------------------------------------------

interface Application {
  id: string;
  name: string;
  type: string;
  permissions: string[];
  created_by?: string;
  key?: string;
}

/**
 * Who created each application, by id: a member by e-mail, an application (a management key) by
 * name. A key belongs to the tenant and outlives its creator's membership, so a creator that is
 * neither any more is shown as removed, for the owner to decide about the key.
 */
async function creatorsOf(applications: Application[]): Promise<Map<string, string>> {
  const names = new Map(
    applications.map((application) => [application.id, `Application ${application.name}`]),
  );
  const users = [...new Set(applications.flatMap((application) => application.created_by ?? []))].filter(
    (id) => !names.has(id),
  );
  const pages = await Promise.all(
    Array.from({ length: Math.ceil(users.length / 50) }, (_, index) => {
      const query = new URLSearchParams({ size: '50' });
      for (const id of users.slice(index * 50, index * 50 + 50)) query.append('user_id', id);
      return api<Page<Member>>('GET', `/tenants/self/members?${query.toString()}`);
    }),
  );
  for (const member of pages.flatMap((members) => members.data)) {
    if (member.user.id && member.user.email) names.set(member.user.id, member.user.email);
  }
  for (const id of users) if (!names.has(id)) names.set(id, `Removed member or application ${id}`);
  return names;
}

async function applicationsPage(shownKey?: HTMLElement): Promise<void> {
  const list = await api<Page<Application>>('GET', '/applications?size=100');
  const creators = await creatorsOf(list.data);
  const status = h('div', {});
  if (shownKey) status.append(shownKey);
  const name = h('input', { name: 'name', required: true, maxlength: '200' });
  const type = h(
    'select',
    { name: 'type' },
    ...['private', 'public', 'management'].map((value) => h('option', { value }, value)),
  );
  const boxes = consolePermissions.map((permission) => h('input', { type: 'checkbox', value: permission }));
  const form = h(
    'form',
    {
      onsubmit: (event: Event) => {
        event.preventDefault();
        void attempt(status, async () => {
          const created = await api<Application>('POST', '/applications', {
            name: name.value.trim(),
            type: type.value,
            permissions: boxes.filter((box) => box.checked).map((box) => box.value),
          });
          await applicationsPage(
            h(
              'div',
              { class: 'notice', role: 'status' },
              h('p', {}, `The key of “${created.name}”. Copy it now: it is shown only once.`),
              h('output', { class: 'secret', id: 'new-key' }, created.key ?? ''),
            ),
          );
        });
      },
    },
    field('Name', name),
    field('Type', type),
    h('fieldset', {}, h('legend', {}, 'Permissions'), ...boxes.map((box) => h('label', {}, box, box.value))),
    h('button', { type: 'submit' }, 'Create application'),
  );
  const rows = list.data.map((application) => [
    application.name,
    application.type,
    application.permissions.join(', '),
    application.created_by ? (creators.get(application.created_by) ?? '') : '',
    h('code', {}, application.id),
    h(
      'button',
      {
        type: 'button',
        class: 'danger',
        'aria-label': `Delete ${application.name}`,
        onclick: () => {
          if (!confirm(`Delete the application “${application.name}” and its key?`)) return;
          void attempt(status, async () => {
            await api('DELETE', `/applications/${application.id}`);
            await applicationsPage();
          });
        },
      },
      'Delete',
    ),
  ]);
  page(
    'Applications',
    status,
    h('h2', {}, 'New application'),
    form,
    h('h2', {}, 'Applications'),
    table(['Name', 'Type', 'Permissions', 'Created by', 'Id', ''], rows),
  );
}

// --- Members and invitations -------------------------------------------------------------------

interface Member {
  id: string;
  role: string;
  user: { id?: string; email?: string; first_name?: string; last_name?: string };
}
interface Invitation {
  id: string;
  email: string;
  status: string;
  expires_at: string;
}

async function membersPage(message?: HTMLElement): Promise<void> {
  const [members, invitations] = await Promise.all([
    api<Page<Member>>('GET', '/tenants/self/members?size=50'),
    api<Page<Invitation>>('GET', '/tenants/self/invitations?size=50'),
  ]);
  const status = h('div', {});
  if (message) status.append(message);
  const act = (label: string, action: () => Promise<void>, danger = false) =>
    h(
      'button',
      {
        type: 'button',
        class: danger ? 'danger' : 'secondary',
        onclick: () => {
          if (danger && !confirm(`${label}?`)) return;
          void attempt(status, action);
        },
      },
      label,
    );
  const email = h('input', { type: 'email', name: 'email', required: true });
  const form = h(
    'form',
    {
      onsubmit: (event: Event) => {
        event.preventDefault();
        void attempt(status, async () => {
          await api('POST', '/tenants/self/invitations', { email: email.value.trim() });
          await membersPage(notice(`Invitation sent to ${email.value.trim()}.`));
        });
      },
    },
    field('E-mail address', email),
    h('button', { type: 'submit' }, 'Invite'),
  );
  page(
    'Members',
    status,
    table(
      ['E-mail', 'Name', 'Role', ''],
      members.data.map((member) => [
        member.user.email ?? '',
        [member.user.first_name, member.user.last_name].filter(Boolean).join(' '),
        member.role,
        member.role === 'OWNER'
          ? ''
          : act(
              `Remove ${member.user.email ?? 'member'}`,
              async () => {
                await api('DELETE', `/tenants/self/members/${member.id}`);
                await membersPage(notice('Member removed.'));
              },
              true,
            ),
      ]),
    ),
    h('h2', {}, 'Invite a member'),
    form,
    h('h2', {}, 'Invitations'),
    table(
      ['E-mail', 'Status', 'Expires', ''],
      invitations.data.map((invitation) => [
        invitation.email,
        invitation.status,
        new Date(invitation.expires_at).toLocaleString(),
        h(
          'div',
          { class: 'actions' },
          act(`Resend to ${invitation.email}`, async () => {
            await api('POST', `/tenants/self/invitations/${invitation.id}/resend`);
            await membersPage(notice('Invitation sent again.'));
          }),
          act(
            `Delete invitation of ${invitation.email}`,
            async () => {
              await api('DELETE', `/tenants/self/invitations/${invitation.id}`);
              await membersPage(notice('Invitation deleted.'));
            },
            true,
          ),
        ),
      ]),
    ),
  );
}

// --- Logs --------------------------------------------------------------------------------------

interface Log {
  created_at: string;
  entity_type: string;
  entity_id: string;
  operation: string;
  actor_type?: string;
  actor_id?: string;
  message: string;
}

async function logsPage(): Promise<void> {
  const types = await api<{ display_name: string; value: string }[]>('GET', '/logs/entity-types');
  const entityType = h(
    'select',
    { name: 'entity_type' },
    h('option', { value: '' }, 'Any'),
    ...types.map((type) => h('option', { value: type.value }, type.display_name)),
  );
  const entityId = h('input', { name: 'entity_id' });
  const from = h('input', { type: 'date', name: 'start_date' });
  const to = h('input', { type: 'date', name: 'end_date' });
  const results = h('div', { 'aria-live': 'polite' });
  const cursors: (string | undefined)[] = [undefined];
  const load = async (index: number) => {
    const query = new URLSearchParams({ size: '20' });
    if (entityType.value) query.set('entity_type', entityType.value);
    if (entityId.value.trim()) query.set('entity_id', entityId.value.trim());
    if (from.value) query.set('start_date', from.value);
    if (to.value) query.set('end_date', to.value);
    const cursor = cursors[index];
    if (cursor) query.set('start', cursor);
    const logs = await api<Page<Log>>('GET', `/logs?${query.toString()}`);
    cursors.length = index + 1;
    if (logs.pagination.next) cursors.push(logs.pagination.next);
    const pager = h(
      'div',
      { class: 'pager' },
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          disabled: index === 0,
          onclick: () => void attempt(results, () => load(index - 1)),
        },
        'Previous',
      ),
      h('span', {}, `Page ${index + 1}`),
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          disabled: !logs.pagination.next,
          onclick: () => void attempt(results, () => load(index + 1)),
        },
        'Next',
      ),
    );
    results.replaceChildren(
      table(
        ['When', 'Entity', 'Id', 'Operation', 'Actor', 'Message'],
        logs.data.map((log) => [
          new Date(log.created_at).toLocaleString(),
          log.entity_type,
          h('code', {}, log.entity_id),
          log.operation,
          `${log.actor_type ?? ''} ${log.actor_id ?? ''}`.trim(),
          log.message,
        ]),
      ),
      pager,
    );
  };
  const form = h(
    'form',
    {
      onsubmit: (event: Event) => {
        event.preventDefault();
        cursors.length = 1;
        void attempt(results, () => load(0));
      },
    },
    field('Entity type', entityType),
    field('Entity id', entityId),
    field('From', from),
    field('To', to),
    h('button', { type: 'submit' }, 'Filter'),
  );
  page('Logs', form, results);
  await load(0);
}

// --- Tokens ------------------------------------------------------------------------------------

interface Token {
  id: string;
  type: string;
  containers?: string[];
  metadata?: Record<string, string>;
  fingerprint?: string;
  created_at: string;
  expires_at?: string;
  data?: unknown;
}

async function tokensPage(): Promise<void> {
  const results = h('div', {});
  const cursors: (string | undefined)[] = [undefined];
  const load = async (index: number) => {
    // Without data: the list is no read of any token; only Reveal reads one (GET /tokens/{id}).
    const query = new URLSearchParams({ size: '20', include_data: 'false' });
    const cursor = cursors[index];
    if (cursor) query.set('start', cursor);
    const tokens = await api<Page<Token>>('GET', `/tokens?${query.toString()}`);
    cursors.length = index + 1;
    if (tokens.pagination.next) cursors.push(tokens.pagination.next);
    results.replaceChildren(
      table(
        ['Id', 'Type', 'Containers', 'Metadata', 'Fingerprint', 'Created', 'Expires', 'Data'],
        tokens.data.map((token) => {
          const cell = h('div', {}, h('span', { 'aria-label': 'hidden data' }, '••••••••'));
          const reveal = h(
            'button',
            {
              type: 'button',
              class: 'secondary',
              'aria-label': `Reveal the data of ${token.id}`,
              onclick: () =>
                void attempt(cell, async () => {
                  // A read of the token: the service logs it.
                  const read = await api<Token>('GET', `/tokens/${token.id}`);
                  cell.replaceChildren(h('pre', {}, JSON.stringify(read.data, null, 2)));
                }),
            },
            'Reveal',
          );
          cell.append(' ', reveal);
          return [
            h('code', {}, token.id),
            token.type,
            (token.containers ?? []).join(', '),
            Object.keys(token.metadata ?? {}).length ? h('code', {}, JSON.stringify(token.metadata)) : '',
            token.fingerprint ? h('code', {}, token.fingerprint) : '',
            new Date(token.created_at).toLocaleString(),
            token.expires_at ? new Date(token.expires_at).toLocaleString() : '',
            cell,
          ];
        }),
      ),
      h(
        'div',
        { class: 'pager' },
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            disabled: index === 0,
            onclick: () => void attempt(results, () => load(index - 1)),
          },
          'Previous',
        ),
        h('span', {}, `Page ${index + 1}`),
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            disabled: !tokens.pagination.next,
            onclick: () => void attempt(results, () => load(index + 1)),
          },
          'Next',
        ),
      ),
    );
  };
  page(
    'Tokens',
    h('p', {}, 'Data stays hidden until you reveal it; each reveal is a read in the log.'),
    results,
  );
  await load(0);
}

// --- Reactor formulas and reactors -------------------------------------------------------------

interface Formula {
  id: string;
  name: string;
  description?: string;
}
interface Reactor {
  id: string;
  name: string;
  formula?: { id: string; name?: string };
}

async function reactorsPage(): Promise<void> {
  const [formulas, reactors] = await Promise.all([
    api<Page<Formula>>('GET', '/reactor-formulas?size=100'),
    api<Page<Reactor>>('GET', '/reactors?size=100'),
  ]);
  const tryIt = h('div', {});
  const rows = reactors.data.map((reactor) => [
    reactor.name,
    reactor.formula?.name ?? reactor.formula?.id ?? '',
    h('code', {}, reactor.id),
    h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        onclick: () => {
          const args = h('textarea', { name: 'args', spellcheck: 'false' }, '{}');
          const output = h('div', { 'aria-live': 'polite' });
          tryIt.replaceChildren(
            h('h2', {}, `Try “${reactor.name}”`),
            h(
              'form',
              {
                onsubmit: (event: Event) => {
                  event.preventDefault();
                  void attempt(output, async () => {
                    const result = await api<unknown>('POST', `/reactors/${reactor.id}/react`, {
                      args: JSON.parse(args.value) as unknown,
                    });
                    output.replaceChildren(h('pre', {}, JSON.stringify(result, null, 2)));
                  });
                },
              },
              field('Arguments (JSON)', args),
              h('button', { type: 'submit' }, 'Invoke'),
            ),
            output,
          );
          args.focus();
        },
      },
      `Try ${reactor.name}`,
    ),
  ]);
  page(
    'Reactors',
    h('h2', {}, 'Formulas'),
    table(
      ['Name', 'Description', 'Id'],
      formulas.data.map((formula) => [formula.name, formula.description ?? '', h('code', {}, formula.id)]),
    ),
    h('h2', {}, 'Reactors'),
    table(['Name', 'Formula', 'Id', ''], rows),
    tryIt,
  );
}

// --- Start -------------------------------------------------------------------------------------

window.addEventListener('hashchange', () => void route());
if (location.pathname === '/sign-in') void openSignInLink();
else void start();
