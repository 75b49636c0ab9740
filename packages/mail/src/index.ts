export { MailWorker, type MailConfig, type SendMail } from './mail-worker.ts';
export * from './invitation-mail.ts';
export { renderInvitationEmail, escapeHtml, type InvitationMailContent } from './render.ts';
export * from './sign-in-mail.ts';
export { renderSignInEmail } from './render.ts';
export * from './webhook-disabled-mail.ts';
export { renderWebhookDisabledEmail, type WebhookDisabledMailContent } from './render.ts';
