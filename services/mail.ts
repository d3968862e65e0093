/**
 * Mailing the one-time links (issue 26, docs/decisions/035-people.md): an invitation, a password
 * reset, an account made for someone. Optional: without AGENTMON_SMTP_URL nothing is mailed and
 * every link is still answered to whoever made it, who passes it on. nodemailer is imported by
 * the first mail, not at start (decision 034). A mail that fails is never the act's failure: the
 * caller gets `{ mailed: false, reason }`, and the link it already has is still good.
 */
import type { Role } from "../domain/people.ts";

/** The SMTP server, as AGENTMON_SMTP_URL says it (cli/config.ts reads it). */
export interface SmtpSettings {
  host: string;
  port: number;
  /** TLS from the first byte (smtps://); else STARTTLS whenever the server offers it. */
  secure: boolean;
  auth?: { user: string; pass: string };
}

/**
 * How long a mail server may take, in ms: to connect (DNS included), to greet, to answer each
 * command, and the whole of one mail. A dead or silent server costs the request that mails at
 * most SEND_DEADLINE_MS, never a hang.
 */
export const MAIL_TIMEOUTS = {
  connectionTimeout: 5_000,
  greetingTimeout: 5_000,
  dnsTimeout: 5_000,
  socketTimeout: 10_000,
} as const;
export const SEND_DEADLINE_MS = 20_000;

/**
 * What a link mail says: who it is for, what it opens and until when. `to` is one address, never
 * a list: it is handed to nodemailer as an address object, since a string is parsed as a list
 * (`a,b@x` would be mailed to `b@x`).
 */
export type LinkMail =
  | { kind: "invite"; to: string; link: string; expiresAt: string; project: string; role: Role; by: string }
  | { kind: "reset"; to: string; link: string; expiresAt: string; by: string }
  | { kind: "created"; to: string; link: string; expiresAt: string; by: string };

/**
 * Whether the mail server took the mail; when not, why (for the log and the command line, never
 * in an API answer), or null when no mail server is set (nothing was tried).
 */
export type MailResult = { mailed: true } | { mailed: false; reason: string | null };

export interface Mailer {
  /** Mails the link; never throws. */
  sendLink(mail: LinkMail): Promise<MailResult>;
}

/** What the audit record of the act says of the mail: nothing when no mail server is set. */
export const auditedMail = (result: MailResult) =>
  result.mailed || result.reason !== null ? { mailed: result.mailed } : {};

/** A header's text without line breaks or other control characters (they could start a header of their own). */
const oneLine = (text: string) => text.replace(/\p{Cc}+/gu, " ").trim();

/** The subject and plain-text body of a link mail. */
export function linkMessage(mail: LinkMail, site: string): { subject: string; text: string } {
  const until = `It works once, until ${mail.expiresAt} (UTC).`;
  const ignore = "If you did not expect this mail, ignore it: nothing happens until the link is opened.";
  const keep = "Do not forward it: whoever opens the link first uses it.";
  if (mail.kind === "invite") {
    return {
      subject: oneLine(`You are invited to "${mail.project}" on agentmon`),
      text: [
        `${oneLine(mail.by)} invites you to the project "${oneLine(mail.project)}" on agentmon (${site}), as ${mail.role}.`,
        "",
        "This link makes your account, for this address:",
        "",
        mail.link,
        "",
        `${until} ${keep}`,
        "",
        ignore,
        "",
      ].join("\n"),
    };
  }
  const [subject, first, what] =
    mail.kind === "reset"
      ? [
          "Set your agentmon password",
          `${oneLine(mail.by)} made a link that sets the password of your agentmon account (${site}).`,
          "Open it to choose a new password; it signs you out everywhere else:",
        ]
      : [
          "Your agentmon account",
          `${oneLine(mail.by)} made an account for you on agentmon (${site}).`,
          "Open this link to choose its password:",
        ];
  return { subject, text: [first, "", what, "", mail.link, "", `${until} ${keep}`, "", ignore, ""].join("\n") };
}

/** Nothing is mailed: no SMTP server is set. */
export const noMailer: Mailer = { sendLink: async () => ({ mailed: false, reason: null }) };

/**
 * A mailer through the SMTP server; `from` is AGENTMON_SMTP_FROM, `site()` the public URL named in
 * the mails. One connection per mail (links are few); the transport is made at the first mail.
 */
export function smtpMailer(smtp: SmtpSettings, from: string, site: () => string): Mailer {
  let transport: Promise<{ sendMail(message: object): Promise<unknown> }> | undefined;
  const transportOf = () => {
    transport ??= import("nodemailer").then(({ createTransport }) =>
      createTransport({
        host: smtp.host,
        port: smtp.port,
        secure: smtp.secure,
        ...(smtp.auth === undefined ? {} : { auth: smtp.auth }),
        ...MAIL_TIMEOUTS,
      }),
    );
    transport.catch(() => {
      transport = undefined; // a module that failed to load is tried again by the next mail
    });
    return transport;
  };
  return {
    async sendLink(mail) {
      let timer: NodeJS.Timeout | undefined;
      try {
        const { subject, text } = linkMessage(mail, site());
        const sending = transportOf().then((t) =>
          t.sendMail({ from, to: { name: "", address: mail.to }, subject, text }),
        );
        sending.catch(() => undefined); // answered below, or past the deadline: never unhandled
        const deadline = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${SEND_DEADLINE_MS / 1000} s`)),
            SEND_DEADLINE_MS,
          );
        });
        await Promise.race([sending, deadline]);
        return { mailed: true };
      } catch (error) {
        return { mailed: false, reason: oneLine((error as Error).message ?? String(error)) };
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
