// A stand-in for a SearXNG instance on loopback, for the test deployment: it answers the JSON API
// (`/search?q=…&format=json`) with results that echo the query, so a test can tell they came back.
import { createServer } from 'node:http';

const port = Number(process.argv[2] ?? 8888);
createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname !== '/search' || url.searchParams.get('format') !== 'json') {
    res.writeHead(404).end();
    return;
  }
  const q = url.searchParams.get('q') ?? '';
  res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({
    query: q,
    results: [
      { title: `${q} – overview`, url: `https://example.org/${encodeURIComponent(q)}`, content: `Everything about ${q}.` },
      { title: `${q} – news`, url: `https://news.example.org/${encodeURIComponent(q)}`, content: `Latest on ${q}.` },
    ],
  }));
}).listen(port, '127.0.0.1', () => console.log(`fake SearXNG on http://127.0.0.1:${port}`));
