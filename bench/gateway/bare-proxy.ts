// The least a gateway can do, in bare node:http: read the caller's JSON, set the upstream's model,
// forward it over a keep-alive pool, and pipe the answer back. The reference the service is
// measured against.
import http from 'node:http';

const upstream = new URL(process.env.UPSTREAM_BASE_URL!);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

http.createServer((req, res) => {
  let raw = '';
  req.setEncoding('utf8');
  req.on('data', (c: string) => (raw += c));
  req.on('end', () => {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      res.writeHead(400).end();
      return;
    }
    const forward = http.request({
      host: upstream.hostname, port: upstream.port, path: `${upstream.pathname}/chat/completions`, method: 'POST', agent,
      headers: { 'Content-Type': 'application/json' },
    }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, { 'Content-Type': answer.headers['content-type'] ?? 'application/json' });
      answer.pipe(res);
    });
    forward.on('error', () => res.writeHead(502).end());
    forward.end(JSON.stringify({ ...body, model: 'upstream-model' }));
  });
}).listen(Number(process.env.PORT), '127.0.0.1');
