/**
 * openapi.yaml is the single source of truth: it must be a valid OpenAPI 3.1 document, pass
 * Redocly's recommended rules, name a handler file for every operationId, and declare every
 * status code each operation can answer with the contract's error body.
 */
import { existsSync, readFileSync } from "node:fs";
import { createConfig, lint } from "@redocly/openapi-core";
import { Validator } from "@seriousme/openapi-schema-validator";
import t from "tap";
import { parse } from "yaml";
import { createHandlers } from "../handlers/index.ts";

const SPEC_URL = new URL("../openapi.yaml", import.meta.url);
const spec = parse(readFileSync(SPEC_URL, "utf8"));

type Operation = {
  operationId: string;
  security?: Record<string, string[]>[];
  responses: Record<string, { $ref?: string }>;
};
const operations: [string, string, Operation][] = Object.entries(
  spec.paths as Record<string, Record<string, Operation>>,
).flatMap(([path, item]) =>
  Object.entries(item).map(([method, op]) => [method, path, op] as [string, string, Operation]),
);

t.test("the document is valid OpenAPI 3.1 (JSON schema of the specification)", async (t) => {
  const validator = new Validator();
  const result = await validator.validate(spec);
  t.same(result.errors ?? [], [], "no schema errors");
  t.equal(result.valid, true);
  t.equal(validator.version, "3.1");
});

t.test("the document passes Redocly's recommended rules", async (t) => {
  const config = await createConfig({
    extends: ["recommended"],
    rules: {
      // GET /v2/openapi.yaml needs no credential and no input, so it has no 4xx to declare.
      "operation-4xx-response": "off",
      // otlp.md names /v1/traces/ and /v4/logs/upload/, the paths OTLP and AgentOps clients use.
      "no-path-trailing-slash": "off",
      // GET /sessions?trace_id= only redirects (otlp.md T12): its success is a 302.
      "operation-2xx-response": "off",
    },
  });
  const problems = await lint({ ref: SPEC_URL.pathname, config });
  t.same(
    problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message}`),
    [],
    "no errors or warnings",
  );
});

t.test("every operationId is lowerCamel, unique, and has handlers/<operationId>.ts", async (t) => {
  const ids = operations.map(([, , op]) => op.operationId);
  t.equal(new Set(ids).size, ids.length, "unique");
  for (const id of ids) {
    t.match(id, /^[a-z][a-zA-Z0-9]*$/, `${id} is lowerCamel`);
    t.ok(existsSync(new URL(`../handlers/${id}.ts`, import.meta.url)), `handlers/${id}.ts exists`);
  }
  const handlers = Object.keys(createHandlers({} as Parameters<typeof createHandlers>[0])).sort();
  t.same(handlers, [...ids].sort(), "createHandlers has exactly the spec's operations");
});

t.test("every operation declares every status it can answer, with the error body", async (t) => {
  for (const [method, path, op] of operations) {
    const codes = Object.keys(op.responses);
    const schemes = (op.security ?? []).flatMap((s) => Object.keys(s));
    // GET /sessions?trace_id= answers a redirect (otlp.md T12), every other success is a 200 (G1).
    const expected = [op.responses["302"] ? "302" : "200", "500", "503"];
    if (method === "post") expected.push("400", "413", "415");
    if (schemes.includes("agentmonApiKey")) {
      t.ok(schemes.includes("agentopsApiKey"), `${op.operationId} accepts both API-key headers`);
      expected.push("401", "429");
      // The OTLP endpoints answer failures as google.rpc.Status (otlp.md T10), and the v4 upload as G2.
      const otlp = (op as { "x-fastify-config"?: { otlp?: string } })["x-fastify-config"]?.otlp;
      t.equal(
        op.responses["401"]?.$ref,
        otlp
          ? "#/components/responses/OtlpUnauthenticated"
          : schemes.includes("bearerAuth")
            ? "#/components/responses/InvalidApiKeyOrJwt"
            : "#/components/responses/InvalidApiKey",
      );
    }
    if (schemes.includes("bearerAuth")) {
      expected.push("401", "403", "404");
      if (!schemes.includes("agentmonApiKey")) t.equal(op.responses["401"]?.$ref, "#/components/responses/InvalidJwt");
    }
    for (const code of expected) t.ok(codes.includes(code), `${method.toUpperCase()} ${path} declares ${code}`);
  }
  for (const [name, response] of Object.entries(
    spec.components.responses as Record<string, { content: Record<string, Record<string, unknown>> }>,
  )) {
    const json = response.content["application/json"];
    t.ok(json?.example ?? json?.examples, `response ${name} has an example`);
  }
});

t.test("the error responses use the contract's error body", async (t) => {
  const error = spec.components.schemas.Error;
  t.same(error.required, ["error", "message"]);
  t.same(Object.keys(error.properties), ["error", "message", "details"]);
  t.same(spec.components.schemas.ErrorDetail.required, ["path", "message"]);
});
