-- agentmon schema: scores of a model response (issue 25, docs/decisions/038-response-ids.md).
-- scores.response_id is raw: the `gen_ai.response.id` a score names (an OTLP evaluation result,
-- or `response_id` of POST /v2/scores). A score naming a response and no event is resolved by
-- the projector to the span that carries that response id, once both are stored, in whichever
-- order they arrive. response_spans is a projection (decision 033) written by the projector
-- only: which spans carry which `gen_ai.response.id`, read from their attributes. SQLite's
-- 016-response-ids.sql has the same. Sessions whose events carry a response id are queued
-- (kind 2: counted again) so that an upgraded database knows their responses.
ALTER TABLE scores ADD COLUMN response_id text;

CREATE INDEX scores_by_response ON scores (project_id, response_id) WHERE response_id IS NOT NULL;

-- One row per span and response id; `response_key` is a 52-bit hash of project and response id
-- (db/projections/responses.ts responseKey): its index is what a lookup uses, and a small random
-- key keeps the index's writes few (the row itself is appended); a lookup checks project and id.
CREATE TABLE response_spans (
  session_pk  int8 NOT NULL,
  event_id    text NOT NULL COLLATE "C",
  project_id  text NOT NULL,
  response_id text NOT NULL,
  response_key int8 NOT NULL
);

CREATE INDEX response_spans_by_key ON response_spans (response_key);
CREATE INDEX response_spans_by_session ON response_spans (session_pk);

CREATE INDEX scores_waiting ON scores (project_id, response_id)
  WHERE response_id IS NOT NULL AND event_id IS NULL AND conversation_id IS NULL;

INSERT INTO projection_queue (session_pk, kind)
  SELECT DISTINCT session_pk, 2 FROM events WHERE strpos(extra, '"gen_ai.response.id"') > 0 ORDER BY session_pk;
