export { MailWorker, type MailConfig, type SendMail } from './mail-worker.ts';
export * from './invitation-mail.ts';
export { renderInvitationEmail, escapeHtml, type InvitationMailContent } from './render.ts';
export * from './sign-in-mail.ts';
export { renderSignInEmail } from './render.ts';
