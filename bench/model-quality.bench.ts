// Answer quality of candidate GGUF models: short factual questions, greedy decoding, and a count
// of answers that contain the expected word; also whether JSON-schema decoding gives valid JSON.
// Run: node --import tsx bench/model-quality.bench.ts MODEL.gguf [MODEL.gguf ...]
import { getLlama, LlamaChat, LlamaLogLevel } from 'node-llama-cpp';

const QUESTIONS: [string, RegExp][] = [
  ['What is the capital of France?', /paris/i],
  ['What is the capital of Japan?', /tokyo/i],
  ['How many days are in a week?', /\b(7|seven)\b/i],
  ['What color is the sky on a clear day?', /blue/i],
  ['What is 2 + 2?', /\b(4|four)\b/i],
  ['Which planet is known as the Red Planet?', /mars/i],
  ['What is the largest ocean on Earth?', /pacific/i],
  ['What gas do plants absorb from the air?', /carbon dioxide|co2/i],
  ['Who wrote Romeo and Juliet?', /shakespeare/i],
  ['What is the freezing point of water in Celsius?', /\b0\b|zero/i],
];
const SCHEMA = { type: 'object', properties: { city: { type: 'string' }, country: { type: 'string' } }, required: ['city', 'country'] };

const llama = await getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, maxThreads: 2, logLevel: LlamaLogLevel.error });
for (const modelPath of process.argv.slice(2)) {
  const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
  const context = await model.createContext({ contextSize: 2048, threads: 2 });
  const sequence = context.getSequence();
  let correct = 0;
  const answers: string[] = [];
  const ask = async (question: string, options: object = {}) => {
    await sequence.clearHistory();
    const chat = new LlamaChat({ contextSequence: sequence });
    const { response } = await chat.generateResponse([{ type: 'user', text: question }], { maxTokens: 48, temperature: 0, ...options });
    chat.dispose({ disposeSequence: false });
    return response;
  };
  for (const [question, expected] of QUESTIONS) {
    const answer = await ask(question);
    if (expected.test(answer)) correct++;
    answers.push(`  ${expected.test(answer) ? '✓' : '✗'} ${question} → ${JSON.stringify(answer.slice(0, 80))}`);
  }
  const grammar = await llama.createGrammarForJsonSchema(SCHEMA as never);
  const json = await ask('Name a city and its country as JSON.', { grammar, maxTokens: 64 });
  let jsonOk = false;
  try {
    const value = JSON.parse(json) as Record<string, unknown>;
    jsonOk = typeof value.city === 'string' && typeof value.country === 'string';
  } catch { /* not JSON */ }
  console.log(`${modelPath.split('/').at(-1)}: ${correct}/${QUESTIONS.length} factual answers right; JSON under a schema: ${jsonOk ? 'valid' : 'invalid'}`);
  console.log(answers.join('\n'));
  await context.dispose();
  await model.dispose();
}
await llama.dispose();
