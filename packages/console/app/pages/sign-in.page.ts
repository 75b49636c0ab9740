import { api } from '../kit/api-client.ts';
import { h } from '../kit/dom.ts';
import { navRegion, page } from '../kit/layout.ts';
import { attempt, field, notice } from '../kit/widgets.ts';

/** Asks for a sign-in link by e-mail; `message` (a sign-out, a refused link) is shown above. */
export function signInPage(message?: HTMLElement): void {
  navRegion.replaceChildren();
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
