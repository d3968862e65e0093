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

CREATE TABLE response_spans (
  project_id  text NOT NULL,
  response_id text NOT NULL,
  session_pk  int8 NOT NULL,
  event_id    text NOT NULL COLLATE "C",
  PRIMARY KEY (project_id, response_id, session_pk, event_id)
);

CREATE INDEX response_spans_by_session ON response_spans (session_pk);

INSERT INTO projection_queue (session_pk, kind)
  SELECT DISTINCT session_pk, 2 FROM events WHERE strpos(extra, '"gen_ai.response.id"') > 0 ORDER BY session_pk;
