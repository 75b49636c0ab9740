import { z } from 'zod';
import {
  defineRoute,
  forbidden,
  holdsPermission,
  notFound,
  pageQuery,
  paginated,
  type Clock,
  type RouteDefinition,
} from '@tokenvault/platform';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import { acceptPage, acceptPageHeaders } from './accept-page.routes.ts';
import {
  acceptInvitationBody,
  idParams,
  invitationLinkBody,
  invitationLinkSchema,
  invitationSchema,
  invitationStatuses,
  memberSchema,
  paginatedSchema,
} from '@tokenvault/contracts';
import type { InvitationCommands } from '../commands/invitations.commands.ts';
import type { InvitationQueries } from '../queries/invitations.queries.ts';
import { parseEmailAddress } from '../domain/email.ts';

/** What the invitation routes use, built by the tenancy manifest's `routes(deps)` (context.ts). */
export interface InvitationRouteDeps {
  commands: Pick<InvitationCommands, 'create' | 'resend' | 'delete' | 'accept' | 'describeLink'>;
  queries: Pick<InvitationQueries, 'list' | 'get'>;
  consistency: Pick<ReadModelConsistency, 'afterWrite'>;
  /** "Now" for an invitation's status (PENDING until it expires). */
  clock: Clock;
}

/** A bare RFC 5322 address (see parseEmailAddress), its domain lower-cased. */
const emailAddress = z.string({ error: 'Must be a string' }).transform((value, context) => {
  const address = parseEmailAddress(value);
  if (address === undefined) {
    context.addIssue({ code: 'custom', message: 'Must be a single e-mail address (RFC 5322 addr-spec)' });
    return z.NEVER;
  }
  return address;
});

/** role: accepted for compatibility; ADMIN is the one role an invitation gives. */
const createInvitationBody = z.strictObject({ email: emailAddress, role: z.literal('ADMIN').optional() });

const missing = () => notFound('No invitation with this id.');

/** An invitation makes an ADMIN member: the grant rule, as OpenAPI tells it. */
const notHeldByKey =
  'The calling key holds less than the ADMIN member an invitation makes (every permission tenant-wide, as a management key), or it expires: a 403 naming body.role. Only such a key, without an expiry, or a member, may invite or resend.';

export function invitationRoutes({
  commands,
  queries,
  consistency,
  clock,
}: InvitationRouteDeps): RouteDefinition[] {
  const tag = 'Tenant invitations';
  return [
    defineRoute({
      method: 'post',
      path: '/tenants/self/invitations',
      operationId: 'createInvitation',
      summary: 'Invite an e-mail address to the tenant (an e-mail with a link is sent)',
      tag,
      permission: 'tenant:invitation:create',
      returnsSensitive: [],
      body: createInvitationBody,
      responses: {
        201: { description: 'Created (PENDING for 72 hours)', schema: invitationSchema },
        403: { description: notHeldByKey },
      },
      async handle({ principal, body, requestId }) {
        const created = await commands.create(principal, body.email, requestId);
        return {
          status: 201,
          headers: await consistency.afterWrite(created.position),
          body: created.invitation,
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/tenants/self/invitations/:id/resend',
      operationId: 'resendInvitation',
      summary: 'Send the invitation again with a new link, valid 72 hours (earlier links stop working)',
      tag,
      permission: 'tenant:invitation:create',
      returnsSensitive: [],
      params: idParams,
      responses: {
        200: { description: 'The invitation, PENDING again', schema: invitationSchema },
        403: { description: notHeldByKey },
      },
      async handle({ principal, params, requestId }) {
        if (!holdsPermission(principal, 'tenant:invitation:update')) {
          throw forbidden('This API key lacks the permission tenant:invitation:update.');
        }
        const resent = await commands.resend(principal, params.id, requestId);
        return {
          status: 200,
          headers: await consistency.afterWrite(resent.position),
          body: resent.invitation,
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/tenants/self/invitations',
      operationId: 'listInvitations',
      summary: 'List the tenant’s invitations',
      tag,
      permission: 'tenant:invitation:read',
      returnsSensitive: [],
      query: z.strictObject({ ...pageQuery(100), status: z.enum(invitationStatuses).optional() }),
      responses: {
        200: { description: 'A page of invitations', schema: paginatedSchema(invitationSchema) },
      },
      async handle({ principal, query }) {
        const { items, total } = await queries.list(
          principal.tenantId,
          { status: query.status },
          query.page,
          query.size,
          clock.now(),
        );
        return { status: 200, body: paginated(items, query.page, query.size, total) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/tenants/self/invitations/:id',
      operationId: 'getInvitation',
      summary: 'Get an invitation',
      tag,
      permission: 'tenant:invitation:read',
      returnsSensitive: [],
      params: idParams,
      responses: { 200: { description: 'The invitation', schema: invitationSchema } },
      async handle({ principal, params }) {
        const invitation = await queries.get(principal.tenantId, params.id, clock.now());
        if (!invitation) throw missing();
        return { status: 200, body: invitation };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/tenants/self/invitations/:id',
      operationId: 'deleteInvitation',
      summary: 'Delete an invitation: its links stop working',
      tag,
      permission: 'tenant:invitation:delete',
      returnsSensitive: [],
      params: idParams,
      responses: { 204: { description: 'Deleted' } },
      async handle({ principal, params, requestId }) {
        const deleted = await commands.delete(principal, params.id, requestId);
        return { status: 204, headers: await consistency.afterWrite(deleted.position) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/tenants/invitations/accept',
      operationId: 'getInvitationAcceptPage',
      summary: 'The page an invitation e-mail links to: it posts the link’s token to accept (no API key)',
      tag,
      permission: null,
      returnsSensitive: [],
      responses: { 200: { description: 'An HTML page' } },
      async handle() {
        return { status: 200, html: acceptPage, headers: acceptPageHeaders };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/tenants/invitations/link',
      operationId: 'getInvitationLink',
      summary:
        'What an invitation link invites to: the tenant’s name, the address, until when (no API key; the accept page shows it)',
      tag,
      permission: null,
      returnsSensitive: [],
      body: invitationLinkBody,
      responses: {
        200: { description: 'The pending invitation the link is for', schema: invitationLinkSchema },
        410: {
          description:
            'The link expired, was replaced, deleted or already used, or its inviter no longer stands (the application that sent it deleted or no longer holding every permission, the member who sent it removed)',
        },
      },
      async handle({ body }) {
        return { status: 200, body: await commands.describeLink(body.token) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/tenants/invitations/accept',
      operationId: 'acceptInvitation',
      summary: 'Accept an invitation with the token of its e-mail link (no API key)',
      tag,
      permission: null,
      returnsSensitive: [],
      body: acceptInvitationBody,
      responses: {
        201: { description: 'The new ADMIN member', schema: memberSchema },
        410: { description: 'The link expired, was replaced, deleted or already used' },
      },
      async handle({ body, requestId }) {
        const accepted = await commands.accept(body, requestId);
        return {
          status: 201,
          headers: await consistency.afterWrite(accepted.position),
          body: accepted.member,
        };
      },
    }),
  ];
}
