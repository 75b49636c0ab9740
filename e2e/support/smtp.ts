import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { simpleParser, type ParsedMail } from 'mailparser';

export interface ReceivedMail {
  to: string[];
  subject: string;
  text: string;
  html: string;
  messageId: string | undefined;
  parsed: ParsedMail;
}

export interface TestSmtpServer {
  url: string;
  /** Every message accepted so far, in order. */
  messages: ReceivedMail[];
  /** Refuses the next n messages with a temporary failure (451) after reading them. */
  refuseNext(count: number): void;
  /** How many messages were refused so far. */
  refused(): number;
  /** Resolves with the first message to this address that matches, waiting for it when needed. */
  waitFor(to: string, predicate?: (mail: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
  stop(): Promise<void>;
}

/** A real SMTP server on a free local port (no TLS, no auth), keeping what it receives. */
export async function startSmtpServer(): Promise<TestSmtpServer> {
  const messages: ReceivedMail[] = [];
  const waiters = new Set<() => void>();
  let toRefuse = 0;
  let refusedCount = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((parsed) => {
          if (toRefuse > 0) {
            toRefuse--;
            refusedCount++;
            const error = new Error('Temporary failure, try again later') as Error & { responseCode: number };
            error.responseCode = 451;
            callback(error);
            return;
          }
          messages.push({
            to: session.envelope.rcptTo.map((recipient) => recipient.address),
            subject: parsed.subject ?? '',
            text: parsed.text ?? '',
            html: typeof parsed.html === 'string' ? parsed.html : '',
            messageId: parsed.messageId,
            parsed,
          });
          callback();
          for (const wake of waiters) wake();
        })
        .catch((error: Error) => callback(error));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    refuseNext(count) {
      toRefuse = count;
    },
    refused: () => refusedCount,
    waitFor(to, predicate = () => true, timeoutMs = 30_000) {
      const find = () => messages.find((mail) => mail.to.includes(to) && predicate(mail));
      return new Promise((resolve, reject) => {
        const found = find();
        if (found) return resolve(found);
        const wake = () => {
          const mail = find();
          if (!mail) return;
          clearTimeout(timer);
          waiters.delete(wake);
          resolve(mail);
        };
        const timer = setTimeout(() => {
          waiters.delete(wake);
          reject(new Error(`no e-mail to ${to} within ${timeoutMs} ms (${messages.length} received)`));
        }, timeoutMs);
        waiters.add(wake);
      });
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The acceptance token of the link in an invitation e-mail. */
export function linkTokenOf(mail: ReceivedMail): string {
  const match = /https?:\/\/\S+#token=([A-Za-z0-9._~%-]+)/.exec(mail.text);
  if (!match?.[1]) throw new Error('no acceptance link in the e-mail');
  return decodeURIComponent(match[1]);
}
