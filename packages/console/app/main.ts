// The console's page script (bundled by esbuild, see ../src/index.ts; type-checked with the DOM
// library by app/tsconfig.json): the router. The pages are in pages/ (one file each), what they
// share in kit/. It talks to the same API as every client (kit/api-client.ts), and every text from
// the API goes into the page as text (textContent, kit/dom.ts), never as markup.
import { api, sessionEndedEvent } from './kit/api-client.ts';
import {
  currentSession,
  currentTenantId,
  setSession,
  setTenantId,
  type Session,
} from './kit/console-state.ts';
import { h } from './kit/dom.ts';
import { mainRegion, navRegion, page } from './kit/layout.ts';
import { attempt, field, notice } from './kit/widgets.ts';
import { applicationsRoute } from './pages/applications.page.ts';
import { logsPage } from './pages/logs.page.ts';
import { membersPage } from './pages/members.page.ts';
import { proxiesRoute } from './pages/proxies.page.ts';
import { reactorsRoute } from './pages/reactors.page.ts';
import { signInLinkPage } from './pages/sign-in-link.page.ts';
import { signInPage } from './pages/sign-in.page.ts';
import { tenantPage } from './pages/tenant.page.ts';
import { tokensPage } from './pages/tokens.page.ts';

// A page's address is `#/name` or `#/name/id` (one item of it: `#/applications/<id>`).
const pages: Record<string, [string, (id?: string) => Promise<void>]> = {
  tenant: ['Tenant', () => tenantPage()],
  applications: ['Applications', applicationsRoute],
  members: ['Members', () => membersPage()],
  logs: ['Logs', logsPage],
  tokens: ['Tokens', tokensPage],
  reactors: ['Reactors', reactorsRoute],
  proxies: ['Proxies', proxiesRoute],
};

/** The page the address names, and the item in it; no address is the tenant's page. */
function currentRoute(): { name: string; id?: string } {
  const [name = '', id] = location.hash.replace(/^#\/?/, '').split('/');
  if (name === '') return { name: 'tenant' };
  return id ? { name, id: decodeURIComponent(id) } : { name };
}

function currentPage(): string {
  return currentRoute().name;
}

/** An address the console has no page for: said so, rather than another page shown in its place. */
async function notFoundPage(): Promise<void> {
  page(
    'Page not found',
    h('p', {}, `The console has no page at “${location.hash}”.`),
    h('p', {}, h('a', { href: '#/tenant' }, 'Go to the tenant’s page')),
  );
}

function renderNav(): void {
  const session = currentSession();
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
          setTenantId((event.target as HTMLSelectElement).value);
          void route();
        },
      },
      ...session.memberships.map((membership) =>
        h(
          'option',
          { value: membership.tenant_id, selected: membership.tenant_id === currentTenantId() },
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
            setSession(undefined);
            signInPage(notice('Signed out.'));
          });
        },
      },
      `Sign out ${session.user.email}`,
    ),
  );
  navRegion.replaceChildren(...parts);
}

async function route(): Promise<void> {
  if (!currentSession()) return;
  renderNav();
  const { name, id } = currentRoute();
  const known = pages[name];
  await attempt(mainRegion, () => (known ? known[1](id) : notFoundPage()));
}

/** Opens the console for the signed-in member, or the sign-in page for anyone else. */
async function start(): Promise<void> {
  let session: Session;
  try {
    session = await api<Session>('GET', '/sessions/self');
  } catch {
    setSession(undefined);
    signInPage();
    return;
  }
  setSession(session);
  const tenants = session.memberships.map((membership) => membership.tenant_id);
  const chosen = currentTenantId();
  setTenantId(chosen && tenants.includes(chosen) ? chosen : tenants[0]);
  if (!currentTenantId()) {
    page('No tenant', h('p', {}, 'You are not a member of any tenant.'));
    return;
  }
  await route();
}

window.addEventListener('hashchange', () => void route());
window.addEventListener(sessionEndedEvent, () => void start());
if (location.pathname === '/sign-in') void signInLinkPage(start);
else void start();
