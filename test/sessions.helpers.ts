/** What the sessions tests (test/sessions.*.test.ts, rules S1..S7) share: a fixed time, the bodies they expect. */
import type { Store } from "../db/store.ts";

export const NOW = Date.UTC(2026, 10, 22, 5, 9, 43, 640);
export const NOW_ISO = "2026-11-22T05:09:43.640Z";
export const SESSION_URL = "http://agentmon.test/sessions/";

/** The bare session of S6: every named field null but the id and init_timestamp. */
export const bare = (id: string, init = NOW_ISO) => ({
  id,
  init_timestamp: init,
  end_timestamp: null,
  end_state: null,
  end_state_reason: null,
  tags: null,
  host_env: null,
});

export async function projectIdOf(store: Store, name: string): Promise<string> {
  const key = (await store.listApiKeys()).find((k) => k.project_name === name);
  if (!key) throw new Error(`no project ${name}`);
  return key.project_id;
}

export const HOST_ENV = {
  OS: { OS: "Linux", "OS Release": "6.18.44", "OS Version": "#1 SMP" },
  CPU: { "CPU Usage": "46.7%", "Total cores": 2 },
  RAM: { Used: "0.34 GB", Total: "23.54 GB" },
  SDK: { "Python Version": "3.11.2", "System Packages": { requests: "2.28.1" } },
};
