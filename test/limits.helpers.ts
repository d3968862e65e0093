/** What the L1-L3 tests (test/limits.*.test.ts) share: the headers of a call with the API key. */
import { API_KEY, json } from "./helper.ts";

export const keyHeaders = { "content-type": json, "x-agentmon-api-key": API_KEY };
