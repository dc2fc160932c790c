// The floor under the service's own code: Express with the same JSON body parser, and with the
// contract's validator when VALIDATE=1, answering a fixed completion at once (no upstream, no
// pipeline). Its CPU per request, side by side with the service's, shows how much of the service's
// cost is the framework and how much the validator (which stays: the issue asks to keep it).
import express from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { BASE_PATH, loadContract, validatorCopy } from '../../src/contract/openapi-document.ts';
import { createJsonBody } from '../../src/middleware/json-body.ts';

const answer = {
  id: 'service-1', object: 'chat.completion', created: 1_700_000_000, model: 'service',
  choices: [{ index: 0, message: { role: 'assistant', content: Array.from({ length: 20 }, (_, i) => `word${i} `).join('') }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 20, total_tokens: 32 },
};

const app = express();
app.set('etag', false);
app.use(createJsonBody(1_000_000));
if (process.env.VALIDATE === '1') {
  app.use(OpenApiValidator.middleware({ apiSpec: validatorCopy(loadContract()) as never, validateRequests: true, validateResponses: false, validateSecurity: false }));
}
app.post(`${BASE_PATH}/chat/completions`, (_req, res) => {
  res.json(answer);
});
app.listen(Number(process.env.PORT), '127.0.0.1');
