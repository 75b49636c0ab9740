import { api, type Page } from '../kit/api-client.ts';
import { h } from '../kit/dom.ts';
import { page } from '../kit/layout.ts';
import { attempt, email as emailAddress, field, notice, table } from '../kit/widgets.ts';

export interface Member {
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

/** The tenant's members and invitations; `message` (what the last action did) is shown above. */
export async function membersPage(message?: HTMLElement): Promise<void> {
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
        emailAddress(member.user.email),
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
        emailAddress(invitation.email),
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
