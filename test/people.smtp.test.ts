/**
 * The one-time links mailed through AGENTMON_SMTP_URL (issue 26, decision 035): invitations and
 * reset links of the API, and `agentmon users create|invite|reset-link`, against a real SMTP
 * server (the smtp-server package) started here on port 0. A mail that fails (refused, bad
 * credentials, a server that never answers) never fails the act: the link is answered all the
 * same, with `mailed: false`.
 */
import { createServer, type Socket } from "node:net";
import { join } from "node:path";
import { SMTPServer, type SMTPServerOptions } from "smtp-server";
import t, { type Test } from "tap";
import { ConfigError, loadConfig } from "../cli/config.ts";
import { main } from "../server.ts";
import type { SmtpSettings } from "../services/mail.ts";
import { build, tempDir } from "./helper.ts";
import { asBrowser, PASSWORD, person, signIn } from "./people.helpers.ts";
import { agentmon, childEnv, LISTENING } from "./process.ts";
import { capture, seedKeys } from "./server.helpers.ts";

const FROM = "agentmon <agentmon@example.com>";
const USER = "mailer@example.com";
const PASS = "p@ss:word/1";

interface Received {
  /** The envelope: MAIL FROM and RCPT TO. */
  mailFrom: string;
  rcptTo: string[];
  headers: Map<string, string>;
  /** The body, its quoted-printable decoded. */
  body: string;
}

const hexBytes = (text: string) =>
  Buffer.from(
    text.replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
    "latin1",
  ).toString("utf8");

/** A header's RFC 2047 encoded words (`=?UTF-8?Q?…?=`, which nodemailer makes of quotes) as text. */
const decodeWords = (value: string) =>
  value
    .replace(/\?=\s+=\?/g, "?==?")
    .replace(/=\?UTF-8\?Q\?([^?]*)\?=/gi, (_, q: string) => hexBytes(q.replace(/_/g, " ")))
    .replace(/=\?UTF-8\?B\?([^?]*)\?=/gi, (_, b: string) => Buffer.from(b, "base64").toString("utf8"));

/** Unfolds and decodes the headers, and decodes a quoted-printable body (nodemailer's choice for long lines). */
function parse(raw: string): Pick<Received, "headers" | "body"> {
  const split = raw.indexOf("\r\n\r\n");
  const headers = new Map<string, string>();
  for (const line of raw
    .slice(0, split)
    .replace(/\r\n[ \t]+/g, " ")
    .split("\r\n")) {
    const colon = line.indexOf(":");
    headers.set(line.slice(0, colon).toLowerCase(), decodeWords(line.slice(colon + 1).trim()));
  }
  let body = raw.slice(split + 4);
  if (/quoted-printable/i.test(headers.get("content-transfer-encoding") ?? "")) {
    body = hexBytes(body.replace(/=\r\n/g, ""));
  }
  return { headers, body: body.replace(/\r\n/g, "\n") };
}

/** A real SMTP server on port 0 that keeps what it is sent; `options` may refuse things. */
async function smtpServer(t: Test, options: Partial<SMTPServerOptions> = {}) {
  const received: Received[] = [];
  const logins: { username: string | undefined; password: string | undefined }[] = [];
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    authOptional: false,
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      logins.push({ username: auth.username, password: auth.password ?? undefined });
      if (auth.username === USER && auth.password === PASS) callback(null, { user: auth.username });
      else callback(Object.assign(new Error("Invalid username or password"), { responseCode: 535 }));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        received.push({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          ...parse(Buffer.concat(chunks).toString("utf8")),
        });
        callback();
      });
    },
    ...options,
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.server.address() as { port: number }).port;
  return { port, received, logins };
}

/** The settings as `agentmon serve` reads them, from this URL (the user and password percent-encoded). */
function smtpSettings(url: string): { smtp: SmtpSettings; from: string } {
  const config = loadConfig({ AGENTMON_SMTP_URL: url, AGENTMON_SMTP_FROM: FROM }, {});
  if (config.smtp === undefined || config.smtpFrom === undefined) throw new Error("no SMTP settings");
  return { smtp: config.smtp, from: config.smtpFrom };
}
const withLogin = (port: number, pass = PASS) =>
  `smtp://${encodeURIComponent(USER)}:${encodeURIComponent(pass)}@127.0.0.1:${port}`;

const tokenOf = (link: string) => link.split("#")[1] ?? "";

/** An app mailing through `url`, an owner (olga) and an admin of "default" (adam), both signed in. */
async function peopleApp(t: Test, url: string) {
  const api = await build(t, { mail: smtpSettings(url) });
  await person(api.store, "adam@example.com", { roles: [["default", "admin"]] });
  await person(api.store, "olga@example.com", { owner: true });
  await person(api.store, "vera@example.com", { roles: [["default", "viewer"]] });
  const adam = await signIn(api, "adam@example.com");
  const olga = await signIn(api, "olga@example.com");
  const invite = (email: string) =>
    asBrowser(api, adam, "POST", "/v2/people/invitations", { project: "default", body: { email, role: "viewer" } });
  const resetLink = async (email: string) =>
    asBrowser(api, olga, "POST", `/v2/people/${(await api.store.userByEmail(email))?.id}/reset_link`, { body: {} });
  const audit = async () =>
    (await api.store.listAudit({ limit: 100 }))
      .filter((r) => r.action !== "user.created")
      .map((r) => [r.action, r.details]);
  return { api, invite, resetLink, audit };
}

t.test(
  "API: an invitation and a reset link are mailed (To, From, subject, the link), logging in to the server",
  async (t) => {
    const smtp = await smtpServer(t);
    const { api, invite, resetLink, audit } = await peopleApp(t, withLogin(smtp.port));

    const invited = await invite("New@Example.com");
    t.equal(invited.statusCode, 200, invited.body);
    t.same(Object.keys(invited.json()).sort(), ["expires_at", "link", "mailed", "status"]);
    t.equal(invited.json().mailed, true);
    t.equal(smtp.received.length, 1);
    const mail = smtp.received[0] as Received;
    t.same(mail.rcptTo, ["new@example.com"]);
    t.equal(mail.mailFrom, "agentmon@example.com");
    t.equal(mail.headers.get("to"), "new@example.com");
    t.equal(mail.headers.get("from"), FROM);
    t.equal(mail.headers.get("subject"), 'You are invited to "default" on agentmon');
    t.match(mail.headers.get("content-type"), /^text\/plain/);
    t.ok(mail.body.includes(`\n${invited.json().link}\n`), "the link, on a line of its own");
    t.match(
      mail.body,
      /adam \(adam@example\.com\) invites you to the project "default" on agentmon \(http:\/\/agentmon\.test\), as viewer/,
    );
    t.same(
      smtp.logins,
      [{ username: USER, password: PASS }],
      "the URL's user and password, decoded, reached the server",
    );

    const signup = await api.post("/v2/auth/signup", {
      token: tokenOf(mail.body.match(/http\S+#(invite_\S+)/)?.[0] ?? ""),
      email: "new@example.com",
      name: "New",
      password: PASSWORD,
    });
    t.equal(signup.statusCode, 200, `the mailed link works: ${signup.body}`);

    const odd = await invite("odd,bob@example.com");
    t.equal(odd.json().mailed, true, odd.body);
    t.same(
      smtp.received.at(-1)?.rcptTo,
      ['"odd,bob"@example.com'],
      "an address with a comma is one address (quoted), not a list that mails bob@example.com",
    );
    smtp.received.pop();

    const reset = await resetLink("vera@example.com");
    t.equal(reset.statusCode, 200, reset.body);
    t.equal(reset.json().mailed, true);
    const second = smtp.received[1] as Received;
    t.same(second.rcptTo, ["vera@example.com"]);
    t.equal(second.headers.get("subject"), "Set your agentmon password");
    t.ok(second.body.includes(`\n${reset.json().link}\n`));
    const done = await api.post("/v2/auth/reset_password", {
      token: tokenOf(reset.json().link),
      password: `${PASSWORD}!`,
    });
    t.equal(done.statusCode, 200, done.body);
    t.same(await audit(), [
      ["user.password_reset_link", { mailed: true }],
      ["user.invited", { role: "viewer", mailed: true }],
      ["user.invited", { role: "viewer", mailed: true }],
    ]);
  },
);

t.test(
  "API: a refusing server, wrong credentials or none set: 200 with the link, mailed false, the link works",
  async (t) => {
    const refusing = await smtpServer(t, {
      onRcptTo(_address, _session, callback) {
        callback(Object.assign(new Error("No such user here"), { responseCode: 550 }));
      },
    });
    const { api, invite, resetLink, audit } = await peopleApp(t, withLogin(refusing.port));
    const invited = await invite("new@example.com");
    t.equal(invited.statusCode, 200, invited.body);
    t.same(invited.json().mailed, false);
    t.match(invited.json().link, /#invite_/);
    const reset = await resetLink("vera@example.com");
    t.equal(reset.statusCode, 200, reset.body);
    t.equal(reset.json().mailed, false);
    t.equal(refusing.received.length, 0);
    t.same(
      await audit(),
      [
        ["user.password_reset_link", { mailed: false }],
        ["user.invited", { role: "viewer", mailed: false }],
      ],
      "each act audited once, saying the mail failed",
    );
    const signup = await api.post("/v2/auth/signup", {
      token: tokenOf(invited.json().link),
      email: "new@example.com",
      name: "New",
      password: PASSWORD,
    });
    t.equal(signup.statusCode, 200, "the answered link works");
    const done = await api.post("/v2/auth/reset_password", { token: tokenOf(reset.json().link), password: PASSWORD });
    t.equal(done.statusCode, 200, done.body);

    const smtp = await smtpServer(t);
    const wrong = await peopleApp(t, withLogin(smtp.port, "not the password"));
    const refused = await wrong.invite("someone@example.com");
    t.equal(refused.statusCode, 200, refused.body);
    t.equal(refused.json().mailed, false);
    t.same(smtp.logins, [{ username: USER, password: "not the password" }]);
    t.equal(smtp.received.length, 0);

    const none = await build(t);
    await person(none.store, "olga@example.com", { owner: true });
    await person(none.store, "vera@example.com");
    const olga = await signIn(none, "olga@example.com");
    const vera = await none.store.userByEmail("vera@example.com");
    const plain = await asBrowser(none, olga, "POST", `/v2/people/${vera?.id}/reset_link`, { body: {} });
    t.equal(plain.statusCode, 200, plain.body);
    t.equal(plain.json().mailed, false, "no mail server set: nothing mailed");
    const records = await none.store.listAudit({ limit: 10 });
    t.same(records.find((r) => r.action === "user.password_reset_link")?.details, {}, "nor said in the audit");
  },
);

t.test(
  "API: a server that accepts the connection and never answers costs a bounded wait, then mailed false",
  async (t) => {
    const sockets = new Set<Socket>();
    let closed: () => void = () => {};
    const gone = new Promise<void>((resolve) => {
      closed = resolve;
    });
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.on("close", () => {
        sockets.delete(socket);
        closed();
      });
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    t.teardown(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => silent.close(() => resolve()));
    });
    const port = (silent.address() as { port: number }).port;
    const { invite } = await peopleApp(t, `smtp://127.0.0.1:${port}`);
    const invited = await invite("new@example.com");
    t.equal(invited.statusCode, 200, invited.body);
    t.equal(invited.json().mailed, false);
    t.match(invited.json().link, /#invite_/);
    await gone;
    t.pass("the mailer closed its connection to the silent server");
  },
);

t.test("CLI: users create, invite and reset-link mail the link and still print it", async (t) => {
  const smtp = await smtpServer(t);
  const db = join(tempDir(t), "people.db");
  await seedKeys(db, "default", ["11111111-1111-4111-8111-111111111111"]);
  const env = { AGENTMON_SMTP_URL: withLogin(smtp.port), AGENTMON_SMTP_FROM: FROM };
  const cli = async (args: string[], environment: NodeJS.ProcessEnv = env) => {
    const c = capture();
    const code = await main([...args, "--db", db, "--public-url", "https://agentmon.example.com"], environment, c.io);
    return { code, out: c.out, err: c.err.join("\n") };
  };

  const made = await cli(["users", "create", "--email", "Ann@Example.com", "--name", "Ann"]);
  t.equal(made.code, 0, made.err);
  t.equal(made.out.length, 1, "the link is printed as before");
  t.match(made.err, /Mailed the link to ann@example\.com\./);
  const created = smtp.received[0] as Received;
  t.same(created.rcptTo, ["ann@example.com"]);
  t.equal(created.headers.get("from"), FROM);
  t.equal(created.headers.get("subject"), "Your agentmon account");
  t.ok(created.body.includes(`\n${made.out[0]}\n`), "the printed link is the mailed one");
  t.match(created.body, /made an account for you on agentmon \(https:\/\/agentmon\.example\.com\)/);

  const invited = await cli([
    "users",
    "invite",
    "--email",
    "vic@example.com",
    "--project",
    "default",
    "--role",
    "editor",
  ]);
  t.equal(invited.code, 0, invited.err);
  const invitation = smtp.received[1] as Received;
  t.same(invitation.rcptTo, ["vic@example.com"]);
  t.equal(invitation.headers.get("subject"), 'You are invited to "default" on agentmon');
  t.ok(invitation.body.includes(`\n${invited.out[0]}\n`));

  const reset = await cli(["users", "reset-link", "ann@example.com"]);
  t.equal(reset.code, 0, reset.err);
  const resetMail = smtp.received[2] as Received;
  t.equal(resetMail.headers.get("subject"), "Set your agentmon password");
  t.ok(resetMail.body.includes(`\n${reset.out[0]}\n`));

  const refusing = await smtpServer(t, {
    onRcptTo(_a, _s, callback) {
      callback(Object.assign(new Error("Mailbox unavailable"), { responseCode: 550 }));
    },
  });
  const failed = await cli(["users", "reset-link", "ann@example.com"], {
    ...env,
    AGENTMON_SMTP_URL: withLogin(refusing.port),
  });
  t.equal(failed.code, 0, "a failed mail does not fail the command");
  t.match(failed.out[0], /#reset_/);
  t.match(failed.err, /The link was not mailed to ann@example\.com \(.*Mailbox unavailable.*\); pass it on yourself\./);
  t.notMatch(failed.err, new RegExp(PASS.replace(/[/]/g, "\\/")), "the password is not shown");

  const plain = await cli(["users", "reset-link", "ann@example.com"], {});
  t.equal(plain.code, 0);
  t.notMatch(plain.err, /mailed/i, "no mail server set: not a word about mail");
  t.equal(smtp.received.length, 3);
});

t.test("settings: a bad AGENTMON_SMTP_URL or AGENTMON_SMTP_FROM is refused with one line naming it", async (t) => {
  const refused = (env: NodeJS.ProcessEnv, flags: Record<string, string> = {}) => {
    try {
      loadConfig(env, flags);
    } catch (error) {
      t.ok(error instanceof ConfigError, "a ConfigError");
      return (error as Error).message;
    }
    return "accepted";
  };
  const from = { AGENTMON_SMTP_FROM: "agentmon@example.com" };
  for (const url of [
    "http://mail.example.com",
    "mail.example.com:25",
    "smtp://",
    "smtp://mail.example.com/path",
    "smtp://mail.example.com?pool=true",
    "smtp://user:secret@mail.example.com:99999",
  ]) {
    const message = refused({ ...from, AGENTMON_SMTP_URL: url });
    t.match(message, /^AGENTMON_SMTP_URL must be an smtp:\/\/ or smtps:\/\/ URL/, url);
    t.notMatch(message, /secret|\n/, `${url}: one line, without the password`);
  }
  for (const bad of ["agentmon", "agentmon at example.com", "a <b>", "x@y\r\nBcc: z@w", "a <b@c> d"]) {
    t.match(
      refused({ AGENTMON_SMTP_URL: "smtp://mail.example.com", AGENTMON_SMTP_FROM: bad }),
      /^AGENTMON_SMTP_FROM must be an address/,
      JSON.stringify(bad),
    );
  }
  t.match(refused(from), /^AGENTMON_SMTP_FROM is set but AGENTMON_SMTP_URL is not/);
  t.match(refused({ AGENTMON_SMTP_URL: "smtp://mail.example.com" }), /^AGENTMON_SMTP_URL needs AGENTMON_SMTP_FROM/);
  t.match(refused({}, { "smtp-url": "ftp://x", "smtp-from": "a@b.c" }), /^AGENTMON_SMTP_URL must be/, "the flags too");

  const ok = loadConfig(
    { AGENTMON_SMTP_URL: "smtps://u%40x:p%2Fw@[::1]", AGENTMON_SMTP_FROM: " Ops <ops@example.com> " },
    {},
  );
  t.same(ok.smtp, { host: "::1", port: 465, secure: true, auth: { user: "u@x", pass: "p/w" } });
  t.equal(ok.smtpFrom, "Ops <ops@example.com>");
  t.same(loadConfig({}, { "smtp-url": "smtp://mail:2525", "smtp-from": "a@b.c" }).smtp, {
    host: "mail",
    port: 2525,
    secure: false,
  });
  t.same(loadConfig({ AGENTMON_SMTP_URL: "smtp://mail", AGENTMON_SMTP_FROM: "a@b.c" }, {}).smtp?.port, 587);

  const child = agentmon(
    t,
    ["serve", "--db", ":memory:", "--port", "0"],
    childEnv({ AGENTMON_SMTP_URL: "smtp://mail.example.com" }),
  );
  const exit = await child.exited();
  t.equal(exit.code, 1, child.describe());
  t.equal(
    child.stderr().trim(),
    "agentmon: AGENTMON_SMTP_URL needs AGENTMON_SMTP_FROM, the address the links are mailed from",
  );
});

t.test(
  "the bundled server (npm start's) mails an invitation: nodemailer's chunk loads at the first mail",
  async (t) => {
    const smtp = await smtpServer(t);
    const db = join(tempDir(t), "bundle.db");
    const env = { AGENTMON_LOG_LEVEL: "warn", AGENTMON_SMTP_URL: withLogin(smtp.port), AGENTMON_SMTP_FROM: FROM };
    const server = agentmon(t, ["serve", "--port", "0", "--db", db], childEnv(env));
    const base = (await server.waitFor(LISTENING))[1] ?? "";
    const owner = /\/ui\/signup\.html#(owner_\S+)/.exec(server.stdout())?.[1] ?? "";
    const signup = await fetch(`${base}/v2/auth/signup`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: owner, email: "owner@example.com", name: "Owner", password: PASSWORD }),
    });
    t.equal(signup.status, 200, server.describe());
    const csrf = ((await signup.json()) as { csrf_token: string }).csrf_token;
    const cookie = signup.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; ");
    const invited = await fetch(`${base}/v2/people/invitations`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        cookie,
        "x-csrf-token": csrf,
        "x-agentmon-project": "default",
      },
      body: JSON.stringify({ email: "dev@example.com", role: "editor" }),
    });
    const answer = (await invited.json()) as { link: string; mailed: boolean };
    t.equal(invited.status, 200, JSON.stringify(answer));
    t.equal(answer.mailed, true, server.describe());
    t.same(smtp.received[0]?.rcptTo, ["dev@example.com"]);
    t.ok(smtp.received[0]?.body.includes(`\n${answer.link}\n`), "the link, mailed");
    t.notOk(server.stdout().includes(answer.link.split("#")[1] ?? "?"), "the link's token is not in the log");
    server.child.kill("SIGTERM");
    t.equal((await server.exited()).code, 0);
  },
);
