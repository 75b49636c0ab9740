export * from './invitation-mail.ts';
export { renderInvitationEmail, escapeHtml, type InvitationMailContent } from './render.ts';
