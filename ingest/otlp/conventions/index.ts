/**
 * The conventions agentmon reads, merged into one set of ordered rules (convention.ts says how).
 * A new convention: a file beside this one, and its name in this list.
 */
import { agentops } from "./agentops.ts";
import { assemble } from "./convention.ts";
import { genai } from "./genai.ts";
import { langfuse } from "./langfuse.ts";
import { openinference } from "./openinference.ts";
import { openllmetry } from "./openllmetry.ts";

export const CONVENTIONS = [agentops, openinference, openllmetry, genai, langfuse];

export const RULES = assemble(CONVENTIONS);
