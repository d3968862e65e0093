/** openapi.yaml as the fuzzer sees it (test/arbitraries/schema.ts): the document, its operations, `$ref`s followed. */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";

// Schemas are plain parsed YAML; `any` keeps the walker short (test code, see biome.json).
export type Schema = any;
export type Segment = string | number;

export interface Spec {
  paths: Record<string, Record<string, any>>;
  components: Record<string, Record<string, any>>;
  security?: Record<string, string[]>[];
}

export const loadSpec = (url: URL): Spec => parseYaml(readFileSync(url, "utf8")) as Spec;

// ---------------------------------------------------------------------------------- operations

/** `person`: a browser session only (decision 035). */
export type Security = "apiKey" | "jwt" | "metrics" | "person" | "none";

export interface Parameter {
  name: string;
  in: "query" | "path" | "header" | "cookie";
  required: boolean;
  schema: Schema;
}

export interface Operation {
  operationId: string;
  method: string;
  path: string;
  security: Security;
  /** The JSON request body schema (its `$ref` kept, so component names stay visible), if any. */
  body: Schema | undefined;
  parameters: Parameter[];
  /** The status codes the operation documents. */
  responses: number[];
  /** The OTLP message an OTLP operation takes (`x-fastify-config.otlp`: traces, logs, metrics). */
  otlp?: string;
}

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];

/** Every operation of the spec, in document order. */
export function operationsOf(spec: Spec): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const requirements: Record<string, string[]>[] = op.security ?? spec.security ?? [];
      const schemes = requirements.flatMap((r) => Object.keys(r));
      const security: Security = schemes.includes("bearerAuth")
        ? "jwt"
        : schemes.some((s) => /ApiKey$/.test(s))
          ? "apiKey"
          : schemes.includes("metricsToken")
            ? "metrics"
            : schemes.includes("browserSession")
              ? "person"
              : "none";
      const requestBody = op.requestBody ? deref(spec, op.requestBody).node : undefined;
      const parameters = [...(item.parameters ?? []), ...(op.parameters ?? [])].map(
        (p: Schema) => deref(spec, p).node as Parameter,
      );
      ops.push({
        operationId: op.operationId,
        method: method.toUpperCase(),
        path,
        security,
        body: requestBody?.content?.["application/json"]?.schema,
        parameters,
        responses: Object.keys(op.responses ?? {}).map(Number),
        ...(op["x-fastify-config"]?.otlp ? { otlp: op["x-fastify-config"].otlp as string } : {}),
      });
    }
  }
  return ops;
}

/** Follows `$ref`s; `name` is the last component the chain went through. */
export function deref(spec: Spec, node: Schema): { node: Schema; name: string | undefined } {
  let name: string | undefined;
  let current = node;
  for (let hops = 0; current && typeof current === "object" && typeof current.$ref === "string"; hops++) {
    if (hops > 32) throw new Error(`$ref cycle at ${current.$ref}`);
    const parts = (current.$ref as string).replace(/^#\//, "").split("/");
    name = parts[parts.length - 1];
    current = parts.reduce((at: Schema, part) => at?.[part.replaceAll("~1", "/").replaceAll("~0", "~")], spec);
    if (current === undefined) throw new Error(`unresolved $ref ${node.$ref}`);
  }
  return { node: current, name };
}
