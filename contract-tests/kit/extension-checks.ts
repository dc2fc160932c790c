// This service's extensions that the older extension checks (checks.ts) leave ungraded: the
// response's own fields and the x-service-* headers. A server without them fails each check.
import { type Check, expect, type Json } from './checks.ts';
import type { Probe } from './http-probe.ts';

/** A one-page PDF whose text layer says `text`: the MoA layer reads it (OCR) unless bypassed. */
export function onePagePdf(text: string): string {
  const stream = `BT /F1 24 Tf 72 720 Td (${text}) Tj ET`;
  const objects = ['<< /Type /Catalog /Pages 2 0 R >>', '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`, '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'];
  let pdf = '%PDF-1.4\n';
  const offsets = objects.map((object, i) => {
    const at = pdf.length;
    pdf += `${i + 1} 0 obj\n${object}\nendobj\n`;
    return at;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  return `${pdf}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
}

/**
 * A request no earlier one matched, so the cache cannot have it yet. A task's answer ends normally,
 * so it is stored; a model's answer cut at max_tokens would not be (a kit must stay fast).
 */
const fresh = (model: string, what: string) => ({ model, messages: [
  { role: 'system', content: '<task>translate</task> to Spanish' }, { role: 'user', content: `Good morning, ${what} ${Date.now()}-${Math.random().toString(36).slice(2, 8)}` },
] });

async function vcacheOf(probe: Probe, body: object, headers: Record<string, string> = {}): Promise<unknown> {
  const answer = await probe.complete(body, { headers });
  expect(answer.status === 200, `expected 200, got ${answer.status}: ${answer.text.slice(0, 200)}`);
  return (answer.json as Json)?.vcache;
}

export const EXTENSION_CHECKS: Check[] = [
  {
    id: 'extension-fields', title: 'A response has an id service-<digits>, a precontext array and a vcache boolean', rules: ['§2.8 id shape', '§2.8 precontext', '§2.8 vcache'], group: 'extension',
    async run(probe, { model }) {
      const body = (await probe.complete(fresh(model, 'the fields'))).json as Json;
      expect(/^service-\d+$/.test(String(body?.id)), `id is ${JSON.stringify(body?.id)}, not service-<digits>`);
      expect(Array.isArray(body.precontext), `precontext is ${JSON.stringify(body.precontext)}, not an array`);
      expect(typeof body.vcache === 'boolean', `vcache is ${JSON.stringify(body.vcache)}, not a boolean`);
    },
  },
  {
    id: 'bypass-cache', title: 'x-service-bypass-cache: true answers a cached request fresh (vcache false)', rules: ['§4 x-service-bypass-cache', '§2.8 vcache'], group: 'extension',
    async run(probe, { model }) {
      const body = fresh(model, 'the cache');
      await vcacheOf(probe, body);
      expect(await vcacheOf(probe, body) === true, 'a repeated request is not vcache: true, so bypassing cannot be shown');
      const bypassed = await vcacheOf(probe, body, { 'x-service-bypass-cache': 'true' });
      expect(bypassed === false, `with x-service-bypass-cache: true, vcache is ${JSON.stringify(bypassed)}, not false`);
    },
  },
  {
    id: 'zdr', title: 'x-service-zdr: true stores nothing: the same request again is not served from the cache', rules: ['§4 x-service-zdr'], group: 'extension',
    async run(probe, { model }) {
      const body = fresh(model, 'nobody');
      const zdr = { 'x-service-zdr': 'true' };
      const first = await vcacheOf(probe, body, zdr);
      expect(first === false, `a new request under x-service-zdr has vcache ${JSON.stringify(first)}, not false`);
      const again = await vcacheOf(probe, body, zdr);
      expect(again === false, `the same request under x-service-zdr again has vcache ${JSON.stringify(again)}: the first was kept`);
      // What is graded is retention, not the cache being off: without the header, a repeat is cached.
      await vcacheOf(probe, body);
      expect(await vcacheOf(probe, body) === true, 'without x-service-zdr a repeat is not vcache: true, so the check cannot tell retention apart');
    },
  },
  {
    id: 'bypass-moa', title: 'x-service-bypass-moa: true reads an attached PDF with no internal task (no precontext entry); without it, an entry', rules: ['§4 x-service-bypass-moa', '§2.8 precontext'], group: 'extension',
    async run(probe, { model }) {
      const file = { filename: 'note.pdf', file_data: `data:application/pdf;base64,${Buffer.from(onePagePdf('Buy milk today')).toString('base64')}` };
      const body = { model, max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'text', text: 'Summarise.' }, { type: 'file', file }] }] };
      const entries = async (headers: Record<string, string>) => {
        const answer = await probe.complete(body, { headers: { 'x-service-bypass-cache': 'true', ...headers } });
        expect(answer.status === 200, `expected 200, got ${answer.status}: ${answer.text.slice(0, 200)}`);
        const precontext = (answer.json as Json)?.precontext;
        expect(Array.isArray(precontext), `precontext is ${JSON.stringify(precontext)}, not an array`);
        return (precontext as Json[]).map((e) => e.name);
      };
      const read = await entries({});
      expect(read.length > 0, 'without x-service-bypass-moa, the PDF gave no precontext entry: the MoA layer did not read it');
      const bypassed = await entries({ 'x-service-bypass-moa': 'true' });
      expect(bypassed.length === 0, `with x-service-bypass-moa: true, precontext has ${JSON.stringify(bypassed)}, where no internal task should run`);
    },
  },
];
