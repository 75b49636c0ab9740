// Who did something, by name: a member by e-mail, an application by its name, each a link to
// where it is managed. The log and "Created by" name actors by id only; an id alone means nothing
// to a reader, so the console looks the names up (members by id, applications by listing them).
import { api, type Page } from './api-client.ts';
import { h } from './dom.ts';

interface MemberOfPage {
  user: { id?: string; email?: string };
}
interface ApplicationOfPage {
  id: string;
  name: string;
}

export interface ActorNames {
  /** The actor as a link to its page, or as text (with its id) when it is neither a member nor an application any more. */
  link(id: string | undefined, type?: string): HTMLElement | string;
}

/** Looks up the names of these actor ids (members and applications of the current tenant). */
export async function actorNames(ids: (string | undefined)[]): Promise<ActorNames> {
  const wanted = [...new Set(ids.filter((id): id is string => !!id))];
  const applications = new Map<string, string>();
  const members = new Map<string, string>();
  if (wanted.length > 0) {
    const listed = await api<Page<ApplicationOfPage>>('GET', '/applications?size=100');
    for (const application of listed.data) applications.set(application.id, application.name);
    const users = wanted.filter((id) => !applications.has(id));
    const pages = await Promise.all(
      Array.from({ length: Math.ceil(users.length / 50) }, (_, index) => {
        const query = new URLSearchParams({ size: '50' });
        for (const id of users.slice(index * 50, index * 50 + 50)) query.append('user_id', id);
        return api<Page<MemberOfPage>>('GET', `/tenants/self/members?${query.toString()}`);
      }),
    );
    for (const member of pages.flatMap((page) => page.data)) {
      if (member.user.id && member.user.email) members.set(member.user.id, member.user.email);
    }
  }
  return {
    link(id, type) {
      if (!id) return type ?? '';
      const application = applications.get(id);
      if (application !== undefined)
        return h('a', { href: `#/applications/${id}`, title: id }, `Application ${application}`);
      const email = members.get(id);
      if (email !== undefined) return h('a', { href: '#/members', title: id }, email);
      const what =
        type === 'user' ? 'member' : type === 'application' ? 'application' : 'member or application';
      return `Removed ${what} ${id}`;
    },
  };
}
