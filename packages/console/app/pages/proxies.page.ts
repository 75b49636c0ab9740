import { api, type Page } from '../kit/api-client.ts';
import { h } from '../kit/dom.ts';
import { page } from '../kit/layout.ts';
import { attempt, field, notice, table } from '../kit/widgets.ts';

interface Transform {
  type: 'code';
  code: string;
}
interface Proxy {
  id: string;
  key: string;
  name: string;
  destination_url: string;
  request_reactor_id?: string;
  response_reactor_id?: string;
  request_transforms: Transform[];
  response_transforms: Transform[];
  application_id?: string;
  configuration: Record<string, string>;
  require_auth: boolean;
  timeout?: number;
}
interface Reactor {
  id: string;
  name: string;
}

/** `#/proxies` lists them with the form that creates one; `#/proxies/<id>` edits one. */
export async function proxiesRoute(id?: string): Promise<void> {
  if (id) await proxyPage(id);
  else await proxiesPage();
}

/** The form that creates a proxy (no `existing`) or replaces one (its transforms kept as they are). */
function proxyForm(status: HTMLElement, reactors: Reactor[], existing?: Proxy): HTMLElement {
  const name = h('input', { name: 'name', required: true, maxlength: '200', value: existing?.name ?? '' });
  const destination = h('input', {
    name: 'destination_url',
    type: 'url',
    required: true,
    maxlength: '2000',
    placeholder: 'https://api.example.com/payments',
    value: existing?.destination_url ?? '',
  });
  const reactorSelect = (label: string, chosen?: string) =>
    h(
      'select',
      { name: label },
      h('option', { value: '' }, 'None'),
      ...reactors.map((reactor) =>
        h('option', { value: reactor.id, selected: reactor.id === chosen }, reactor.name),
      ),
    );
  const requestReactor = reactorSelect('request_reactor_id', existing?.request_reactor_id);
  const responseReactor = reactorSelect('response_reactor_id', existing?.response_reactor_id);
  const requireAuth = h('input', {
    type: 'checkbox',
    name: 'require_auth',
    checked: existing?.require_auth ?? true,
  });
  const timeout = h('input', {
    type: 'number',
    name: 'timeout',
    min: '1',
    max: '300',
    value: existing?.timeout === undefined ? '' : String(existing.timeout),
  });
  return h(
    'form',
    {
      class: 'stacked',
      onsubmit: (event: Event) => {
        event.preventDefault();
        void attempt(status, async () => {
          const body = {
            name: name.value.trim(),
            destination_url: destination.value.trim(),
            ...(requestReactor.value ? { request_reactor_id: requestReactor.value } : {}),
            ...(responseReactor.value ? { response_reactor_id: responseReactor.value } : {}),
            request_transforms: existing?.request_transforms ?? [],
            response_transforms: existing?.response_transforms ?? [],
            ...(existing?.application_id ? { application: { id: existing.application_id } } : {}),
            configuration: existing?.configuration ?? {},
            require_auth: requireAuth.checked,
            ...(timeout.value ? { timeout: Number(timeout.value) } : {}),
          };
          if (existing) {
            await api('PUT', `/proxies/${existing.id}`, body);
            await proxyPage(existing.id, notice(`Saved the proxy “${body.name}”.`));
          } else {
            await api('POST', '/proxies', body);
            await proxiesPage(notice(`Created the proxy “${body.name}”.`));
          }
        });
      },
    },
    field('Proxy name', name),
    field('Destination URL', destination),
    field('Request reactor', requestReactor),
    field('Response reactor', responseReactor),
    h('label', { class: 'check' }, requireAuth, 'Callers must send an API key (require_auth)'),
    field('Timeout in seconds (empty: the service’s)', timeout),
    h('button', { type: 'submit' }, existing ? 'Save the proxy' : 'Create the proxy'),
  );
}

export async function proxiesPage(message?: HTMLElement): Promise<void> {
  const [proxies, reactors] = await Promise.all([
    api<Page<Proxy>>('GET', '/proxies?size=100'),
    api<Page<Reactor>>('GET', '/reactors?size=100'),
  ]);
  const status = h('div', {});
  if (message) status.append(message);
  page(
    'Proxies',
    status,
    table(
      ['Name', 'Destination', 'API key required', 'Id', ''],
      proxies.data.map((proxy) => [
        h('a', { href: `#/proxies/${proxy.id}` }, proxy.name),
        proxy.destination_url,
        proxy.require_auth ? 'Yes' : 'No',
        h('code', {}, proxy.id),
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            'aria-label': `Delete ${proxy.name}`,
            onclick: () => {
              if (!confirm(`Delete the proxy “${proxy.name}”?`)) return;
              void attempt(status, async () => {
                await api('DELETE', `/proxies/${proxy.id}`);
                await proxiesPage(notice('Proxy deleted.'));
              });
            },
          },
          'Delete',
        ),
      ]),
    ),
    h('h2', {}, 'New proxy'),
    proxyForm(status, reactors.data),
  );
}

async function proxyPage(id: string, message?: HTMLElement): Promise<void> {
  const [proxy, reactors] = await Promise.all([
    api<Proxy>('GET', `/proxies/${encodeURIComponent(id)}`),
    api<Page<Reactor>>('GET', '/reactors?size=100'),
  ]);
  const status = h('div', {});
  if (message) status.append(message);
  page(
    proxy.name,
    h('p', {}, h('a', { href: '#/proxies' }, 'All proxies')),
    status,
    h(
      'p',
      { class: 'hint' },
      `Callers reach it at /proxy with the header SVC-PROXY-KEY: ${proxy.key}. Its ${proxy.request_transforms.length + proxy.response_transforms.length} code transforms and configuration are kept as they are (edit them through the API).`,
    ),
    proxyForm(status, reactors.data, proxy),
  );
}
