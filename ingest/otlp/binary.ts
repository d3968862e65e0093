/**
 * The binary half of OTLP (application/x-protobuf): decode.ts with protobufjs and
 * generated/otlp.js, about 300 KB of the bundle, loaded the first time a request needs it rather
 * than at every start (B4, docs/decisions/034-cold-start.md). OTLP/JSON needs none of it: json.ts
 * and big-integers.ts are imported directly.
 */
export type OtlpBinary = typeof import("./decode.ts");

let loading: Promise<OtlpBinary> | undefined;

export const otlpBinary = (): Promise<OtlpBinary> => {
  loading ??= import("./decode.ts");
  return loading;
};
