import { sendUiFile, type UiFile, uiFiles } from "../ui/assets.ts";
import type { Deps, Handler } from "./types.ts";

/**
 * The page session_url (S2) points at. The same HTML for every id: the page asks the read API,
 * with the user's key, and shows "not found" itself, so an id never reveals anything here.
 */
export const getUiSession = (_deps: Deps): Handler<"getUiSession"> => {
  return async (req, reply) => sendUiFile(req, reply, uiFiles().get("session.html") as UiFile);
};
