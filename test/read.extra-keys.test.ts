/**
 * The `extra.<key>=<value>` filters with keys and values that are syntax somewhere (decision 031,
 * issue 27): a quote, a backslash, a dot, brackets, `$`, `%`, `_`, `*`, an apostrophe. Each key
 * is matched whole, as a name, and each value exactly, on every operation that takes the filters
 * (GET /v2/sessions, GET /v2/export, POST /v2/delete_sessions as a dry run, both analytics
 * operations); a NUL is a 400 naming the parameter; numbers match by value. Real HTTP (inject)
 * on the store STORE names.
 */
import t, { type Test } from "tap";
import { API_KEY, build, isInvalid, type TestApp } from "./helper.ts";
import { at, isBadParameter, read, T0 } from "./read.helpers.ts";

const RANGE = `from=${encodeURIComponent(at(T0 - 3_600_000))}&to=${encodeURIComponent(at(T0 + 3_600_000))}`;

/** Characters that are syntax in a JSON path, a LIKE or GLOB pattern, SQL or a query string. */
const SPECIALS = ['"', "\\", ".", "[", "]", "$", "%", "_", "*", "'"];

/** A session of these fields (a JSON text, so that a number keeps the spelling it is sent with), tagged with its id. */
async function rawSession(api: TestApp, id: string, fields: string) {
  const payload = `{"session":{"id":${JSON.stringify(id)},"tags":[${JSON.stringify(id)}],"init_timestamp":"${at(T0)}",${fields}}}`;
  const res = await api.inject({
    method: "POST",
    url: "/v2/create_session",
    headers: { "content-type": "application/json", "x-agentmon-api-key": API_KEY },
    payload,
  });
  if (res.statusCode !== 200) throw new Error(`create_session answered ${res.statusCode}: ${res.body}`);
}

const filterQuery = (key: string, value: string) => `extra.${encodeURIComponent(key)}=${encodeURIComponent(value)}`;

/**
 * The sessions each operation finds with this one filter (`body`: the value as delete_sessions is
 * given it, the text by default): their ids as the list, the export and the breakdown by tag
 * show them, and the counts of the dry run and the series.
 */
async function matchedEverywhere(
  t: Test,
  api: TestApp,
  key: string,
  value: string,
  expected: string[],
  body: unknown = value,
) {
  const want = [...expected].sort();
  const query = filterQuery(key, value);
  const ok = (res: { statusCode: number; body: string }, what: string) => {
    if (res.statusCode !== 200) throw new Error(`${what} answered ${res.statusCode}: ${res.body}`);
  };
  const list = await read(api, `/v2/sessions?${query}&limit=200`);
  ok(list, "GET /v2/sessions");
  const listed = (list.json().sessions as { session: { id: string } }[]).map((r) => r.session.id).sort();
  t.strictSame(listed, want, "GET /v2/sessions lists them");

  const exported = await read(api, `/v2/export?${query}`);
  ok(exported, "GET /v2/export");
  const lines = exported.body
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  const ids = lines.filter((line) => line.session).map((line) => line.session.id as string);
  t.strictSame(ids.sort(), want, "GET /v2/export exports them");
  t.strictSame(lines[lines.length - 1].trailer?.sessions, want.length, "and its trailer counts them");

  const dry = await api.withKey("/v2/delete_sessions", { extra: { [key]: body }, dry_run: true });
  ok(dry, "POST /v2/delete_sessions");
  t.equal(dry.json().sessions, want.length, "POST /v2/delete_sessions (dry run) counts them");
  for (const id of want.slice(0, 1)) {
    const one = await api.withKey("/v2/delete_sessions", { extra: { [key]: body }, tag: [id], dry_run: true });
    t.equal(one.json().sessions, 1, `and ${id} is one of them`);
  }

  const series = await read(api, `/v2/analytics/timeseries?${RANGE}&interval=hour&${query}`);
  ok(series, "GET /v2/analytics/timeseries");
  const counted = (series.json().points as { sessions: number }[]).reduce((sum, p) => sum + p.sessions, 0);
  t.equal(counted, want.length, "GET /v2/analytics/timeseries counts them");

  const groups = await read(api, `/v2/analytics/breakdown?by=tag&limit=100&${RANGE}&${query}`);
  ok(groups, "GET /v2/analytics/breakdown");
  const keys = (groups.json().items as { key: string }[]).map((item) => item.key).sort();
  t.strictSame(keys, want, "GET /v2/analytics/breakdown?by=tag groups them (each session is tagged with its id)");
}

t.test("a key holding syntax is a name, matched whole; a value holding it matches exactly", async (t) => {
  const api = await build(t);
  // Decoys: what a key read as a path (a.b, a[0], $.a), or a value read as a pattern, would find.
  await rawSession(
    api,
    "decoy",
    '"a":{"b":"v","":"v","0":"v"},"aAb":"v","ab":"v","a b":"v","val":"xAy","val2":"xy","b":"v"',
  );
  await rawSession(api, "decoy-array", '"x":["v"],"y":{"z":{"w":"v"}},"val":"x\\\\\\"y"');
  const keys: string[] = [];
  for (const c of SPECIALS) keys.push(`a${c}b`, c, `${c}${c}`);
  // And the forms the tester sent and the path syntax of each engine.
  keys.push('a"."b', "$.a", "$.a.b", "a[0]", "x[0]", "y.z.w", "y.z", '"a"', "$[0]", 'a\\"b', "' OR '1'='1", "a%22b");
  const unique = [...new Set(keys)];
  for (const [i, key] of unique.entries()) await rawSession(api, `k${i}`, `${JSON.stringify(key)}:"v"`);
  for (const [i, c] of SPECIALS.entries()) await rawSession(api, `v${i}`, `"val":${JSON.stringify(`x${c}y`)}`);

  for (const [i, key] of unique.entries()) {
    await t.test(`key ${JSON.stringify(key)}`, (t) => matchedEverywhere(t, api, key, "v", [`k${i}`]));
  }
  for (const [i, c] of SPECIALS.entries()) {
    await t.test(`value ${JSON.stringify(`x${c}y`)}`, (t) => matchedEverywhere(t, api, "val", `x${c}y`, [`v${i}`]));
  }
  await t.test("no key of a path or pattern reaches the decoys", async (t) => {
    for (const key of ["b", "a.", "a", "b.", "a%", "a_", "a*", "x.0", "y", "x"]) {
      await t.test(key, (t) => matchedEverywhere(t, api, key, "v", key === "b" ? ["decoy"] : []));
    }
    await matchedEverywhere(t, api, "val", "x_y", [`v${SPECIALS.indexOf("_")}`]);
    await matchedEverywhere(t, api, "val", "x%", []);
  });
});

t.test("numbers match by value, strings by text, true and false both the boolean and the text", async (t) => {
  const api = await build(t);
  const sessions: [string, string][] = [
    ["n-3.0", "3.0"],
    ["n-str-3", '"3"'],
    ["n-str-3.0", '"3.0"'],
    ["n-1e2", "1e2"],
    ["n-true", "true"],
    ["n-str-true", '"true"'],
    ["n-false", "false"],
    ["n-null", "null"],
    ["n-object", '{"x":3}'],
    ["n-array", "[3]"],
    ["n-0.1", "0.1"],
    ["n-minus-0", "-0"],
    ["n-big", "12345678901234567890"],
    ["n-small", "-2.5e-7"],
  ];
  for (const [id, value] of sessions) await rawSession(api, id, `"retries":${value}`);
  const cases: [string, string[]][] = [
    ["3", ["n-3.0", "n-str-3"]],
    ["3.0", ["n-3.0", "n-str-3.0"]],
    ["3e0", ["n-3.0"]],
    ["0.3E1", ["n-3.0"]],
    ["300e-2", ["n-3.0"]],
    ["+3", []],
    ["03", []],
    ["3.", []],
    [" 3", []],
    ["100", ["n-1e2"]],
    ["1e2", ["n-1e2"]],
    ["100.000", ["n-1e2"]],
    ["true", ["n-true", "n-str-true"]],
    ["false", ["n-false"]],
    ["True", []],
    ["null", []],
    ['{"x":3}', []],
    ["[3]", []],
    ["0.1", ["n-0.1"]],
    ["0", ["n-minus-0"]],
    ["-0", ["n-minus-0"]],
    ["0e9", ["n-minus-0"]],
    ["12345678901234567890", ["n-big"]],
    ["1.2345678901234567e19", ["n-big"]],
    ["-2.5e-7", ["n-small"]],
    ["-0.00000025", ["n-small"]],
    ["1e400", []],
  ];
  for (const [value, expected] of cases) {
    await t.test(`extra.retries=${value}`, (t) => matchedEverywhere(t, api, "retries", value, expected));
  }
  await t.test("delete_sessions's body: a number or a boolean as its JSON text", async (t) => {
    await matchedEverywhere(t, api, "retries", "3", ["n-3.0", "n-str-3"], 3);
    await matchedEverywhere(t, api, "retries", "100", ["n-1e2"], 1e2);
    await matchedEverywhere(t, api, "retries", "true", ["n-true", "n-str-true"], true);
  });
});

t.test("a NUL in an extra.<key> name or value is a 400 naming the parameter, on every operation", async (t) => {
  const api = await build(t);
  await rawSession(api, "s", '"a":"v"');
  const reads = ["/v2/sessions?", "/v2/export?", `/v2/analytics/timeseries?${RANGE}&`, "/v2/analytics/breakdown?"];
  for (const path of reads) {
    isBadParameter(t, await read(api, `${path}extra.a%00b=v`), ['query["extra.a\\u0000b"]']);
    isBadParameter(t, await read(api, `${path}extra.a=v%00`), ['query["extra.a"]']);
  }
  for (const extra of [{ "a\u0000b": "v" }, { a: "v\u0000" }]) {
    const res = await api.withKey("/v2/delete_sessions", { extra, dry_run: true });
    const path = Object.keys(extra)[0] === "a" ? "extra.a" : 'extra["a\\u0000b"]';
    isInvalid(t, res, [path]);
  }
});
