/**
 * Full-text search (issue 15 part 3, docs/decisions/023-search.md): `q=` on GET /v2/sessions, GET
 * /v2/export and POST /v2/delete_sessions, through real HTTP (inject) on the store STORE names.
 * Data is written through the write API and OTLP only.
 */
import t, { type Test } from "tap";
import { API_KEY, build, isInvalid, OTHER_PROJECT_KEY, type TestApp } from "./helper.ts";
import { sendTraces, span, TRACE_SESSION, request as traceRequest } from "./otlp.helpers.ts";
import { allPages, at, createEvents, ids, read, T0 } from "./read.helpers.ts";

interface Match {
  field: string;
  event_id: string | null;
  snippet: string;
  highlights: [number, number][];
}
interface Row {
  session: { id: string };
  match?: Match;
}

const fold = (text: string) =>
  text
    .normalize("NFD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase();

/** Every session of the fixture, newest first: what an empty search lists. */
const ALL = [
  TRACE_SESSION,
  "s-reason",
  "s-tag",
  "s-error",
  "s-tool-canonical",
  "s-tool-sdk",
  "s-completion",
  "s-prompt-string",
  "s-prompt-array",
];

async function seed(api: TestApp) {
  let n = 0;
  const make = async (id: string, fields: Record<string, unknown>, events: unknown[]) => {
    n += 1;
    const jwt = await api.session(id, { init_timestamp: at(T0 + n * 1000), ...fields });
    if (events.length > 0) await createEvents(api, jwt, events);
    return jwt;
  };
  const jwts: Record<string, string> = {};
  jwts["s-prompt-array"] = await make("s-prompt-array", {}, [
    { type: "llm", id: "e-intro", prompt: "Nothing to see here" },
    {
      type: "llm",
      id: "e-array",
      prompt: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "Find the invoice QX-4411 for Zoë, please." },
      ],
      completion: { role: "assistant", content: "Invoice found: 12 items." },
    },
  ]);
  await make("s-prompt-string", {}, [
    { type: "llm", id: "e-string", prompt: "A plain prompt about giraffes", completion: "The giraffe is tall." },
  ]);
  jwts["s-completion"] = await make("s-completion", {}, [
    { type: "llm", id: "e-completion", prompt: "Explain", completion: "Quantum entanglement, briefly." },
  ]);
  await make("s-tool-sdk", {}, [
    { type: "tool", id: "e-sdk", name: "weather", params: { city: "Lisbon" }, returns: { temp: 21, sky: "sunny" } },
  ]);
  await make("s-tool-canonical", {}, [
    { type: "tool", id: "e-canonical", name: "search", input: "kangaroo habitats", output: ["marsupial", 7] },
  ]);
  await make("s-error", {}, [
    {
      type: "error",
      id: "e-error",
      error_type: "RateLimitError",
      code: 429,
      details: "Too many requests to the upstream (près de la limite)",
    },
  ]);
  jwts["s-tag"] = await make("s-tag", { tags: ["customer-acme", "beta"] }, []);
  await make("s-reason", { end_state: "Fail", end_state_reason: "Crashed while parsing YAML" }, []);
  // An OTLP trace, newest: an llm span with GenAI messages and a tool span.
  const base = 3600; // an hour after T0, newer than every session above
  const res = await sendTraces(
    api,
    traceRequest(
      span("00f067aa0ba902b7", undefined, base, { name: "agent run" }),
      span("00f067aa0ba902b8", "00f067aa0ba902b7", base + 1, {
        attributes: [
          { key: "gen_ai.operation.name", value: { stringValue: "chat" } },
          { key: "gen_ai.request.model", value: { stringValue: "gpt-4o-mini" } },
          {
            key: "gen_ai.input.messages",
            value: {
              stringValue: JSON.stringify([
                { role: "user", parts: [{ type: "text", content: "Translate hippopotamus" }] },
              ]),
            },
          },
        ],
      }),
      span("00f067aa0ba902b9", "00f067aa0ba902b7", base + 2, {
        attributes: [
          { key: "gen_ai.operation.name", value: { stringValue: "execute_tool" } },
          { key: "gen_ai.tool.name", value: { stringValue: "lookup" } },
          { key: "gen_ai.tool.call.arguments", value: { stringValue: '{"term":"axolotl"}' } },
        ],
      }),
    ),
  );
  if (res.statusCode !== 200) throw new Error(`OTLP answered ${res.statusCode}: ${res.body}`);
  return jwts;
}

const search = async (api: TestApp, q: string, key = API_KEY) => {
  const res = await read(api, `/v2/sessions?limit=200&q=${encodeURIComponent(q)}`, key);
  if (res.statusCode !== 200) throw new Error(`q=${q} answered ${res.statusCode}: ${res.body}`);
  return res.json().sessions as Row[];
};

/** Every highlight of the match is in the snippet and is one of `words` (folded; a prefix when it ends in *). */
function highlightsAre(t: Test, match: Match | undefined, words: string[], why: string) {
  t.ok(match, `${why}: a match`);
  if (!match) return;
  t.ok(match.snippet.length <= 160, `${why}: a snippet of at most 160 characters`);
  t.ok(match.highlights.length > 0, `${why}: highlights`);
  let previous = -1;
  for (const [start, end] of match.highlights) {
    t.ok(start > previous && start < end && end <= match.snippet.length, `${why}: [${start}, ${end}) in order, inside`);
    previous = end;
    const text = fold(match.snippet.slice(start, end));
    t.ok(
      words.some((w) => (w.endsWith("*") ? text.startsWith(w.slice(0, -1)) : text === w)),
      `${why}: "${text}" is a term (${words.join(", ")})`,
    );
  }
}

t.test("each searched field matches, with its field, event and highlighted snippet", async (t) => {
  const api = await build(t);
  await seed(api);
  const cases: [string, string, string, string | null, string[]][] = [
    // q, session, field, event, what the highlights hold
    ["invoice", "s-prompt-array", "prompt", "e-array", ["invoice*"]],
    ['"terse"', "s-prompt-array", "prompt", "e-array", ["terse"]],
    ["giraffes", "s-prompt-string", "prompt", "e-string", ["giraffes*"]],
    ["entanglement", "s-completion", "completion", "e-completion", ["entanglement*"]],
    ["lisbon", "s-tool-sdk", "input", "e-sdk", ["lisbon*"]],
    ["sunny", "s-tool-sdk", "output", "e-sdk", ["sunny*"]],
    ["kangaroo", "s-tool-canonical", "input", "e-canonical", ["kangaroo*"]],
    ["marsupial", "s-tool-canonical", "output", "e-canonical", ["marsupial*"]],
    ["ratelimiterror", "s-error", "error_type", "e-error", ["ratelimiterror*"]],
    ['"429"', "s-error", "code", "e-error", ["429"]],
    ["upstream", "s-error", "details", "e-error", ["upstream*"]],
    ["acme", "s-tag", "tags", null, ["acme*"]],
    ["yaml", "s-reason", "end_state_reason", null, ["yaml*"]],
    ["hippopotamus", TRACE_SESSION, "prompt", null, ["hippopotamus*"]],
    ["axolotl", TRACE_SESSION, "input", null, ["axolotl*"]],
  ];
  for (const [q, session, field, event, words] of cases) {
    const rows = await search(api, q);
    t.strictSame(ids(rows), [session], `q=${q}: only ${session}`);
    const match = rows[0]?.match;
    t.equal(match?.field, field, `q=${q}: field ${field}`);
    if (event !== null) t.equal(match?.event_id, event, `q=${q}: event ${event}`);
    else if (session !== TRACE_SESSION) t.equal(match?.event_id, null, `q=${q}: the session's own field`);
    else t.type(match?.event_id, "string", `q=${q}: a span's event`);
    highlightsAre(t, match, words, `q=${q}`);
  }
  const [array] = await search(api, "invoice");
  t.match(array?.match?.snippet, /Find the invoice QX-4411 for Zoë/, "the messages' text, without the role names");
  t.notMatch(array?.match?.snippet, /\buser\b/, "role values are not searched text");
  t.strictSame(await search(api, "user"), [], "nor found by search");
  t.strictSame(await search(api, '"weather"'), [], "a tool's name is not searched");
});

t.test("what does not match; case, accents, prefixes, words, phrases", async (t) => {
  const api = await build(t);
  await seed(api);
  const found = async (q: string) => ids(await search(api, q));
  t.strictSame(await found("elephant"), [], "a word nowhere");
  t.strictSame(await found("nvoice"), [], "the middle of a word is not a word");
  t.strictSame(await found("ZOE"), ["s-prompt-array"], "case and accents folded: ZOE finds Zoë");
  t.strictSame(await found("zoë"), ["s-prompt-array"], "zoë finds Zoë");
  t.strictSame(await found("pres"), ["s-error"], "pres finds près");
  t.strictSame(await found("gira"), ["s-prompt-string"], "the last word is a prefix");
  t.strictSame(await found('"gira"'), [], "a quoted word is whole");
  t.strictSame(await found("gira* tall"), ["s-prompt-string"], "word* is a prefix anywhere");
  t.strictSame(await found("gira tall"), [], "a word before the last is whole");
  t.strictSame(await found("invoice items"), ["s-prompt-array"], "words of one event, across its fields, ANDed");
  t.strictSame(await found("invoice giraffes"), [], "words of two sessions: none has both");
  t.strictSame(await found("customer acme beta"), ["s-tag"], "the session's own fields");
  t.strictSame(await found('"invoice found"'), ["s-prompt-array"], "a phrase");
  t.strictSame(await found('"found invoice"'), [], "a phrase's words in order");
  t.strictSame(await found("qx 4411"), ["s-prompt-array"], "QX-4411 is two words");
  t.strictSame(await found("qx-4411"), ["s-prompt-array"], "and - separates them in q too");
  t.strictSame(await found(""), ALL, "an empty q filters nothing");
  const rows = await search(api, "");
  t.ok(
    rows.every((row) => row.match === undefined),
    "no match object without a search",
  );
  const plain = (await read(api, "/v2/sessions")).json().sessions as Row[];
  t.ok(
    plain.every((row) => row.match === undefined),
    "nor without q",
  );
  t.strictSame(await search(api, "giraffes", OTHER_PROJECT_KEY), [], "another project's sessions never match");
});

t.test("FTS syntax in q is literal text: never a 500", async (t) => {
  const api = await build(t);
  await seed(api);
  const odd = [
    '"',
    '""',
    '"""',
    "*",
    "**",
    "-",
    "-giraffes",
    "giraffes -tall",
    "NEAR",
    "NEAR(giraffe tall)",
    "giraffe NEAR tall",
    "(",
    ")",
    "(giraffes",
    "giraffes OR kangaroo",
    "giraffes AND",
    "NOT giraffes",
    "^giraffes",
    "prompt:giraffes",
    "text:giraffes",
    "{text}: giraffes",
    "'",
    "\\",
    "a'b",
    'giraffes"',
    '"giraffes',
    "gira*ffes",
    "%",
    "_",
    "..",
    "😀",
    "\u0301",
    ":*",
    "& | ! <->",
    "'giraffes':*",
    "x".repeat(256),
    "a ".repeat(128),
  ];
  for (const q of odd) {
    const res = await read(api, `/v2/sessions?q=${encodeURIComponent(q)}`);
    t.equal(res.statusCode, 200, `q=${JSON.stringify(q).slice(0, 40)}: 200 (${res.body.slice(0, 120)})`);
  }
  const found = async (q: string) => ids(await search(api, q));
  t.strictSame(await found("NEAR(giraffe tall)"), [], "NEAR is a word, not an operator (no such word)");
  t.strictSame(await found("giraffes OR kangaroo"), [], "OR is a word");
  t.strictSame(await found("-tall"), ["s-prompt-string"], "- is not NOT");
  t.strictSame(await found('"giraffes'), ["s-prompt-string"], "an unclosed quote: a phrase to the end");
  t.strictSame(await found('"'), ALL, "a lone quote has no word: it filters nothing");
  t.strictSame(await found("(*)"), ALL, "nor do operators alone");
});

t.test("the index follows every write: update_events, deletes, bulk delete, export", async (t) => {
  const api = await build(t);
  const jwts = await seed(api);
  const found = async (q: string) => ids(await search(api, q));

  const update = await api.withJwt(
    "/v2/update_events",
    { events: [{ id: "e-completion", completion: "Classical mechanics instead." }] },
    jwts["s-completion"] as string,
  );
  t.equal(update.statusCode, 200, "update_events");
  t.strictSame(await found("entanglement"), [], "update_events: the old completion no longer matches");
  t.strictSame(await found("classical"), ["s-completion"], "the new one does");
  t.strictSame(await found("explain"), ["s-completion"], "the fields it did not change still do");

  const retag = await api.withJwt(
    "/v2/update_session",
    { session: { id: "s-tag", tags: ["customer-globex"] } },
    jwts["s-tag"] as string,
  );
  t.equal(retag.statusCode, 200, "update_session");
  t.strictSame(await found("acme"), [], "update_session: the old tags no longer match");
  t.strictSame(await found("globex"), ["s-tag"], "the new ones do");

  t.equal((await read(api, "/v2/sessions/s-tag", API_KEY, "DELETE")).statusCode, 200);
  t.strictSame(await found("globex"), [], "a deleted session no longer matches");

  const exported = (await read(api, "/v2/export?q=giraffes")).body.trim().split("\n");
  t.strictSame(
    exported.map((line) => JSON.parse(line).session?.id ?? "trailer"),
    ["s-prompt-string", "trailer"],
    "export: the same q",
  );

  const body = async (q: unknown, dryRun = false) =>
    api.withKey("/v2/delete_sessions", { q, ...(dryRun ? { dry_run: true } : {}) }, API_KEY);
  isInvalid(t, await body("***"), ["q"]);
  isInvalid(t, await body(""), ["q"]);
  const dry = await body("invoice", true);
  t.strictSame(dry.json(), { status: "success", sessions: 1, events: 2, dry_run: true }, "a dry run counts");
  const real = await body("invoice");
  t.strictSame(real.json(), { status: "success", sessions: 1, events: 2, dry_run: false }, "bulk delete by q");
  t.strictSame(await found("invoice"), [], "its sessions no longer match");
  t.strictSame(await found("nothing"), [], "nor their other events");
  t.strictSame(await found("giraffes"), ["s-prompt-string"], "the others still do");
});

t.test("a phrase never crosses fields nor events (decision 030); where it matches, the snippet shows it", async (t) => {
  const api = await build(t);
  const text = (row: Row) => row.match?.highlights.map(([s, e]) => row.match?.snippet.slice(s, e));
  // Each of these holds both words, adjacent only if fields or events were run together.
  const fields = await api.session("cross-fields", { init_timestamp: at(T0) });
  await createEvents(api, fields, [
    { type: "tool", id: "e-tool", name: "kettle", input: "boil the copperkettle", output: "whistlewind says the pot" },
    { type: "llm", id: "e-llm", prompt: "a prompt about copperkettle", completion: "whistlewind answers" },
    { type: "error", id: "e-error", error_type: "copperkettle", details: "whistlewind broke" },
  ]);
  const events = await api.session("cross-events", { init_timestamp: at(T0 + 1000) });
  await createEvents(api, events, [
    { type: "llm", id: "e-first", init_timestamp: at(T0 + 1001), completion: "ends with copperkettle" },
    { type: "llm", id: "e-second", init_timestamp: at(T0 + 1002), prompt: "whistlewind starts this one" },
  ]);
  await api.session("cross-own", {
    init_timestamp: at(T0 + 2000),
    end_state: "Fail",
    end_state_reason: "stopped at the copperkettle",
    tags: ["whistlewind", "other"],
  });
  t.strictSame(
    await search(api, '"copperkettle whistlewind"'),
    [],
    "no session: the phrase is in none of their fields",
  );
  t.strictSame(
    (await search(api, "copperkettle whistlewind")).map((row) => row.session.id),
    ["cross-own", "cross-fields"],
    "the same words, not as a phrase: one document holding both is enough",
  );

  // Where the phrase is in one field, it matches, and the snippet and highlights show it.
  const inOutput = await api.session("in-output", { init_timestamp: at(T0 + 3000) });
  await createEvents(api, inOutput, [
    { type: "tool", id: "e-in", name: "kettle", input: "copperkettle", output: "the copperkettle whistlewind sings" },
  ]);
  await api.session("in-reason", {
    init_timestamp: at(T0 + 4000),
    end_state: "Fail",
    end_state_reason: "a Copperkettle Whistlewind, again",
  });
  const rows = await search(api, '"copperkettle whistlewind"');
  t.strictSame(
    rows.map((row) => [row.session.id, row.match?.field, row.match?.event_id]),
    [
      ["in-reason", "end_state_reason", null],
      ["in-output", "output", "e-in"],
    ],
    "the sessions whose one field holds the phrase, and that field",
  );
  t.strictSame(rows.map(text), [["Copperkettle Whistlewind"], ["copperkettle whistlewind"]], "highlighted whole");
  t.strictSame(
    rows.map((row) => row.match?.snippet),
    ["a Copperkettle Whistlewind, again", "the copperkettle whistlewind sings"],
    "the snippets are the fields that hold it",
  );
});

t.test("the snippet: at most 160 characters around the first hit, offsets on the terms", async (t) => {
  const api = await build(t);
  const filler = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(" ");
  const long = `${filler(60)} the needle is HERE,\n\n   then ${filler(60)} and another Needle`;
  const jwt = await api.session("long", { init_timestamp: at(T0) });
  await createEvents(api, jwt, [{ type: "llm", id: "e", completion: long }]);
  const [row] = await search(api, "needle here");
  const match = row?.match;
  t.ok(match);
  if (!match) return;
  t.ok(match.snippet.length <= 160, `${match.snippet.length} characters`);
  t.ok(match.snippet.startsWith("…") && match.snippet.endsWith("…"), "cut at both ends, with …");
  t.notMatch(match.snippet, /\n| {2}/, "whitespace collapsed");
  t.strictSame(
    match.highlights.map(([s, e]) => match.snippet.slice(s, e)),
    ["needle", "HERE"],
    "the terms, as written; the second Needle is past the snippet",
  );
  const [phrase] = await search(api, '"needle is here"');
  t.strictSame(
    phrase?.match?.highlights.map(([s, e]) => phrase.match?.snippet.slice(s, e)),
    ["needle is HERE"],
    "a phrase is one highlight",
  );
  const jwt2 = await api.session("astral", { init_timestamp: at(T0 + 1) });
  await createEvents(api, jwt2, [{ type: "llm", id: "e", prompt: `${"🧪".repeat(100)} zebra ${"🧪".repeat(100)}` }]);
  const [astral] = await search(api, "zebra");
  const snippet = astral?.match?.snippet ?? "";
  t.ok(snippet.length <= 160);
  t.notOk(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(snippet), "no half surrogate");
  t.strictSame(
    astral?.match?.highlights.map(([s, e]) => snippet.slice(s, e)),
    ["zebra"],
  );
});

t.test("a word in many events: the same rows, pages and filters", async (t) => {
  const api = await build(t);
  const expected: string[] = [];
  for (let s = 0; s < 12; s++) {
    const id = `c${String(s).padStart(2, "0")}`;
    const jwt = await api.session(id, { init_timestamp: at(T0 + s * 1000), tags: s % 3 === 0 ? ["third"] : [] });
    // Sessions 4 and 9 have no event with the word; 7 has it in its reason only.
    const events = s === 4 || s === 9 || s === 7 ? 1 : 601;
    const text = (n: number) =>
      s === 4 || s === 9 || s === 7 ? "nothing here" : n % 2 === 1 ? "frequent" : `frequent word ${n}`;
    await createEvents(
      api,
      jwt,
      Array.from({ length: events }, (_, n) => ({
        type: "llm",
        id: `e${n}`,
        init_timestamp: at(T0 + s * 1000 + n),
        prompt: text(n),
      })),
    );
    if (s === 7) {
      await api.withJwt("/v2/update_session", { session: { id, end_state_reason: "a frequent failure" } }, jwt);
    }
    if (s !== 4 && s !== 9) expected.unshift(id);
  }
  const all = await search(api, "frequent");
  t.strictSame(ids(all), expected, "every session with the word, newest first");
  t.equal(all.find((row) => row.session.id === "c07")?.match?.field, "end_state_reason");
  t.equal(all.find((row) => row.session.id === "c08")?.match?.event_id, "e0", "the first matching event");
  const { rows } = await allPages<Row>(api, "/v2/sessions?limit=3&q=frequent", "sessions");
  t.strictSame(ids(rows), expected, "the same across pages of 3");
  const thirds = ids((await read(api, "/v2/sessions?q=frequent&tag=third")).json().sessions);
  t.strictSame(thirds, ["c06", "c03", "c00"], "with another filter");
  t.strictSame(
    ids(await search(api, "frequent word 250")),
    expected.filter((id) => id !== "c07"),
    "with rarer words",
  );
  t.strictSame(ids(await search(api, '"word 251"')), [], "an odd n has no such event");
  t.strictSame(ids(await search(api, "nothing")), ["c09", "c07", "c04"], "a rare word still");
});
