/**
 * dist/openapi.json's routes (bin/build.js, lib/spec.ts): fastify-openapi-glue's parser shares one
 * object wherever a $ref named it, and the cache keeps that sharing instead of writing a copy at
 * each place. What is read back must be the parser's answer, equal and shared alike.
 */
import { readFileSync } from "node:fs";
import t from "tap";
import { parse } from "yaml";
import { forRuntime, shareRepeats } from "../bin/build.js";
import { restoreShared, type Shared } from "../lib/spec.ts";

type Route = { schema: Record<string, Record<string, unknown>> };

/** The plugin's own parser (the bundle has a stand-in for it: bin/shims/openapi-glue-parser.js). */
interface GlueParser {
  parse(spec: unknown, options: object): Promise<{ contentTypes: Set<string> } & Record<string, unknown>>;
}

/** Through JSON, as the build writes it and a start reads it. */
const roundTrip = (value: unknown) =>
  restoreShared(JSON.parse(JSON.stringify(shareRepeats(value))) as Shared) as Record<string, unknown>;

/** How often an object is met again below `value` (its sharing, as a number). */
function repeats(value: unknown): number {
  const seen = new Set<object>();
  let n = 0;
  const walk = (v: unknown) => {
    if (v === null || typeof v !== "object") return;
    if (seen.has(v)) {
      n++;
      return;
    }
    seen.add(v);
    for (const item of Object.values(v)) walk(item);
  };
  walk(value);
  return n;
}

t.test("an object met twice is one object again; what was not shared is not", async (t) => {
  const error = { type: "object", properties: { code: { type: "integer" } } };
  const inner = { type: "string", enum: ["a", "b"] };
  const outer = { type: "array", items: inner };
  const value = {
    routes: [
      { schema: { response: { 400: error, 404: error }, body: outer } },
      { schema: { response: { 400: error }, query: { list: outer, one: inner } } },
    ],
    alone: { type: "object", properties: { code: { type: "integer" } } },
    list: [1, "two", null, true, [error]],
  };
  const written = shareRepeats(value);
  t.equal(written.shared.length, 3, "three objects are shared: error, outer, and inner (met outside outer too)");
  t.ok(JSON.stringify(written).length < JSON.stringify(value).length, "smaller than the copies");
  const back = roundTrip(value);
  t.same(back, value, "equal");
  t.equal(repeats(back), repeats(value), "shared as often");
  const [first, second] = back.routes as [Route, Route];
  t.equal(first.schema.response?.[400], first.schema.response?.[404]);
  t.equal(first.schema.response?.[400], second.schema.response?.[400]);
  t.equal(((back.list as unknown[])[4] as unknown[])[0], first.schema.response?.[400]);
  t.equal((first.schema.body as { items: unknown }).items, second.schema.query?.one, "shared inside shared");
  t.not(back.alone, first.schema.response?.[400], "an equal object that was a copy stays a copy");
});

t.test("a member named __proto__ stays data, and a value without sharing comes back as it was", async (t) => {
  const shared = { note: "x" };
  const value = JSON.parse('{"a": {"__proto__": {"polluted": true}}, "b": []}') as Record<string, unknown>;
  value.c = [shared, shared];
  (value.a as Record<string, unknown>).d = shared;
  const back = roundTrip(value);
  t.same(Object.keys(back.a as object), ["__proto__", "d"]);
  t.equal(Object.getPrototypeOf(back.a), Object.prototype, "not made the prototype");
  t.equal(({} as Record<string, unknown>).polluted, undefined);
  t.same(roundTrip({ plain: [1, { two: 2 }] }), { plain: [1, { two: 2 }] });
  t.same(roundTrip([]), []);
  t.equal(roundTrip("text" as never), "text");
});

t.test("a value that holds a $shared member of its own is refused (the build then keeps no routes)", async (t) => {
  t.throws(() => shareRepeats({ schema: { $shared: 1 } }), /\$shared/);
});

t.test("what the server never reads is left out; names and data stay whole", async (t) => {
  const shared = { type: "string", description: "shared", example: "x" };
  const routes = {
    contentTypes: ["application/json"],
    routes: [
      {
        method: "POST",
        url: "/a",
        operationId: "a",
        openapiSource: { summary: "the operation as written" },
        schema: {
          summary: "A",
          description: "words",
          body: {
            type: "object",
            description: "the body",
            examples: [{ description: "data" }],
            properties: {
              description: { type: "string", description: "a property named description" },
              summary: shared,
              examples: { type: "array", items: shared },
            },
            default: { description: "data, kept" },
            enum: [{ summary: "data, kept" }],
          },
          response: { 200: { description: "OK", content: { "application/json": { schema: shared } } } },
        },
      },
    ],
  };
  const slim = forRuntime(routes) as typeof routes;
  t.same(slim.contentTypes, routes.contentTypes);
  const [route] = slim.routes as unknown as Record<string, unknown>[];
  t.equal(route?.openapiSource, undefined, "the operation as written is left out");
  t.same(route?.schema, {
    body: {
      type: "object",
      properties: {
        description: { type: "string" },
        summary: { type: "string" },
        examples: { type: "array", items: { type: "string" } },
      },
      default: { description: "data, kept" },
      enum: [{ summary: "data, kept" }],
    },
    response: { 200: { content: { "application/json": { schema: { type: "string" } } } } },
  });
  const schema = route?.schema as { body: { properties: { summary: unknown; examples: { items: unknown } } } };
  t.equal(schema.body.properties.summary, schema.body.properties.examples.items, "still one object");
  t.equal(
    ((routes.routes[0] as (typeof routes.routes)[0]).schema.body.properties.description as { description?: string })
      .description,
    "a property named description",
    "the parser's answer is not changed",
  );
});

t.test("the routes the parser makes of openapi.yaml come back equal and shared alike", async (t) => {
  const module = new URL("../node_modules/fastify-openapi-glue/lib/Parser.js", import.meta.url).href;
  const { Parser } = (await import(module)) as { Parser: new () => GlueParser };
  const spec = parse(readFileSync(new URL("../openapi.yaml", import.meta.url), "utf8"));
  const parsed = await new Parser().parse(spec, { addEmptySchema: false, addCookieSchema: false });
  const routes = { ...parsed, contentTypes: [...parsed.contentTypes] };
  const back = roundTrip(routes);
  t.same(back, routes);
  t.ok(repeats(routes) > 100, `the parser shares (${repeats(routes)} repeats)`);
  t.equal(repeats(back), repeats(routes));
  const plain = JSON.stringify(routes).length;
  const written = JSON.stringify(shareRepeats(routes)).length;
  t.ok(written < plain / 1.5, `written smaller: ${written} of ${plain} bytes`);

  // What the build writes: the same routes with only annotations left out, compared member by member.
  type Routes = { routes: ({ operationId: string; openapiSource?: unknown } & Record<string, unknown>)[] };
  const slim = restoreShared(JSON.parse(JSON.stringify(shareRepeats(forRuntime(routes)))) as Shared) as Routes;
  const left = new Set<string>();
  const differences: string[] = [];
  const compare = (full: unknown, kept: unknown, path: string) => {
    if (full === null || typeof full !== "object") {
      if (kept !== full) differences.push(path);
      return;
    }
    for (const [key, value] of Object.entries(full)) {
      if (Object.hasOwn(kept as object, key)) compare(value, (kept as Record<string, unknown>)[key], `${path}.${key}`);
      else left.add(key);
    }
    for (const key of Object.keys(kept as object)) if (!Object.hasOwn(full, key)) differences.push(`${path}.${key}`);
  };
  (routes as unknown as Routes).routes.forEach((route, i) => {
    const { openapiSource: _, ...rest } = route;
    compare(rest, slim.routes[i], `routes[${i}]`);
  });
  t.same(differences, [], "nothing changed or added");
  t.same([...left].sort(), ["description", "example", "examples", "summary"], "only annotations left out");
  const scoreConfig = slim.routes.find((r) => r.operationId === "listScoreConfigs");
  t.match(
    JSON.stringify(scoreConfig?.schema),
    /"description":\{"type":\["string","null"\]\}/,
    "a property named description is kept",
  );
  t.ok(JSON.stringify(forRuntime(routes)).length < plain / 3, "a third of the parser's answer");
});
