/** What a plan is: how the fuzzer makes a body valid under the contract, breaks it, and reads it back. */
import type fc from "fast-check";
import type { LightMyRequestResponse } from "fastify";
import type { Ctx } from "./app.ts";
import type { Expect } from "./checks.ts";

export type Body = Record<string, any>;
export type Pick = (n: number) => number;

export interface Break {
  what: string;
  /** Breaks of one kind are drawn as a group, so that rare kinds are not drowned by common ones. */
  kind?: string;
  expect: Expect;
  body: fc.Arbitrary<unknown>;
}

export interface Plan {
  /** Makes a body the schema accepts valid under the contract too, in this app. */
  fix(body: Body, ctx: Ctx, pick: Pick, id: string): Body;
  /** Contract rules beyond the schema, broken one at a time in a valid body. */
  breaks(body: Body, ctx: Ctx): Break[];
  /** What to remember before a valid call, for the read-back. */
  before(ctx: Ctx, sent: Body): Promise<unknown>;
  /** Answers a problem with a 200 and what is stored now, or undefined. */
  readback(ctx: Ctx, sent: Body, res: LightMyRequestResponse, before: any): Promise<string | undefined>;
}
